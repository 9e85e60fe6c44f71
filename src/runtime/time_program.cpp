// CUDA-event medians of a program and of each of its kernels, with the L2 flushed between runs.
#include "runtime/time_program.hpp"

#include <algorithm>
#include <cmath>

namespace emmy::runtime {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

ProgramTiming time_program(const Driver& driver, const LoadedProgram& program,
                           const std::vector<KernelLaunch>& launches, const TimingOptions& options) {
  const Stream stream = driver.create_stream();
  const Event start = driver.create_event(), end = driver.create_event();
  const DeviceBuffer flush =
      options.flush_l2 ? driver.alloc(2 * static_cast<size_t>(std::max(driver.l2_bytes(), 1 << 20))) : DeviceBuffer();
  // One timed run of launches [first, last): flush, start event, launches, end event.
  auto timed = [&](size_t first, size_t last) {
    if (options.flush_l2) driver.fill_async(flush, 0x5a, stream.get());
    driver.record(start, stream.get());
    for (size_t i = first; i < last; ++i) program.launch(launches[i], stream.get());
    driver.record(end, stream.get());
    return static_cast<double>(driver.elapsed_ms(start, end));
  };
  for (int i = 0; i < options.warmup; ++i) timed(0, launches.size());
  const double estimate = std::max(timed(0, launches.size()), 1e-3);
  const int reps =
      std::clamp(static_cast<int>(std::ceil(options.target_ms / estimate)), options.min_reps, options.max_reps);

  ProgramTiming t;
  t.reps = reps;
  std::vector<double> totals;
  for (int r = 0; r < reps; ++r) totals.push_back(timed(0, launches.size()));
  t.total_ms = median(totals);
  for (size_t k = 0; k < launches.size(); ++k) {
    std::vector<double> one;
    for (int r = 0; r < reps; ++r) one.push_back(timed(k, k + 1));
    t.kernel_ms.push_back(median(one));
  }
  driver.synchronize(stream.get());
  return t;
}

}  // namespace emmy::runtime
