// Candidates measured in turns, so that drift of the GPU's clocks falls on all of them alike.
#include "tune/measure_in_turns.hpp"

#include <algorithm>

#include "runtime/time_program.hpp"

namespace emmy::tune {

std::vector<Measurement> measure_in_turns(const std::vector<const Candidate*>& candidates, Measurer& measurer, int reps,
                                          int turns, double cutoff_us) {
  std::vector<Measurement> out(candidates.size());
  std::vector<std::vector<double>> times(candidates.size());
  std::vector<bool> running(candidates.size(), true);
  for (int turn = 0; turn < std::max(turns, 1); ++turn)
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!running[i]) continue;
      out[i] = measurer.measure(*candidates[i], reps, turn == 0 ? cutoff_us : 0);
      running[i] = out[i].ok;
      if (out[i].ok) times[i].push_back(out[i].time_us);
    }
  for (size_t i = 0; i < candidates.size(); ++i)
    if (running[i]) out[i].time_us = runtime::median(times[i]);
  return out;
}

}  // namespace emmy::tune
