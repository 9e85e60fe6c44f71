// Candidates measured in turns, so that drift of the GPU's clocks falls on all of them alike.
#pragma once

#include <vector>

#include "tune/search.hpp"

namespace emmy::tune {

// Measures `candidates` in `turns` rounds (a, b, c, a, b, c, ...), each with `reps` launches; a
// candidate's time is the median of its turns. The first turn gives each the cut-off
// `cutoff_us` (0: none); one that fails or is cut off in any turn stops there and keeps that
// measurement. Why: a GPU under sustained load lowers its clocks within seconds (4-5% for an
// f16 matmul on the H200), so two kernels measured one after the other can differ by more than
// the schedules do; measured in turns, they share the drift.
std::vector<Measurement> measure_in_turns(const std::vector<const Candidate*>& candidates, Measurer& measurer, int reps,
                                          int turns, double cutoff_us);

}  // namespace emmy::tune
