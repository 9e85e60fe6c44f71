// Checks a schedule block: its op and target exist, each knob parses with the codec,
// sites name statements or index variables of the op, and values are legal on the target.
#include <set>

#include <fmt/format.h>

#include "sema/passes.hpp"

namespace emmy::sema {
namespace {

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

}  // namespace

std::optional<CheckedSchedule> check_schedule(const ast::ScheduleDecl& s, const CheckedProgram& program,
                                              Diagnostics& diags) {
  int before = diags.error_count();
  CheckedSchedule out;
  out.decl = &s;
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
  std::vector<std::string> sites =
      op_it == program.ops.end() ? std::vector<std::string>{} : emmy::knob_sites(*op_it->second.decl);
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
    if (k.site && op_it != program.ops.end() && std::find(sites.begin(), sites.end(), site) == sites.end()) {
      std::string guess = closest_name(site, sites);
      diags.error("E058", k.site->range, fmt::format("op {} has no statement or index variable '{}'", s.op.name, site))
          .hint(guess.empty() ? fmt::format("sites of {} are: {}", s.op.name, fmt::join(sites, ", "))
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
  std::vector<const ast::Expr*> work;
  for (const ast::Stmt& st : op.body)
    work.push_back(std::holds_alternative<ast::LetStmt>(st) ? &std::get<ast::LetStmt>(st).value
                                                            : &std::get<ast::AssignStmt>(st).value);
  while (!work.empty()) {
    const ast::Expr* e = work.back();
    work.pop_back();
    for (const ast::Ident& ax : e->axes) s.insert(ax.name);
    for (const ast::Expr& a : e->args) work.push_back(&a);
    for (const ast::Expr& w : e->where_) work.push_back(&w);
  }
  return {s.begin(), s.end()};
}

}  // namespace emmy
