// Builds every candidate with NVRTC on all threads (through the kernel cache, so the measuring
// worker loads what was built here) and drops those that fail to build, spill more than a few
// registers' worth, or use more registers than the target has.
#include <algorithm>
#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "runtime/kernel_cache.hpp"
#include "tune/space.hpp"

namespace emmy::tune {

Pruned build_verdict(Candidate& c, const TargetInfo& target, int max_spill_bytes) {
  runtime::CompileOptions co;
  co.target = &target;
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
      return {c.knobs, "registers", fmt::format("{} uses {}, over {}", k.kernel, k.registers, target.max_regs_per_thread)};
  }
  return {c.knobs, "", ""};
}

bool prune_by_ptxas(Space& space, const TargetInfo& target, int threads, std::string* why, int max_spill_bytes) {
  if (!runtime::nvrtc_available(why)) return false;
  std::vector<Pruned> verdicts(space.candidates.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < space.candidates.size(); i = next++) verdicts[i] = build_verdict(space.candidates[i], target, max_spill_bytes);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(threads, 1); ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::vector<Candidate> kept;
  for (size_t i = 0; i < space.candidates.size(); ++i) {
    if (verdicts[i].kind.empty()) kept.push_back(std::move(space.candidates[i]));
    else space.pruned.push_back(verdicts[i]);
  }
  space.candidates = std::move(kept);
  return true;
}

}  // namespace emmy::tune
