// The chains of the ops a program inlined, renamed as inlined (passes.hpp).
#include "lower/passes.hpp"

#include <algorithm>
#include <functional>
#include <set>

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

std::vector<algebra::DiscoveredChain> with_callee_chains(const CheckedProgram& checked, const CheckedOp& op,
                                                         const std::vector<algebra::DiscoveredChain>* known) {
  std::vector<algebra::DiscoveredChain> out = known ? *known : std::vector<algebra::DiscoveredChain>{};
  std::set<std::string> seen;
  std::function<void(const CheckedOp&)> add = [&](const CheckedOp& o) {
    const std::string& name = o.decl->name.name;
    if (!seen.insert(name).second) return;
    if (std::none_of(out.begin(), out.end(), [&](const algebra::DiscoveredChain& c) { return c.op == name; }))
      for (algebra::DiscoveredChain& c : algebra::discover_chains(o)) out.push_back(std::move(c));
    for (const auto& call : o.calls)
      if (auto callee = checked.ops.find(call.first); callee != checked.ops.end()) add(callee->second);
  };
  add(op);
  return out;
}

}  // namespace emmy::lower
