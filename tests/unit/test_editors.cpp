// The editor files name every keyword, dtype, function, reduction, knob and target
// the compiler knows, so highlighting cannot drift from the language.
#include <doctest/doctest.h>

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

}  // namespace

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
  for (const std::string& w : known) {
    CAPTURE(w);
    CHECK(vim.count(w) == 1);
  }
  for (const std::string& w : vim) {
    CAPTURE(w);
    CHECK(known.count(w) == 1);  // nothing stale
  }
}
