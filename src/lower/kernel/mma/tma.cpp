// TMA: tensor-map parameters (or the reason a slab has none), mbarrier setup, bulk tensor
// copies into a stage, and the phase waits.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

std::string MmaTier::tma_refusal(const SlabChoice& s) const {
  const tir::Tensor* t = b_.loops().tensors.find(s.read.name);
  if (!t || !b_.in_global(s.read.name)) return "it is not a tensor in global memory";
  if (!s.strided) return "its tile's rows are not one subscript each (a bare index) of the tensor";
  if (t->dims.size() < 2 || t->dims.size() > static_cast<size_t>(kir::kTmaMaxRank))
    return fmt::format("{} has {} dimensions (a tensor map has 2 to {})", s.read.name, t->dims.size(),
                       kir::kTmaMaxRank);
  if (kir::type_bytes(t_.operand) != 2) return fmt::format("{} elements are not 2 bytes", kir::type_name(t_.operand));
  if (s.rows > 256 || s.rows % 8 != 0)
    return fmt::format("a tile of {} rows (a box: at most 256, a multiple of 8)", s.rows);
  if (s.cols % 64 != 0) return fmt::format("tile rows of {} elements (boxes of 64: the 128-byte swizzle)", s.cols);
  return {};
}

std::string MmaTier::tensor_map_param(const Slab& s, int rows) {
  std::vector<int> box(s.read.args.size(), 1);
  box[0] = 64;
  for (size_t i = 0; i < s.read.args.size(); ++i)
    if (s.read.args[i].kind == Expr::Kind::Index && s.read.args[i].name == s.outer.name)
      box[s.read.args.size() - 1 - i] = rows > 0 ? rows : s.rows;
  for (const kir::Param& p : out_->params)
    if (p.kind == kir::Param::Kind::TensorMap && p.map_of == s.read.name && p.box == box) return p.name;
  std::string name = b_.fresh(s.read.name + "_map");
  out_->params.push_back({kir::Param::Kind::TensorMap, name, t_.operand, true, s.read.name, box, kir::Swizzle::B128});
  if (tma_bars_.empty()) tma_setup();
  return name;
}

void MmaTier::tma_setup() {
  tma_bars_ = b_.fresh("tma_bar");
  tma_phase_ = b_.fresh("tma_phase");
  init_mbarriers("TMA: a full mbarrier a buffer, initialised by thread 0; its phases, a bit each", tma_bars_,
                 tma_phase_, 1, 0);
}

void MmaTier::tma_free_setup() {
  tma_free_ = b_.fresh("tma_free");
  tma_free_phase_ = b_.fresh("tma_free_phase");
  // (CLUSTER: and lane 0 of every warp of the cluster's other CTAs: peer_arrivals.)
  const int peers = (std::max(plan_.cluster, 1) - 1) * (out_->block_threads / kWarp);
  init_mbarriers(
      plan_.cluster > 1
          ? "TMA: a free mbarrier a buffer, every thread arriving and each warp of the cluster's other CTAs; "
            "the issuer's phases"
          : "TMA: a free mbarrier a buffer, every thread arriving; the issuer's phases",
      tma_free_, tma_free_phase_, out_->block_threads + peers, 0xffffffffLL, plan_.overlap && !fold_ ? 1 : 0);
}

void MmaTier::init_mbarriers(const std::string& why, const std::string& bars, const std::string& phases, int count,
                             int64_t bits, int spare) {
  out_->shared.push_back({bars, ScalarType::I64, stage_->depth + spare, 8});
  std::vector<kir::Stmt> init;
  for (int i = 0; i < stage_->depth + spare; ++i)
    init.push_back(kir::intrinsic(kir::IntrinsicId::MbarrierInit, {}, {kir::shared_addr(bars, ci32(i))}, {count}));
  init.push_back(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));  // the barriers, seen by the copies
  auto at = [&] { return top_->begin() + static_cast<std::ptrdiff_t>(hoist_at_++); };
  top_->insert(at(), kir::comment(why));
  top_->insert(at(), kir::decl(phases, U32, kir::ci(bits, U32)));
  top_->insert(
      at(), kir::if_then(kir::binary(kir::BinOp::Eq, kir::special(kir::Special::ThreadIdx), ci32(0)), std::move(init)));
  // A cluster's CTAs copy into and arrive on each other's mbarriers: every CTA's are initialised
  // before any CTA goes on.
  top_->insert(at(), plan_.cluster > 1 ? kir::intrinsic(kir::IntrinsicId::ClusterSync, {}, {}) : kir::barrier());
}

std::optional<K> MmaTier::map_empty(const Slab& s) {
  const tir::Tensor& t = *b_.loops().tensors.find(s.read.name);
  std::optional<K> empty;
  for (const std::string& d : t.dims) {
    K size = KernelBuilder::size_value(d);
    if (size.kind == K::Kind::Const) continue;  // a literal dimension is positive (E037)
    K zero = kir::binary(kir::BinOp::Eq, size, i64(0));
    empty = empty ? kir::binary(kir::BinOp::Or, *empty, zero) : zero;
  }
  if (!empty) return std::nullopt;
  return hoisted("empty_" + s.read.name, *empty);
}

