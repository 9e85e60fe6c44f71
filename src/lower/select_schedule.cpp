// Picks the schedule block an op is lowered with: the one labelled as asked, else the unlabelled
// one; for an arch-specific target (sm_90a) without that block, its base target's (sm_90).
#include <fmt/format.h>

#include "lower/passes.hpp"

namespace emmy::lower {

std::vector<std::string> main_ops(const CheckedProgram& program) {
  std::vector<std::string> out;
  for (const ast::Item& item : program.modules.front().ast.items)
    if (const auto* op = std::get_if<ast::OpDecl>(&item)) out.push_back(op->name.name);
  return out;
}

std::variant<const CheckedSchedule*, std::string> select_schedule(const CheckedProgram& program, const std::string& op,
                                                                  const TargetInfo& target, const std::string& label) {
  std::vector<std::string> named;
  for (const TargetInfo* t = &target; t; t = base_target(*t)) {
    const CheckedSchedule* found = nullptr;
    for (const CheckedSchedule& s : program.schedules) {
      if (s.decl->op.name != op || !s.target || s.target->name != t->name) continue;
      std::string own = s.decl->label ? s.decl->label->name : "";
      if (!own.empty()) named.push_back(own);
      if (own == label) found = &s;
    }
    if (found) return found;
  }
  if (!label.empty()) {
    const TargetInfo* base = base_target(target);
    return fmt::format("op {} has no schedule named \"{}\" for {}{}{}", op, label, target.name,
                       base ? fmt::format(" or {}", base->name) : "",
                       named.empty() ? "" : fmt::format(" (named schedules: {})", fmt::join(named, ", ")));
  }
  return static_cast<const CheckedSchedule*>(nullptr);
}

}  // namespace emmy::lower
