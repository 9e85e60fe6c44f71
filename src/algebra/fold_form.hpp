// How each field of a monoid combines, read off the normal forms of its combine and identity:
// the pivot (max, identity -inf), the fields it rescales (a.f * exp(c·(a.k - M)) + b.f * exp(c·(b.k - M))
// with M the new pivot and c > 0, identity 0: the online softmax's carrier class), plain sums, maxima and
// minima; any other field is General. A tensor-core fold generates its per-block update from it.
#pragma once

#include <optional>
#include <vector>

#include "algebra/laws.hpp"

namespace emmy::algebra {

enum class FieldLaw {
  Pivot,     // max(a.f, b.f), identity -inf, and some field is rescaled by it
  Rescaled,  // a.f * exp(c·(a.k - M)) + b.f * exp(c·(b.k - M)), k the pivot, c > 0 one scale, identity 0
  Sum,       // a.f + b.f, identity 0
  Max,       // max(a.f, b.f), identity -inf (no field rescaled by it)
  Min,       // min(a.f, b.f), identity +inf
  General,   // anything else: combined as the monoid's combine says
};

struct FoldForm {
  std::vector<FieldLaw> laws;  // per field
  std::optional<size_t> pivot;
  Rational scale = Rational::of(1);  // the rescaled fields' exp(scale·(a.k - M)), scale > 0
  // The pivot and fields it rescales only, at least one of them (the "max-rescaled sum"): a
  // chunk of elements x_j with weights w_j reduces at once to (max x, sum exp(x_j - max) w_j).
  bool rescaled_sum() const;
};

const char* law_name(FieldLaw law);

// Decided on normal forms in every case (not by evaluation); a field whose difference from a
// class's shape is undecided is General.
FoldForm fold_form(const MonoidTerms& m);

}  // namespace emmy::algebra
