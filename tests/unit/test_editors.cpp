// The editor files name every keyword, dtype, function, reduction, knob and target
// the compiler knows, so highlighting cannot drift from the language.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "schedule/knobs.hpp"
#include "schedule/targets.hpp"
#include "sema/types.hpp"
#include "syntax/parse.hpp"

using namespace emmy;

namespace {

// The words of every `syn keyword GROUP word...` line.
std::set<std::string> vim_keywords(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::set<std::string> words;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string syn, kind, group, w;
    if (!(ss >> syn >> kind >> group) || syn != "syn" || kind != "keyword") continue;
    while (ss >> w)
      if (w != "contained") words.insert(w);
  }
  return words;
}

// The words of a TextMate word-list rule: its match, or each of its patterns' matches, is
// \b(?:w1|w2|...)\b (editors/vscode/syntaxes/emmy.tmLanguage.json).
std::set<std::string> textmate_words(const nlohmann::json& rule) {
  std::vector<nlohmann::json> rules{rule};
  if (rule.contains("patterns"))
    for (const nlohmann::json& r : rule.at("patterns")) rules.push_back(r);
  const std::string head = "\\b(?:", tail = ")\\b";
  std::set<std::string> words;
  for (const nlohmann::json& r : rules) {
    if (!r.contains("match")) continue;
    const std::string match = r.at("match").get<std::string>();
    CAPTURE(match);
    REQUIRE(match.starts_with(head));
    REQUIRE(match.ends_with(tail));
    std::istringstream alternatives(match.substr(head.size(), match.size() - head.size() - tail.size()));
    for (std::string w; std::getline(alternatives, w, '|');) {
      CAPTURE(w);
      CHECK(words.insert(w).second);  // each word once
    }
  }
  return words;
}

template <class Range>
std::set<std::string> to_set(const Range& range) {
  std::set<std::string> out;
  for (const auto& w : range) out.insert(std::string(w));
  return out;
}

}  // namespace

TEST_CASE("VS Code grammar lists every word the compiler knows, one class per rule") {
  std::ifstream in(std::string(EMMY_SOURCE_DIR) + "/editors/vscode/syntaxes/emmy.tmLanguage.json");
  REQUIRE(in.good());
  const nlohmann::json repository = nlohmann::json::parse(in).at("repository");

  std::set<std::string> reductions, functions, atoms;
  for (const auto& r : builtin_reductions()) reductions.insert(std::string(r.name));
  for (const auto& f : builtin_fns())  // casts are dtypes, max and min reductions
    if (!parse_dtype(f.name) && !reductions.count(std::string(f.name))) functions.insert(std::string(f.name));
  for (auto a : atom_names()) {  // wgmma_m64n<N>k16_f16: the grammar matches <N> as \d+
    std::string atom(a);
    if (size_t at = atom.find("<N>"); at != std::string::npos) atom.replace(at, 3, "\\d+");
    atoms.insert(atom);
  }
  const std::pair<std::string, std::set<std::string>> classes[] = {
      {"keyword", to_set(keywords())},    {"dtype", to_set(dtype_names())},
      {"reduction", reductions},          {"function", functions},
      {"knob", to_set(knob_names())},     {"knob-value-word", to_set(knob_value_words())},
      {"target", to_set(target_names())}, {"atom", atoms},
  };
  for (const auto& [rule, known] : classes) {
    CAPTURE(rule);
    REQUIRE(repository.contains(rule));
    const std::set<std::string> listed = textmate_words(repository.at(rule));
    CHECK(!known.empty());
    for (const std::string& w : known) {
      CAPTURE(w);
      CHECK(listed.count(w) == 1);
    }
    for (const std::string& w : listed) {
      CAPTURE(w);
      CHECK(known.count(w) == 1);  // nothing stale
    }
  }
}

TEST_CASE("vim syntax lists every word the compiler knows") {
  std::set<std::string> vim = vim_keywords(std::string(EMMY_SOURCE_DIR) + "/editors/vim/syntax/emmy.vim");
  std::set<std::string> known;
  for (const std::string& k : keywords()) known.insert(k);
  for (auto d : dtype_names()) known.insert(std::string(d));
  for (const auto& f : builtin_fns())
    if (!parse_dtype(f.name)) known.insert(std::string(f.name));
  for (const auto& r : builtin_reductions()) known.insert(std::string(r.name));
  for (auto k : knob_names()) known.insert(std::string(k));
  for (auto t : target_names()) known.insert(std::string(t));
  for (auto w : knob_value_words()) known.insert(std::string(w));
  for (const std::string& w : known) {
    CAPTURE(w);
    CHECK(vim.count(w) == 1);
  }
  for (const std::string& w : vim) {
    CAPTURE(w);
    CHECK(known.count(w) == 1);  // nothing stale
  }
}

TEST_CASE("vim syntax highlights every TILE atom, and only those") {
  std::ifstream in(std::string(EMMY_SOURCE_DIR) + "/editors/vim/syntax/emmy.vim");
  REQUIRE(in.good());
  std::string line, alternation;
  while (std::getline(in, line))
    if (line.rfind("syn match   emmyAtom", 0) == 0) {
      const size_t open = line.find("\\zs\\("), close = line.find("\\)\\>");
      REQUIRE(open != std::string::npos);
      REQUIRE(close != std::string::npos);
      alternation = line.substr(open + 5, close - open - 5);
    }
  REQUIRE(!alternation.empty());
  std::set<std::string> listed;
  for (size_t at = 0;;) {
    const size_t bar = alternation.find("\\|", at);
    listed.insert(alternation.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 2;
  }
  std::set<std::string> known;
  for (auto a : atom_names()) {  // wgmma_m64n<N>k16_f16: vim matches <N> as \d\+
    std::string atom(a);
    if (size_t at = atom.find("<N>"); at != std::string::npos) atom.replace(at, 3, "\\d\\+");
    known.insert(atom);
  }
  CHECK(listed == known);
}
