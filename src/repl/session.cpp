// The REPL's definitions: every import, op, monoid and schedule block entered so far, as text,
// and the checks that admit a new input against them.
#include "repl/session.hpp"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "syntax/parse.hpp"

namespace emmy::repl {
namespace {

std::string key_of(const ast::Item& item) {
  if (const auto* imp = std::get_if<ast::ImportDecl>(&item)) return "import " + imp->dotted();
  if (const auto* op = std::get_if<ast::OpDecl>(&item)) return "op " + op->name.name;
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
std::vector<uint32_t> add_sources(SourceManager& sources, const std::vector<Definition>& defs) {
  std::vector<std::string> origins;
  for (const Definition& d : defs)
    if (std::find(origins.begin(), origins.end(), d.origin) == origins.end()) origins.push_back(d.origin);
  std::vector<uint32_t> ids;
  for (const std::string& origin : origins) {
    std::vector<Definition> mine;
    for (const Definition& d : defs)
      if (d.origin == origin) mine.push_back(d);
    ids.push_back(sources.add(origin, joined(mine)));
  }
  return ids;
}

// `text`, named `origin`, checked as the main file with `beside` as sources next to it.
std::unique_ptr<CheckedSession> check_with(const std::vector<std::string>& stdlib_dirs, const std::string& origin,
                                           const std::string& text, const std::vector<Definition>& beside) {
  auto c = std::make_unique<CheckedSession>();
  c->diags = std::make_unique<Diagnostics>(c->sources);
  const uint32_t id = c->sources.add(origin, text);
  c->program = check_program(c->sources, id, SemaOptions{stdlib_dirs, std::nullopt, add_sources(c->sources, beside)},
                             *c->diags);
  if (!c->diags->has_errors()) c->laws = algebra::classify(*c->program, *c->diags);
  return c;
}

}  // namespace

std::optional<std::vector<Session::Added>> Session::define(const std::string& origin, const std::string& text,
                                                           std::ostream& err, bool color) {
  // Parse alone first, to learn what the input defines (and so what it replaces).
  SourceManager parse_sources;
  Diagnostics parse_diags(parse_sources);
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
    added.push_back({key_of(item), trimmed(text.substr(from, end - from)), origin});
    from = end;
  }
  std::vector<Definition> kept;
  for (const Definition& d : definitions_)
    if (!has_key(added, d.key)) kept.push_back(d);

  // Check the input as the main file, the kept definitions beside it: errors point into the input.
  const std::unique_ptr<CheckedSession> c = check_with(stdlib_dirs_, origin, text, kept);
  c->diags->render(err, color);
  if (c->diags->has_errors()) return std::nullopt;

  std::vector<Added> keys;
  for (const Definition& a : added)
    keys.push_back({a.key, has_key(definitions_, a.key)});
  kept.insert(kept.end(), added.begin(), added.end());
  definitions_ = std::move(kept);
  return keys;
}

std::string Session::source() const { return joined(definitions_); }

std::unique_ptr<CheckedSession> Session::check() const {
  return check_with(stdlib_dirs_, "<session>", "", definitions_);
}

int open_braces(const std::string& text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = std::min(text.find('\n', i), text.size());
    } else if (ch == '"') {
      while (++i < text.size() && text[i] != '"' && text[i] != '\n') {}
    } else if (ch == '{') {
      ++depth;
    } else if (ch == '}') {
      --depth;
    }
  }
  return depth;
}

}  // namespace emmy::repl
