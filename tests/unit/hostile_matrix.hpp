// The hostile inputs of the schedule matrices (unit tests on the interpreter, tests/gpu/ on
// the device): which kinds run, when their reference is meaningful, and the check itself.
#pragma once

#include <cmath>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"

namespace emmy::test {

// The kinds the matrices run: every kind (kHostileKinds) — large magnitudes, subnormals, NaN,
// and -inf rows, leading, trailing and over the first half of every row (issue 23).
inline constexpr auto& kMatrixHostileKinds = kHostileKinds;

// The interpreter matrix over every scalar-tier schedule (test_schedules.cpp) runs large and
// subnormal inputs under each schedule and one propagating kind (NaN, -inf rows of each shape)
// a schedule in turn, the i-th schedule the (i mod 5)-th: an op's first five schedules meet all
// five. The full product is the GPU matrix's (tests/gpu/).
inline std::vector<HostileKind> rotated_hostile_kinds(size_t schedule_index) {
  static constexpr HostileKind kTurns[] = {HostileKind::LeadingNegInf, HostileKind::NegInfPrefix, HostileKind::NaN,
                                           HostileKind::TrailingNegInf, HostileKind::NegInfRows};
  return {HostileKind::Large, HostileKind::Denormal, kTurns[schedule_index % std::size(kTurns)]};
}

// Where a kernel is known to differ from the reference on hostile inputs, and why (issue 23's
// notes); nullptr elsewhere. The tensor-core tier's P @ V multiplies a key masked for a row by its
// weight 0, and 0 * inf is NaN: an infinite value row at a key outside some query's window
// (sliding-window attention, the -inf rows kind puts -inf in v's first row) turns those rows
// NaN where the reference skips the key. The scalar tier skips it as the reference does.
// (window_attention: examples/sliding_window.emmy; window: tests/unit/programs/fold_variants.emmy.)
inline const char* known_divergence(const std::string& op, const std::string& schedule, HostileKind kind) {
  const bool tensor_core = schedule.find("mma_") != std::string::npos;
  if (tensor_core && kind == HostileKind::NegInfRows && (op == "window_attention" || op == "window"))
    return "the tensor-core P @ V multiplies masked keys' value rows by 0 (0 * inf = NaN)";
  return nullptr;
}

// Where a schedule rounds what the reference does not, past the elementwise bound on ordinary
// inputs, and why; nullptr elsewhere. A cut of an inlined op's f16 output stores it in f16 (the
// callee's declared type, which its tensor-core consumer reads), the reference keeps it exact:
// causal_self_attention's y sums 640 products of sdpa_causal's rounded o (H = 40, D = 16), and
// at a few elements that rounding (rms 3e-3) goes past the f16 bound (5e-3 + 1e-2 |y|). Its own
// block cuts o the same way (PLACE@o=cut, examples/causal_attention.emmy).
inline const char* known_rounding(const std::string& op, const std::string& schedule) {
  if (op == "causal_self_attention" && schedule.find("PLACE=cut") != std::string::npos)
    return "sdpa_causal's f16 output o is stored in f16 by the cut; y sums 640 products of it";
  return nullptr;
}

// NaN and -inf inputs test propagation: the reference is NaN or infinite wherever they reach,
// and the output must be so at the same places, however many those are.
inline bool propagates(HostileKind kind) { return kind != HostileKind::Large && kind != HostileKind::Denormal; }

inline Tolerance hostile_tolerance(const CheckedOp& op, DType output, HostileKind kind) {
  Tolerance t = tolerance_for(op, output);
  if (propagates(kind)) t.max_non_finite_reference = 1.0;
  // The absolute tolerance is stated for inputs of magnitude about 1: inputs kHostileScale
  // times larger carry 16-bit rounding (of P in attention, of intermediates) that much larger.
  if (kind == HostileKind::Large) t.atol *= kHostileScale;
  return t;
}

// Whether every output of `ref` is finite in all but the allowed fraction of its elements: a
// check against it means something (unbiased variance over one row, 0 / 0, does not).
inline bool reference_finite(const TensorMap& ref) {
  for (const auto& [name, t] : ref) {
    size_t bad = 0;
    for (double v : t.data) bad += !std::isfinite(v);
    if (static_cast<double>(bad) > kMaxNonFiniteReference * static_cast<double>(t.data.size())) return false;
  }
  return true;
}

// Whether no output of `ref` exceeds `bound` in magnitude.
inline bool reference_within(const TensorMap& ref, double bound) {
  for (const auto& [name, t] : ref)
    for (double v : t.data)
      if (std::fabs(v) > bound) return false;
  return true;
}

// Whether a check on `kind` inputs means something: for the propagating kinds always; for
// subnormal values where the reference stays finite (an output that overflows in exact
// arithmetic is not one a kernel can be asked to produce); for large ones where, besides, no
// output grows past twice the inputs' magnitude: large inputs test the range of exp (softmax,
// attention), while a chain of products (x W, then a product with it again: 250 from inputs of
// 12) carries the rounding of its 16-bit intermediates at that magnitude, which the exact
// reference does not have.
inline bool reference_meaningful(const TensorMap& ref, HostileKind kind) {
  if (propagates(kind)) return true;
  if (!reference_finite(ref)) return false;
  return kind != HostileKind::Large || reference_within(ref, 2 * kHostileScale);
}

// "" when every output in `got` passes its check (on inputs of `kind`, or ordinary ones); else
// why each did not.
inline std::string output_failures(const CheckedOp& op, const TensorMap& got, const TensorMap& ref,
                                   std::optional<HostileKind> kind = std::nullopt) {
  std::vector<std::string> why;
  for (const auto& [name, want] : ref) {
    auto it = got.find(name);
    if (it == got.end()) {
      why.push_back(name + ": never written");
      continue;
    }
    const Tolerance tol = kind ? hostile_tolerance(op, want.dtype, *kind) : tolerance_for(op, want.dtype);
    const Comparison c = compare(it->second, want, tol);
    if (!c.ok) why.push_back(fmt::format("{}: {}", name, failure_reason(name, c, tol, want.shape)));
  }
  return fmt::format("{}", fmt::join(why, "; "));
}

// The op under `knobs` for `target`, verified and interpreted (its blocks in a shuffled order, the
// shuffle's `seed`) at `sizes`, on random inputs or hostile ones of `kind` (seeded `seed` too),
// against the float64 reference: "" when every output passes, else why not; nullopt where the
// reference checks nothing (hostile inputs whose exact result overflows, a non-finite one).
inline std::optional<std::string> interpreted_against_reference(const CheckedProgram& program, const CheckedOp& op,
                                                                const std::string& knobs, const SizeBindings& sizes,
                                                                const TargetInfo& target, uint64_t seed,
                                                                std::optional<HostileKind> kind = std::nullopt) {
  lower::Lowered low = lower::lower_op(program, op, {nullptr, "", knobs}, target);
  std::vector<std::string> problems = verify_program(low.kernels);
  if (!problems.empty()) return fmt::format("verify: {}", fmt::join(problems, "\n"));
  TensorMap inputs = kind ? hostile_inputs(op, sizes, seed, *kind) : random_inputs(op, sizes, seed);
  TensorMap want = evaluate_reference(program, op, sizes, inputs);
  if (kind ? !reference_meaningful(want, *kind) : !reference_finite(want)) return std::nullopt;
  TensorMap got = inputs;
  SimtOptions so;
  so.shuffle_blocks = true;
  so.seed = seed;
  run_simt(low.kernels, sizes, got, so);
  return output_failures(op, got, want, kind);
}

}  // namespace emmy::test
