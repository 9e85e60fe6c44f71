// The lowering pipeline: the passes of passes.hpp as a list, each level's IR printed and
// verified after the passes that ask for it.
#include "lower/passes.hpp"

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "ir/print_kernel.hpp"
#include "ir/verify_kernel.hpp"
#include "ir/verify_loop.hpp"
#include "ir/verify_tensor.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower {
namespace {

enum class Level { Tensor, Loop, Kernel };

// What the passes read and write: the levels so far.
struct State {
  const CheckedProgram& program;
  const CheckedOp& op;
  const TargetInfo& target;
  const std::vector<algebra::DiscoveredChain>* known;  // the program's discovered chains, if given
  std::vector<algebra::DiscoveredChain> chains;
  const LawMemo* laws;
  KernelBodies bodies;  // PipelineOptions::bodies
  tir::Program tensor;  // the tensor IR as the passes leave it (Lowered::tensor keeps to-tensor's)
  Lowered out;
};

// A schedule whose kernels do not fit the target's shared memory is refused, not emitted.
void refuse_oversized_shared(const kir::Program& program, const TargetInfo& target) {
  for (const kir::Kernel& k : program.kernels)
    if (const int64_t bytes = kir::shared_bytes(k); bytes > target.smem_per_block_bytes)
      throw SharedMemoryError(
          fmt::format("error: kernel {} needs {} bytes of shared memory; a block on {} holds at most {}\n  help: {}",
                      k.name, bytes, target.name, target.smem_per_block_bytes, kSharedMemoryHelp));
}

struct Pass {
  const char* name;
  Level level;  // the IR it produces
  void (*run)(State&);
};

const Pass kPasses[] = {
    {"to-tensor", Level::Tensor,
     [](State& s) {
       s.out.tensor = to_tensor(s.program, s.op);
       s.tensor = s.out.tensor;
       for (algebra::DiscoveredChain& c : inlined_chains(s.tensor, s.program, s.known)) {
         s.laws->seed(c.monoid, c.laws);
         s.chains.push_back(std::move(c));
       }
     }},
    {"forward-copies", Level::Tensor,
     [](State& s) {
       ForwardedCopies f = forward_copies(s.tensor);
       s.tensor = std::move(f.program);
       if (f.renamed.empty()) return;
       for (algebra::DiscoveredChain& c : s.chains) {
         c = algebra::rename_statements(std::move(c), [&](const std::string& n) {
           auto it = f.renamed.find(n);
           return it != f.renamed.end() ? it->second : n;
         });
         s.laws->seed(c.monoid, c.laws);  // the same laws, its fields renamed
       }
     }},
    {"hoist-invariant", Level::Tensor, [](State& s) { s.tensor = hoist_invariant(s.tensor, s.chains); }},
    {"inline-pointwise", Level::Tensor, [](State& s) { s.tensor = inline_pointwise(s.tensor, s.out.knobs); }},
    {"factor-normalizer", Level::Tensor, [](State& s) { s.tensor = factor_normalizer(s.tensor, s.chains); }},
    {"chain-prefixes", Level::Tensor,
     [](State& s) { s.chains = chain_prefixes(s.tensor, std::move(s.chains), *s.laws); }},
    {"to-loops", Level::Loop,
     [](State& s) { s.out.loops = to_loops(s.tensor, s.program, s.op, s.out.knobs, s.chains); }},
    {"split-reduce", Level::Loop,
     [](State& s) { s.out.loops = split_reduce(s.out.loops, s.program, s.out.knobs, s.laws); }},
    {"to-kernel", Level::Kernel,
     [](State& s) {
       s.out.kernels = to_kernel(s.out.loops, s.program, s.out.knobs, &s.out.plans, s.laws, s.bodies);
       refuse_oversized_shared(s.out.kernels, s.target);
     }},
};

const char* level_name(Level l) { return l == Level::Tensor ? "tensor" : l == Level::Loop ? "loop" : "kernel"; }

std::string printed(const State& s, Level l) {
  switch (l) {
    case Level::Tensor: return tir::print_program(s.tensor);
    case Level::Loop: return lir::print_program(s.out.loops);
    case Level::Kernel: return print_program(s.out.kernels);
  }
  return "";
}

std::vector<std::string> verified(const State& s, Level l) {
  switch (l) {
    case Level::Tensor: return tir::verify_program(s.tensor);
    case Level::Loop: return lir::verify_program(s.out.loops);
    case Level::Kernel: return verify_program(s.out.kernels);
  }
  return {};
}

bool prints_after(const PipelineOptions& po, const char* pass) {
  return std::any_of(po.print_after.begin(), po.print_after.end(),
                     [&](const std::string& p) { return p == "all" || p == pass; });
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Pass& p : kPasses) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

Lowered lower_op(const CheckedProgram& program, const CheckedOp& op, const KnobSources& sources,
                 const TargetInfo& target, const std::vector<algebra::DiscoveredChain>* chains,
                 const PipelineOptions& options) {
  EMMY_INTERNAL_ASSERT(options.bodies == KernelBodies::All || !options.verify_kernel,
                       "a lowering without kernel bodies is never run: it cannot be verified");
  State s{program, op, target, chains, {}, options.laws, options.bodies, {}, {}};
  if (chains)
    for (const algebra::DiscoveredChain& c : *chains)
      if (c.op == op.decl->name.name) s.chains.push_back(c);
  // None given (or an imported op, which the checker's list leaves out): discover and prove
  // here. An op without chains costs only the search.
  if (s.chains.empty()) s.chains = algebra::discover_chains(op);
  // The chains' carriers were proved where they were found: their reports answer the passes.
  LawMemo own;
  if (!s.laws) s.laws = &own;
  for (const algebra::DiscoveredChain& c : s.chains) s.laws->seed(c.monoid, c.laws);
  s.out.knobs = resolve_knobs(sources, target);
  for (const Pass& pass : kPasses) {
    pass.run(s);
    if (options.out && prints_after(options, pass.name))
      *options.out << fmt::format("// ----- {} IR after {} -----\n", level_name(pass.level), pass.name)
                   << printed(s, pass.level);
    // The kernel IR is verified always (every lowering, the tuner's too); the others on request.
    if (options.verify_each || (pass.level == Level::Kernel && options.verify_kernel)) {
      const std::vector<std::string> problems = verified(s, pass.level);
      EMMY_INTERNAL_ASSERT(problems.empty(),
                           fmt::format("the {} IR does not verify after {}:\n  {}", level_name(pass.level), pass.name,
                                       fmt::join(problems, "\n  ")));
    }
  }
  return std::move(s.out);
}

}  // namespace emmy::lower
