// COOP=t<N>[/v<V>] in the scalar tier: N consecutive threads own one point of a kernel's
// thread space (a row); reductions and loops over the row's axes are split between them,
// partial carriers are combined with the monoid's proved combine (shfl butterflies in a warp,
// shared memory across warps), and accesses along the split axis move V elements at a time (the
// row cache, COOP=.../c<R>, is row_cache.cpp).
// Members of KernelBuilder (builder.hpp), kept apart so the scalar tier stays readable.
#include "ir/intrinsics.hpp"
#include "lower/kernel/builder.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

// The block: max(N, 128) threads, block / N rows. Every thread of a row runs the collective
// parts (shuffles, barriers) whether or not its row exists: rows past the end compute the last
// row again, and only their stores are guarded. With k<K> a row is split between the K CTAs of a
// cluster (coop_cluster.cpp); with PERSIST the CTAs the device holds walk the rows.
void KernelBuilder::coop_kernel(const lir::Kernel& k, kir::Kernel& out, const K& total) {
  const int n = knobs_.coop_threads, v = knobs_.coop_vec, kc = knobs_.coop_cluster;
  const int rows = out.block_threads / n;  // (kernel() set the grid: a block's rows)
  const ScalarType I = ScalarType::I64;
  shared_ = &out.shared;
  coop_inner_ = false;
  coop_axes_.clear();
  vec_.reset();
  slices_.clear();
  emit(
      kir::comment(fmt::format("COOP=t{}/v{}: {} threads own each point of the thread space (a row), {} row{} per "
                               "block of {}; a row past the end reruns the last row with its stores off",
                               n, v, n, rows, rows == 1 ? "" : "s", out.block_threads)));
  K block = as(kir::special(kir::Special::BlockIdx), I);
  coop_cta_.reset();
  if (kc > 1) {
    EMMY_INTERNAL_ASSERT(rows == 1, "COOP=.../k<K> with several rows a block");
    out.cluster = kc;
    out.grid_x = kir::binary(kir::BinOp::Mul, out.grid_x, kir::ci(kc, I));
    emit(
        kir::comment(fmt::format("k{}: each row split between the {} CTAs of a cluster, a slice of its columns "
                                 "each; their carriers combined through distributed shared memory",
                                 kc, kc)));
    coop_cta_ = let(unclashed("coop_cta"), kir::binary(kir::BinOp::Rem, block, kir::ci(kc, I)));
    block = kir::binary(kir::BinOp::Div, block, kir::ci(kc, I));
  }
  K tid = let(unclashed("coop_tid"), as(kir::special(kir::Special::ThreadIdx), I));
  top_block_ = blocks_.back();
  top_block_at_ = top_block_->size();
  weights_ = knobs_.persist && knobs_.coop_cache > 0 && !knobs_.coop_registers ? row_weights(k) : WeightCache{};
  auto rows_of = [&](const K& unit) {
    K row =
        let(unclashed("coop_row"), kir::binary(kir::BinOp::Add, kir::binary(kir::BinOp::Mul, unit, kir::ci(rows, I)),
                                               kir::binary(kir::BinOp::Div, tid, kir::ci(n, I))));
    coop_lane_ = let(unclashed("coop_rank"), kir::binary(kir::BinOp::Rem, tid, kir::ci(n, I)));
    coop_slot_ = rows == 1 ? kir::ci(0, I) : kir::binary(kir::BinOp::Div, tid, kir::ci(n, I));
    coop_row_ok_ = let(unclashed("coop_row_ok"), kir::binary(kir::BinOp::Lt, row, total));
    K last = kir::binary(kir::BinOp::Sub, total, kir::ci(1, I));
    K rest = let(unclashed("coop_rowc"), kir::binary(kir::BinOp::Min, row, last));
    row_scope_ = scopes_.size() - 1;
    for (size_t i = k.threads.size(); i-- > 0;) {
      const tir::Axis& a = k.threads[i];
      K val = i == 0 ? rest : kir::binary(kir::BinOp::Rem, rest, size_value(a.size));
      scopes_.back().index[a.name] = let(unclashed(a.name), val);
      coop_axes_.insert(a.name);
      if (i > 0) rest = kir::binary(kir::BinOp::Div, rest, size_value(a.size));
    }
    if (knobs_.coop_cache > 0) return coop_cached_body(k);
    for (const lir::Stmt& s : k.body) stmt(s);
  };
  if (!knobs_.persist) {
    rows_of(block);
  } else {
    out.persistent = true;
    coop_walk(block,
              kir::binary(kir::BinOp::Div, kir::binary(kir::BinOp::Add, total, kir::ci(rows - 1, I)), kir::ci(rows, I)),
              out.block_threads, rows_of, [&] { weights_copy(out.block_threads); });
  }
  // No CTA of a cluster leaves while another may still read its shared memory.
  if (kc > 1) emit(kir::intrinsic(kir::IntrinsicId::ClusterSync, {}, {}));
}

// The carrier's laws, as the algebra layer proves them on its combine (or the user assumed them).
const MonoidLaws& KernelBuilder::coop_laws(const std::string& monoid, const CarrierSpec& spec) {
  if (auto it = laws_.find(monoid); it != laws_.end()) return it->second;
  return laws_[monoid] = monoid_laws(terms_of(monoid, spec), checked_, law_memo_);
}

