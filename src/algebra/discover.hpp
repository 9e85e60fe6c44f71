// Finds secretly associative chains and proves the monoid each one becomes:
// - a max over an axis followed by sums weighted by exp(c·(x - max)), c > 0 (exp or exp2, the
//   scale folded in or not; decided on linear normal forms): one reduction with carrier
//   (m, d1, ..., dk), the online softmax of FlashAttention;
// - a mean over an axis followed by the sum of squared deviations from it: one
//   reduction with Welford's carrier (n, mean, M2);
// - a max followed by the first index where it is reached: argmax, carrier (m, index).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algebra/laws.hpp"
#include "sema/sema.hpp"

namespace emmy::algebra {

struct DiscoveredChain {
  std::string op;
  std::string summary;                       // one line for --explain
  std::string axis;                          // the reduced axis, as the max names it
  std::string max_stmt;                      // the chain's first statement: m, or the mean
  std::vector<std::string> sum_stmts;        // the statements it absorbs: l, o; the variance; the index
  std::vector<Rational> sum_scales;          // online chains: sum k's weight is exp(c_k·(x − m))
  MonoidTerms monoid;                        // the carrier built from the chain
  MonoidReport laws;                         // its proof
  std::vector<std::string> sum_normalizers;  // online chains: the denominator sum k divides by inside
                                             // (sum(j: w / l · v)), factored out by the lowering; "" none
};

std::vector<DiscoveredChain> discover_chains(const CheckedOp& op);

// An online chain's first `sums` sums (1 <= sums < its count): the same max and weights, a
// carrier without the later fields (no field's combine reads another's but the max's, so each
// prefix is a monoid of its own). Its laws are left unproved: the caller proves them. nullopt
// for another chain or count.
std::optional<DiscoveredChain> online_prefix(const DiscoveredChain& chain, size_t sums);

// The chain with its statements renamed by `name` (a call's inlined prefix, a forwarded copy's
// output), its carrier's fields too (they are the statements' names), and the carrier's terms'
// variables a.<field> and b.<field> with them: the same monoid, the same laws.
DiscoveredChain rename_statements(DiscoveredChain chain, const std::function<std::string(const std::string&)>& name);

// exp2(c·u) is exp(c·ln 2·u): that scale in base e, kept as a rational within 2^-40 of it, and
// exactly 1 when c is a rounded log2(e) (the spelling exp2((x - m) * 1.4426950408889634)).
std::optional<Rational> exp2_scale_in_base_e(Rational base2);

}  // namespace emmy::algebra
