// Emmy's two departures from IEEE arithmetic, in one place for the prover's numeric checks,
// the reference, the interpreter and the kernels (docs/language.md, "Infinities and NaN"):
// - inside exp (and exp2), a difference a - b of two -inf is -inf, so the exp is 0 rather than
//   NaN: a row of -inf meets the running maximum -inf (online softmax, the max identity);
// - max and min propagate NaN (PyTorch's rule; C's fmax drops it).
#pragma once

namespace emmy {

// a - b, except that -inf - -inf is -inf.
double exp_difference(double a, double b);

// NaN if either is NaN, else the larger (smaller).
double max_nan(double a, double b);
double min_nan(double a, double b);

}  // namespace emmy
