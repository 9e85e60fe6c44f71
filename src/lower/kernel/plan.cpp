#include "lower/kernel/plan.hpp"

#include <fmt/format.h>

namespace emmy::lower {

const char* tier_name(KernelPlan::Tier tier) {
  switch (tier) {
    case KernelPlan::Tier::Scalar: return "scalar";
    case KernelPlan::Tier::CoopRows: return "cooperative rows";
    case KernelPlan::Tier::MmaContraction: return "tensor-core contraction";
    case KernelPlan::Tier::MmaFold: return "tensor-core fold";
  }
  return "?";
}

namespace {

std::string print_slab(const SlabPlan& s) {
  std::string out = fmt::format("  slab {}: {}, {} x {} ({} outer, {} inner), {} buffer{}, {}{}", s.role, s.read,
                                s.rows, s.cols, s.outer, s.inner, s.buffers, s.buffers == 1 ? "" : "s", s.transport,
                                s.swizzled ? ", 128-byte swizzle" : "");
  if (!s.shares.empty()) out += fmt::format(", the {} slab's buffers (the same tile)", s.shares);
  if (!s.no_tma.empty()) out += fmt::format("\n    no TMA: {}", s.no_tma);
  return out + "\n";
}

std::string print_plan(const KernelPlan& p) {
  std::string out = fmt::format("kernel {}: {}\n", p.kernel, tier_name(p.tier));
  if (!p.refused.empty()) out += fmt::format("  tensor cores refused: {}\n", p.refused);
  out += p.producer_threads > 0 ? fmt::format("  block: {} threads ({} consumers, {} producers)\n",
                                              p.block_threads + p.producer_threads, p.block_threads, p.producer_threads)
                                : fmt::format("  block: {} threads\n", p.block_threads);
  if (p.tier == KernelPlan::Tier::CoopRows) {
    out += fmt::format("  rows: {} threads each, vector accesses of {}\n", p.coop_threads, p.coop_vec);
    if (p.cluster > 1)
      out += fmt::format(
          "  cluster: each row split between {} CTAs, a slice of its columns each, their carriers combined in rank "
          "order through distributed shared memory\n",
          p.cluster);
    if (p.persistent) out += "  persistent: the CTAs the device holds at once walk the rows, in waves of the grid\n";
    if (!p.cache_weights.empty())
      out += fmt::format("  weights: {} kept in shared memory for the whole walk{}, copied once before it\n",
                         fmt::join(p.cache_weights, ", "), p.cluster > 1 ? " (this CTA's slice of each)" : "");
  }
  if (p.cache_capacity > 0)
    out += p.cache_kept.empty()
               ? fmt::format(
                     "  row cache: up to {} elements a row, but no pass reads again what an earlier one read in the "
                     "same thread\n",
                     p.cache_capacity)
               : fmt::format("  row cache: {} kept in {}, read from memory once, while {}{} <= {}{}{}\n",
                             fmt::join(p.cache_kept, ", "), p.cache_registers ? "registers" : "shared memory",
                             fmt::join(p.cache_sizes, ", "),
                             p.cluster > 1 ? fmt::format(" / {} (a CTA's slice)", p.cluster) : "", p.cache_capacity,
                             p.cache_copied.empty()
                                 ? ""
                                 : fmt::format(" ({} {} whole first{})", fmt::join(p.cache_copied, ", "),
                                               p.cache_registers ? "loaded" : "copied",
                                               p.cache_registers ? "" : ", by cp.async"),
                             p.cache_values > 0 ? fmt::format("; {} registers keep the values of calls (exp, log...) "
                                                              "a later pass computes again",
                                                              p.cache_values)
                                                : "");
  if (p.tier != KernelPlan::Tier::MmaContraction && p.tier != KernelPlan::Tier::MmaFold) return out;
  out += fmt::format("  atom: {}, warps w{}x{}, fragments f{}x{} a warp, k{} (k-steps of 16 a chunk)\n", p.atom,
                     p.warps_m, p.warps_n, p.frag_m, p.frag_n, p.k_steps);
  out += fmt::format("  tiles: rows {}, {} {}; contraction {}\n", p.rows,
                     p.tier == KernelPlan::Tier::MmaFold ? "keys" : "columns", p.cols, p.contraction);
  if (p.tier == KernelPlan::Tier::MmaFold) {
    out += fmt::format("  fold: monoid {}, key bound {}\n", p.monoid, p.key_bound.empty() ? "none" : p.key_bound);
    out += fmt::format("  fold update: {}\n", p.fold_update);
    out += fmt::format("  row fragments: {}\n", p.row_fragments_in_registers ? "in registers" : "re-read from a slab");
  }
  if (p.overlap)
    out += p.tier == KernelPlan::Tier::MmaFold
               ? "  overlap: the next block's scores issued before this block's softmax, P @ V one block behind\n"
               : "  overlap: each chunk's wgmma batch in flight while the next one issues; its buffer released a "
                 "chunk behind\n";
  if (!p.no_overlap.empty()) out += fmt::format("  overlap refused: {}\n", p.no_overlap);
  if (p.producer_threads > 0)
    out += fmt::format(
        "  warp specialization: {} consumer threads, {} producer threads after them (thread {} issues "
        "the ring's copies){}\n",
        p.block_threads, p.producer_threads, p.block_threads,
        p.consumer_registers > 0 ? fmt::format("; setmaxnreg {} a consumer thread, {} a producer thread",
                                               p.consumer_registers, p.producer_registers)
                                 : std::string());
  if (!p.no_wspec.empty()) out += fmt::format("  warp specialization refused: {}\n", p.no_wspec);
  if (p.turns > 0)
    out += fmt::format("  ping-pong: {} warpgroups take turns issuing each block's wgmma (named barriers 2 .. {})\n",
                       p.turns, p.turns + 1);
  if (p.crews)
    out += fmt::format(
        "  crews: each warpgroup fills, reads and stages through its own rows of the row slab (named barriers "
        "8 .. {}, 128 threads)\n",
        7 + p.turns);
  if (!p.no_pingpong.empty()) out += fmt::format("  ping-pong refused: {}\n", p.no_pingpong);
  if (p.raster_group > 0)
    out += fmt::format("  raster: blocks walk groups of {} {} tiles, {} tiles fastest within a group\n", p.raster_group,
                       p.raster_axis == 'm' ? "row" : "column", p.raster_axis == 'm' ? "row" : "column");
  if (!p.no_raster.empty()) out += fmt::format("  raster refused: {}\n", p.no_raster);
  if (p.cluster > 1)
    out += fmt::format(
        "  cluster: {} CTAs on consecutive {} tiles share the {} operand's tile, each bringing 1/{} of it to all by "
        "TMA multicast\n",
        p.cluster, p.cluster_axis == 'm' ? "row" : "column", p.cluster_axis == 'm' ? "column" : "row", p.cluster);
  if (!p.no_cluster.empty()) out += fmt::format("  cluster refused: {}\n", p.no_cluster);
  if (p.persistent)
    out += p.producer_threads > 0
               ? "  persistent: a CTA for each SM, walking the tiles in waves of the grid, a snake (CTA c takes tile "
                 "c of the even waves, the grid's last but c of the odd); the producers issue the next tile's copies "
                 "under this one's end\n"
               : "  persistent: a CTA for each SM (its tiles one after another: no producers run ahead), walking the "
                 "tiles in waves of the grid, a snake (CTA c takes tile c of the even waves, the grid's last but c "
                 "of the odd)\n";
  for (const SlabPlan& s : p.slabs) out += print_slab(s);
  return out;
}

}  // namespace

std::string print_plans(const std::vector<KernelPlan>& plans) {
  std::string out;
  for (const KernelPlan& p : plans) out += print_plan(p);
  return out;
}

}  // namespace emmy::lower
