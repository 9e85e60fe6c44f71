// The folds to_loops builds (the statements one pass over an axis computes through a proved
// monoid's carrier), and the one built apart: a discovered Welford chain as a single fold.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algebra/discover.hpp"
#include "ir/loop_ir.hpp"
#include "ir/tensor_ir.hpp"

namespace emmy::lower {

// One member of a fold: its statement, its carrier field and what an element lifts to.
struct Member {
  const tir::Stmt* stmt;
  lir::CarrierField field;
  tir::Stmt result;       // the statement with its reduction replaced by the carrier
  bool internal = false;  // a field that no statement reads out (Welford's count): no result
};

struct Fold {
  std::vector<Member> members;
  // A carrier with no vector field is folded once per row, before its reader: the reader
  // then reads the carrier registers (its rewritten value) inside its own loops.
  const tir::Stmt* rewritten_reader = nullptr;
  tir::Expr rewritten_value;
  // Row-wide outputs computed from the narrow members of a fold with a wide member (sdpa's row
  // log-sum-exp m + log(l)): computed and stored inside the wide member's loop, after the fold.
  std::vector<const tir::Stmt*> absorbed;
  tir::Axis axis;
  std::vector<tir::Expr> where;
  algebra::MonoidTerms terms;
  std::string summary;
};

// `chain` (algebra::discover_chains: mean[I] = sum(j: X) / N, then a statement reading
// sum(j: (X - mean) * (X - mean))) as one fold over j with Welford's carrier (n, mean, M2):
// the mean statement reads the mean field, the other statement the M2 field in place of its
// sum. nullopt, and two passes, where the tensor IR does not have that shape or either
// statement is in `materialized`.
std::optional<Fold> welford_fold(const tir::Program& program, const algebra::DiscoveredChain& chain,
                                 const std::vector<std::string>& materialized);

}  // namespace emmy::lower