// A reduction over `axes` whose first axis is split between the row's threads, each folding
// its share into `carrier` (already at the identity), then the shares combined: a tree of
// contiguous shares needs associativity; strided shares (coalesced) reorder, and need
// commutativity too.
void KernelBuilder::coop_reduce(const std::string& monoid, const std::vector<tir::Axis>& axes, const CarrierSpec& spec,
                                const std::vector<K>& carrier, const std::optional<K>& has,
                                const std::function<void()>& element) {
  const MonoidLaws& laws = coop_laws(monoid, spec);
  bool contiguous = !missing_laws(laws, Regroup::Reorder).empty();
  auto use = knobs_.uses.find(Knob::Coop);
  if (use == knobs_.uses.end()) internal_error(__FILE__, __LINE__, "COOP in force without its setting");
  require_laws(
      laws, contiguous ? Regroup::Tree : Regroup::Reorder, use->second,
      fmt::format("splits the reduction over {} between the {} threads of a row", axes[0].name, knobs_.coop_threads),
      law_warnings_);
  emit(kir::comment(fmt::format(
      "{} over {} split across the row's {} threads: {}", monoid, axes[0].name, knobs_.coop_threads,
      contiguous                                     ? "a contiguous range each (the combine is not proved commutative)"
      : laws.commutative == algebra::Outcome::Proved ? "strided, coalesced (the combine is proved commutative)"
                                                     : "strided, coalesced (the combine is assumed commutative)")));
  coop_split(axes[0], contiguous, [&] {
    if (axes.size() == 1) return element();
    for (kir::Stmt& s : axis_loops(axes, element, 1)) emit(std::move(s));
  });
  coop_combine(monoid, spec, carrier, has);
  if (coop_cta_) cluster_combine(spec, carrier, has);
}

// One loop over `axis` of this thread's share: strided (thread r takes r, r + N, ...: the
// row's threads read neighbouring elements together) or a contiguous range. With V > 1, a
// vector path steps V elements at a time when every row of the tensors it touches starts
// V-aligned (sizes multiples of V, checked at run time); otherwise the scalar path runs.
void KernelBuilder::coop_split(const tir::Axis& axis, bool contiguous, const std::function<void()>& element) {
  const int n = knobs_.coop_threads, v = knobs_.coop_vec;
  const ScalarType I = ScalarType::I64;
  K size = split_extent(axis);
  bool was_inner = coop_inner_;
  coop_inner_ = true;
  if (cache_.mode != RowCache::Off) {
    coop_cached_split(axis, contiguous, element);
    coop_inner_ = was_inner;
    return;
  }
  // [lo, hi) step `step` of this thread, in units of `width` elements.
  auto share = [&](int width, std::string var, const std::function<std::vector<kir::Stmt>()>& body) {
    K lo = kir::binary(kir::BinOp::Mul, coop_lane_, kir::ci(width, I));
    K hi = size;
    int step = n * width;
    if (contiguous) {
      int64_t group = static_cast<int64_t>(n) * width;
      K per = kir::binary(
          kir::BinOp::Mul,
          kir::binary(kir::BinOp::Div, kir::binary(kir::BinOp::Add, size, kir::ci(group - 1, I)), kir::ci(group, I)),
          kir::ci(width, I));
      per = let(fresh("per"), per);
      lo = let(fresh("lo"), kir::binary(kir::BinOp::Mul, coop_lane_, per));
      hi = kir::binary(kir::BinOp::Min, kir::binary(kir::BinOp::Add, lo, per), size);
      step = width;
    }
    kir::Stmt f = kir::for_loop(var, I, lo, hi, body());
    f.step = step;
    emit(std::move(f));
  };
  auto scalar_path = [&] {
    std::string var = fresh(axis.name);
    share(1, var, [&] {
      return nested([&] {
        scopes_.back().index[axis.name] = split_index(axis, kir::var({var}, I));
        element();
      });
    });
  };
  if (v == 1) {
    scalar_path();
    coop_inner_ = was_inner;
    return;
  }
  vec_conds_.clear();
  vec_used_ = 0;
  std::vector<kir::Stmt> vector_body = nested([&] {
    std::string var = fresh(axis.name + "0");
    share(v, var, [&] { return nested([&] { coop_chunk(axis, kir::var({var}, I), element); }); });
  });
  std::vector<K> conds = std::move(vec_conds_);
  vec_conds_.clear();
  if (vec_used_ == 0) {  // nothing along the axis to vectorize: the scalar path alone
    scalar_path();
    coop_inner_ = was_inner;
    return;
  }
  // Rows that need not start V-aligned: the peeled path where shares are strided, else one element at a time.
  std::vector<kir::Stmt> unaligned_body =
      contiguous ? nested(scalar_path) : nested([&] { coop_peeled(axis, fresh(axis.name + "0"), n * v, element); });
  // (Under k<K> the slices start at multiples of V: the whole axis's size decides, as it does the
  // row's starts.)
  K ok = kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, size_value(axis.size), kir::ci(v, I)), kir::ci(0, I));
  std::vector<std::string> names{axis.size};
  for (const K& c : conds) {
    if (c.kind == K::Kind::Param && c.name == axis.size) continue;  // already the axis size
    ok = kir::binary(kir::BinOp::And, ok,
                     kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, c, kir::ci(v, I)), kir::ci(0, I)));
    names.push_back(c.name);
  }
  emit(
      kir::comment(fmt::format("vector path ({} elements an access) when {} {} of {}: rows then start "
                               "aligned; else {}",
                               v, fmt::join(names, ", "), names.size() == 1 ? "is a multiple" : "are multiples", v,
                               contiguous ? "one element at a time" : "the peeled path")));
  emit(kir::if_then(ok, std::move(vector_body), std::move(unaligned_body)));
  coop_inner_ = was_inner;
}

