// The tensor-core kernel: its block of warps, the tile each warp owns, and the body of the
// contraction or the fold; the builder's entry to the tier.
#include "lower/kernel/mma/tier.hpp"
#include "lower/kernel/specialize_warps.hpp"

#include <tuple>

namespace emmy::lower::detail {

std::pair<K, K> MmaTier::raster_tiles(const K& block, const K& row_tiles, const K& col_tiles) {
  using kir::BinOp;
  // Groups of G tiles along the raster's axis; within a group that axis is fastest, so the
  // blocks in flight share both operands' tiles (what stays in L2 is G panels of one and the
  // group's panels of the other, not the whole of one).
  const bool by_rows = plan_.raster_axis == 'm';
  const K& along = by_rows ? row_tiles : col_tiles;
  const K& across = by_rows ? col_tiles : row_tiles;
  K group = i64(plan_.raster_group);
  K per_group = let("raster_span", mul(group, across));
  K first = let("raster_first", mul(kir::binary(BinOp::Div, block, per_group), group));
  K width = let("raster_width", kir::binary(BinOp::Min, group, kir::binary(BinOp::Sub, along, first)));
  K within = let("raster_at", kir::binary(BinOp::Rem, block, per_group));
  K fast = add(first, kir::binary(BinOp::Rem, within, width));
  K slow = kir::binary(BinOp::Div, within, width);
  // (A braced list evaluates in order: row_tile is declared before col_tile either way.)
  return by_rows ? std::pair<K, K>{let("row_tile", fast), let("col_tile", slow)}
                 : std::pair<K, K>{let("row_tile", slow), let("col_tile", fast)};
}

MmaTier::Launch MmaTier::launch_shape(const lir::Kernel& k, kir::Kernel& out) {
  const bool fold = fold_ != nullptr;
  for (int e = 0; e < 4; ++e) c_aff_[e] = lane_affine(kir::mma_c_coord, e);
  rows_per_warp_ = t_.frag_m * kAtomM;
  cols_per_warp_ = fold ? 0 : t_.frag_n * kAtomN;
  out.block_threads = t_.warps_m * t_.warps_n * kWarp;
  out.min_blocks_per_sm = 1;
  rows_per_block_ = int64_t{t_.warps_m} * rows_per_warp_;
  cols_per_block_ = int64_t{t_.warps_n} * cols_per_warp_;
  const size_t tiled = fold ? 1 : 2;  // trailing thread axes the block tiles
  // (CLUSTER: a cluster's CTAs spread over the shared axis; the tiles count each cluster once.)
  Launch l;
  l.row_tiles = cluster_tiles(ceil_div(KernelBuilder::size_value(row_axis_.size), rows_per_block_), 'm');
  l.col_tiles =
      fold ? i64(1) : cluster_tiles(ceil_div(KernelBuilder::size_value(col_axis_.size), cols_per_block_), 'n');
  l.tiles = mul(l.row_tiles, l.col_tiles);
  for (size_t i = 0; i + tiled < k.threads.size(); ++i)
    l.tiles = mul(l.tiles, KernelBuilder::size_value(k.threads[i].size));
  out.cluster = std::max(plan_.cluster, 1);
  out.grid_x = out.cluster > 1 ? mul(l.tiles, i64(out.cluster)) : l.tiles;
  out.persistent = plan_.persistent;
  return l;
}

void MmaTier::emit_header(const lir::Kernel& k, kir::Kernel& out) {
  launch_shape(k, out);
  // The plan's slabs in plan order, as make_slab allocates them: the ring's full mbarriers before
  // the first that comes by TMA (tma_setup); then, where every tile of the ring comes by TMA and
  // nothing but its mbarriers orders it (a contraction's ring, one that producers fill, or an
  // overlapped fold's: stream_loop and overlap.cpp), its free mbarriers, a contraction's
  // overlapped ring one over (tma_free_setup).
  const int depth = stage_ ? stage_->depth : 1;
  bool tma = false, ring_by_tma = stage_ && stage_->ring && depth > 1;
  for (const SlabPlan& s : plan_.slabs) {
    if (!s.shares.empty()) continue;
    const SlabChoice& c = slab_choices_.at(s.role);
    if (c.tma && !tma) out.shared.push_back({"tma_bar", ScalarType::I64, depth, 8});
    tma = tma || c.tma;
    if (c.depth == 0) ring_by_tma = ring_by_tma && c.tma;  // (a slab loaded once keeps depth 1)
    if (!c.tma) note_no_tma(c);
    out.shared.push_back(
        {s.role, t_.operand, int64_t{c.rows} * slab_pitch(c) * slab_buffers(c), c.swizzled ? 1024 : 16});
  }
  if (tma && ring_by_tma && (!fold_ || plan_.producer_threads > 0 || plan_.overlap))
    out.shared.push_back({"tma_free", ScalarType::I64, depth + (plan_.overlap && !fold_ ? 1 : 0), 8});
  if (ring_refilled_under_epilogue()) {
    if (const std::optional<std::pair<Slab, int>> own = own_epilogue())
      out.shared.push_back({own->first.array, t_.operand, own->first.elems(), 16});
  }
  if (plan_.producer_threads > 0) out.block_threads = plan_.block_threads + plan_.producer_threads;
}

void MmaTier::emit_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program) {
  masks_ = row_sharing_masks();
  const bool fold = fold_ != nullptr;
  const int warps = t_.warps_m * t_.warps_n;
  const Launch launch = launch_shape(k, out);
  const K &row_tiles = launch.row_tiles, &col_tiles = launch.col_tiles, &grid = launch.tiles;
  const int cluster = out.cluster;

  std::vector<kir::Stmt> body;
  b_.begin_body(body);

  emit(kir::comment(fmt::format("{}: {} warps (w{}x{}), each {} rows{} of m16n8k16 fragments{}", t_.atom, warps,
                                t_.warps_m, t_.warps_n, rows_per_warp_,
                                fold ? "" : fmt::format(" x {} columns", cols_per_warp_),
                                wgmma() ? " (a warpgroup's wgmma accumulators, warp by warp)" : "")));
  out_ = &out;
  program_ = &program;
  auto tile_work = [&](const K& block) {
    tile_coordinates(k, block, row_tiles, col_tiles, body);
    if (fold)
      emit_fold();
    else
      emit_contraction();
  };
  // A cluster's CTAs are consecutive blocks: the rank, then the cluster's tile.
  auto cluster_of = [&](const K& cta) {
    if (cluster == 1) return cta;
    cta_rank_ = let("cta_rank", kir::binary(kir::BinOp::Rem, cta, i64(cluster)));
    return kir::binary(kir::BinOp::Div, cta, i64(cluster));
  };
  if (!plan_.persistent) {
    tile_work(let("block", cluster_of(as(kir::special(kir::Special::BlockIdx), I64))));
  } else {
    // (CLUSTER: whole clusters walk the tiles, cluster c of the waves of gridDim.x / cluster.)
    // PERSIST: the CTAs (as many as the device holds) walk the tiles in waves of gridDim.x, CTA c
    // taking tile c of the even waves and tile gridDim.x - 1 - c of the odd ones (a snake: over
    // tiles ordered heaviest first, as a causal fold's are, each CTA's pairs weigh about the
    // same); what the hoisted setup holds (mbarriers and their phases) carries from one tile to
    // the next.
    lane_setup(body);
    using kir::BinOp;
    K cta = cluster_of(as(kir::special(kir::Special::BlockIdx), I64));
    K ctas = as(kir::special(kir::Special::GridDim), I64);
    if (cluster > 1) ctas = kir::binary(BinOp::Div, ctas, i64(cluster));
    K tiles = let("tiles", grid);
    K waves = let("tile_waves", ceil_div_by(tiles, ctas));
    const std::string wave = b_.fresh("tile_wave");
    K w = kir::var({wave}, I64);
    std::vector<kir::Stmt> walk = b_.nested([&] {
      K odd = kir::binary(BinOp::Eq, kir::binary(BinOp::Rem, w, i64(2)), i64(1));
      K in_wave = kir::select(odd, kir::binary(BinOp::Sub, kir::binary(BinOp::Sub, ctas, i64(1)), cta), cta);
      K block = let("block", add(mul(w, ctas), in_wave));
      // (Only the last wave has fewer tiles than CTAs: an odd one's go to the last CTAs.)
      emit(kir::if_then(lt(block, tiles), b_.nested([&] { tile_work(block); })));
    });
    if (fold) turns_begin();
    emit(kir::comment("persistent: this CTA's tiles, a snake over waves of gridDim.x"));
    emit(kir::for_loop(wave, I64, i64(0), waves, std::move(walk)));
    if (fold) turns_end();
  }
  out.body = std::move(body);
  if (plan_.producer_threads > 0) {
    // The copies the producers' thread issues, split off: what the plan allowed always splits.
    WarpRoles roles{.consumers = plan_.block_threads,
                    .producers = plan_.producer_threads,
                    .consumer_registers = plan_.consumer_registers,
                    .producer_registers = plan_.producer_registers};
    std::optional<std::string> why = specialize_warps(out, hoist_at_, roles);
    EMMY_INTERNAL_ASSERT(!why, fmt::format("warp specialization: {}", why.value_or("")));
  }
  // No CTA of a cluster leaves while another may still copy into its shared memory or arrive on
  // its mbarriers.
  if (cluster > 1) out.body.push_back(kir::intrinsic(kir::IntrinsicId::ClusterSync, {}, {}));
}

