// Runs a lowered kernel program on the GPU through the driver: host tensors in, output tensors out.
#pragma once

#include <vector>

#include "interp/tensor_data.hpp"
#include "ir/kernel.hpp"
#include "runtime/driver.hpp"

namespace emmy::runtime {

// Device time of the launches (CUDA events), without the copies.
struct RunTiming {
  float total_ms = 0;
  std::vector<float> kernel_ms;  // one per kernel of the program, in order
};

// Converts the Input buffers from `inputs` (values as double) to their device types, allocates
// the Temp and Output buffers (filled with 0xff bytes: NaN, -1), launches every kernel in order
// with grid_x evaluated on `sizes`, and returns the Output buffers. `cubin` holds every kernel of
// `program` (print_cuda, then compile_cuda). Throws std::runtime_error on a binding or driver error.
TensorMap run_on_gpu(Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
                     const SizeBindings& sizes, const TensorMap& inputs, RunTiming* timing = nullptr);

}  // namespace emmy::runtime
