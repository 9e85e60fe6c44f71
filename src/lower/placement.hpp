// PLACE's decisions for to_loops: which statements kernels of their own write to global memory
// before the main kernels, and why.
#pragma once

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
  std::vector<std::string> decisions;     // why, one line each
};

// Per seam, whether a producer is recomputed where it is read (fuse) or written to global memory
// by a kernel of its own (cut); then the reductions a fused read would recompute for every
// element of another (kernel_groups.hpp's per_element_recomputes), each with its chain's other
// statements; then whatever those kernels read. Throws LowerError where PLACE would cut a
// monoid carrier.
Placement decide_placement(const tir::Program& p, const Knobs& knobs,
                           const std::vector<algebra::DiscoveredChain>& chains);

// The other statements of a foldable chain that `name` belongs to (a proved online, argmax or
// Welford chain whose head PLACE fuses) whose statements are all plain intermediates nobody
// cut (chain_prefixes adds such a chain for a longer one): none if no chain qualifies.
std::vector<std::string> chain_mates(const tir::Program& p, const Knobs& knobs,
                                     const std::vector<algebra::DiscoveredChain>& chains, const std::string& name,
                                     const std::set<std::string>& cut);

// Every read of `tensor` in `e` indexes it by plain index variables of `vars`.
bool reads_row_local(const tir::Expr& e, const std::string& tensor, const std::vector<tir::Axis>& vars);

}  // namespace emmy::lower