void MmaTier::lane_setup(std::vector<kir::Stmt>& top) {
  if (top_) return;  // once a kernel, before the hoisted setup
  K lane = let("lane", as(kir::special(kir::Special::LaneId), I64));
  K warp = let("warp", as(kir::special(kir::Special::WarpId), I64));
  lane32_ = let("lane32", kir::special(kir::Special::LaneId));
  grp_ = let("grp", kir::binary(kir::BinOp::Div, lane, i64(4)));
  tig_ = let("tig", kir::binary(kir::BinOp::Rem, lane, i64(4)));
  warp_m_ = t_.warps_n == 1 ? warp : let("warp_m", kir::binary(kir::BinOp::Div, warp, i64(t_.warps_n)));
  warp_n_ = t_.warps_n == 1 ? i64(0) : let("warp_n", kir::binary(kir::BinOp::Rem, warp, i64(t_.warps_n)));
  warp_rows32_ = let("warp_rows", i32(mul(warp_m_, i64(rows_per_warp_))));
  warp_cols32_ = let("warp_cols", i32(mul(warp_n_, i64(cols_per_warp_))));
  top_ = &top;
  hoist_at_ = top.size();
}

void MmaTier::tile_coordinates(const lir::Kernel& k, K rest, const K& row_tiles, const K& col_tiles,
                               std::vector<kir::Stmt>& top) {
  const bool fold = fold_ != nullptr;
  const size_t tiled = fold ? 1 : 2;  // trailing thread axes the block tiles
  K col_tile = i64(0);
  const bool raster = !fold && plan_.raster_group > 0;
  if (!fold && !raster) {  // columns fastest: the blocks in flight share their row operand's tiles
    col_tile = let("col_tile", kir::binary(kir::BinOp::Rem, rest, col_tiles));
    rest = kir::binary(kir::BinOp::Div, rest, col_tiles);
  }
  K row_tile;
  if (raster) {
    K tiles = mul(row_tiles, col_tiles);
    std::tie(row_tile, col_tile) = raster_tiles(kir::binary(kir::BinOp::Rem, rest, tiles), row_tiles, col_tiles);
    rest = kir::binary(kir::BinOp::Div, rest, tiles);
  } else if (const std::optional<KeyBound>& bound = key_limit_) {
    // Under a key bound (causal) row tiles fold different numbers of keys: the longest go
    // first (row tile slowest, heaviest first), the short ones fill the last wave instead of
    // trailing it. Within groups of heads (the other block axes) of about the target's
    // causal_group_blocks blocks: every row tile of a head runs while its keys are in L2
    // (heaviest first over all heads re-read (16, 16, 1024, 128)'s 128 MB of keys from DRAM
    // for each row tile).
    using kir::BinOp;
    K others = i64(1);
    for (size_t i = 0; i + tiled < k.threads.size(); ++i)
      others = mul(others, KernelBuilder::size_value(k.threads[i].size));
    K group =
        let("head_group", kir::binary(BinOp::Min, others, ceil_div_by(i64(b_.knobs().causal_group_blocks), row_tiles)));
    K per_group = mul(group, row_tiles);
    K first = let("group_head0", mul(kir::binary(BinOp::Div, rest, per_group), group));
    K width = let("group_heads", kir::binary(BinOp::Min, group, kir::binary(BinOp::Sub, others, first)));
    K within = let("in_group", kir::binary(BinOp::Rem, rest, per_group));
    K rank = kir::binary(BinOp::Div, within, width);
    row_tile = let("row_tile",
                   bound->upper ? kir::binary(BinOp::Sub, kir::binary(BinOp::Sub, row_tiles, i64(1)), rank) : rank);
    rest = add(first, kir::binary(BinOp::Rem, within, width));
  } else {
    row_tile = let("row_tile", kir::binary(kir::BinOp::Rem, rest, row_tiles));
    rest = kir::binary(kir::BinOp::Div, rest, row_tiles);
  }
  for (size_t i = k.threads.size() - tiled; i-- > 0;) {
    const tir::Axis& a = k.threads[i];
    K v = i == 0 ? rest : kir::binary(kir::BinOp::Rem, rest, KernelBuilder::size_value(a.size));
    b_.scope().index[a.name] = let(b_.unclashed(a.name), v);
    if (i > 0) rest = kir::binary(kir::BinOp::Div, rest, KernelBuilder::size_value(a.size));
  }
  lane_setup(top);  // (a persistent kernel's comes before its tiles)
  row_block0_ = let("row_block0", mul(cluster_tile(row_tile, 'm'), i64(rows_per_block_)));
  row0_ = let("row0", add(row_block0_, mul(warp_m_, i64(rows_per_warp_))));
  if (wgmma()) group_row0_ = let("group_row0", add(row_block0_, mul(warpgroup(), i64(4 * rows_per_warp_))));
  if (!fold) {
    col_block0_ = let("col_block0", mul(cluster_tile(col_tile, 'n'), i64(cols_per_block_)));
    col0_ = let("col0", add(col_block0_, mul(warp_n_, i64(cols_per_warp_))));
  }
}

AxisAt MmaTier::axis_at(const tir::Axis& a, K base, bool zero) const {
  return {a.name, std::move(base), KernelBuilder::size_value(a.size), zero};
}

bool KernelBuilder::mma_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why,
                               KernelPlan& plan) {
  MmaTier tier(*this, *knobs_.mma, knobs_.stage);
  tier.kernel_body_ = k.body;
  if (!tier.build(k, out, program, why)) {
    plan.no_contraction = tier.no_contraction();
    return false;
  }
  plan = tier.plan_made();
  return true;
}

}  // namespace emmy::lower::detail
