// Times a bound kernel program with CUDA events: medians of many launches after warm-up, with the
// L2 cache flushed before every timed launch so that inputs left in L2 do not flatter.
#pragma once

#include <vector>

#include "runtime/launch_program.hpp"

namespace emmy::runtime {

struct TimingOptions {
  int warmup = 3;
  int min_reps = 5, max_reps = 200;
  double target_ms = 300;  // repeats until about this much device time is spent (within min/max)
  bool flush_l2 = true;    // write a buffer of twice the L2 size before every timed launch
};

struct ProgramTiming {
  double total_ms = 0;            // median of whole-program runs (all kernels back to back)
  std::vector<double> kernel_ms;  // median of each launch alone, in launch order
  int reps = 0;
};

// The median of `v` (0 when empty): of timed runs here, of measurement turns in the tuner.
double median(std::vector<double> v);

ProgramTiming time_program(const Driver& driver, const LoadedProgram& program,
                           const std::vector<KernelLaunch>& launches, const TimingOptions& options = {});

}  // namespace emmy::runtime
