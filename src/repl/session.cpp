// The REPL's definitions: every import, op, monoid and schedule block entered so far, as text,
// and the checks that admit a new input against them.
#include "repl/session.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "syntax/parse.hpp"

namespace emmy::repl {
namespace {

// The op or monoid an item defines (a schedule block: the op it schedules); "" for an import.
std::string name_of(const ast::Item& item) {
  if (const auto* op = std::get_if<ast::OpDecl>(&item)) return op->name.name;
  if (const auto* g = std::get_if<ast::GradDecl>(&item)) return g->name.name;
  if (const auto* m = std::get_if<ast::MonoidDecl>(&item)) return m->name.name;
  if (const auto* s = std::get_if<ast::ScheduleDecl>(&item)) return s->op.name;
  return "";
}

std::set<std::string, std::less<>> words_of(const std::string& text) {
  std::vector<Token> tokens;
  lex_all(text, tokens);
  std::set<std::string, std::less<>> out;
  for (const Token& t : tokens)
    if (t.kind == TokenKind::Word) out.insert(t.text);
  return out;
}

std::string key_of(const ast::Item& item) {
  if (const auto* imp = std::get_if<ast::ImportDecl>(&item)) return "import " + imp->dotted();
  if (const auto* op = std::get_if<ast::OpDecl>(&item)) return "op " + op->name.name;
  if (const auto* g = std::get_if<ast::GradDecl>(&item)) return "op " + g->name.name;  // replaces an op so named
  if (const auto* m = std::get_if<ast::MonoidDecl>(&item)) return "monoid " + m->name.name;
  const auto& s = std::get<ast::ScheduleDecl>(item);
  return fmt::format("schedule {} for {}{}", s.op.name, s.target.name,
                     s.label ? fmt::format(" as \"{}\"", s.label->name) : "");
}

SourceRange range_of(const ast::Item& item) {
  return std::visit([](const auto& d) { return d.range; }, item);
}

bool is_import(const Definition& d) { return d.key.rfind("import ", 0) == 0; }

bool has_key(const std::vector<Definition>& defs, const std::string& key) {
  return std::any_of(defs.begin(), defs.end(), [&](const Definition& d) { return d.key == key; });
}

// `text` without its leading blank lines and trailing white space, ending in one newline.
std::string trimmed(std::string text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const size_t line = text.rfind('\n', first);
  text.erase(0, line == std::string::npos ? 0 : line + 1);
  text.erase(text.find_last_not_of(" \t\r\n") + 1);
  return text + "\n";
}

std::string joined(const std::vector<Definition>& defs) {
  std::string out;
  for (bool imports : {true, false})
    for (const Definition& d : defs)
      if (is_import(d) == imports) out += d.text;
  return out;
}

// The definitions as sources, one per origin (a file keeps its path, so that its relative
// imports resolve beside it), each with its imports first.
std::vector<uint32_t> add_sources(SourceManager& sources, const std::vector<const Definition*>& defs) {
  std::vector<std::string> origins;
  std::map<std::string, std::vector<const Definition*>> by_origin;
  for (const Definition* d : defs) {
    auto [it, fresh] = by_origin.try_emplace(d->origin);
    if (fresh) origins.push_back(d->origin);
    it->second.push_back(d);
  }
  std::vector<uint32_t> ids;
  for (const std::string& origin : origins) {
    std::string text;
    for (bool imports : {true, false})
      for (const Definition* d : by_origin.at(origin))
        if (is_import(*d) == imports) text += d->text;
    ids.push_back(sources.add(origin, std::move(text)));
  }
  return ids;
}

// The definitions of `kept` a new input must be checked beside: every import; those defining a
// name the input mentions, or mentioning a name it defines (a caller or a schedule block of an
// op it redefines); and, transitively, those defining a name any of these mention. In the
// session's order.
std::vector<const Definition*> relevant(const std::vector<const Definition*>& kept,
                                        const std::vector<Definition>& added) {
  std::unordered_map<std::string_view, std::vector<size_t>> defining;  // name -> kept definitions of it
  for (size_t i = 0; i < kept.size(); ++i)
    if (!kept[i]->name.empty() && kept[i]->key.rfind("schedule ", 0) != 0) defining[kept[i]->name].push_back(i);
  std::vector<bool> in(kept.size(), false);
  std::vector<size_t> work;
  auto take = [&](size_t i) {
    if (!in[i]) in[i] = true, work.push_back(i);
  };
  auto take_defining = [&](const std::set<std::string, std::less<>>& words) {
    for (const std::string& w : words)
      if (auto it = defining.find(w); it != defining.end())
        for (size_t i : it->second) take(i);
  };
  std::vector<std::string_view> defined;
  for (const Definition& a : added) {
    take_defining(a.words);
    if (!a.name.empty()) defined.push_back(a.name);
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    if (is_import(*kept[i])) take(i);
    for (std::string_view name : defined)
      if (kept[i]->words.count(name)) take(i);
  }
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    take_defining(kept[i]->words);
  }
  std::vector<const Definition*> out;
  for (size_t i = 0; i < kept.size(); ++i)
    if (in[i]) out.push_back(kept[i]);
  return out;
}

std::vector<const Definition*> pointers(const std::vector<Definition>& defs) {
  std::vector<const Definition*> out;
  out.reserve(defs.size());
  for (const Definition& d : defs) out.push_back(&d);
  return out;
}

}  // namespace

