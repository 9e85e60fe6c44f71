// Finds secretly associative chains and proves the monoid each one becomes:
// - a max over an axis followed by sums weighted by exp(x - max): one reduction with
//   carrier (m, d1, ..., dk), the online softmax of FlashAttention;
// - a mean over an axis followed by the sum of squared deviations from it: one
//   reduction with Welford's carrier (n, mean, M2);
// - a max followed by the first index where it is reached: argmax, carrier (m, index).
#pragma once

#include <string>
#include <vector>

#include "algebra/laws.hpp"
#include "sema/sema.hpp"

namespace emmy::algebra {

struct DiscoveredChain {
  std::string op;
  std::string summary;                 // one line for --explain
  std::string axis;                    // the reduced axis, as the max names it
  std::string max_stmt;                // the chain's first statement: m, or the mean
  std::vector<std::string> sum_stmts;  // the statements it absorbs: l, o; the variance; the index
  MonoidTerms monoid;                  // the carrier built from the chain
  MonoidReport laws;                   // its proof
};

std::vector<DiscoveredChain> discover_chains(const CheckedOp& op);

}  // namespace emmy::algebra