// The vector path of rows that need not start V-aligned: chunks of V elements from the first
// element where the anchor's row is V-aligned (the anchor: the first row a chunk reaches along
// the axis), strided over the row's threads as in the aligned path, `var` the chunk's first
// element, `step` apart; a row that starts where the anchor's does moves V at a time, any other
// one element at a time; the row's edges before and after the chunks (fewer than V elements
// each) go one at a time. Strided shares only: the peel moves elements between threads.
void KernelBuilder::coop_peeled(const tir::Axis& axis, const std::string& var, int step,
                                const std::function<void()>& element) {
  const int v = knobs_.coop_vec;
  const ScalarType I = ScalarType::I64;
  const K size = split_extent(axis);
  const std::string peel = fresh("peel");
  peeling_ = true;
  peel_anchor_.reset();
  peel_ = kir::var({peel}, I);
  // Under COOP=.../r<R> the chunks are R copies (row_cache.cpp), bounded by the last chunk's end.
  const bool copies = knobs_.coop_registers && cache_.mode == RowCache::Peeled;
  const std::string vend = fresh("vend");
  const K end = kir::var({vend}, I);
  ChunkCopies copied;
  std::vector<kir::Stmt> chunks;
  std::vector<std::vector<kir::Stmt>> by_shift;  // the loop unswitched on the row's shift (realigned weights)
  if (copies) {
    copied = lower_copies(var, end, [&](const K& at) { coop_chunk(axis, at, element); });
  } else {
    // Under the row cache the chunks are lowered first as the copy of shift 0 (the same chunks
    // where they realign nothing); where they realign weights, the other shifts' copies follow.
    // (A streamed row reads its row from memory each pass: its one loop keeps the kernel small.)
    const bool unswitch = cache_.mode == RowCache::Peeled;
    std::optional<RowCacheState> before;
    if (unswitch) {
      before = cache_;
      realign_shift_ = 0;
    }
    realigned_seen_ = false;
    chunks = nested([&] { coop_chunk(axis, kir::var({var}, I), element); });
    realign_shift_.reset();
    if (unswitch && realigned_seen_) by_shift = unswitched_chunks(axis, var, element, *before, std::move(chunks));
  }
  peeling_ = false;
  if (!peel_anchor_) {  // nothing along the axis to move V at a time: every element an edge
    coop_edges(axis, kir::ci(0, I), kir::ci(0, I), element);
    return;
  }
  const K vk = kir::ci(v, I);
  K misaligned = kir::binary(kir::BinOp::Rem, *peel_anchor_, vk);
  emit(
      kir::comment(fmt::format("peeled path: the row's first {} elements (up to the first {}-aligned one) one at a "
                               "time, then chunks of {}, then the rest one at a time",
                               peel, v, v)));
  emit(kir::decl(peel, I,
                 kir::binary(kir::BinOp::Min,
                             kir::binary(kir::BinOp::Rem, kir::binary(kir::BinOp::Sub, vk, misaligned), vk), size)));
  let(vend, kir::binary(kir::BinOp::Add, peel_,
                        kir::binary(kir::BinOp::Mul,
                                    kir::binary(kir::BinOp::Div, kir::binary(kir::BinOp::Sub, size, peel_), vk), vk)));
  coop_edges(axis, peel_, end, element);
  const K lo = kir::binary(kir::BinOp::Add, peel_, kir::binary(kir::BinOp::Mul, coop_lane_, vk));
  if (copies) {
    emit_copies(std::move(copied), lo, end, step);
    return;
  }
  if (by_shift.empty()) {
    kir::Stmt f = kir::for_loop(var, I, lo, end, std::move(chunks));
    f.step = step;
    emit(std::move(f));
    return;
  }
  // One loop a shift, chosen once a row (the weights' shift is the peel: realigned_read).
  const std::string s = fresh("shift");
  emit(kir::decl(s, ScalarType::I32, kir::cast(kir::binary(kir::BinOp::Rem, peel_, vk), ScalarType::I32)));
  std::vector<kir::Stmt> chain;
  for (int sh = v - 1; sh >= 0; --sh) {
    kir::Stmt f = kir::for_loop(var, I, lo, end, std::move(by_shift[static_cast<size_t>(sh)]));
    f.step = step;
    chain = sh == v - 1 ? std::vector<kir::Stmt>{std::move(f)}
                        : std::vector<kir::Stmt>{kir::if_then(
                              kir::binary(kir::BinOp::Eq, kir::var({s}, ScalarType::I32), kir::ci(sh, ScalarType::I32)),
                              {std::move(f)}, std::move(chain))};
  }
  for (kir::Stmt& c : chain) emit(std::move(c));
}

// The chunks of a peeled split whose weights are realigned (realigned_read), lowered once for
// each shift s = 0..V-1 with s a constant (`shift0`: the copy of s = 0, already lowered): each copy
// picks its elements out of the two aligned vectors by register (no test of s a chunk, no moves
// where the paths meet: the arithmetic reads the loaded halves in place), at s = 0 one aligned
// read. Each copy starts from the row cache's state before the first one (a copy keeps what the
// first kept), and the laws' warnings are the first copy's.
std::vector<std::vector<kir::Stmt>> KernelBuilder::unswitched_chunks(const tir::Axis& axis, const std::string& var,
                                                                     const std::function<void()>& element,
                                                                     const RowCacheState& before,
                                                                     std::vector<kir::Stmt> shift0) {
  const RowCacheState after = cache_;
  const size_t first = law_warnings_.size();
  std::vector<std::vector<kir::Stmt>> out;
  out.push_back(std::move(shift0));
  for (int s = 1; s < vec_width(); ++s) {
    cache_ = before;
    realign_shift_ = s;
    out.push_back(nested([&] { coop_chunk(axis, kir::var({var}, ScalarType::I64), element); }));
  }
  realign_shift_.reset();
  cache_ = after;
  law_warnings_.resize(first);
  return out;
}

