// Which statements share a kernel (to_loops): outputs grouped by their thread spaces, and the
// reductions a fused read would recompute for every element of another reduction.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/tensor_ir.hpp"

namespace emmy::lower {

// "b, h, i": the variables' names, joined.
std::string vars_text(const std::vector<tir::Axis>& vars);

// A fused reduction read at an element of another reduction's axis and constant along one of
// the reader's own variables (dl[b, h, i] inside dk[b, h, j, d]'s sum over i, through dp: the
// same value for every j) would be recomputed for every element of that sum and every thread
// along that variable: a cost the seams above do not see, since each single read is on the
// reader's own row. Such a reduction gets a kernel of its own, unless PLACE@x=fuse says
// otherwise (PLACE@x: `place_at`). (The reader's last variable is left out: a vector field's
// register tile covers it.) `materialized`: the statements written by kernels of their own so far.
std::set<std::string> per_element_recomputes(const tir::Program& p, const std::set<std::string>& materialized,
                                             const std::map<std::string, bool>& place_at);

// The statements the kernels after the materialized ones compute, one list a kernel, and the
// decisions that say why. Outputs
// whose index variables are not a prefix one of the other (dq[b, h, i, d] beside dk[b, h, j, d])
// share no thread space but a common prefix (b, h), too few threads: each such group of
// outputs gets a kernel of its own, with the intermediates it reads (recomputed in each). One
// group (every output a prefix of another: layernorm's mean[n] and y[n, c]) is one kernel.
// Outputs `siblings` says fold the same keys at the same rows (to_loops' sibling sums) share one.
// `group_results`: intermediates a kernel of their own group writes (they group like outputs),
// each group of its own unless `one_fold` says two are statements of one chain's fold.
struct OutputGroups {
  std::vector<std::vector<const tir::Stmt*>> groups;
  std::vector<std::string> decisions;
};
using StmtPair = std::function<bool(const tir::Stmt&, const tir::Stmt&)>;
OutputGroups group_outputs(const tir::Program& p, const std::vector<std::string>& materialized,
                           const std::set<std::string>& group_results, const StmtPair& siblings,
                           const StmtPair& one_fold);

}  // namespace emmy::lower
