// The auto-scheduler's cost model: a lowered op's predicted time on a target at given sizes, a
// kernel at a time, from its plan (tier, tiles, pipeline), its launch (CTAs, threads, shared
// memory) and its loop nest (the work), against the target's ceilings (TargetCeilings).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lower/passes.hpp"

namespace emmy::autosched {

// One kernel's features (what the formula reads) and estimate (what it gives), and its bound.
struct KernelCost {
  std::string kernel;
  std::string tier;  // tier_name of its plan
  int64_t ctas = 0;  // CTAs launched (PERSIST: the tiles its CTAs walk)
  int per_sm = 0;    // CTAs resident an SM (shared memory, threads, registers)
  double waves = 0;  // CTAs over the resident slots, rounded up
  bool persistent = false;
  // Tensor-core tiers: a consumer thread's registers by the estimate (accumulators and a fold's
  // output columns over the consumer threads, plus addressing), against what it may hold
  // (setmaxnreg's budget, else 255): past it the kernel spills and serializes its products.
  int registers = 0, register_budget = 0;
  double bytes = 0;       // global memory its buffers hold (read or written once)
  double in_flight = 0;   // bytes its resident threads keep in flight (bandwidth x latency)
  double tile_bytes = 0;  // bytes its tiles re-read through L2 (tensor-core tiers)
  double smem_bytes = 0;  // bytes the tensor cores read from shared memory
  double flops = 0;       // tensor-core tiers: 2 x multiply-adds
  double exps = 0;        // a fold's exponentials (one a score)
  double work = 0;        // the scalar tiers: element operations of its loop nest
  std::string pipeline;   // the tensor-core pipeline's row (kPipelines) and its efficiency
  double efficiency = 0;
  std::string overlap;  // how a fold's softmax hides under its products: "none", "overlap", "turns"
  double memory_us = 0, l2_us = 0, compute_us = 0, us = 0;
  std::string bound;  // "memory", "L2", "tensor cores", "shared memory", "exp", "ALU", "latency", "launch"
};

struct Cost {
  double us = 0;
  std::vector<KernelCost> kernels;
};

// The formula's constants that no data sheet gives, fitted on the H200's stored measurements
// (tests/bench/cost_model_rank.py --fit; docs/auto_schedule.md, "The cost model").
struct Fitted {
  // A tensor-core CTA's prologue and epilogue, once a wave (once a CTA under PERSIST). The fit
  // (tests/bench/cost_model_rank.py) prefers 24 by its loss, which weighs absolute error; 4 ranks
  // within groups as well (spearman 0.73 against 0.72) and matches the H200's small PERSIST gains
  // and causal tiles (run step11/2026-12-04-auto2: 24 made 128-row tiles lose to 256-row ones
  // that ran 2x slower).
  double cta_overhead_us = 4;
  // The share of the smaller of a fold's product and exponential times that stays exposed:
  // without overlap, with OVERLAP, with warpgroups taking turns (PINGPONG); the stored runs do
  // not tell them apart (their pipelines' efficiencies do).
  double exposed_none = 0.25, exposed_overlap = 0.25, exposed_turns = 0.25;
  double lone_warpgroup = 0.78;   // the tensor cores' share one consumer warpgroup an SM keeps busy
  double cp_wgmma = 0.4;          // a cp.async ring's efficiency feeding wgmma, against a TMA ring's
  double accesses_in_flight = 4;  // independent global accesses a thread of the scalar tiers keeps in flight
  double step_cycles = 10;        // cycles of one dependent step of a scalar thread's loop
  double pass_us = 1.4;           // a row pass's global round trip (the scalar tiers, each wave)
  double sync_us = 0.04;          // one level of a cooperative row's reduction tree (a barrier)
};
// "name=value,..." over the defaults (EMMY_COST_FIT, for the fit); nullopt on a bad entry.
std::optional<Fitted> parse_fitted(const std::string& text);

// Sizes not in `sizes` count as 1. Pure: the same lowering and sizes give the same estimate.
Cost estimate_cost(const lower::Lowered& lowered, const std::map<std::string, int64_t>& sizes, const TargetInfo& target,
                   const Fitted& fitted = {});

// A floor under estimate_cost's time for the same knobs, from their lowering without kernel
// bodies (lower::KernelBodies::None, a tenth of a whole one's time): every kernel at its fastest
// residency, a row cache holding its rows; never above estimate_cost's (a unit test checks it).
double cost_floor(const lower::Lowered& lowered, const std::map<std::string, int64_t>& sizes, const TargetInfo& target,
                  const Fitted& fitted = {});

// Whether a row cache (COOP's c<R>) cannot lower the lowering's time: every kernel makes one pass
// over its rows, so nothing is read again (the cache's shared memory only lowers residency; the
// time is at least that of the same knobs without it).
bool row_cache_moot(const lower::Lowered& lowered);

// `emmyc compile --ir cost`: each kernel's bound, features and times, then the total; each
// kernel's features also as one JSON line ("features: {...}", for tests/bench/cost_model_rank.py).
std::string print_cost(const Cost& cost);

}  // namespace emmy::autosched