// The edges of a peeled row: its elements before `peel` and from `end` on, one at a time,
// strided over the row's threads.
void KernelBuilder::coop_edges(const tir::Axis& axis, const K& peel, const K& end,
                               const std::function<void()>& element) {
  const ScalarType I = ScalarType::I64;
  const K size = split_extent(axis);
  const std::string e = fresh("edge");
  const K ev = kir::var({e}, I);
  std::vector<kir::Stmt> body = nested([&] {
    scopes_.back().index[axis.name] =
        let(fresh(axis.name),
            split_index(axis, kir::select(kir::binary(kir::BinOp::Lt, ev, peel), ev,
                                          kir::binary(kir::BinOp::Add, end, kir::binary(kir::BinOp::Sub, ev, peel)))));
    element();
  });
  kir::Stmt f = kir::for_loop(
      e, I, coop_lane_, kir::binary(kir::BinOp::Add, peel, kir::binary(kir::BinOp::Sub, size, end)), std::move(body));
  f.step = knobs_.coop_threads;
  emit(std::move(f));
}

// Whether a chunk may move the row of `t` that starts at element `row` V at a time: in the
// aligned path where t's rows start V-aligned (vec_stride_ok), in the peeled path where the
// row starts where the anchor's does (the first row asked about is the anchor).
bool KernelBuilder::vec_row_ok(const tir::Tensor& t, const K& row) {
  if (!peeling_) return vec_stride_ok(t);
  if (!peel_anchor_) peel_anchor_ = row;
  return render_key(row) == render_key(*peel_anchor_);
}

// Element u of the chunk in `a`'s registers (one scalar register when an access is one element).
kir::Reg KernelBuilder::vec_reg(const VecChunk::Access& a, int u) {
  const std::string& array = a.arrays[static_cast<size_t>(u / a.width)];
  return a.width == 1 ? kir::Reg{array} : kir::Reg{array, u % a.width};
}

// The j-th access of `a` between `buffer` (from element `first` of the access) and its
// registers: a vector load or store, or a plain one for a single element.
kir::Stmt KernelBuilder::vec_move(const VecChunk::Access& a, size_t j, bool load, const std::string& buffer,
                                  kir::Space space, const K& first) {
  const ScalarType type = scalar_of(p_.tensors.find(a.tensor)->dtype);
  if (load && space == kir::Space::Global)
    if (auto kept = weight_at(buffer, first))
      return vec_move(a, j, load, kept->first, kir::Space::Shared, kept->second);
  K at = j == 0 ? first : kir::binary(kir::BinOp::Add, first, kir::ci(static_cast<int64_t>(j) * a.width, first.type));
  if (a.width == 1)
    return load ? kir::assign({a.arrays[j]}, kir::load(space, buffer, at, type))
                : kir::store(space, buffer, at, kir::var({a.arrays[j]}, type));
  return load ? kir::vec_load(a.arrays[j], type, a.width, buffer, at, space)
              : kir::vec_store(buffer, at, a.arrays[j], type, a.width, space);
}

// V elements base..base+V-1 of `axis`, each lowered in a scope of its own; reads of a row of a
// tensor along the axis share its vector loads, stores into it are gathered into vector stores.
void KernelBuilder::coop_chunk(const tir::Axis& axis, const K& base, const std::function<void()>& element) {
  const int v = vec_width();
  vec_.emplace();
  vec_->block = blocks_.size() - 1;
  vec_->axis = axis.name;
  vec_->local = base;
  vec_->base =
      split_index(axis, base);  // (an expression, not a register: a later pass's chunk finds the kept one by it)
  for (int u = 0; u < v; ++u) {
    vec_->u = u;
    vec_->elem = u == 0 ? vec_->base : kir::binary(kir::BinOp::Add, vec_->base, kir::ci(u, ScalarType::I64));
    std::vector<kir::Stmt> one = nested([&] {
      scopes_.back().index[axis.name] = vec_->elem;
      vec_->depth = blocks_.size();
      element();
    });
    for (kir::Stmt& s : one) emit(std::move(s));
  }
  for (const auto& [key, a] : vec_->stores) {
    std::vector<kir::Stmt> stores;
    for (size_t j = 0; j < a.arrays.size(); ++j)
      stores.push_back(vec_move(a, j, false, a.tensor, kir::Space::Global, a.index));
    emit(kir::if_then(coop_row_ok_, std::move(stores)));
  }
  vec_.reset();
}

// A row of `t` may be read V at a time: its rows start V-aligned (a literal last size
// divisible by V, or a size checked at run time).
bool KernelBuilder::vec_stride_ok(const tir::Tensor& t) {
  const int v = vec_width();
  if (v == 1 || t.dims.size() < 2) return true;
  const std::string& last = t.dims.back();
  if (std::isdigit(static_cast<unsigned char>(last[0]))) return std::stoll(last) % v == 0;
  K size = size_value(last);
  std::vector<K>& conds = cache_.mode == RowCache::Off ? vec_conds_ : cache_.conds;
  bool known = std::any_of(conds.begin(), conds.end(), [&](const K& c) { return c.name == size.name; });
  if (!known) conds.push_back(size);
  return true;
}

