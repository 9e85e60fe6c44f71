// The chains of the ops a program inlined, renamed as inlined (passes.hpp).
#include "lower/passes.hpp"

namespace emmy::lower {

std::vector<algebra::DiscoveredChain> inlined_chains(const tir::Program& program, const CheckedProgram& checked,
                                                     const std::vector<algebra::DiscoveredChain>* known) {
  std::vector<algebra::DiscoveredChain> out;
  for (const std::pair<std::string, std::string>& call : program.inlined) {
    const std::string &callee = call.first, &prefix = call.second;
    auto op = checked.ops.find(callee);
    if (op == checked.ops.end()) continue;
    std::vector<algebra::DiscoveredChain> chains;
    if (known)
      for (const algebra::DiscoveredChain& c : *known)
        if (c.op == callee) chains.push_back(c);
    if (chains.empty()) chains = algebra::discover_chains(op->second);
    for (const algebra::DiscoveredChain& chain : chains) {
      algebra::DiscoveredChain c = algebra::rename_statements(chain, [&](const std::string& n) { return prefix + n; });
      c.op = program.op;
      // Only where its head is there under its inlined name (to_loops folds what it finds whole).
      if (program.def(c.max_stmt)) out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace emmy::lower
