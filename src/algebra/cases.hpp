// Case analysis: max, min and select split on the sign of a linear form; each case
// carries its premises, and premises that contradict each other prune the case.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "algebra/normal_form.hpp"

namespace emmy::algebra {

enum class Rel { Gt, Ge, Eq };  // form > 0, form >= 0, form == 0

struct Premise {
  LinearForm form;
  Rel rel;
  std::string str() const;
};

struct Case {
  std::vector<Premise> premises;
  std::string str() const;  // "a.m - b.m >= 0, b.m - c.m > 0" or "always"
};

// Thrown when a proof needs more work than the budget, or a comparison of
// non-linear values the procedure cannot decide.
struct Undecided {
  std::string why;
};

// The sign a linear form must have under the premises: -1, 0, 1, or 2 when open.
int implied_sign(const Case& c, const LinearForm& f);

// A case split's share of a normalization budget; a feasibility check (Fourier-Motzkin) costs
// 1. A budget of N * kCaseCost allows N cases, fewer when deciding them takes many checks.
constexpr int kCaseCost = 16;

// Normalizes a term in every case it splits into; `budget` caps the work: kCaseCost per case,
// 1 per feasibility check. Running out throws Undecided ("undecided (budget): ...").
struct Normalized {
  Case where;
  Fraction value;
};
std::vector<Normalized> normalize(const Term& t, const Case& within, int& budget);

// A case's equalities, each solved for one variable, in the order to substitute them.
// With `forced`, also the equalities its inequalities force (x >= y and y >= x): a
// Fourier–Motzkin run per premise, so solve once per leaf where a proof compares sides.
using Equalities = std::vector<std::pair<std::string, LinearForm>>;
// `budget` (as normalize's): pays for the feasibility checks of `forced`.
Equalities solve_equalities(const Case& c, bool forced = false, int* budget = nullptr);
Fraction apply_equalities(const Equalities& eqs, const Fraction& f);
inline Fraction apply_equalities(const Case& c, const Fraction& f) { return apply_equalities(solve_equalities(c), f); }

}  // namespace emmy::algebra
