// Checks a schedule block: its op and target exist, its guard is a condition on the op's sizes,
// each knob parses with the codec, sites name statements or index variables of the op (or a
// statement of an op call it inlines, as lowering names it: sdpa_causal1_o), and
// values are legal on the target.
#include <map>
#include <set>

#include <fmt/format.h>

#include "sema/inlined_names.hpp"
#include "sema/passes.hpp"

namespace emmy::sema {

namespace {

// Every expression of the op's body, outermost first.
std::vector<const ast::Expr*> body_exprs(const ast::OpDecl& op) {
  std::vector<const ast::Expr*> work, out;
  for (const ast::Stmt& st : op.body)
    work.push_back(std::holds_alternative<ast::LetStmt>(st) ? &std::get<ast::LetStmt>(st).value
                                                            : &std::get<ast::AssignStmt>(st).value);
  while (!work.empty()) {
    const ast::Expr* e = work.back();
    work.pop_back();
    out.push_back(e);
    for (const ast::Expr& a : e->args) work.push_back(&a);
    for (const ast::Expr& w : e->where_) work.push_back(&w);
  }
  return out;
}

// The sites of the ops the op's body calls (f(x)[i]; not a builtin function) and of the ops
// those call, by callee, each once: every op lowering inlines into it.
using CalleeSites = std::map<std::string, std::vector<std::string>>;
CalleeSites inlined_sites(const CheckedProgram& program, const ast::OpDecl& op) {
  CalleeSites out;
  std::vector<const ast::OpDecl*> work{&op};
  while (!work.empty()) {
    const ast::OpDecl* next = work.back();
    work.pop_back();
    for (const ast::Expr* e : body_exprs(*next)) {
      if (e->kind != ast::ExprKind::Call || out.count(e->text)) continue;
      auto callee = program.ops.find(e->text);
      if (callee == program.ops.end() || !callee->second.decl) continue;
      out.emplace(e->text, knob_sites(*callee->second.decl));
      work.push_back(callee->second.decl);
    }
  }
  return out;
}

// Whether `site` names a statement of an op call the body inlines, as lowering names them
// (sema/inlined_names.hpp): <callee><k>_<a site of the callee> (sdpa_causal1_o), a call inside a
// callee alike. The number k counts the op's calls as lowering meets them: any k >= 1 is taken
// here, and a site that names nothing once lowered is warned about there (W050).
bool inlined_site(const CalleeSites& callees, std::string_view site) {
  for (const auto& [name, sites] : callees) {
    const std::optional<std::string_view> statement = inlined_statement(site, name);
    if (statement && std::find(sites.begin(), sites.end(), *statement) != sites.end()) return true;
  }
  return false;
}

SourceRange sub_range(SourceRange value, size_t offset, size_t length) {
  uint32_t b = value.begin + static_cast<uint32_t>(std::min<size_t>(offset, value.end - value.begin));
  uint32_t e = std::min(value.end, b + static_cast<uint32_t>(std::max<size_t>(length, 1)));
  return {value.file, b, std::max(b, e)};
}

KnobPlace place_of(const SourceManager& sources, SourceRange r) {
  if (!r.valid()) return {};
  const SourceFile& f = sources.file(r.file);
  LineCol lc = f.line_col(r.begin);
  KnobPlace p{f.path(), std::string(f.line_text(lc.line)), lc.line, static_cast<size_t>(lc.column - 1), 1};
  p.length = std::min<size_t>(r.end - r.begin, p.line_text.size() - std::min(p.column, p.line_text.size()));
  if (p.length > 1 && p.line_text[p.column + p.length - 1] == ';') --p.length;  // the entry, not its ';'
  p.length = std::max<size_t>(p.length, 1);
  return p;
}

void report(Diagnostics& diags, const KnobError& err, SourceRange value) {
  Diagnostic& d = diags.error(err.code, sub_range(value, err.offset, err.length), err.message);
  if (!err.help.empty()) d.hint(err.help);
}

// What a guard's node yields; nullopt after an error was reported.
enum class GuardType { Int, Bool };

const char* guard_type_name(GuardType t) { return t == GuardType::Int ? "a number" : "a condition"; }

// "compare the sizes of rows (C, N) with integers ...": the help of a malformed guard.
std::string guard_help(const std::vector<std::string>& sizes, const std::string& op) {
  return fmt::format("compare the sizes of {} ({}) with integers, joining conditions with && and ||: where {} <= 4096",
                     op, fmt::join(sizes, ", "), sizes.empty() ? std::string("N") : sizes.front());
}

std::optional<GuardType> check_guard(const ast::Expr& e, const std::vector<std::string>& sizes, const std::string& op,
                                     Diagnostics& diags) {
  using K = ast::ExprKind;
  auto refuse = [&](const char* what) -> std::optional<GuardType> {
    diags
        .error("E064", e.range,
               fmt::format("{} cannot appear in a schedule guard, a condition on the sizes of {}", what, op))
        .hint(guard_help(sizes, op));
    return std::nullopt;
  };
  // Both operands of `e` of type `want`; false after reporting the first error of each.
  auto operands = [&](GuardType want) -> bool {
    bool ok = true;
    for (const ast::Expr& a : e.args) {
      std::optional<GuardType> t = check_guard(a, sizes, op, diags);
      if (!t) {
        ok = false;
        continue;
      }
      if (*t != want) {
        diags
            .error("E064", a.range,
                   fmt::format("'{}' takes {}, and this is {}", e.text,
                               want == GuardType::Int ? "numbers" : "conditions", guard_type_name(*t)))
            .hint(want == GuardType::Int ? "compare the numbers, then join the conditions with && or ||"
                                         : "compare it with a number: N <= 4096");
        ok = false;
      }
    }
    return ok;
  };
  static const std::set<std::string, std::less<>> arithmetic = {"+", "-", "*", "/", "%"};
  static const std::set<std::string, std::less<>> comparison = {"==", "!=", "<", "<=", ">", ">="};
  switch (e.kind) {
    case K::Int: return GuardType::Int;
    case K::Bool: return GuardType::Bool;
    case K::Name: {
      if (std::find(sizes.begin(), sizes.end(), e.text) != sizes.end()) return GuardType::Int;
      std::string guess = closest_name(e.text, sizes);
      diags.error("E064", e.range, fmt::format("'{}' is not a size of op {}", e.text, op))
          .hint(!guess.empty()  ? fmt::format("did you mean '{}'?", guess)
                : sizes.empty() ? fmt::format("op {} has no sizes to guard on (its shapes are literals)", op)
                                : fmt::format("the sizes of {} are: {}", op, fmt::join(sizes, ", ")));
      return std::nullopt;
    }
    case K::Unary:
      if (e.text == "!") return operands(GuardType::Bool) ? std::optional(GuardType::Bool) : std::nullopt;
      return operands(GuardType::Int) ? std::optional(GuardType::Int) : std::nullopt;
    case K::Binary:
      if (e.text == "&&" || e.text == "||")
        return operands(GuardType::Bool) ? std::optional(GuardType::Bool) : std::nullopt;
      if (comparison.count(e.text)) return operands(GuardType::Int) ? std::optional(GuardType::Bool) : std::nullopt;
      if (arithmetic.count(e.text)) return operands(GuardType::Int) ? std::optional(GuardType::Int) : std::nullopt;
      return refuse("this operator");
    case K::Float: return refuse("a float literal");
    case K::Inf: return refuse("inf");
    case K::Call:
    case K::Reduce: return refuse("a call");
    case K::Index:
    case K::Slice: return refuse("an index");
    case K::Field: return refuse("a field");
    case K::Tuple: return refuse("a tuple");
  }
  return refuse("this expression");
}

// The size variables of an op's shapes, sorted.
std::vector<std::string> op_sizes(const ast::OpDecl& op) {
  std::set<std::string> out;
  for (const std::vector<ast::Param>* ps : {&op.params, &op.outputs})
    for (const ast::Param& p : *ps)
      for (const ast::Dim& d : p.dims)
        if (!d.is_literal()) out.insert(d.name);
  return {out.begin(), out.end()};
}

}  // namespace

std::optional<CheckedSchedule> check_schedule(const ast::ScheduleDecl& s, const CheckedProgram& program,
                                              Diagnostics& diags) {
  int before = diags.error_count();
  CheckedSchedule out;
  out.decl = &s;
  const SourceRange& last = s.guard ? s.guard->range : s.label ? s.label->range : s.target.range;
  out.place = place_of(diags.sources(), {s.range.file, s.range.begin, last.end});
  auto op_it = program.ops.find(s.op.name);
  if (op_it == program.ops.end()) {
    std::vector<std::string> names;
    for (const auto& [k, _] : program.ops) names.push_back(k);
    std::string guess = closest_name(s.op.name, names);
    diags.error("E060", s.op.range, fmt::format("schedule for unknown op '{}'", s.op.name))
        .hint(guess.empty() ? "schedule an op defined in this file or an imported module"
                            : fmt::format("did you mean '{}'?", guess));
  }
  out.target = find_target(s.target.name);
  if (!out.target) {
    std::vector<std::string> names;
    for (auto n : target_names()) names.push_back(std::string(n));
    std::string guess = closest_name(s.target.name, names);
    diags.error("E059", s.target.range, fmt::format("unknown target '{}'", s.target.name))
        .hint(guess.empty() ? fmt::format("targets are: {}", fmt::join(names, ", "))
                            : fmt::format("did you mean '{}'?", guess));
  }
  if (s.guard && op_it != program.ops.end()) {
    std::optional<GuardType> t = check_guard(*s.guard, op_sizes(*op_it->second.decl), s.op.name, diags);
    if (t == GuardType::Int)
      diags.error("E064", s.guard->range, "a schedule guard is a condition, and this is a number")
          .hint(guard_help(op_sizes(*op_it->second.decl), s.op.name));
  }
  std::vector<std::string> sites =
      op_it == program.ops.end() ? std::vector<std::string>{} : emmy::knob_sites(*op_it->second.decl);
  const CalleeSites callees =
      op_it == program.ops.end() || !op_it->second.decl ? CalleeSites{} : inlined_sites(program, *op_it->second.decl);
  std::map<std::pair<std::string, std::string>, SourceRange> seen;
  for (const ast::KnobEntry& k : s.entries) {
    std::variant<Knob, KnobError> looked_up = lookup_knob(k.knob.name);
    if (const auto* err = std::get_if<KnobError>(&looked_up)) {
      report(diags, *err, k.knob.range);
      continue;
    }
    Knob knob = std::get<Knob>(looked_up);
    std::string site = k.site ? k.site->name : "";
    if (auto [it, fresh] = seen.emplace(std::make_pair(k.knob.name, site), k.range); !fresh) {
      diags
          .error("E057", k.range,
                 fmt::format("{}{} is set twice in this schedule", k.knob.name, site.empty() ? "" : "@" + site))
          .note(it->second, "first set here")
          .hint("keep one of them");
      continue;
    }
    if (k.site && op_it != program.ops.end() && std::find(sites.begin(), sites.end(), site) == sites.end() &&
        !inlined_site(callees, site)) {
      std::string guess = closest_name(site, sites);
      diags.error("E058", k.site->range, fmt::format("op {} has no statement or index variable '{}'", s.op.name, site))
          .hint(guess.empty()
                    ? fmt::format(
                          "sites of {} are: {}{}", s.op.name, fmt::join(sites, ", "),
                          callees.empty() ? "" : "; a call's statements: <callee><k>_<name> (--ir tensor lists them)")
                    : fmt::format("did you mean '{}'?", guess));
      continue;
    }
    auto parsed = parse_knob_value(knob, site, k.value);
    if (const auto* err = std::get_if<KnobError>(&parsed)) {
      report(diags, *err, k.value_range);
      continue;
    }
    const KnobSetting& setting = std::get<KnobSetting>(parsed);
    if (out.target)
      for (const KnobError& err : check_knob_legal(setting, *out.target)) report(diags, err, k.value_range);
    out.knobs.push_back(setting);
    out.places.push_back(place_of(diags.sources(), k.range));
  }
  if (diags.error_count() > before) return std::nullopt;
  return out;
}

}  // namespace emmy::sema

namespace emmy {

std::vector<std::string> knob_sites(const ast::OpDecl& op) {
  std::set<std::string> s;
  for (const ast::Param& p : op.outputs) s.insert(p.name.name);
  for (const ast::Stmt& st : op.body) {
    if (const auto* let = std::get_if<ast::LetStmt>(&st)) {
      s.insert(let->name.name);
      continue;
    }
    const auto& a = std::get<ast::AssignStmt>(st);
    s.insert(a.target.name);
    for (const ast::Expr& ix : a.indices)
      if (ix.kind == ast::ExprKind::Name) s.insert(ix.text);
  }
  // Reduction axes are sites too (TILE@j): collect them from every expression.
  for (const ast::Expr* e : sema::body_exprs(op))
    for (const ast::Ident& ax : e->axes) s.insert(ax.name);
  return {s.begin(), s.end()};
}

}  // namespace emmy
