// The language server's view of one document (analysis.hpp): checked as emmyc check checks it,
// then looked up by position in its tokens and its AST.
#include "lsp/analysis.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "lower/monoid_table.hpp"
#include "lower/regroup_laws.hpp"
#include "schedule/knobs.hpp"
#include "schedule/targets.hpp"
#include "sema/sema.hpp"
#include "support/diagnostics.hpp"
#include "syntax/format.hpp"
#include "syntax/parse.hpp"

namespace emmy::lsp {

std::string path_of_uri(const std::string& uri) {
  std::string rest = uri.starts_with("file://") ? uri.substr(7) : uri;
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size()) {
      out += static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return out;
}

std::string uri_of_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::absolute(path, ec);
  return "file://" + (ec ? path : full.lexically_normal().string());
}

namespace {

// LSP counts a line's characters in UTF-16 code units: a UTF-8 lead byte of 1-3 bytes is one,
// of 4 bytes (outside the BMP) two; continuation bytes none.
int utf16_units(std::string_view utf8) {
  int n = 0;
  for (unsigned char c : utf8)
    if ((c & 0xC0) != 0x80) n += c >= 0xF0 ? 2 : 1;
  return n;
}

nlohmann::json position_json(const SourceFile& f, uint32_t offset) {
  const LineCol lc = f.line_col(offset);
  const std::string_view line = f.line_text(lc.line);
  const size_t bytes = std::min(static_cast<size_t>(lc.column - 1), line.size());
  return {{"line", lc.line - 1}, {"character", utf16_units(line.substr(0, bytes))}};
}

nlohmann::json range_json(const SourceFile& f, uint32_t begin, uint32_t end) {
  return {{"start", position_json(f, begin)}, {"end", position_json(f, std::max(begin, end))}};
}

std::string_view outcome_name(algebra::Outcome o) {
  switch (o) {
    case algebra::Outcome::Proved: return "proved";
    case algebra::Outcome::Refuted: return "refuted";
    case algebra::Outcome::Unproved: return "not proved";
  }
  return "";
}

bool inside(const SourceRange& r, uint32_t file, uint32_t offset) {
  return r.file == file && r.begin <= offset && offset <= r.end;
}

}  // namespace

struct Analysis::State {
  SourceManager sources;
  uint32_t file = 0;
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<CheckedProgram> program;
  std::vector<Token> tokens;
  std::vector<std::string> stdlib_dirs;

  const SourceFile& source() const { return sources.file(file); }
  uint32_t offset_of(Position at) const {
    const std::string& text = source().text();
    size_t offset = 0;
    for (int line = 0; line < at.line && offset < text.size(); ++line) {
      const size_t nl = text.find('\n', offset);
      if (nl == std::string::npos) return static_cast<uint32_t>(text.size());
      offset = nl + 1;
    }
    const size_t eol = std::min(text.find('\n', offset), text.size());
    for (int units = 0; offset < eol;) {  // at.character UTF-16 code units into the line
      const unsigned char c = static_cast<unsigned char>(text[offset]);
      const int width = c >= 0xF0 ? 2 : 1;
      if (units + width > at.character) break;
      units += width;
      ++offset;
      while (offset < eol && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80) ++offset;
    }
    return static_cast<uint32_t>(offset);
  }
  // The word under (or just before) the offset.
  const Token* word_at(uint32_t offset) const {
    for (const Token& t : tokens)
      if (t.kind == TokenKind::Word && t.begin <= offset && offset <= t.end) return &t;
    return nullptr;
  }
  const ast::Module* main_module() const {
    if (!program) return nullptr;
    for (const LoadedModule& m : program->modules)
      if (m.ast.file == file) return &m.ast;
    return nullptr;
  }
  template <class T>
  const T* item_at(uint32_t offset) const {
    if (const ast::Module* m = main_module())
      for (const ast::Item& item : m->items)
        if (const T* d = std::get_if<T>(&item); d && inside(d->range, file, offset)) return d;
    return nullptr;
  }
  // The checked op whose declaration holds the offset, if it checked.
  const CheckedOp* op_at(uint32_t offset) const {
    const ast::OpDecl* op = item_at<ast::OpDecl>(offset);
    if (!op) return nullptr;
    auto it = program->ops.find(op->name.name);
    return it == program->ops.end() ? nullptr : &it->second;
  }
  // Where a name is declared anywhere in the program: an op or a monoid, and its module's file.
  std::optional<SourceRange> declaration(const std::string& name) const {
    if (!program) return std::nullopt;
    if (auto op = program->ops.find(name); op != program->ops.end()) {
      // A derived op's text is the compiler's: its declaration is the `op NAME = grad(...)` line.
      for (const LoadedModule& m : program->modules)
        for (const ast::Item& item : m.ast.items)
          if (const auto* g = std::get_if<ast::GradDecl>(&item); g && g->name.name == name) return g->name.range;
      return op->second.decl->name.range;
    }
    if (auto m = program->monoids.find(name); m != program->monoids.end()) return m->second.decl->name.range;
    return std::nullopt;
  }
  std::string header(const SourceRange& item) const {  // "op softmax(x: f16[N, C]) -> (y: f16[N, C])"
    std::string_view text = sources.text(item);
    text = text.substr(0, std::min(text.find('{'), text.size()));
    while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
    return std::string(text);
  }
};

