// What main.cpp sets up before doctest runs the GPU tests: the driver (its context current on
// the main thread), the target the kernels are compiled for, and the command-line selection.
#pragma once

#include <string>
#include <vector>

#include "runtime/driver.hpp"
#include "schedule/targets.hpp"

namespace emmy::gpu_test {

struct Context {
  runtime::Driver* driver = nullptr;   // open; every driver call runs on the main thread
  const TargetInfo* target = nullptr;  // the device's own target (sm_90 on an H200)
  std::string root;                    // the repository: stdlib/ and examples/ under it
  std::vector<std::string> ops;        // --ops / EMMY_GPU_OPS: op-name patterns (* wildcards); empty: every op
  bool small = false;                  // --small / EMMY_GPU_SMALL=1: small shapes only (compute-sanitizer)
  unsigned threads = 1;                // --threads / EMMY_GPU_THREADS: CPU workers (lowering, NVRTC, reference)
};

Context& context();

// Whether `name` matches `pattern`, where '*' matches any run of characters.
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace emmy::gpu_test
