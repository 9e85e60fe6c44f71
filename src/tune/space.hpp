// The autotuner's search space: the knob lists an op may be tuned over on a target, and the
// candidates left after the checks that need no GPU (legality, lowering, size limits, shared
// memory, duplicate kernels) and after NVRTC (spills, registers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/reference.hpp"
#include "lower/passes.hpp"

namespace emmy::tune {

// One point of the space that survived pruning.
struct Candidate {
  std::string knobs;  // canonical knob list: the candidate's identity in the database
  std::string origin =
      "enumerated";  // or the hand-written block it comes from ("schedule sdpa for sm_90 as \"tc-hd128\"")
  std::string cuda;  // the generated CUDA
  uint64_t cuda_hash = 0;
  int64_t smem_bytes = 0;  // the largest kernel's shared memory (kernel IR)
  int block_threads = 0;   // the largest kernel's threads
  int kernels = 0;
  int registers = 0;        // the largest kernel's registers (ptxas), 0 before compiling
  double predicted_us = 0;  // the auto-scheduler's cost model at the tuning sizes (docs/auto_schedule.md)
};

// A point left out, and why (shown by --dry-run and counted in the report).
struct Pruned {
  std::string knobs;
  std::string kind;    // "illegal", "not lowered", "not honoured", "sizes", "oversized", "shared memory",
                       // "duplicate", "NVRTC", "spills", "registers"
  std::string reason;  // the details
};

struct Space {
  std::vector<Candidate> candidates;
  std::vector<Pruned> pruned;
  int enumerated = 0;
};

// Every knob list of the families that apply to `op` on `target` (tables in space.cpp), the
// op's own schedule blocks for the target first unless `with_blocks` is false (then a
// block's knob list is in the space only where a table generates it). No lowering: plain
// text, deduplicated.
struct Enumerated {
  std::string knobs;
  std::string origin;
};
std::vector<Enumerated> enumerate_knobs(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                                        const std::vector<algebra::DiscoveredChain>* chains, bool with_blocks = true);
// The op's own schedule blocks for the target (or the base target it extends), in file order.
std::vector<Enumerated> block_knobs(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target);

// Lowers each knob list and keeps the ones that take the tier they ask for, honour every knob,
// fit the target's shared memory and the kernels' size limits at `sizes`, and generate CUDA no
// earlier candidate generated.
// `chains`: the algebra layer's proved chains of the program (lower_op's), or null.
Space prune_space(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                  const SizeBindings& sizes, const std::vector<Enumerated>& points,
                  const std::vector<algebra::DiscoveredChain>* chains, int threads);

// NVRTC for every candidate on `threads` threads (through the kernel cache); candidates that
// fail to build, spill, or need more registers than the target has move to `pruned`. Returns
// false (space unchanged) when NVRTC is not available, with the reason in `why`.
// A spill of at most `max_spill_bytes` (stores or loads) is kept: the Step 5 record for
// sdpa at head dim 128 on sm_90 (tc-hd128) spills 32 bytes.
constexpr int kMaxSpillBytes = 64;
// One candidate through NVRTC (the kernel cache): its registers recorded, and why it is ruled
// out ("NVRTC", "spills", "registers"), or an empty kind when it is not.
Pruned build_verdict(Candidate& candidate, const TargetInfo& target, int max_spill_bytes = kMaxSpillBytes);
bool prune_by_ptxas(Space& space, const TargetInfo& target, int threads, std::string* why,
                    int max_spill_bytes = kMaxSpillBytes);

}  // namespace emmy::tune