Analysis::Analysis(const std::string& path, const std::string& text, const std::vector<std::string>& stdlib_dirs)
    : s_(std::make_unique<State>()) {
  s_->stdlib_dirs = stdlib_dirs;
  s_->file = s_->sources.add(path, text);
  s_->diags = std::make_unique<Diagnostics>(s_->sources, kDefaultErrorLimit);
  s_->program = check_program(s_->sources, s_->file, SemaOptions{stdlib_dirs, std::nullopt, {}}, *s_->diags);
  lex_all(text, s_->tokens);  // stops at the first bad character: the tokens before it serve
}

Analysis::~Analysis() = default;

nlohmann::json Analysis::diagnostics() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Diagnostic& d : s_->diags->all()) {
    nlohmann::json item;
    std::string message = d.message;
    if (d.range.file == s_->file) {
      item["range"] = range_json(s_->source(), d.range.begin, d.range.end);
    } else {  // in an imported file (or nowhere): at the top, naming where
      item["range"] = {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}};
      if (d.range.valid()) {
        const SourceFile& f = s_->sources.file(d.range.file);
        message = fmt::format("{}:{}: {}", f.path(), f.line_col(d.range.begin).line, message);
      }
    }
    for (const DiagnosticNote& n : d.notes) message += "\nnote: " + n.message;
    if (!d.help.empty()) message += "\nhelp: " + d.help;
    item["severity"] = d.severity == Severity::Error ? 1 : d.severity == Severity::Warning ? 2 : 3;
    if (!d.code.empty()) item["code"] = d.code;
    item["source"] = "emmyc";
    item["message"] = message;
    out.push_back(std::move(item));
  }
  return out;
}

