// Counterexamples to a law: points where its two sides differ, found by search or solved
// from a failing case of the proof, each re-checked by exact and IEEE evaluation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algebra/cases.hpp"
#include "algebra/laws.hpp"

namespace emmy::algebra {

// The two sides of a law, per field, over the carriers' variables ("a.x", "b.x", ...).
struct Sides {
  std::string lhs_name, rhs_name;
  std::vector<Term> lhs, rhs;
  std::vector<std::string> carriers;  // "a", "b", "c": the variables' owners, for printing
};

struct Refutation {
  std::string counterexample;  // "lhs = 1 but rhs = 2 at a = 0, b = 1"
  std::string witness;         // the point, where it came from, and both evaluations
};

// Small: small integers, reals in [-4, 4] and a small grid, shrunk toward small integers
// (readable counterexamples). NoGrid: the same without the grid (the belt-and-braces check
// of a proof). Wide: magnitudes up to 1e6, powers of two, -0 and the identity's values
// (its infinities too), where a difference counts only if exact arithmetic confirms it (or,
// with exp/log, at inputs of magnitude <= 64 or infinite, where both IEEE sides are
// finite or an input is infinite).
// Each search evaluates at most a fixed amount of term nodes: with large sides it tries fewer
// points, and sets `exhausted` when it stopped short of all it meant to try.
enum class Search { Small, NoGrid, Wide };
std::optional<Refutation> search(const MonoidTerms& m, const Sides& s, const Case& domain, Search how,
                                 bool* exhausted = nullptr);

// Solves each failing case's premises for points (several per case) and reports the first
// where the sides evaluate differently.
std::optional<Refutation> from_cases(const MonoidTerms& m, const Sides& s, const std::vector<Case>& failing);

}  // namespace emmy::algebra
