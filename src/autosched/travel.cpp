// An inlined library op brings its schedule block into its caller (travel.hpp).
#include "autosched/travel.hpp"

#include <variant>

#include <fmt/format.h>

#include "lower/passes.hpp"
#include "schedule/knobs.hpp"

namespace emmy::autosched {

std::optional<Travel> travelling_schedule(const CheckedProgram& program, const CheckedOp& op,
                                          const TargetInfo& target) {
  // Only around an op that adds elementwise work to the call: a caller with reductions of its own
  // (an MLP calling rmsnorm) is not shaped like the callee its block was written for.
  if (op.calls.size() != 1 || !op.reductions.empty()) return std::nullopt;
  const std::string& name = op.calls.front().first;
  auto callee = program.ops.find(name);
  if (callee == program.ops.end() || !callee->second.calls.empty()) return std::nullopt;
  const auto picked = lower::select_schedule(program, name, target, "");
  const auto* block = std::get_if<const CheckedSchedule*>(&picked);
  if (!block || lower::is_auto(*block)) return std::nullopt;
  // to_tensor names the statements of a program's first inlined call <callee>1_<statement>; index
  // variables keep their names.
  const std::string prefix = name + "1_";
  std::vector<std::string> knobs;
  for (KnobSetting s : (*block)->knobs) {
    if (!s.site.empty() && callee->second.find(s.site)) s.site = prefix + s.site;
    knobs.push_back(print_knob(s));
  }
  const CheckedSchedule& b = **block;
  return Travel{std::move(knobs), fmt::format("the block of {} for {}{} ({}:{})", name, b.target->name,
                                              b.decl->label ? fmt::format(" \"{}\"", b.decl->label->name) : "",
                                              b.place.path, b.place.line)};
}

}  // namespace emmy::autosched
