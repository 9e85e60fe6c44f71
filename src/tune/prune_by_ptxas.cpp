// Builds every candidate with NVRTC on all threads (through the kernel cache, so the measuring
// worker loads what was built here) and drops those that fail to build, spill more than a few
// registers' worth, or use more registers than the target has.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "runtime/kernel_cache.hpp"
#include "tune/build_ahead.hpp"

namespace emmy::tune {

Pruned build_verdict(Candidate& c, const TargetInfo& target, int max_spill_bytes) {
  runtime::CompileOptions co;
  co.target = &target;
  co.threads = 1;  // the builders run side by side already
  runtime::CachedCompile built;
  try {
    built = runtime::compile_cuda_cached(c.cuda, "tune.cu", co, {});
  } catch (const std::exception& e) {
    return {c.knobs, "NVRTC", e.what()};
  }
  if (!built.result.ok)
    return {c.knobs, "NVRTC", "rejected: " + built.result.log.substr(0, built.result.log.find('\n'))};
  for (const runtime::KernelResources& k : built.result.resources) {
    c.registers = std::max(c.registers, k.registers);
    if (std::max(k.spill_stores, k.spill_loads) > max_spill_bytes)
      return {c.knobs, "spills", fmt::format("{}: {} B stores, {} B loads", k.kernel, k.spill_stores, k.spill_loads)};
    if (k.registers > target.max_regs_per_thread)
      return {c.knobs, "registers",
              fmt::format("{} uses {}, over {}", k.kernel, k.registers, target.max_regs_per_thread)};
  }
  return {c.knobs, "", ""};
}

bool prune_by_ptxas(Space& space, const TargetInfo& target, int threads, std::string* why, int max_spill_bytes) {
  if (!runtime::nvrtc_available(why)) return false;
  // Every candidate, in order: the pool builds ahead, this thread takes the verdicts (building
  // any the pool has not started), so `threads` build at once.
  std::vector<size_t> order(space.candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<Pruned> verdicts(space.candidates.size());
  {
    BuildAhead builds(space.candidates, target, threads - 1, std::move(order), max_spill_bytes);
    for (size_t i = 0; i < verdicts.size(); ++i) verdicts[i] = builds.verdict(i);
  }
  std::vector<Candidate> kept;
  for (size_t i = 0; i < space.candidates.size(); ++i) {
    if (verdicts[i].kind.empty())
      kept.push_back(std::move(space.candidates[i]));
    else
      space.pruned.push_back(verdicts[i]);
  }
  space.candidates = std::move(kept);
  return true;
}

}  // namespace emmy::tune
