// PLACE's decisions for to_loops: which statements kernels of their own write to global memory
// before the main kernels, and why.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "algebra/discover.hpp"
#include "ir/tensor_ir.hpp"
#include "lower/passes.hpp"

namespace emmy::lower {

struct Placement {
  std::vector<std::string> materialized;  // written by kernels of their own, in statement order
  std::set<std::string> group_results;    // of those, the intermediates a kernel of their own group writes
  // Of those, the statements of a chain one kernel folds together: each -> the chain's head.
  std::map<std::string, std::string> fold_head;
  std::vector<std::string> decisions;  // why, one line each
};

// Per seam, whether a producer is recomputed where it is read (fuse) or written to global memory
// by a kernel of its own (cut); then the reductions a fused read would recompute for every
// element of another (kernel_groups.hpp's per_element_recomputes), each with its chain's other
// statements; then whatever those kernels read. Throws LowerError where PLACE would cut a
// monoid carrier.
Placement decide_placement(const tir::Program& p, const Knobs& knobs,
                           const std::vector<algebra::DiscoveredChain>& chains);

// A chain to_loops may fold as one reduction: online, argmax or Welford, its combine proved
// associative with a two-sided identity (proofs, not tests, license the reordering).
bool proved_foldable(const algebra::DiscoveredChain& chain);

// Every read of `tensor` in `e` indexes it by plain index variables of `vars`.
bool reads_row_local(const tir::Expr& e, const std::string& tensor, const std::vector<tir::Axis>& vars);
// Whether `e` reads `tensor`, and only at the point `vars` names, in order (acc[m, n] in
// c[m, n] = gelu(acc[m, n])): one element of it for each point of the reader.
bool reads_at_point(const tir::Expr& e, const std::string& tensor, const std::vector<tir::Axis>& vars);
// Whether reduction `y` is an epilogue input of pointwise statement `x`: x reads it only at x's
// own point (c[m, n] = gelu(acc[m, n])) and y reads only inputs and the intermediates in `cut`, so
// a kernel writing x computes it once a point (a contraction and its epilogue on the tensor cores).
bool epilogue_input(const tir::Program& p, const tir::Stmt& x, const tir::Stmt& y,
                    const std::set<std::string>& cut = {});

}  // namespace emmy::lower