// The register arrays of V elements of `t` from element `index`, declared in `decls` (where the
// chunk starts, or a row cache's body top): one access of min(V, 16 / element bytes) elements each
// (at most 16 bytes).
VecChunk::Access KernelBuilder::vec_access(const tir::Tensor& t, const K& index, const std::string& prefix,
                                           std::vector<kir::Stmt>& decls) {
  const int v = vec_width();
  VecChunk::Access a;
  a.width = std::min(v, 16 / kir::type_bytes(scalar_of(t.dtype)));
  a.tensor = t.name;
  a.index = index;
  for (int j = 0; j < v / a.width; ++j) {
    a.arrays.push_back(fresh(prefix + t.name));
    decls.push_back(kir::decl(a.arrays.back(), scalar_of(t.dtype), a.width));
  }
  ++vec_used_;
  return a;
}

// An index expression that is the same for every element of a row (its thread axes, sizes,
// constants, inputs read at them: a gather's index): a vector load's row part may be computed
// where the chunk starts.
bool KernelBuilder::row_invariant(const Expr& e) const {
  switch (e.kind) {
    case Expr::Kind::Const:
    case Expr::Kind::Size: return true;
    case Expr::Kind::Index: {
      const K* bound = find_index(e.name);
      const auto& row = scopes_[row_scope_].index;
      auto top = row.find(e.name);
      return coop_axes_.count(e.name) && bound && top != row.end() && render_key(*bound) == render_key(top->second);
    }
    case Expr::Kind::Read: {  // a gather's index: an input's element at the row's indices
      const tir::Tensor* t = p_.tensors.find(e.name);
      if (!t || t->role != tir::Tensor::Role::Input || !t->record.empty()) return false;
      return std::all_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return row_invariant(a); });
    }
    case Expr::Kind::Unary:
    case Expr::Kind::Binary:
      return std::all_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return row_invariant(a); });
    default: return false;
  }
}

// t[row..., c] at the chunk's element u: element u of one vector load per chunk.
std::optional<K> KernelBuilder::vec_read(const Expr& e) {
  const tir::Tensor& t = *p_.tensors.find(e.name);
  if (e.args.empty() || !t.record.empty()) return std::nullopt;
  const Expr& last = e.args.back();
  const K* bound = last.kind == Expr::Kind::Index ? find_index(last.name) : nullptr;
  if (!bound || render_key(*bound) != render_key(vec_->elem)) return std::nullopt;
  for (size_t k = 0; k + 1 < e.args.size(); ++k)
    if (!row_invariant(e.args[k])) return std::nullopt;
  std::vector<K> idx;
  for (size_t k = 0; k + 1 < e.args.size(); ++k) idx.push_back(subscript(t, e.args[k], k));
  idx.push_back(kir::ci(0, ScalarType::I64));
  const K row = linear_index(t, idx);
  if (!vec_row_ok(t, row))
    return peeling_ && t.role == tir::Tensor::Role::Input && t.dims.size() == 1
               ? std::optional<K>(realigned_read(t, row))
               : std::nullopt;
  idx.back() = vec_->base;
  K at = linear_index(t, idx);
  std::string key = e.name + "@" + render_key(at);
  ScalarType type = scalar_of(t.dtype);
  if (cache_.mode != RowCache::Off) {
    std::vector<K> whole = idx;
    whole.back() = vec_->base;
    return cached_read(t, std::move(whole));
  }
  auto it = vec_->loads.find(key);
  if (it == vec_->loads.end()) {
    VecChunk::Access a = vec_access(t, at, "v_", *blocks_[vec_->block]);
    for (size_t j = 0; j < a.arrays.size(); ++j)
      blocks_[vec_->block]->push_back(vec_move(a, j, true, e.name, kir::Space::Global, at));
    it = vec_->loads.emplace(key, std::move(a)).first;
  }
  const VecChunk::Access& a = it->second;
  return kir::var(vec_reg(a, vec_->u), type);
}

// Element u of a peeled chunk of a one-dimensional input read along the axis (gamma[c] beside
// x[n, c], whose rows start anywhere): its elements sit s = base mod V past a V-aligned element,
// s the same for the whole row: every chunk starts at the peel plus a multiple of V
// (coop_peeled), so s = (row + peel) mod V, one 32-bit register the loop does not change
// (computed from the chunk's start it cost each chunk a 64-bit remainder and 64-bit tests: 5% of
// layernorm's instructions at (8192, 50257)). The chunk reads the two aligned chunks around it as
// vectors and takes its V elements out of them, a branch for each s (static register picks, no
// shuffling an element); at s = 0 one aligned read; where the upper one would leave the row (a
// row's last chunks), one element at a time. Under unswitched_chunks s is a constant instead.
K KernelBuilder::realigned_read(const tir::Tensor& t, const K& row) {
  const std::string key = t.name + "@realigned@" + render_key(row);
  realigned_seen_ = true;
  auto it = vec_->loads.find(key);
  if (it == vec_->loads.end()) it = vec_->loads.emplace(key, realigned_chunk(t, row)).first;
  return kir::var(vec_reg(it->second, vec_->u), scalar_of(t.dtype));
}

