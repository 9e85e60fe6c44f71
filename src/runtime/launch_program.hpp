// Runs a lowered kernel program on the GPU through the driver: its module loaded once, launches
// bound to device buffers and sizes, and a host-tensor round trip for checks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "interp/tensor_data.hpp"
#include "ir/kernel.hpp"
#include "runtime/driver.hpp"

namespace emmy::runtime {

// The shape of a program buffer at these sizes; throws std::runtime_error on an unbound or negative dim.
std::vector<int64_t> buffer_shape(const kir::Buffer& buffer, const SizeBindings& sizes);
size_t buffer_bytes(const kir::Buffer& buffer, const SizeBindings& sizes);

// A tensor map over a staged copy (kir::TmaMap::staged_pitch): at each launch, in its stream,
// the buffer's rows go into scratch memory at the map's row stride (spec.strides[1]) and
// args[arg] becomes the map over that copy; the scratch goes back to the pool after the kernel.
struct StagedMap {
  size_t arg = 0;
  TiledMapSpec spec;  // all but the base
  DevicePtr source;
  uint64_t row_bytes = 0, rows = 0;
};

// One kernel's launch: its function, grid, block and arguments in parameter order.
struct KernelLaunch {
  const kir::Kernel* kernel = nullptr;
  Function function;
  Dim3 grid, block;
  std::vector<KernelArg> args;
  unsigned dynamic_smem = 0;  // bytes of the dynamic shared window (kir::uses_dynamic_shared)
  std::vector<StagedMap> staged;
};

// A program's module on the device with one function per kernel and the blocks of each that one
// multiprocessor holds (the driver's occupancy calculator). A kernel of which no block fits (too
// many registers or too much shared memory for this device) is an error at load, not at launch.
// Holds a copy of the program; must not outlive `driver`.
class LoadedProgram {
 public:
  LoadedProgram(const Driver& driver, const kir::Program& program, const std::vector<char>& cubin);

  const kir::Program& program() const { return program_; }
  const Function& function(size_t kernel) const { return functions_.at(kernel); }
  int blocks_per_multiprocessor(size_t kernel) const { return blocks_per_sm_.at(kernel); }
  // The index in program().kernels of a launch made by bind().
  size_t index_of(const KernelLaunch& launch) const {
    return static_cast<size_t>(launch.kernel - program_.kernels.data());
  }

  // Every kernel's launch with the program's buffers at the given device addresses (every buffer
  // by name: inputs, outputs and temporaries) and grid_x evaluated on `sizes`. Kernels whose grid
  // is empty are left out. Throws std::runtime_error on a missing buffer or size.
  std::vector<KernelLaunch> bind(const std::map<std::string, DevicePtr>& buffers, const SizeBindings& sizes) const;
  void launch(const KernelLaunch& launch, StreamRef stream) const;

 private:
  const Driver* driver_;
  kir::Program program_;
  Module module_;
  std::vector<Function> functions_;
  std::vector<int> blocks_per_sm_;
};

// The device buffers of one run of `program`: inputs uploaded from host tensors, temporaries and
// outputs allocated and poisoned (0xff).
struct DeviceTensors {
  std::map<std::string, DeviceBuffer> buffers;
  std::map<std::string, DevicePtr> addresses() const;
};
DeviceTensors upload(const Driver& driver, const kir::Program& program, const SizeBindings& sizes,
                     const TensorMap& inputs);
// The temporaries and outputs alone, allocated and poisoned (inputs the caller keeps resident).
DeviceTensors allocate_results(const Driver& driver, const kir::Program& program, const SizeBindings& sizes);
// The Output buffers back as host tensors.
TensorMap download_outputs(const Driver& driver, const kir::Program& program, const SizeBindings& sizes,
                           const DeviceTensors& tensors);

// The device side of one run of a program: its buffers (inputs uploaded, the rest poisoned),
// its module and its launches, kept so that the same run can be launched again (and timed).
struct ProgramRun {
  DeviceTensors tensors;
  LoadedProgram loaded;
  std::vector<KernelLaunch> launches;
};
ProgramRun prepare_run(const Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
                       const SizeBindings& sizes, const TensorMap& inputs);

// Device time of the launches (CUDA events), without the copies.
struct RunTiming {
  float total_ms = 0;
  std::vector<float> kernel_ms;  // one per kernel of the program, in order
};

// Converts the Input buffers from `inputs` (values as double) to their device types, allocates
// the Temp and Output buffers (filled with 0xff bytes: NaN, -1), launches every kernel in order
// and returns the Output buffers. `cubin` holds every kernel of `program` (print_cuda, then
// compile_cuda). Throws std::runtime_error on a binding or driver error.
TensorMap run_on_gpu(Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
                     const SizeBindings& sizes, const TensorMap& inputs, RunTiming* timing = nullptr);

}  // namespace emmy::runtime
