// Phase timing for --timings: marks on a steady clock, printed as an indented table.
#include "support/phase_times.hpp"

#include <fmt/format.h>

namespace emmy {

void PhaseTimes::mark(std::string name) {
  const Clock::time_point now = Clock::now();
  phases_.push_back({std::move(name), std::chrono::duration<double>(now - last_).count(), 0});
  last_ = now;
}

void PhaseTimes::add_part(std::string name, double seconds) { phases_.push_back({std::move(name), seconds, 1}); }

std::string PhaseTimes::format() const {
  std::string out;
  double total = 0;
  for (const PhaseTime& p : phases_) {
    if (p.depth == 0) total += p.seconds;
    out += fmt::format("{:<{}}{:<{}}{:8.3f} s\n", "", 2 + 2 * p.depth, p.name, 24 - 2 * p.depth, p.seconds);
  }
  return out + fmt::format("  {:<24}{:8.3f} s\n", "total", total);
}

}  // namespace emmy