void MmaTier::tma_fill(const std::vector<const Slab*>& slabs, const K& buf, const K& origin, bool wait_free) {
  K bar = kir::shared_addr(tma_bars_, i32(buf));
  std::vector<kir::Stmt> issue = b_.nested([&] {
    if (wait_free) wait_phase(tma_free_, tma_free_phase_, buf);
    // The bytes the copies bring: a tile of a tensor without elements brings none, this thread
    // writes its zeros instead.
    std::vector<std::optional<K>> empty;
    int64_t bytes = 0;
    std::optional<K> unbrought;
    for (const Slab* s : slabs) {
      const int64_t tile = s->elems() * kir::type_bytes(t_.operand);
      bytes += tile;
      empty.push_back(map_empty(*s));
      if (!empty.back()) continue;
      // (A name of the slab's, not a fresh one: the copies of an interior and a masked block print
      // the same, which warp specialization relies on.)
      // Sixteen bytes a store where the tile is whole 16-byte chunks (a TMA box's rows are), else
      // an element a store.
      const std::string at = "zero_" + s->array, zeros = "zeros_" + s->array;
      const int per = tile % 16 == 0 ? static_cast<int>(16 / kir::type_bytes(t_.operand)) : 1;
      K first = add(s->buffer_start(buf), mul(kir::var({at}, ScalarType::I32), ci32(per)));
      // Cold (a tensor without elements): the loop stays rolled.
      std::vector<kir::Stmt> fill;
      if (per > 1) fill.push_back(kir::decl(zeros, t_.operand, kir::cf(0, t_.operand), per));
      fill.push_back(
          kir::for_loop(at, ScalarType::I32, ci32(0), ci32(s->elems() / per),
                        {per > 1 ? kir::vec_store(s->array, first, zeros, t_.operand, per, kir::Space::Shared)
                                 : kir::store(kir::Space::Shared, s->array, first, kir::cf(0, t_.operand))},
                        kir::Unroll::Never));
      emit(kir::if_then(*empty.back(), std::move(fill)));
      K none = kir::select(*empty.back(), kir::ci(tile, U32), kir::ci(0, U32));
      unbrought = unbrought ? add(*unbrought, none) : none;
    }
    // The buffer's last reads (generic proxy, ordered by the barrier or the free mbarrier
    // before) and any zeros written here, before the copies.
    emit(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));
    K expected = kir::ci(bytes, U32);
    if (unbrought) expected = kir::binary(kir::BinOp::Sub, expected, *unbrought);
    emit(kir::intrinsic(kir::IntrinsicId::MbarrierExpectTx, {}, {bar, expected}));
    for (size_t i = 0; i < slabs.size(); ++i) {
      const Slab& s = *slabs[i];
      // CLUSTER: the shared slab's 64-column boxes split into runs, one a CTA, or (fewer boxes
      // than CTAs' runs) each box's rows into shares; each multicast to every CTA of the cluster
      // (the same offsets, the same mbarrier there).
      const bool multicast = shared_by_cluster(s.array);
      const bool by_runs = multicast && s.cols / 64 % plan_.cluster == 0, by_rows = multicast && !by_runs;
      const int per_run = s.cols / 64 / (by_runs ? plan_.cluster : 1);
      const int share = by_rows ? s.rows / plan_.cluster : s.rows;  // the box's rows
      const std::string map = by_rows ? tensor_map_param(s, share) : s.map;
      const int64_t ctas = multicast ? (int64_t{1} << plan_.cluster) - 1 : 0;
      std::vector<kir::Stmt> boxes = b_.nested([&] {
        for (int q = 0; q < per_run; ++q) {
          // The box: q (a constant), or q of this CTA's run (a run-time one); by rows, this
          // CTA's share of box q's rows.
          K p = by_runs ? add(mul(i32(*cta_rank_), ci32(per_run)), ci32(q)) : ci32(q);
          // Unclamped coordinates: the box's elements past the tensor's ends read as zero.
          auto [outer, inner] = tile_base(s, origin);
          b_.push_scope();
          b_.scope().index[s.outer.name] = by_rows ? add(outer, mul(as(*cta_rank_, I64), i64(share))) : outer;
          b_.scope().index[s.inner.name] = by_runs ? add(inner, mul(as(p, I64), i64(64))) : add(inner, i64(q * 64));
          K dst = by_runs ? add(s.buffer_start(buf), mul(p, ci32(int64_t{s.rows} * 64)))
                          : add(s.buffer_start(buf), ci32(int64_t{q} * s.rows * 64));
          if (by_rows) dst = add(dst, mul(i32(*cta_rank_), ci32(int64_t{share} * 64)));
          std::vector<K> args{kir::shared_addr(s.array, dst), bar};
          for (size_t a = s.read.args.size(); a-- > 0;) args.push_back(i32(b_.lower(s.read.args[a])));
          b_.pop_scope();
          emit(kir::intrinsic(kir::tma_load_of_rank(static_cast<int>(s.read.args.size())), {}, std::move(args), {ctas},
                              map));
        }
      });
      if (empty[i])
        emit(kir::if_then(kir::unary(kir::UnOp::Not, *empty[i]), std::move(boxes)));
      else
        for (kir::Stmt& x : boxes) emit(std::move(x));
    }
  });
  // Thread 0 issues, or with WSPEC the producers' first thread, past the consumers.
  emit(kir::if_then(kir::binary(kir::BinOp::Eq, kir::special(kir::Special::ThreadIdx),
                                ci32(plan_.producer_threads > 0 ? plan_.block_threads : 0)),
                    std::move(issue)));
}

void MmaTier::wait_phase(const std::string& bars, const std::string& phases, const K& buf) {
  K bit = kir::binary(kir::BinOp::Shl, kir::ci(1, U32), as(buf, U32));
  K parity =
      kir::binary(kir::BinOp::Ne, kir::binary(kir::BinOp::BitAnd, kir::var({phases}, U32), bit), kir::ci(0, U32));
  emit(kir::intrinsic(kir::IntrinsicId::MbarrierTryWait, {}, {kir::shared_addr(bars, i32(buf)), as(parity, U32)}));
  emit(kir::assign({phases}, kir::binary(kir::BinOp::BitXor, kir::var({phases}, U32), bit)));
}

}  // namespace emmy::lower::detail
