// The algebra layer's entry: proves or refutes the laws of a monoid (associativity,
// two-sided identity, commutativity) and explains the verdict.
#pragma once

#include <string>
#include <vector>

#include "algebra/term.hpp"

namespace emmy::algebra {

// A monoid as terms: combine's result per field over the variables "a.f" and "b.f".
struct MonoidTerms {
  std::string name;
  std::vector<std::string> fields;
  std::vector<Term> identity;            // per field
  std::vector<Term> combine;             // per field
  std::vector<Term> lift;                // per field, over the lift's parameters (empty: no lift)
  std::vector<std::string> bool_fields;  // fields that hold 0 or 1 (dtype bool)
  std::vector<std::string> int_fields;   // fields that hold integers (i32, i64)
};

enum class Outcome { Proved, Refuted, Unproved };

struct LawReport {
  std::string law;  // "associative", "identity", "commutative"
  Outcome outcome = Outcome::Unproved;
  std::vector<std::string> proof;  // one line per case: premises and the common normal form
  std::string counterexample;      // for Refuted: the values and both sides, as evaluated
  std::string witness;             // for Refuted: where the point came from and how it was re-checked
  std::string why;                 // for Unproved: what stopped the procedure
};

struct MonoidReport {
  std::string name;
  LawReport associative, identity, commutative;
  std::vector<std::string> domain;  // invariants of carriers built by lift and combine: "n > 0"
  std::vector<std::string> notes;   // e.g. the -inf - -inf hazard of an online-softmax identity
};

MonoidReport check_laws(const MonoidTerms& m);

// Whether combine(identity, x) or combine(x, identity) is NaN in a field for some x without NaN
// (IEEE, with Emmy's rules: support/ieee_rules.hpp), as Welford's 0 * inf at a mean of -inf. A
// fold of such a monoid starts from its first element, not from the identity — the identity
// law makes the two equal in exact arithmetic — in the reference and in every kernel alike.
bool identity_unsafe(const MonoidTerms& m);

// Whether the identity changes no carrier a one-field fold started from it can hold:
// combine(identity, v) and combine(v, identity) are v bit for bit (NaN for NaN, -0 for -0), by
// evaluation, for every v reached from the identity by two rounds of combining elements (the
// field's kind's points). Then a thread's share that combined no element can be combined like
// any other (COOP's lanes carry no flag for it): sum (-0 is never reached from +0), prod, max,
// min. A carrier of several fields (online softmax) answers false.
bool identity_exact(const MonoidTerms& m);

// Whether combine(a, b) and combine(b, a) are the same bits in every field: the terms equal once a
// and b are swapped, the operands of a two-operand +, *, max, min, ==, !=, and, or taken in either
// order (each is commutative bit for bit), and re-checked by evaluation over the fields' points
// (-0 against +0 included: max and min, which may return either zero, answer false). Then a
// butterfly's two lanes need not put the lower lane's share first to end with the same carrier.
bool combine_symmetric(const MonoidTerms& m);

// The report as `emmyc check --explain` prints it.
std::string explain(const MonoidReport& r);

}  // namespace emmy::algebra
