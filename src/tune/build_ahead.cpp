// Builds candidates with NVRTC on background threads in the search's order; the search asks
// for each verdict just before measuring (build_ahead.hpp).
#include "tune/build_ahead.hpp"

#include "support/large_stack.hpp"

namespace emmy::tune {

BuildAhead::BuildAhead(std::vector<Candidate>& candidates, const TargetInfo& target, int threads,
                       std::vector<size_t> order, int max_spill_bytes)
    : candidates_(candidates),
      target_(target),
      order_(std::move(order)),
      max_spill_bytes_(max_spill_bytes),
      states_(candidates.size()),
      verdicts_(candidates.size()) {
  // NVRTC recurses on the generated CUDA (a fused chain may be one 10,000-deep expression): each
  // builder runs on a large stack (build_verdict turns what NVRTC throws into a verdict).
  for (int t = 0; t < threads; ++t)
    pool_.emplace_back([this] {
      run_on_large_stack([this] {
        for (size_t k = next_++; k < order_.size() && !stop_; k = next_++) claim_and_build(order_[k]);
      });
    });
}

BuildAhead::~BuildAhead() {
  stop_ = true;
  for (std::thread& t : pool_) t.join();
}

bool BuildAhead::claim_and_build(size_t i) {
  int pending = kPending;
  if (!states_[i].compare_exchange_strong(pending, kBuilding)) return false;
  Pruned v = build_verdict(candidates_[i], target_, max_spill_bytes_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    verdicts_[i] = std::move(v);
    states_[i] = kDone;
  }
  done_.notify_all();
  return true;
}

Pruned BuildAhead::verdict(size_t i) {
  claim_and_build(i);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return states_[i] == kDone; });
  return verdicts_[i];
}

std::vector<Pruned> BuildAhead::pruned() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Pruned> out;
  for (size_t i = 0; i < verdicts_.size(); ++i)
    if (states_[i] == kDone && !verdicts_[i].kind.empty()) out.push_back(verdicts_[i]);
  return out;
}

int BuildAhead::built() {
  int n = 0;
  for (const std::atomic<int>& s : states_) n += s == kDone ? 1 : 0;
  return n;
}

}  // namespace emmy::tune