std::optional<std::vector<Session::Added>> Session::define(const std::string& origin, const std::string& text,
                                                           std::ostream& err, bool color) {
  // Parse alone first, to learn what the input defines (and so what it replaces).
  SourceManager parse_sources;
  Diagnostics parse_diags(parse_sources, error_limit_);
  const uint32_t parse_id = parse_sources.add(origin, text);
  const ast::Module module = parse_module(parse_sources, parse_id, parse_diags);
  if (parse_diags.has_errors()) {
    parse_diags.render(err, color);
    return std::nullopt;
  }
  std::vector<Definition> added;
  uint32_t from = 0;
  for (const ast::Item& item : module.items) {
    const uint32_t end = range_of(item).end;
    std::string def = trimmed(text.substr(from, end - from));
    std::set<std::string, std::less<>> words = words_of(def);
    added.push_back({key_of(item), std::move(def), origin, name_of(item), std::move(words)});
    from = end;
  }
  std::vector<const Definition*> kept;
  for (const Definition& d : definitions_)
    if (!has_key(added, d.key)) kept.push_back(&d);

  // Check the input as the main file, the kept definitions beside it: errors point into the input.
  const std::unique_ptr<CheckedSession> c = check_with(origin, text, relevant(kept, added));
  c->diags->render(err, color);
  if (c->diags->has_errors()) return std::nullopt;

  std::vector<Added> keys;
  for (const Definition& a : added) keys.push_back({a.key, has_key(definitions_, a.key)});
  std::erase_if(definitions_, [&](const Definition& d) { return has_key(added, d.key); });
  for (Definition& a : added) definitions_.push_back(std::move(a));
  return keys;
}

// `text`, named `origin`, checked as the main file with `beside` as sources next to it.
std::unique_ptr<CheckedSession> Session::check_with(const std::string& origin, const std::string& text,
                                                    const std::vector<const Definition*>& beside) const {
  auto c = std::make_unique<CheckedSession>();
  c->diags = std::make_unique<Diagnostics>(c->sources, error_limit_);
  std::map<FileId, ParsedFile> parsed;
  for (const Imported& m : imported_) parsed[m.file] = {c->sources.add(m.path, m.text), m.file, &m.module};
  const uint32_t id = c->sources.add(origin, text);
  c->program = check_program(
      c->sources, id, SemaOptions{stdlib_dirs_, std::nullopt, add_sources(c->sources, beside), &parsed}, *c->diags);
  learn_imports(*c);
  if (!c->diags->has_errors()) c->laws = algebra::classify(*c->program, *c->diags, &laws_);
  return c;
}

// The imports a check read from disk (new, or changed since) join imported_, parsed as they will
// be numbered in the next check.
void Session::learn_imports(const CheckedSession& c) const {
  for (size_t m = c.program->own_modules; m < c.program->modules.size(); ++m) {
    const uint32_t source = c.program->modules[m].ast.file;
    if (source <= imported_.size()) continue;  // one of imported_
    const SourceFile& f = c.sources.file(source);
    const std::optional<FileId> id = file_id(f.path());
    if (!id) continue;
    size_t at = 0;
    while (at < imported_.size() && !(imported_[at].file == *id)) ++at;
    SourceManager scratch;  // the files before it, so that it gets its id of the next checks
    for (size_t k = 0; k < at; ++k) scratch.add(imported_[k].path, imported_[k].text);
    Diagnostics diags(scratch);
    const uint32_t mine = scratch.add(f.path(), f.text());
    Imported entry{f.path(), *id, f.text(), parse_module(scratch, mine, diags)};
    if (diags.has_errors()) continue;
    if (at < imported_.size())
      imported_[at] = std::move(entry);
    else
      imported_.push_back(std::move(entry));
  }
}

std::string Session::source() const { return joined(definitions_); }

std::unique_ptr<CheckedSession> Session::check() const { return check_with("<session>", "", pointers(definitions_)); }

int open_braces(const std::string& text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = std::min(text.find('\n', i), text.size());
    } else if (ch == '"') {
      while (++i < text.size() && text[i] != '"' && text[i] != '\n') {
      }
    } else if (ch == '{') {
      ++depth;
    } else if (ch == '}') {
      --depth;
    }
  }
  return depth;
}

}  // namespace emmy::repl