// realigned_read's registers and the statements that fill them, at the chunk's end: with s a
// register (one branch a value) or, under unswitched_chunks, the copy's constant.
VecChunk::Access KernelBuilder::realigned_chunk(const tir::Tensor& t, const K& row) {
  const ScalarType I = ScalarType::I64, I32 = ScalarType::I32;
  const int v = vec_width();
  std::vector<kir::Stmt>& chunk = *blocks_[vec_->block];
  const K first = kir::binary(kir::BinOp::Add, row, vec_->base);
  VecChunk::Access out = vec_access(t, first, "ra_", chunk);
  auto aligned = [&] {  // s = 0: the chunk's own vector
    std::vector<kir::Stmt> loads;
    for (size_t j = 0; j < out.arrays.size(); ++j)
      loads.push_back(vec_move(out, j, true, t.name, kir::Space::Global, first));
    return loads;
  };
  if (realign_shift_ == 0) {
    for (kir::Stmt& a : aligned()) chunk.push_back(std::move(a));
    return out;
  }
  K shift, shift32;
  if (realign_shift_) {
    shift = kir::ci(*realign_shift_, I);
  } else {
    const std::string s = fresh("shift_" + t.name);
    chunk.push_back(kir::decl(
        s, I32, kir::cast(kir::binary(kir::BinOp::Rem, kir::binary(kir::BinOp::Add, row, peel_), kir::ci(v, I)), I32)));
    shift32 = kir::var({s}, I32);
    shift = kir::cast(shift32, I);
  }
  K lo_at = kir::binary(kir::BinOp::Sub, first, shift);
  if (!realign_shift_) {  // a register, at the chunk's level
    const std::string lo_reg = fresh("lo_" + t.name);
    chunk.push_back(kir::decl(lo_reg, I, std::move(lo_at)));
    lo_at = kir::var({lo_reg}, I);
  }
  const K hi_at = kir::binary(kir::BinOp::Add, lo_at, kir::ci(v, I));
  const VecChunk::Access lo = vec_access(t, lo_at, "rl_", chunk), hi = vec_access(t, hi_at, "rh_", chunk);
  std::vector<kir::Stmt> shifted;
  for (size_t j = 0; j < lo.arrays.size(); ++j) {
    shifted.push_back(vec_move(lo, j, true, t.name, kir::Space::Global, lo_at));
    shifted.push_back(vec_move(hi, j, true, t.name, kir::Space::Global, hi_at));
  }
  // Chunk element u is register u + s of the pair.
  auto picks = [&](int s) {
    std::vector<kir::Stmt> moves;
    for (int u = 0; u < v; ++u)
      moves.push_back(kir::assign(
          vec_reg(out, u), kir::var(u + s < v ? vec_reg(lo, u + s) : vec_reg(hi, u + s - v), scalar_of(t.dtype))));
    return moves;
  };
  if (realign_shift_) {
    for (kir::Stmt& m : picks(*realign_shift_)) shifted.push_back(std::move(m));
  } else {
    std::vector<kir::Stmt> cases;  // s = V - 1 innermost: if (s == 1) ... else if (s == 2) ...
    for (int sh = v - 1; sh >= 1; --sh)
      cases = sh == v - 1 ? picks(sh)
                          : std::vector<kir::Stmt>{kir::if_then(kir::binary(kir::BinOp::Eq, shift32, kir::ci(sh, I32)),
                                                                picks(sh), std::move(cases))};
    for (kir::Stmt& c : cases) shifted.push_back(std::move(c));
  }
  std::vector<kir::Stmt> elements;
  for (int u = 0; u < v; ++u)
    elements.push_back(kir::assign(
        vec_reg(out, u), load_input(t.name, kir::binary(kir::BinOp::Add, first, kir::ci(u, I)), scalar_of(t.dtype))));
  // (The lower vector starts at base - s >= 0 and ends at or before the chunk's end.)
  const K past = realign_shift_
                     ? kir::binary(kir::BinOp::Add, vec_->base, kir::ci(2 * v - *realign_shift_, I))
                     : kir::binary(kir::BinOp::Add, kir::binary(kir::BinOp::Sub, vec_->base, shift), kir::ci(2 * v, I));
  const K in_row = kir::binary(kir::BinOp::Le, past, size_value(t.dims.back()));
  kir::Stmt pair = kir::if_then(in_row, std::move(shifted), std::move(elements));
  if (realign_shift_)
    chunk.push_back(std::move(pair));
  else
    chunk.push_back(kir::if_then(kir::binary(kir::BinOp::Eq, shift32, kir::ci(0, I32)), aligned(), {std::move(pair)}));
  return out;
}

// A store of a row's element: gathered into a vector store in a chunk, else guarded (rows past
// the end store nothing; a row's own value, outside any split loop, is stored by rank 0).
void KernelBuilder::coop_store(const tir::Tensor& t, const std::vector<K>& idx, const K& value) {
  if (cache_.mode != RowCache::Off) cache_forget(t.name);
  if (vec_ && blocks_.size() == vec_->block + 2 && !idx.empty() && render_key(idx.back()) == render_key(vec_->elem)) {
    bool row = true;
    for (size_t k = 0; k + 1 < idx.size(); ++k) {
      bool axis = false;
      for (const std::string& a : coop_axes_) axis |= render_key(scopes_[row_scope_].index.at(a)) == render_key(idx[k]);
      row &= axis;
    }
    std::vector<K> at = idx;
    at.back() = kir::ci(0, ScalarType::I64);
    if (row && vec_row_ok(t, linear_index(t, at))) {
      at.back() = vec_->base;
      K index = linear_index(t, at);
      std::string key = t.name + "@" + render_key(index);
      auto it = vec_->stores.find(key);
      if (it == vec_->stores.end() && vec_->u == 0)
        it = vec_->stores.emplace(key, vec_access(t, index, "w_", *blocks_[vec_->block])).first;
      if (it != vec_->stores.end()) {
        const VecChunk::Access& a = it->second;
        emit(kir::assign(vec_reg(a, vec_->u), value));
        return;
      }
    }
  }
  K guard = coop_row_ok_;
  if (coop_top()) {
    guard = kir::binary(kir::BinOp::And, guard, kir::binary(kir::BinOp::Eq, coop_lane_, kir::ci(0, ScalarType::I64)));
    if (coop_cta_)  // (the cluster's first CTA stores the row's own values)
      guard = kir::binary(kir::BinOp::And, guard, kir::binary(kir::BinOp::Eq, *coop_cta_, kir::ci(0, ScalarType::I64)));
  }
  emit(kir::if_then(guard, {kir::store(kir::Space::Global, t.name, linear_index(t, idx), value)}));
}

