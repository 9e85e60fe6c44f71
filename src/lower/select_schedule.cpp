// Picks the schedule block an op is lowered with: the one labelled as asked, else the first
// guarded block whose guard holds at the run's sizes, else the unlabelled unguarded one; for an
// arch-specific target (sm_90a) without such a block, its base target's (sm_90).
#include <fmt/format.h>

#include "lower/passes.hpp"
#include "sema/size_expr.hpp"

namespace emmy::lower {

std::vector<std::string> main_ops(const CheckedProgram& program) {
  std::vector<std::string> out;
  for (const ast::Item& item : program.modules.front().ast.items)
    if (const auto* op = std::get_if<ast::OpDecl>(&item))
      out.push_back(op->name.name);
    else if (const auto* g = std::get_if<ast::GradDecl>(&item); g && program.ops.count(g->name.name))
      out.push_back(g->name.name);
  return out;
}

bool guard_holds(const CheckedSchedule& block, const std::map<std::string, int64_t>& sizes) {
  if (!block.decl->guard) return true;
  std::optional<int64_t> v = eval_size_expr(*block.decl->guard, sizes);
  return v && *v != 0;
}

std::vector<const CheckedSchedule*> default_candidates(const CheckedProgram& program, const std::string& op,
                                                       const TargetInfo& target) {
  std::vector<const CheckedSchedule*> out;
  for (const TargetInfo* t = &target; t; t = base_target(*t)) {
    const CheckedSchedule* fallback = nullptr;
    for (const CheckedSchedule& s : program.schedules) {
      if (s.decl->op.name != op || !s.target || s.target->name != t->name) continue;
      if (s.decl->guard)
        out.push_back(&s);
      else if (!s.decl->label)
        fallback = &s;
    }
    if (fallback) out.push_back(fallback);
  }
  out.push_back(nullptr);
  return out;
}

Warning unserved_block(const CheckedSchedule& block, const std::string& why) {
  const ast::ScheduleDecl& d = *block.decl;
  std::string text = fmt::format("schedule {} for {}{}{} cannot serve these sizes ({}); the next block is tried",
                                 d.op.name, d.target.name, d.label ? fmt::format(" as \"{}\"", d.label->name) : "",
                                 d.guard ? " (guarded)" : "", why);
  const KnobPlace& p = block.place;
  if (p.line == 0) return Warning("W056", text);
  std::string gutter(std::to_string(p.line).size(), ' ');
  return Warning("W056", text, fmt::format("{}:{}:{}", p.path, p.line, p.column + 1),
                 fmt::format(" {} | {}\n {} | {}^{}", p.line, p.line_text, gutter, std::string(p.column, ' '),
                             std::string(p.length > 1 ? p.length - 1 : 0, '~')));
}

std::variant<const CheckedSchedule*, std::string> select_schedule(const CheckedProgram& program, const std::string& op,
                                                                  const TargetInfo& target, const std::string& label,
                                                                  const std::map<std::string, int64_t>* sizes) {
  if (label.empty()) {
    for (const CheckedSchedule* s : default_candidates(program, op, target))
      if (!s || (s->decl->guard ? sizes && guard_holds(*s, *sizes) : true)) return s;
    return static_cast<const CheckedSchedule*>(nullptr);
  }
  std::vector<std::string> named;
  for (const TargetInfo* t = &target; t; t = base_target(*t)) {
    for (const CheckedSchedule& s : program.schedules) {
      if (s.decl->op.name != op || !s.target || s.target->name != t->name || !s.decl->label) continue;
      if (s.decl->label->name == label) return &s;
      named.push_back(s.decl->label->name);
    }
  }
  if (label == kAutoSchedule) return static_cast<const CheckedSchedule*>(nullptr);  // no block: the auto-schedule
  const TargetInfo* base = base_target(target);
  return fmt::format("op {} has no schedule named \"{}\" for {}{}{}", op, label, target.name,
                     base ? fmt::format(" or {}", base->name) : "",
                     named.empty() ? "" : fmt::format(" (named schedules: {})", fmt::join(named, ", ")));
}

}  // namespace emmy::lower
