// Writes a tuned schedule block into .emmy text as small edits at the AST's byte ranges, then re-checks the result.
#include "tune/write_back.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <variant>

#include <fmt/format.h>

#include "lower/passes.hpp"
#include "schedule/knobs.hpp"
#include "schedule/targets.hpp"
#include "sema/sema.hpp"
#include "support/diagnostics.hpp"
#include "syntax/format.hpp"
#include "syntax/parse.hpp"

namespace emmy::tune {
namespace {

bool is_ident(std::string_view s) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.empty() || !letter(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || digit(c); });
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The first error, rendered as emmyc prints it (location, source line, caret), without its final newline.
std::string first_error(const Diagnostics& diags) {
  for (const Diagnostic& d : diags.all()) {
    if (d.severity != Severity::Error) continue;
    std::string s = diags.render_one(d);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  return "";
}

// Checks the block's target and knobs with the codec (and the sites against `op` when given);
// returns the entries in canonical text. `where` prefixes every message ("nn.emmy: ").
std::vector<std::pair<std::string, std::string>> canonical_knobs(const TunedBlock& block, const TargetInfo& target,
                                                                 const ast::OpDecl* op, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  std::optional<std::set<std::string>> sites;
  if (op) {
    const std::vector<std::string> all = knob_sites(*op);
    sites.emplace(all.begin(), all.end());
  }
  for (const auto& [name_site, value] : block.knobs) {
    std::string entry = fmt::format("{}={}", name_site, value);
    auto bad = [&](const std::string& why, const std::string& help) {
      return WriteBackError(fmt::format("{}the tuned schedule of {} for {} has a bad knob {}: {}{}", where, block.op,
                                        block.target, entry, why, help.empty() ? "" : fmt::format(" ({})", help)));
    };
    size_t at = name_site.find('@');
    std::string_view name = std::string_view(name_site).substr(0, at);
    std::string site = at == std::string::npos ? "" : name_site.substr(at + 1);
    std::variant<Knob, KnobError> knob = lookup_knob(name);
    if (const auto* err = std::get_if<KnobError>(&knob)) throw bad(err->message, err->help);
    if (at != std::string::npos && !is_ident(site)) throw bad(fmt::format("'{}' is not a site name", site), "");
    if (sites && !site.empty() && !sites->count(site))
      throw bad(fmt::format("op {} has no statement or index variable '{}'", block.op, site),
                fmt::format("sites of {} are: {}", block.op, fmt::join(*sites, ", ")));
    if (!seen.insert(name_site).second) throw bad(fmt::format("{} is set twice", name_site), "keep one of them");
    auto parsed = parse_knob_value(std::get<Knob>(knob), site, value);
    if (const auto* err = std::get_if<KnobError>(&parsed)) throw bad(err->message, err->help);
    const KnobSetting& setting = std::get<KnobSetting>(parsed);
    for (const KnobError& err : check_knob_legal(setting, target)) throw bad(err.message, err.help);
    out.emplace_back(name_site, print_knob_value(setting));
  }
  return out;
}

// The op's name and the target's; returns the target.
const TargetInfo& checked_names(const TunedBlock& block, const std::string& where) {
  if (!is_ident(block.op)) throw WriteBackError(fmt::format("{}'{}' is not an op name", where, block.op));
  const TargetInfo* target = find_target(block.target);
  if (!target)
    throw WriteBackError(fmt::format("{}unknown target '{}' for the tuned schedule of {} (targets are: {})", where,
                                     block.target, block.op, fmt::join(target_names(), ", ")));
  return *target;
}

// The block as `emmyc fmt` lays it out, ending in "\n".
std::string block_text(const TunedBlock& block, const std::vector<std::pair<std::string, std::string>>& knobs) {
  std::vector<std::string_view> lines;
  for (const std::string& c : block.comment) {
    std::string_view rest = c;
    for (;;) {
      size_t nl = rest.find('\n');
      lines.push_back(trim_right(rest.substr(0, nl)));
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  }
  std::string raw = fmt::format("/// {}", kTunedMarker);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) raw += "\n///";
    if (!lines[i].empty()) raw += fmt::format(" {}", lines[i]);
  }
  raw += fmt::format("\nschedule {} for {}{}{} {{\n", block.op, block.target,
                     block.name.empty() ? "" : fmt::format(" as \"{}\"", block.name),
                     block.guard.empty() ? "" : fmt::format(" where {}", block.guard));
  for (const auto& [name, value] : knobs) raw += fmt::format("  {} = {};\n", name, value);
  raw += "}\n";
  std::optional<std::string> formatted = format_source(raw);
  if (!formatted || formatted->empty())
    throw WriteBackInternalError(fmt::format("emmyc tune: internal error: the tuned block does not lex:\n{}", raw));
  return *formatted;
}

struct Edit {
  uint32_t begin = 0, end = 0;  // the replaced byte range of the input
  std::string text;
  bool is_block = false;  // the tuned block's edit (else the hand-written block's label)
  size_t out_begin = 0;   // where `text` starts in the result
};

bool blank_line_at(std::string_view text, size_t at) {
  for (; at < text.size(); ++at) {
    if (text[at] == '\n') return true;
    if (text[at] != ' ' && text[at] != '\t' && text[at] != '\r') return false;
  }
  return true;  // the end of the text
}

// Puts `block` (ending in a newline) after the item that ends at `end`: after the end of its line
// (a trailing `//` comment stays with the item), or right after it when code or a block comment
// follows on that line; blank lines separate it from its neighbours.
Edit insert_after(std::string_view text, const std::vector<Token>& toks, uint32_t end, const std::string& block,
                  const std::string& nl) {
  size_t eol = text.find('\n', end);
  size_t line_end = eol == std::string_view::npos ? text.size() : eol;
  auto next = std::find_if(toks.begin(), toks.end(), [&](const Token& t) { return t.begin >= end; });
  bool code_follows = next != toks.end() && next->begin < line_end && next->kind != TokenKind::LineComment;
  if (code_follows) return {end, end, nl + nl + block + nl, true};
  if (eol == std::string_view::npos) {
    auto at = static_cast<uint32_t>(text.size());
    return {at, at, nl + nl + block, true};
  }
  auto at = static_cast<uint32_t>(eol + 1);
  return {at, at, nl + block + (blank_line_at(text, at) ? "" : nl), true};
}

// Where the doc comment of the item starting at `begin` starts (the item itself when it has none),
// by the parser's rule: `///` lines directly above it, no blank line between.
uint32_t doc_begin(std::string_view text, const std::vector<Token>& toks, uint32_t begin) {
  auto it = std::find_if(toks.begin(), toks.end(), [&](const Token& t) { return t.begin == begin; });
  if (it == toks.end()) return begin;
  for (size_t i = static_cast<size_t>(it - toks.begin()); i > 0 && toks[i - 1].kind == TokenKind::DocComment;) {
    std::string_view gap = text.substr(toks[i - 1].end, toks[i].begin - toks[i - 1].end);
    if (std::count(gap.begin(), gap.end(), '\n') > 1) break;
    begin = toks[--i].begin;
  }
  return begin;
}

int line_of(std::string_view text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

bool is_tuned(const ast::ScheduleDecl& s) { return !s.doc.empty() && s.doc.front().starts_with(kTunedMarker); }

// The first error of checking `text` as the file `file_name`, or nullopt when it checks.
std::optional<std::string> check_error(std::string_view file_name, const std::string& text,
                                       const std::vector<std::string>& stdlib_dirs) {
  SourceManager sources;
  Diagnostics diags(sources);
  uint32_t id = sources.add(std::string(file_name), text);
  check_program(sources, id, SemaOptions{stdlib_dirs, std::nullopt, {}}, diags);
  if (!diags.has_errors()) return std::nullopt;
  return first_error(diags);
}

// The result must parse, check, give the tuned block to `emmyc run`, and stay formatted.
void verify(std::string_view file_name, std::string_view input, const std::string& result, const TunedBlock& block,
            const TargetInfo& target, const std::vector<std::string>& stdlib_dirs) {
  auto bug = [&](const std::string& what) {
    return WriteBackInternalError(
        fmt::format("emmyc tune: internal error writing the tuned schedule of {} for {} into {}: {}\n"
                    "This is a bug in Emmy, not in your program; please report it.",
                    block.op, block.target, file_name, what));
  };
  SourceManager sources;
  Diagnostics diags(sources);
  uint32_t id = sources.add(std::string(file_name), result);
  std::unique_ptr<CheckedProgram> program =
      check_program(sources, id, SemaOptions{stdlib_dirs, std::nullopt, {}}, diags);
  if (diags.has_errors()) {
    if (std::optional<std::string> why = check_error(file_name, std::string(input), stdlib_dirs))
      throw WriteBackError(
          fmt::format("{} does not check, so the tuned schedule was not written; fix it first:\n{}", file_name, *why));
    throw bug(fmt::format("the result does not check:\n{}", first_error(diags)));
  }
  auto picked = lower::select_schedule(*program, block.op, target, block.name);
  const auto* s = std::get_if<const CheckedSchedule*>(&picked);
  if (!s || !*s || !is_tuned(*(*s)->decl) || (*s)->knobs.size() != block.knobs.size())
    throw bug(block.name.empty() ? "emmyc run would not pick the tuned block"
                                 : fmt::format("--schedule \"{}\" would not pick the tuned block", block.name));
  std::optional<std::string> was = format_source(input);
  if (was && *was == input && format_source(result) != result) throw bug("the formatted file would not stay formatted");
}

}  // namespace

std::string tuned_block_text(const TunedBlock& block) {
  const TargetInfo& target = checked_names(block, "");
  return block_text(block, canonical_knobs(block, target, nullptr, ""));
}

WriteBack write_tuned_block(std::string_view file_name, std::string_view text, const TunedBlock& block,
                            const std::vector<std::string>& stdlib_dirs) {
  const std::string where = fmt::format("{}: ", file_name);
  SourceManager sources;
  Diagnostics diags(sources);
  uint32_t file = sources.add(std::string(file_name), std::string(text));
  ast::Module module = parse_module(sources, file, diags);
  std::vector<Token> toks;
  if (diags.has_errors() || !lex_all(text, toks))
    throw WriteBackError(fmt::format("{} does not parse, so the tuned schedule was not written; fix it first:\n{}",
                                     file_name, first_error(diags)));

  const ast::OpDecl* op = nullptr;  // null for a derived op (`op f_bwd = grad(f);`): its sites are not checked
  std::optional<SourceRange> op_range;
  std::vector<std::string> ops;
  std::vector<const ast::ScheduleDecl*> schedules;  // of block.op, in file order
  for (const ast::Item& item : module.items) {
    if (const auto* o = std::get_if<ast::OpDecl>(&item)) {
      ops.push_back(o->name.name);
      if (o->name.name == block.op) op = o, op_range = o->range;
    } else if (const auto* g = std::get_if<ast::GradDecl>(&item)) {
      ops.push_back(g->name.name);
      if (g->name.name == block.op) op_range = g->range;
    } else if (const auto* s = std::get_if<ast::ScheduleDecl>(&item); s && s->op.name == block.op) {
      schedules.push_back(s);
    }
  }
  if (!op_range)
    throw WriteBackError(fmt::format(
        "{}no op '{}' is declared in this file ({}); the tuned schedule goes beside its op", where, block.op,
        ops.empty() ? "it declares no ops" : fmt::format("it declares {}", fmt::join(ops, ", "))));
  const TargetInfo& target = checked_names(block, where);
  std::string nl = [&] {
    size_t eol = text.find('\n');
    return eol != std::string_view::npos && eol > 0 && text[eol - 1] == '\r' ? "\r\n" : "\n";
  }();
  std::string new_block = block_text(block, canonical_knobs(block, target, op, where));
  if (nl != "\n")
    for (size_t at = new_block.find('\n'); at != std::string::npos; at = new_block.find('\n', at + 2))
      new_block.insert(at, "\r");

  // The blocks of this op and target: the tuned one to replace, the unnamed hand-written one.
  const ast::ScheduleDecl* tuned = nullptr;
  const ast::ScheduleDecl* hand = nullptr;
  std::set<std::string> labels;
  for (const ast::ScheduleDecl* s : schedules) {
    if (s->target.name != block.target) continue;
    if (s->label) labels.insert(s->label->name);
    if (!block.name.empty()) {  // a named block (a shape class's): the tuned one of that name
      const bool same = s->label && s->label->name == block.name;
      if (same && !is_tuned(*s))
        throw WriteBackError(
            fmt::format("{}a hand-written block of {} for {} is named \"{}\" (line {}); rename it "
                        "to keep it, and tune again",
                        where, block.op, block.target, block.name, line_of(text, s->range.begin)));
      if (same) tuned = s;
      continue;
    }
    if (is_tuned(*s)) {  // a shape class's block (tune --shapes) stays
      const bool class_block = s->label && s->label->name.starts_with(kClassBlockPrefix);
      if (!class_block && (!tuned || (tuned->label && !s->label))) tuned = s;
    } else if (!s->label && !hand) {
      hand = s;
    }
  }

  std::vector<Edit> edits;
  std::string hand_label;
  if (hand && (!tuned || tuned->label)) {  // it would be a second unnamed block: name it
    hand_label = "hand";
    for (int n = 2; labels.count(hand_label); ++n) hand_label = fmt::format("hand-{}", n);
    edits.push_back({hand->target.range.end, hand->target.range.end, fmt::format(" as \"{}\"", hand_label)});
  }
  std::string after;  // where a new block went, for the user
  if (tuned) {
    std::string_view body = std::string_view(new_block).substr(0, new_block.size() - nl.size());
    edits.push_back({doc_begin(text, toks, tuned->range.begin), tuned->range.end, std::string(body), true});
  } else if (hand) {
    edits.push_back(insert_after(text, toks, hand->range.end, new_block, nl));
  } else if (!schedules.empty()) {
    const ast::ScheduleDecl* last = schedules.back();
    edits.push_back(insert_after(text, toks, last->range.end, new_block, nl));
    after = fmt::format("the last schedule of {} (for {}{})", block.op, last->target.name,
                        last->label ? fmt::format(" as \"{}\"", last->label->name) : "");
  } else {
    edits.push_back(insert_after(text, toks, op_range->end, new_block, nl));
    after = fmt::format("op {}", block.op);
  }

  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  WriteBack out;
  size_t pos = 0;
  for (Edit& e : edits) {
    out.text.append(text.substr(pos, e.begin - pos));
    e.out_begin = out.text.size();
    out.text += e.text;
    pos = e.end;
  }
  out.text.append(text.substr(pos));

  auto block_edit = std::find_if(edits.begin(), edits.end(), [](const Edit& e) { return e.is_block; });
  size_t schedule_at = block_edit->out_begin + block_edit->text.find(nl + "schedule ") + nl.size();
  int block_line = line_of(out.text, schedule_at);
  std::string what =
      fmt::format("{} for {}{}", block.op, block.target, block.name.empty() ? "" : fmt::format(" \"{}\"", block.name));
  if (tuned && out.text == text) {
    out.action = fmt::format("the tuned block of {} is already this one (line {})", what, block_line);
  } else if (tuned) {
    out.action = fmt::format("replaced the tuned block {}of {} (line {})",
                             tuned->label && block.name.empty() ? fmt::format("\"{}\" ", tuned->label->name) : "", what,
                             block_line);
  } else if (!hand) {
    out.action = fmt::format("added the tuned block of {} after {} (line {})", what, after, block_line);
  }
  if (hand && !hand_label.empty()) {
    auto rename = std::find_if(edits.begin(), edits.end(), [](const Edit& e) { return !e.is_block; });
    std::string kept = fmt::format("kept the hand-written block of {} as \"{}\" (line {})", what, hand_label,
                                   line_of(out.text, rename->out_begin));
    out.action = tuned ? fmt::format("{}; {}", out.action, kept)
                       : fmt::format("{} and added the tuned one after it (line {})", kept, block_line);
  }

  verify(file_name, text, out.text, block, target, stdlib_dirs);
  return out;
}

}  // namespace emmy::tune