// A loop of the row's own statements: its iterations split between the row's threads.
void KernelBuilder::coop_loop(const lir::Stmt& s) {
  const int n = knobs_.coop_threads;
  bool carries =
      std::any_of(s.body.begin(), s.body.end(), [](const lir::Stmt& b) { return b.kind == lir::Stmt::Kind::Fold; });
  bool was_inner = coop_inner_;
  if (s.tile > 1 || carries) {  // register tiles (or folds per element): whole tiles strided over the threads
    if (coop_cta_)
      throw LowerError(fmt::format(
          "COOP=t{}/.../k{} cannot split the loop over {} between a cluster's CTAs: its iterations go to the row's "
          "threads a tile at a time (a register tile or a fold an element); drop k<K> or the register tile",
          n, knobs_.coop_cluster, s.axis.name));
    emit(kir::comment(fmt::format("{} split across the row's {} threads, a tile of {} each in turn", s.axis.name, n,
                                  std::max(1, s.tile))));
    coop_inner_ = true;
    loop(s, kir::binary(kir::BinOp::Mul, coop_lane_, kir::ci(std::max(1, s.tile), ScalarType::I64)), n);
    coop_inner_ = was_inner;
    return;
  }
  emit(kir::comment(fmt::format("for every {} < {}, split across the row's {} threads", s.axis.name, s.axis.size, n)));
  coop_split(s.axis, false, [&] {
    for (const lir::Stmt& b : s.body) stmt(b);
  });
}

// combine(a, b) of two carriers, field by field from the old values.
std::vector<K> KernelBuilder::combine_pair(const CarrierSpec& spec, const std::vector<K>& a, const std::vector<K>& b) {
  std::map<std::string, K> env;
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    env["a." + spec.fields[i]] = a[i];
    env["b." + spec.fields[i]] = b[i];
  }
  std::vector<K> next;
  for (size_t i = 0; i < spec.fields.size(); ++i)
    next.push_back(
        let(fresh("comb_" + spec.fields[i]), as(term_value(spec.combine[i], env, spec.types[i]), spec.types[i])));
  return next;
}

// combine(a, b) of two threads' shares, where a share that combined no element is skipped
// rather than combined: the identity is two-sided, so this changes nothing but keeps
// combine(identity, identity) away (online softmax's -inf - -inf would give NaN). The
// carrier, then whether either share had an element.
std::vector<K> KernelBuilder::combine_shares(const CarrierSpec& spec, const std::vector<K>& a, const K& a_has,
                                             const std::vector<K>& b, const K& b_has) {
  std::vector<K> both = combine_pair(spec, a, b);
  std::vector<K> out;
  for (size_t i = 0; i < spec.fields.size(); ++i)
    out.push_back(kir::select(b_has, kir::select(a_has, both[i], b[i]), a[i]));
  out.push_back(kir::binary(kir::BinOp::Or, a_has, b_has));
  return out;
}

// combine(a, b) of two shares held with their flag last where `has` (combine_shares), else as
// they are (combine_pair): the carrier, and the flag where there is one.
std::vector<K> KernelBuilder::combine_held(const CarrierSpec& spec, std::vector<K> a, std::vector<K> b, bool has) {
  if (!has) return combine_pair(spec, a, b);
  const K a_has = a.back(), b_has = b.back();
  a.pop_back();
  b.pop_back();
  return combine_shares(spec, a, a_has, b, b_has);
}

