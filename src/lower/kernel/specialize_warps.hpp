// Warp specialization as a kernel-IR pass: a kernel whose ring copies are issued by a thread
// past its consumers becomes producer warps that run only those copies and consumer warps that
// run everything else.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "ir/kernel.hpp"

namespace emmy::lower {

struct WarpRoles {
  int consumers = 0;           // threads 0 .. consumers - 1: every statement but the copies
  int producers = 0;           // threads after them (a multiple of 32; 128 with setmaxnreg)
  int consumer_registers = 0;  // setmaxnreg.inc at the consumers' start, .dec at the producers'; 0: none
  int producer_registers = 0;
  int consumer_barrier = 1;  // the named barrier that replaces __syncthreads among the consumers
};

// The kernel's first `setup` statements (declarations, mbarrier initialisation and its barrier)
// stay common to every thread. After them, the producers run the statements only thread
// `consumers` runs (an `if threadIdx.x == consumers`: the ring's copies) with the loops,
// branches and register values they depend on; the consumers run the rest, their barriers
// a named barrier of their own. The copies may depend only on registers computed from
// parameters, block indices and loop counters: nullopt when split, else why it cannot be.
std::optional<std::string> specialize_warps(kir::Kernel& kernel, size_t setup, const WarpRoles& roles);

}  // namespace emmy::lower
