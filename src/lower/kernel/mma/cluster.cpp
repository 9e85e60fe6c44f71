// CLUSTER on a contraction: CTAs on consecutive row (or column) tiles form a thread-block cluster
// and share the other operand's tile, each bringing its share of it to all of them by TMA
// multicast; a buffer is refilled once every CTA of the cluster released it.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

void MmaTier::plan_cluster() {
  const ClusterValue& c = *b_.knobs().cluster;
  auto refuse = [&](std::string why) {
    plan_.no_cluster = std::move(why);
    b_.law_warnings().push_back(
        {"W050", fmt::format("CLUSTER={}{} has no effect: {}", c.axis, c.size, plan_.no_cluster)});
  };
  if (fold_)
    return refuse(
        "a fold's CTAs share no operand tile (each streams its own rows' keys); CLUSTER pairs a contraction's tiles");
  if (!stage_ || !stage_->ring || stage_->depth - (plan_.overlap ? 2 : 1) < 1)
    return refuse("the operands do not stream through a ring of buffers (STAGE=d<N>/tma/ring)");
  for (const SlabPlan& s : plan_.slabs)
    if (s.transport != "tma")
      return refuse(fmt::format("the {} operand's tiles do not come by TMA{}", s.role,
                                s.no_tma.empty() ? "" : " (" + s.no_tma + ")"));
  const std::string role = c.axis == 'm' ? "col" : "row";
  auto shared = std::find_if(plan_.slabs.begin(), plan_.slabs.end(), [&](const SlabPlan& s) { return s.role == role; });
  EMMY_INTERNAL_ASSERT(shared != plan_.slabs.end(), "a contraction without its two slabs");
  // A CTA's share is a run of the tile's 64-column boxes (the 128-byte swizzle's panels), or
  // where they do not split, its share of each box's rows (whole 8-row swizzle atoms).
  const int boxes = shared->cols / 64;
  if (boxes % c.size != 0 && shared->rows % (8 * c.size) != 0)
    return refuse(fmt::format(
        "the shared {} operand's tile is {} box{} of 64 elements along {} and {} rows, which "
        "split among {} CTAs neither by boxes nor by 8-row pieces",
        c.axis == 'm' ? "column" : "row", boxes, boxes == 1 ? "" : "es", shared->inner, shared->rows, c.size));
  plan_.cluster_axis = c.axis;
  plan_.cluster = c.size;
}

K MmaTier::cluster_tiles(const K& tiles, char axis) const {
  if (plan_.cluster < 2 || plan_.cluster_axis != axis) return tiles;
  return ceil_div(tiles, plan_.cluster);
}

K MmaTier::cluster_tile(const K& tile, char axis) const {
  if (plan_.cluster < 2 || plan_.cluster_axis != axis) return tile;
  return add(mul(tile, i64(plan_.cluster)), *cta_rank_);
}

bool MmaTier::shared_by_cluster(const std::string& slab_array) const {
  return plan_.cluster > 1 && slab_array == cluster_slab_;
}

// Lane 0 of each consumer warp, once the warp is done with the buffer, on the other CTAs' free
// mbarriers: their producers refill the buffer here too.
std::vector<kir::Stmt> MmaTier::peer_arrivals(const K& buf) const {
  if (plan_.cluster < 2) return {};
  std::vector<kir::Stmt> arrivals;
  for (int d = 1; d < plan_.cluster; ++d) {
    K peer = kir::binary(kir::BinOp::Rem, add(*cta_rank_, i64(d)), i64(plan_.cluster));
    arrivals.push_back(kir::intrinsic(kir::IntrinsicId::MbarrierArrivePeer, {},
                                      {kir::shared_addr(tma_free_, i32(buf)), as(peer, U32)}));
  }
  return {kir::if_then(kir::binary(kir::BinOp::Eq, lane32_, ci32(0)), std::move(arrivals))};
}

}  // namespace emmy::lower::detail
