// The lowering pipeline: the passes of passes.hpp in order, keeping each level's IR.
#include "lower/passes.hpp"

namespace emmy::lower {

Lowered lower_op(const CheckedProgram& program, const CheckedOp& op, const KnobSources& sources,
                 const TargetInfo& target, const std::vector<algebra::DiscoveredChain>* chains) {
  Lowered out;
  std::vector<algebra::DiscoveredChain> own;
  if (chains)
    for (const algebra::DiscoveredChain& c : *chains)
      if (c.op == op.decl->name.name) own.push_back(c);
  // None given (or an imported op, which the checker's list leaves out): discover and prove
  // here. An op without chains costs only the search.
  if (own.empty()) own = algebra::discover_chains(op);
  out.knobs = resolve_knobs(sources, target);
  out.tensor = to_tensor(program, op);
  tir::Program pointwise = inline_pointwise(out.tensor, out.knobs);
  out.loops = split_reduce(to_loops(pointwise, program, op, out.knobs, own), program, out.knobs);
  out.kernels = to_kernel(out.loops, program, out.knobs);
  return out;
}

}  // namespace emmy::lower
