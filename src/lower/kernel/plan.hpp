// The kernel back end's decisions for one loop-IR kernel, made before anything is emitted: its
// tier and, for the tensor-core tier, the warp grid, the fragments, each operand's slab and how
// its tiles arrive (TMA, or why not), and a fold's key bound. A tier that refuses says why, and
// the kernel takes the next one. `emmyc compile --ir plan` prints them (print_plans).
#pragma once

#include <string>
#include <vector>

namespace emmy::lower {

// A tile of one operand in shared memory.
struct SlabPlan {
  std::string role;          // "row" or "col" operand of the contraction, "value": a fold's vector field
  std::string read;          // the read it stages, printed ("k[b, h, j, d]")
  std::string outer, inner;  // its axes: `inner` is contiguous along the tile's rows
  int rows = 0, cols = 0;    // the tile, in elements
  int buffers = 1;           // the tiles it keeps: the stage's depth, or 1 (loaded once)
  bool swizzled = false;     // 128-byte swizzled rows (what wgmma and TMA read)
  std::string transport;     // "tma", "cp.async" or "registers" (STAGE's reg)
  std::string no_tma;        // where STAGE asked for TMA and the slab has none: why
  std::string shares;        // the slab (role) whose buffers hold the same tile, read in place of its own
};

// A fold's sibling register tile's value slab (roles value2, value3, ...: the tier's sibling_role;
// the fold's own is "value").
inline bool is_sibling_value(const SlabPlan& s) { return s.role.rfind("value", 0) == 0 && s.role != "value"; }

struct KernelPlan {
  enum class Tier { Scalar, CoopRows, MmaContraction, MmaFold };
  std::string kernel;  // the kernel IR kernel's name
  Tier tier = Tier::Scalar;
  std::string refused;          // the tensor-core tier's refusal, where TILE asked for one
  bool no_contraction = false;  // ... because the kernel holds no contraction of two inputs to tile
  int block_threads = 0;
  int coop_threads = 0, coop_vec = 0;  // CoopRows: threads a row, elements a vector access
  // CoopRows under COOP=.../c<R> (or r<R>): the longest row kept (N * V * R elements), the split
  // axes' sizes that must not exceed it, the tensors whose rows are kept in shared memory (or
  // registers), and those of them copied (loaded) whole before the first pass (inputs).
  int64_t cache_capacity = 0;
  std::vector<std::string> cache_sizes, cache_kept, cache_copied;
  std::vector<std::string> cache_weights;  // PERSIST with c<R>: the weights kept in shared memory for the walk
  bool cache_registers = false;            // COOP=.../r<R>: kept in the threads' registers
  int cache_values = 0;                    // ... and the registers of call values kept for a later pass
  // The tensor-core tiers.
  std::string atom;
  int warps_m = 0, warps_n = 0, frag_m = 0, frag_n = 0, k_steps = 0;
  std::string rows, cols, reduced;          // the tiled axes (cols: a fold's keys) and the contracted one
  std::string reduced2;                     // a fold weight's second contraction's axis, or ""
  std::vector<std::string> reduced_outer;   // a contraction's axes reduced outside `reduced` (sum(h, d: ...))
  std::string contraction;                  // its operands, printed ("q[b, h, i, d] * k[b, h, j, d] over d")
  std::string monoid;                       // a fold's
  std::string key_bound;                    // a fold's bound on its keys ("j <= i"), or ""
  std::string fold_update;                  // a fold's per-block update, as its monoid's normal form gives it
  bool row_fragments_in_registers = false;  // a fold's loop-invariant operand, kept in registers
  bool overlap = false;                     // OVERLAP=1 applied: the next block's product issued early
  std::string no_overlap;                   // where OVERLAP=1 was asked for and not applied: why
  int producer_threads = 0;                 // WSPEC applied: the producer warps' threads after the consumers'
  int consumer_registers = 0;               // ... and setmaxnreg's budgets (0: none)
  int producer_registers = 0;
  std::string no_wspec;     // where WSPEC was asked for and not applied: why
  int turns = 0;            // PINGPONG applied: the warpgroups taking turns at the tensor cores
  bool crews = false;       // ... with producers: each warpgroup alone fills, reads and stages through its rows
  std::string no_pingpong;  // where PINGPONG=1 was asked for and not applied: why
  char raster_axis = 0;     // RASTER applied: 'm' (groups of row tiles) or 'n', and the group's size
  int raster_group = 0;
  std::string no_raster;    // where RASTER was asked for and not applied: why
  bool persistent = false;  // PERSIST applied: one CTA an SM walks the tiles
  char cluster_axis = 0;    // CLUSTER applied: 'm' (CTAs on consecutive row tiles share the column operand's
  int cluster = 0;          // tile) or 'n', and the CTAs a cluster
  std::string no_cluster;   // where CLUSTER was asked for and not applied: why
  std::vector<SlabPlan> slabs;
};

const char* tier_name(KernelPlan::Tier tier);
// One block a kernel: "kernel NAME: TIER", then its decisions, one a line.
std::string print_plans(const std::vector<KernelPlan>& plans);

}  // namespace emmy::lower
