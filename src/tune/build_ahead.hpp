// NVRTC alongside the search: candidates are built on background threads in the order the
// search will measure them, so the first measurement does not wait for every build.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "tune/space.hpp"

namespace emmy::tune {

class BuildAhead {
 public:
  // Builds `candidates` (which must outlive this) in `order` on `threads` threads (0: each
  // only when its verdict is asked for).
  BuildAhead(std::vector<Candidate>& candidates, const TargetInfo& target, int threads, std::vector<size_t> order,
             int max_spill_bytes = kMaxSpillBytes);
  ~BuildAhead();  // builds in flight finish; the rest are left unbuilt
  BuildAhead(const BuildAhead&) = delete;
  BuildAhead& operator=(const BuildAhead&) = delete;

  // Candidate i's verdict (build_verdict): built now, on the calling thread, when no thread has
  // started it; else awaited.
  Pruned verdict(size_t i);
  // The verdicts so far that rule a candidate out, in candidate order; how many were built.
  std::vector<Pruned> pruned();
  int built();

 private:
  enum State : int { kPending, kBuilding, kDone };
  bool claim_and_build(size_t i);

  std::vector<Candidate>& candidates_;
  const TargetInfo& target_;
  const std::vector<size_t> order_;
  const int max_spill_bytes_;
  std::vector<std::atomic<int>> states_;
  std::vector<Pruned> verdicts_;  // under mutex_, once states_[i] is kDone
  std::mutex mutex_;
  std::condition_variable done_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> pool_;
};

}  // namespace emmy::tune