std::optional<nlohmann::json> Analysis::hover(Position at) const {
  const State& s = *s_;
  const uint32_t offset = s.offset_of(at);
  const Token* word = s.word_at(offset);
  if (!word) return std::nullopt;
  std::string text;
  // A knob of a schedule block: its grammar and example.
  if (const ast::ScheduleDecl* block = s.item_at<ast::ScheduleDecl>(offset)) {
    for (const ast::KnobEntry& e : block->entries)
      if (inside(e.knob.range, s.file, offset))
        if (std::optional<Knob> k = find_knob(e.knob.name))
          text = fmt::format("**{}** = `{}`\n\ne.g. `{}={}` (docs/knobs.md)", knob_name(*k), knob_grammar(*k),
                             knob_name(*k), knob_example(*k));
  }
  // A tensor of the op around the word: its dtype and shape.
  if (text.empty())
    if (const CheckedOp* op = s.op_at(offset))
      if (const TensorInfo* t = op->find(word->text)) {
        static constexpr std::string_view kRoles[] = {"input", "output", "intermediate", "let"};
        text = fmt::format("`{}: {}{}` ({} of {})", t->name, t->elem.str(), shape_text(t->shape),
                           kRoles[static_cast<int>(t->role)], op->decl->name.name);
      }
  // An op or a monoid: its header; a monoid's laws as the prover finds them.
  if (text.empty() && s.program) {
    if (auto op = s.program->ops.find(word->text); op != s.program->ops.end()) {
      text = fmt::format("```emmy\n{}\n```", s.header(op->second.decl->range));
    } else if (auto m = s.program->monoids.find(word->text); m != s.program->monoids.end()) {
      text = fmt::format("```emmy\nmonoid {}\n```", s.header(m->second.decl->range).substr(7));
      std::string why;
      if (std::optional<algebra::MonoidTerms> terms = algebra::monoid_terms(*m->second.decl, why)) {
        const lower::MonoidLaws laws = lower::monoid_laws(*terms, *s.program);
        text += fmt::format("\n\nassociative: {}{}; commutative: {}{}", outcome_name(laws.associative),
                            laws.assumed_associative ? " (assumed)" : "", outcome_name(laws.commutative),
                            laws.assumed_commutative ? " (assumed)" : "");
      }
    }
  }
  // A built-in reduction: its laws, proved on its f32 table row.
  if (text.empty() && s.program)
    if (const lower::BuiltinMonoid* b = lower::builtin_monoid(word->text)) try {
        const lower::MonoidLaws laws = lower::monoid_laws(
            lower::terms_of(b->name, b->lowering(kir::ScalarType::F32, {kir::ScalarType::F32})), *s.program);
        text = fmt::format("built-in reduction `{}` (f32): associative: {}; commutative: {}", b->name,
                           outcome_name(laws.associative), outcome_name(laws.commutative));
      } catch (const std::exception&) {
        text = fmt::format("built-in reduction `{}`", b->name);
      }
  if (text.empty()) return std::nullopt;
  return nlohmann::json{{"contents", {{"kind", "markdown"}, {"value", text}}},
                        {"range", range_json(s.source(), word->begin, word->end)}};
}

std::optional<nlohmann::json> Analysis::definition(Position at) const {
  const State& s = *s_;
  const uint32_t offset = s.offset_of(at);
  // An import: the imported file.
  if (const ast::Module* m = s.main_module())
    for (const ast::Item& item : m->items)
      if (const auto* imp = std::get_if<ast::ImportDecl>(&item); imp && inside(imp->range, s.file, offset))
        for (const LoadedModule& lm : s.program->modules)
          if (lm.name == imp->dotted()) {
            const SourceFile& f = s.sources.file(lm.ast.file);
            return nlohmann::json{{"uri", uri_of_path(f.path())}, {"range", range_json(f, 0, 0)}};
          }
  const Token* word = s.word_at(offset);
  if (!word) return std::nullopt;
  std::optional<SourceRange> where = s.declaration(word->text);
  if (!where) {  // a tensor of the op around it: its definition
    if (const CheckedOp* op = s.op_at(offset))
      if (const TensorInfo* t = op->find(word->text); t && t->def.valid()) where = t->def;
  }
  if (!where) return std::nullopt;
  const SourceFile& f = s.sources.file(where->file);
  return nlohmann::json{{"uri", uri_of_path(f.path())}, {"range", range_json(f, where->begin, where->end)}};
}

