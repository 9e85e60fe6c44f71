// The check of a computed tensor against the reference: every element within its bound,
// the relative L2 error within its tolerance, and a reference that is itself meaningful.
// Tolerances per dtype are documented in docs/running.md ("The check").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "interp/tensor_data.hpp"
#include "sema/sema.hpp"

namespace emmy {

// A reference that is NaN or infinite in more than this fraction of an output's elements makes
// the check fail: such inputs test nothing (every row empty, every value overflowed). The one
// place this rule is stated; tests of NaN propagation raise it for their own checks.
inline constexpr double kMaxNonFiniteReference = 0.01;

// What an output must meet. Elementwise: |got - ref| <= atol + rtol * |ref| + rel_l2 * rms(ref)
// for every element whose reference is finite (rms over those elements: an element where a sum's
// terms cancel carries the terms' rounding, not its own size's); a NaN reference needs a NaN, an
// infinite one the same infinity.
struct Tolerance {
  constexpr Tolerance(double rel_l2_ = 0, double atol_ = 0, double rtol_ = 0,
                      double max_non_finite_reference_ = kMaxNonFiniteReference)
      : rel_l2(rel_l2_), atol(atol_), rtol(rtol_), max_non_finite_reference(max_non_finite_reference_) {}
  double rel_l2;  // on ||got - ref|| / max(||ref||, atol * sqrt(n)), finite reference elements
  double atol, rtol;
  double max_non_finite_reference;  // fraction of the elements
};

struct Comparison {
  double rel_l2 = 0;
  double max_abs = 0;  // the largest |got - ref| (infinite for a non-finite mismatch)
  size_t worst = 0;    // flat index of the element farthest past (or nearest) its bound
  double worst_got = 0, worst_want = 0;
  size_t elements = 0;
  size_t off = 0;         // elements outside their bound (non-finite mismatches included)
  size_t non_finite = 0;  // NaN/Inf in `got` where the reference is finite
  size_t reference_nan = 0, reference_inf = 0;
  double reference_rms = 0;     // over the finite reference elements
  double worst_excess = 0;      // the worst element's error over its bound (above 1: off; infinite: non-finite)
  bool ok = false;              // shapes equal, off == 0, rel_l2 within tolerance, reference meaningful
  std::string shape_error;      // non-empty when shapes differ
  std::string reference_error;  // non-empty when the reference is too often NaN or infinite
};
Comparison compare(const HostTensor& got, const HostTensor& ref, const Tolerance& tolerance);

// Whether a failed comparison is within what the op's own roundings make: `peers` compare with
// the reference the references whose narrowing casts' arguments were jittered, and the one
// computed in f32 arithmetic (ReferenceOptions). Where one of them is off too (the op is that
// ill-conditioned at these inputs), the kernel may be off by up to kPeerFactor times the worst of
// them: elementwise (relative to the elements' bounds) and in L2, each figure on its own; the
// reference must be meaningful and the kernel's elements finite where it is.
inline constexpr double kPeerFactor = 2;
// The jitter of a narrowing cast's argument (ReferenceOptions::cast_jitter): an f32 sum of a few
// thousand terms in another order is off by about this fraction; and the jittered references.
inline constexpr double kCastJitter = 0x1p-18;
inline constexpr int kJitteredReferences = 3;
bool within_peers(const Comparison& kernel, const std::vector<Comparison>& peers, const Tolerance& tolerance);
// Each peer reference's output `name` compared with `ref` (the peers: cast_jittered_references).
std::vector<Comparison> peer_comparisons(const std::string& name, const HostTensor& ref,
                                         const std::vector<TensorMap>& peers, const Tolerance& tolerance);

// The tolerance for an output of `dtype` (the table of docs/running.md; integers and bool exact).
Tolerance tolerance_for(DType dtype);
// The tolerance for an output of `op`: that of the least precise float among the op's
// tensors, since a value rounded to f16 on the way (x + r of two f16 tensors is an f16)
// carries f16's error into an f32 output.
Tolerance tolerance_for(const CheckedOp& op, DType output);

// "[0, 1, 5]": a flat index as a multi-index of `shape` (a scalar: "[]").
std::string index_text(size_t flat, const std::vector<int64_t>& shape);

// Why a comparison failed, on one line: "2 of 512 elements off, worst o[0, 3]: got 5.1e-01,
// want 4.9e-01 (bound 5.9e-03)", "rel L2 3.1e-02 > 5.0e-03", "the reference is NaN in 100%
// of o (512 of 512): these inputs check nothing"; "" when it passed.
std::string failure_reason(const std::string& name, const Comparison& c, const Tolerance& tolerance,
                           const std::vector<int64_t>& shape);

}  // namespace emmy
