// Turns each loop-IR kernel into kernel IR: a plan first (its tier, and the tensor-core tier's
// tiles and slabs, or why that tier refuses), then the tier's emitter — the tensor-core tier
// (kernel/mma/), cooperative rows (kernel/coop.cpp) or the scalar tier (kernel/scalar.cpp).
#include "lower/kernel/builder.hpp"

namespace emmy::lower {

kir::Program to_kernel(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
                       std::vector<KernelPlan>* plans, const LawMemo* laws, KernelBodies bodies) {
  detail::KernelBuilder builder(program, checked, knobs, laws, bodies);
  kir::Program out = builder.run();
  if (plans) *plans = builder.plans();
  return out;
}

}  // namespace emmy::lower
