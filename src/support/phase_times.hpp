// Wall-clock times of a command's phases, in order, for `emmyc compile --timings`.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace emmy {

struct PhaseTime {
  std::string name;
  double seconds = 0;
  int depth = 0;  // 1: a part of the phase before it (NVRTC's own phases)
};

class PhaseTimes {
 public:
  // The time since the previous mark (or since construction) becomes phase `name`.
  void mark(std::string name);
  // A part of the last phase, timed by someone else (NVRTC's --time report).
  void add_part(std::string name, double seconds);
  const std::vector<PhaseTime>& phases() const { return phases_; }
  // One line a phase, parts indented under theirs, then the total of the top-level phases.
  std::string format() const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_ = Clock::now();
  std::vector<PhaseTime> phases_;
};

}  // namespace emmy
