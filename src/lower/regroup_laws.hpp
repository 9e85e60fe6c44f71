// The one question every lowering that reorders or regroups a reduction asks: are the laws
// this regrouping needs proved for the monoid being lowered (or vouched for with `assume`)?
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algebra/laws.hpp"
#include "lower/passes.hpp"

namespace emmy::lower {

// What a lowering does to the order in which a reduction's elements are combined.
enum class Regroup {
  Tree,     // partial carriers of contiguous ranges combined in another grouping: associativity
  Reorder,  // elements taken out of order as well (strided shares, mma sums): + commutativity
  Atomic,   // partials combined by hardware atomics, in any order: + commutativity + an atomic form
};

// A monoid's standing, as the prover found it on the very terms being lowered.
struct MonoidLaws {
  std::string monoid;
  algebra::Outcome associative = algebra::Outcome::Unproved;
  algebra::Outcome commutative = algebra::Outcome::Unproved;
  bool user = false;  // declared in the program: `assume` can vouch for a law
  bool assumed_associative = false, assumed_commutative = false;
  std::string why_associative, why_commutative;  // the prover's counterexample or reason
  std::optional<std::string> atomic;             // "sum", "max" or "min": combine is one field's a + b, max, min
  size_t fields = 0;                             // the carrier's
};

// Proves the laws of `terms` (the fold's monoid: a built-in's table row, a user monoid, a
// discovered chain). A user monoid of `checked` is proved from its declaration (with its lift,
// so the carrier's domain is known) and brings its `assume` lines.
// `memo` (may be null) keeps verdicts for the next lowering that asks.
MonoidLaws monoid_laws(const algebra::MonoidTerms& terms, const CheckedProgram& checked, const LawMemo* memo = nullptr);
// The standing of a monoid the algebra layer already proved (a discovered chain's report).
MonoidLaws monoid_laws(const algebra::MonoidReport& report);

// The laws `how` needs that `laws` has neither proved nor assumed, in words ("associativity");
// empty when the regrouping is licensed.
std::vector<std::string> missing_laws(const MonoidLaws& laws, Regroup how);
// The laws `how` needs that are only assumed (`assume associative;`): each a warning.
std::vector<std::string> assumed_laws(const MonoidLaws& laws, Regroup how);

// Throws a located LowerError at the knob when `how` is not licensed for `laws`: "REDUCE=g4k
// splits the reduction over c, which needs monoid capped to be associative: the prover could
// not decide it ..."; a law that is only assumed appends a warning to `warnings`. `what` says
// what the knob does to the reduction ("splits the reduction over c into 4 groups").
void require_laws(const MonoidLaws& laws, Regroup how, const KnobUse& knob, const std::string& what,
                  std::vector<Warning>& warnings);

}  // namespace emmy::lower
