// The scalar tier: turns each loop-IR kernel into kernel IR — one thread per point of the
// kernel's thread space, reductions as serial loops whose carriers follow the monoid's
// combine, folds as one loop, register tiles unrolled with guarded tails, 64-bit indices.
#include "lower/kernel/builder.hpp"

namespace emmy::lower {

kir::Program to_kernel(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
                       std::vector<KernelPlan>* plans) {
  detail::KernelBuilder builder(program, checked, knobs);
  kir::Program out = builder.run();
  if (plans) *plans = builder.plans();
  return out;
}

}  // namespace emmy::lower
