// The GPU targets Emmy compiles for, with the hardware facts that decide which schedules are legal.
#pragma once

#include <string_view>
#include <vector>

namespace emmy {

struct TargetInfo {
  std::string_view name;     // "sm_90a"
  int sm;                    // compute capability * 10: 80, 90, 120
  bool arch_specific;        // the 'a' of sm_90a: architecture-specific features enabled
  bool cp_async;             // cp.async (sm_80+)
  bool tma;                  // bulk tensor copies + mbarrier (sm_90+)
  bool wgmma;                // warpgroup MMA (sm_90a only)
  bool setmaxnreg;           // per-warpgroup register rebalancing (sm_90a only)
  int smem_per_block_bytes;  // opt-in dynamic shared memory per block
  int max_regs_per_thread;
  int max_threads_per_block;
  int register_file;  // 32-bit registers of an SM: what a block of one CTA an SM splits (WSPEC's setmaxnreg)
  // The scalar tier's register tile for a fold that carries one register per output element,
  // when no TILE@axis knob sets it: the widest that compiles without spills on the target
  // (tests/bench/RESULTS.md, "Measurements that were code comments").
  int scalar_carrier_tile;
  // The tensor-core fold's register budget a thread for its fragments: the loop-invariant
  // operand's fragments stay in registers while all of them fit, else that operand waits in a
  // shared slab (tuned on the H200; the same register file on the other targets).
  int mma_fold_fragment_regs;
  // Blocks in a group of heads that a fold under a key bound (causal) runs heaviest row tile
  // first: the group's keys stay in L2 while its row tiles run (two waves of one block an SM
  // on an H200's 132 SMs; the other targets take the H200's value, unmeasured there).
  int causal_group_blocks;
  // The tensor-core fold skips the rescale of its vector field (a branch on whether a row's
  // max moved) when a thread holds more than this many elements of it per key of a block
  // (hd128 over 32-key blocks skips; hd64 over 64 keys, where the branch costs more than the
  // multiplies, does not); 0 never skips. Under a key bound it never skips: the branch costs
  // registers there (tests/bench/RESULTS.md, "Measurements that were code comments").
  int rescale_skip_per_key;
  // A row cache's kernel (COOP's c<R>) asks ptxas for as many CTAs an SM as its shared memory lets
  // in, so long as each thread keeps at least this many registers (without the bound a kernel a
  // register over lost half its CTAs: tests/bench/RESULTS.md, "a row cache that copies").
  int row_cache_registers;
  // With the row cache in registers (COOP's r<R>), a thread's registers besides the kept chunks'
  // that the CTAs an SM asked of ptxas leave it (a layernorm of f32 rows spilled at 32; sm_120's
  // layernorm t32/v8/r4 spilled 36 bytes under NVRTC at 48 and 12 at 56, none at 64).
  int row_cache_own_registers;
  // ... and the registers a thread may spend besides on the values of calls (exp, log...) a later
  // pass of its kept chunks computes again (the softmax's exps: kept, not computed twice).
  int row_cache_value_registers;
};

// What the auto-scheduler's cost model (src/autosched/cost_model.cpp) takes a target's device to
// sustain: one device a target (sm_90/sm_90a: the H200 we measure on; sm_80: an A100; sm_120: an
// RTX 5090), from its data sheet and our copy-ceiling measurements (docs/auto_schedule.md).
struct TargetCeilings {
  int sms;                // streaming multiprocessors
  double clock_ghz;       // sustained SM clock
  double dram_gbs;        // the copy ceiling, GB/s (reads plus writes)
  double l2_gbs;          // L2 to SM bandwidth, GB/s: what tiles re-read from L2 take
  double wgmma_tflops;    // dense f16/bf16 tensor-core peak with wgmma (0: none)
  double mma_tflops;      // ... with mma.sync
  double fma_tflops;      // f32 FMA peak of the CUDA cores
  double smem_gbs;        // shared memory bandwidth of all SMs, GB/s (128 bytes a clock an SM)
  double exp_per_clock;   // ex2 (MUFU) results an SM a clock
  double launch_us;       // a kernel launch back to back with the previous one
  double latency_us;      // a global load's round trip: bytes in flight = bandwidth x latency
  int threads_per_sm;     // resident threads an SM
  int smem_per_sm_bytes;  // shared memory an SM splits among its resident CTAs
  double l2_reuse_bytes;  // rows the resident threads re-read stay in L2 while they take at most this: one of
                          // its two partitions on A100/H100/H200 (rows of 26-35 MB re-read went to memory)
  int sector_bytes;       // a global access's unit: a warp's loads from N distinct sectors move N of them
};
const TargetCeilings& target_ceilings(const TargetInfo& target);

// Hardware features a knob value may need; target_has says whether a target has one.
enum class Feature { None, MmaSync, CpAsync, Tma, Clusters, Wgmma, Setmaxnreg };

const TargetInfo* find_target(std::string_view name);  // nullptr if unknown
std::vector<std::string_view> target_names();          // "sm_80", "sm_90", "sm_90a", "sm_120"
// What an arch-specific target extends (sm_90a: sm_90): its schedule blocks apply where the
// op has none for the arch-specific one. nullptr for the others.
const TargetInfo* base_target(const TargetInfo& target);
// The target a device of compute capability `sm` (major * 10 + minor) runs best: its
// arch-specific one when Emmy has it (sm_90a on an H100/H200), else the newest target of the
// same major version not newer than the device. nullptr when none runs there.
const TargetInfo* device_target(int sm);

bool target_has(const TargetInfo& target, Feature feature);
std::string_view feature_name(Feature feature);         // "TMA"; "" for None
std::string_view feature_requirement(Feature feature);  // "sm_90 or newer (TMA)"; "" for None

}  // namespace emmy
