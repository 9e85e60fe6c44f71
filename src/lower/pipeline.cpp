// The lowering pipeline: the passes of passes.hpp in order, keeping each level's IR.
#include "lower/passes.hpp"

namespace emmy::lower {

Lowered lower_op(const CheckedProgram& program, const CheckedOp& op, const KnobSources& sources,
                 const TargetInfo& target) {
  Lowered out;
  out.knobs = resolve_knobs(sources, target);
  out.tensor = to_tensor(program, op);
  tir::Program pointwise = inline_pointwise(out.tensor, out.knobs);
  out.loops = to_loops(pointwise, program, op, out.knobs);
  out.kernels = to_kernel(out.loops, program, out.knobs);
  return out;
}

}  // namespace emmy::lower
