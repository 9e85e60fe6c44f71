// Adds, for each online chain whose sums reach past its intermediates (a derived backward's dq
// folded with the forward's m, l and o_sum), the chain of the intermediates before the first
// other statement, its laws proved: the fold a kernel of its own may run when to_loops cuts them.
#include "lower/passes.hpp"

namespace emmy::lower {

std::vector<algebra::DiscoveredChain> chain_prefixes(const tir::Program& program,
                                                     std::vector<algebra::DiscoveredChain> chains,
                                                     const LawMemo& laws) {
  auto plain_intermediate = [&](const std::string& name) {
    const tir::Tensor* t = program.find(name);
    return t && program.def(name) && t->role == tir::Tensor::Role::Intermediate && t->record.empty();
  };
  const size_t given = chains.size();
  for (size_t i = 0; i < given; ++i) {
    const algebra::DiscoveredChain& c = chains[i];
    if (!plain_intermediate(c.max_stmt)) continue;
    size_t sums = 0;  // the sums of intermediates before the first other statement
    while (sums < c.sum_stmts.size() && plain_intermediate(c.sum_stmts[sums])) ++sums;
    // A prefix ends at a statement: a second sum of the last one (l_2) stays with it.
    while (sums > 0 && sums < c.sum_stmts.size() && !program.def(c.sum_stmts[sums])) --sums;
    if (std::optional<algebra::DiscoveredChain> prefix = algebra::online_prefix(c, sums)) {
      prefix->laws = laws.check(prefix->monoid);
      chains.push_back(std::move(*prefix));
    }
  }
  return chains;
}

}  // namespace emmy::lower