nlohmann::json Analysis::completion(Position at) const {
  const State& s = *s_;
  const uint32_t offset = s.offset_of(at);
  nlohmann::json items = nlohmann::json::array();
  auto add = [&](const std::string& label, int kind, const std::string& detail) {
    items.push_back({{"label", label}, {"kind", kind}, {"detail", detail}});
  };
  constexpr int kKeyword = 14, kFunction = 3, kVariable = 6, kProperty = 10, kValue = 12, kStruct = 22;
  // In a schedule block (by its tokens: a block being typed does not parse yet): after `KNOB =`,
  // the values legal on the block's target; else the knobs.
  bool in_block = false;
  std::string target_name;
  for (size_t i = 0; i < s.tokens.size() && s.tokens[i].end <= offset; ++i) {
    const Token& t = s.tokens[i];
    if (t.kind == TokenKind::Word && t.text == "schedule") in_block = false, target_name = "-";
    if (t.kind == TokenKind::Word && t.text == "for" && target_name == "-" && i + 1 < s.tokens.size())
      target_name = s.tokens[i + 1].text;
    if (t.kind == TokenKind::Punct && t.text == "{" && !target_name.empty()) in_block = true;
    if (t.kind == TokenKind::Punct && t.text == "}") in_block = false, target_name.clear();
  }
  const std::string& text = s.source().text();
  const size_t newline = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
  const std::string line = text.substr(line_start, offset - line_start);
  if (in_block) {
    const TargetInfo* target = find_target(target_name);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) {
      std::string name = line.substr(0, eq);
      name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
      const std::string site = name.find('@') == std::string::npos ? "" : name.substr(name.find('@') + 1);
      name = name.substr(0, name.find('@'));
      std::optional<Knob> knob = find_knob(name);
      if (!knob) return items;
      std::vector<std::string> values{std::string(knob_example(*knob))};
      for (std::string_view w : knob_value_words()) values.emplace_back(w);
      for (std::string_view a : atom_names()) {  // wgmma's come as patterns: wgmma_m64n<N>k16_f16
        const std::string atom(a);
        const size_t hole = atom.find("<N>");
        if (hole == std::string::npos) values.push_back("a:" + atom);
        for (int n = 8; hole != std::string::npos && n <= 256; n += 8)
          values.push_back("a:" + atom.substr(0, hole) + std::to_string(n) + atom.substr(hole + 3));
      }
      std::set<std::string> seen;
      for (const std::string& v : values) {
        auto parsed = parse_knob_value(*knob, site, v);
        const auto* setting = std::get_if<KnobSetting>(&parsed);
        if (!setting || (target && !check_knob_legal(*setting, *target).empty())) continue;
        const std::string canonical = print_knob_value(*setting);
        if (seen.insert(canonical).second)
          add(canonical, kValue,
              fmt::format("{} = {} (legal on {})", knob_name(*knob), knob_grammar(*knob),
                          target ? target->name : "any target"));
      }
      return items;
    }
    for (std::string_view k : knob_names()) add(std::string(k), kProperty, std::string(knob_grammar(*find_knob(k))));
    return items;
  }
  for (const std::string& k : keywords()) add(k, kKeyword, "keyword");
  if (!s.program) return items;
  for (const auto& [name, op] : s.program->ops) add(name, kFunction, s.header(op.decl->range));
  for (const auto& [name, m] : s.program->monoids) add(name, kStruct, "monoid");
  if (const CheckedOp* op = s.op_at(offset))
    for (const TensorInfo& t : op->tensors)
      add(t.name, kVariable, fmt::format("{}{}", t.elem.str(), shape_text(t.shape)));
  return items;
}

std::optional<nlohmann::json> format_edits(const std::string& text) {
  std::optional<std::string> formatted = format_source(text);
  if (!formatted) return std::nullopt;
  nlohmann::json edits = nlohmann::json::array();
  if (*formatted == text) return edits;
  const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  edits.push_back(
      {{"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", lines + 1}, {"character", 0}}}}},
       {"newText", *formatted}});
  return edits;
}

}  // namespace emmy::lsp
