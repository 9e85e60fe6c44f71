// The SIMT interpreter: runs a kernel-IR program on the CPU, block by block, the threads of a
// block in lockstep, checking what the GPU would silently get wrong (shared/design/KERNEL_IR.md).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "interp/tensor_data.hpp"
#include "ir/intrinsics.hpp"
#include "ir/kernel.hpp"

namespace emmy {

struct SimtOptions {
  bool shuffle_blocks = false;  // run the blocks of each launch in a seeded random order
  uint64_t seed = 0;
  // TMA descriptors by TensorMap parameter name, in place of the ones the parameters describe
  // (tests of the copy itself). TmaMap::buffer numbers the global
  // buffers as Program::buffers does (index 0 = the program's first buffer).
  std::map<std::string, kir::TmaMap> tensor_maps;
  // Report shared-memory races: bytes written by one warp and read or written by another
  // with no barrier between (within one warp, lockstep order is trusted).
  bool race_check = true;
  // The SMs of the interpreter's device, one CTA each: a persistent kernel's grid (kir::Kernel::
  // persistent) starts no more CTAs than this, so that each walks several tiles.
  int64_t sms = 3;
};

// What ran. shared_accesses counts warp-level shared Load/Store instructions (one per warp
// with an active lane); bank_conflicts the extra wavefronts they cost (32 banks of 4 bytes:
// the most distinct words one bank serves minus one, per warp access).
struct SimtReport {
  int64_t blocks = 0;
  int64_t threads = 0;
  int64_t shared_accesses = 0;
  int64_t bank_conflicts = 0;
  int64_t tma_copies = 0;  // bulk tensor (TMA) copies issued
};

struct SimtError : std::runtime_error {
  using runtime_error::runtime_error;
};

// Runs the program's kernels in order. `buffers` holds every Input buffer by name (values
// already rounded to the dtype) and receives every Output; Temp buffers are allocated here
// (and, like Outputs before they are written, read as NaN for floats and -1 for integers).
// Scalar kernel parameters bind to `sizes` by name; buffer dims are size names or decimal
// literals. Every error (bounds, uninitialized register, barrier divergence, read before
// an asynchronous copy landed, race, ...) is a SimtError naming the kernel, block and thread.
SimtReport run_simt(const kir::Program& program, const SizeBindings& sizes, TensorMap& buffers,
                    const SimtOptions& options = {});

}  // namespace emmy