// The row's partial carriers combined in lane order, so that a non-commutative monoid sees
// its ranges in sequence: butterflies (xor 1, 2, 4...) where the lower lane's value is the
// left operand, then (more than one warp a row) the warps' results through shared memory,
// in warp order. Every thread of the row ends with the whole row's carrier. Without `has` (an
// identity that changes no carrier: algebra::identity_exact) the shares combine as they are.
// Where combine(a, b) is combine(b, a) bit for bit (algebra::combine_symmetric: sum, prod,
// integer max and min) each lane puts its own share first: the lanes still agree, without
// the two selects a field that order the pair.
void KernelBuilder::coop_combine(const std::string& monoid, const CarrierSpec& spec, const std::vector<K>& carrier,
                                 const std::optional<K>& has) {
  const int n = knobs_.coop_threads;
  const ScalarType I = ScalarType::I64;
  emit(kir::comment(fmt::format("combine the row's {} partial ({}) of {} in lane order: shfl.bfly xor 1..{}{}", n,
                                fmt::join(spec.fields, ", "), monoid, std::min(n, 32) / 2,
                                n > 32 ? fmt::format(", then the row's {} warps through shared memory", n / 32) : "")));
  const bool symmetric = algebra::combine_symmetric(terms_of(monoid, spec));
  for (int s = 1; s < std::min(n, 32); s *= 2) {
    std::vector<K> other;
    for (const K& c : carrier) other.push_back(shuffle_xor(c, s));
    std::optional<K> other_has;
    if (has) other_has = shuffle_xor(*has, s);
    std::vector<K> a = carrier, b = other;
    std::optional<K> low;
    if (!symmetric) {
      low = let(fresh("low"),
                kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::BitAnd, coop_lane_, kir::ci(s, I)), kir::ci(0, I)));
      for (size_t i = 0; i < carrier.size(); ++i) {
        a[i] = let(fresh("lo_" + spec.fields[i]), kir::select(*low, carrier[i], other[i]));
        b[i] = let(fresh("hi_" + spec.fields[i]), kir::select(*low, other[i], carrier[i]));
      }
    }
    if (!has) {
      std::vector<K> next = combine_pair(spec, a, b);
      for (size_t i = 0; i < carrier.size(); ++i) emit(kir::assign(carrier[i].reg, next[i]));
      continue;
    }
    K a_has = low ? let(fresh("lo_has"), kir::select(*low, *has, *other_has)) : *has;
    K b_has = low ? let(fresh("hi_has"), kir::select(*low, *other_has, *has)) : *other_has;
    std::vector<K> next = combine_shares(spec, a, a_has, b, b_has);
    for (size_t i = 0; i < carrier.size(); ++i) emit(kir::assign(carrier[i].reg, next[i]));
    emit(kir::assign(has->reg, next.back()));
  }
  if (n <= 32) return;
  const int warps = n / 32, slots = knobs_.block_threads / 32;
  std::vector<std::string> arrays;
  std::vector<ScalarType> held;
  std::vector<kir::Stmt> publish;
  K warp = kir::special(kir::Special::WarpId);
  std::vector<K> values = carrier;
  std::vector<std::string> names = spec.fields;
  if (has) {
    values.push_back(*has);
    names.push_back("has");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    held.push_back(values[i].type == ScalarType::Pred ? ScalarType::I32 : values[i].type);
    arrays.push_back(unclashed(fresh("coop_" + names[i])));
    shared_->push_back({arrays[i], held[i], slots, 16});
    publish.push_back(kir::store(kir::Space::Shared, arrays[i], warp, as(values[i], held[i])));
  }
  emit(kir::if_then(kir::binary(kir::BinOp::Eq, kir::special(kir::Special::LaneId), kir::ci(0)), std::move(publish)));
  emit(kir::barrier());
  K first = let(fresh("warp0"),
                kir::binary(kir::BinOp::Mul, kir::binary(kir::BinOp::Div, warp, kir::ci(warps)), kir::ci(warps)));
  for (size_t i = 0; i < values.size(); ++i)
    emit(kir::assign(values[i].reg, as(kir::load(kir::Space::Shared, arrays[i], first, held[i]), values[i].type)));
  std::string w = fresh("w");
  std::vector<kir::Stmt> body = nested([&] {
    K at = kir::binary(kir::BinOp::Add, first, kir::var({w}, ScalarType::I32));
    std::vector<K> part;
    for (size_t i = 0; i < values.size(); ++i)
      part.push_back(
          let(fresh("part_" + names[i]), as(kir::load(kir::Space::Shared, arrays[i], at, held[i]), values[i].type)));
    std::vector<K> next = combine_held(spec, values, std::move(part), has.has_value());
    for (size_t i = 0; i < values.size(); ++i) emit(kir::assign(values[i].reg, next[i]));
  });
  emit(kir::for_loop(w, ScalarType::I32, kir::ci(1), kir::ci(warps), std::move(body)));
}

// v of the lane `mask` away (xor) in the warp: shfl.bfly for 32-bit values, 16-bit floats and
// predicates through f32 and i32, i64 as two 32-bit words, f64 by its own table row.
K KernelBuilder::shuffle_xor(const K& value, int mask) {
  const ScalarType t = value.type;
  auto one = [&](kir::IntrinsicId id, const K& v) {
    std::string out = fresh("shfl");
    emit(kir::decl(out, v.type));
    emit(kir::intrinsic(id, {kir::Reg{out}}, {v}, {mask}));
    return kir::var({out}, v.type);
  };
  switch (t) {
    case ScalarType::F32: return one(kir::IntrinsicId::ShflBfly, value);
    case ScalarType::F64: return one(kir::IntrinsicId::ShflBflyF64, value);
    case ScalarType::I32: return one(kir::IntrinsicId::ShflBflyI32, value);
    case ScalarType::F16:
    case ScalarType::BF16: return as(one(kir::IntrinsicId::ShflBfly, as(value, ScalarType::F32)), t);
    case ScalarType::Pred:
    case ScalarType::U32: return as(one(kir::IntrinsicId::ShflBflyI32, as(value, ScalarType::I32)), t);
    case ScalarType::I64: {
      const ScalarType I = ScalarType::I64, W = ScalarType::I32;
      K lo = one(kir::IntrinsicId::ShflBflyI32, kir::cast(value, W));
      K hi = one(kir::IntrinsicId::ShflBflyI32, kir::cast(kir::binary(kir::BinOp::Shr, value, kir::ci(32, I)), W));
      return let(fresh("shfl"),
                 kir::binary(kir::BinOp::BitOr, kir::binary(kir::BinOp::Shl, kir::cast(hi, I), kir::ci(32, I)),
                             kir::binary(kir::BinOp::BitAnd, kir::cast(lo, I), kir::ci(0xffffffffLL, I))));
    }
  }
  internal_error(__FILE__, __LINE__, "no shuffle for this carrier type");
}

}  // namespace emmy::lower::detail
