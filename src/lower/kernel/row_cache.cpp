// COOP=t<N>/v<V>/c<R> (or r<R>), the row cache: a row of up to N * V * R elements is read from
// memory once; the rows a later pass reads again are kept in shared memory (c<R>: an input's
// copied whole before the first pass, others chunk by chunk as the first pass reads them) or in
// the threads' registers (r<R>: each split R copies of its chunk, an input's chunks loaded before
// the first pass's arithmetic), and the passes read them from there. Members of KernelBuilder
// (builder.hpp), beside the cooperative rows of coop.cpp.
#include <algorithm>
#include <utility>

#include "ir/intrinsics.hpp"
#include "lower/kernel/builder.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

// The kernel body three times: while every split axis has at most N * V * R elements, the
// cached body (chunks of V elements when every size the vector path needs is a multiple of V,
// else the peeled path's chunks, V-aligned from each row's first aligned element, with V = 1 one
// element a chunk); longer rows stream pass by pass, as without the cache. A dry run of the
// cached body first finds which rows a later pass reads again: only those are kept.
void KernelBuilder::coop_cached_body(const lir::Kernel& k) {
  const int n = knobs_.coop_threads, v = knobs_.coop_vec, r = knobs_.coop_cache;
  const ScalarType I = ScalarType::I64;
  // A ranking's lowering of rows of a warp or less (whose bodies add no shared arrays: their
  // combines shuffle) needs only what the dry run finds: no body, its warnings the streamed one's.
  const bool ranking = bodies_ != KernelBodies::All && n <= 32;
  // The streamed body first: where nothing is kept it is the whole kernel, the one the knobs
  // without c<R> give, names and all (the tuner prunes the one as the other's duplicate).
  std::vector<kir::Stmt> streamed;
  if (!ranking)
    streamed = nested([&] {
      for (const lir::Stmt& s : k.body) stmt(s);
    });
  // The cached bodies repeat the streamed one's warnings (assumed laws): those are dropped (but
  // the dry run's where it stands for the streamed body); the dry run's shared arrays too.
  const size_t warnings = law_warnings_.size();
  auto variant = [&](RowCache mode, bool probe, std::vector<K>& conds) {
    cache_.mode = mode;
    cache_.probe = probe;
    cache_.held.clear();
    cache_.conds.clear();
    cache_.regs.clear();
    cache_.decls.clear();
    cache_.values.clear();
    cache_.value_registers = 0;
    const size_t shared_before = shared_->size();
    std::vector<kir::Stmt> body = nested([&] {
      cache_.body_scope = scopes_.size() - 1;
      for (const lir::Stmt& s : k.body) stmt(s);
    });
    if (probe) shared_->resize(shared_before);
    if (!(probe && ranking)) law_warnings_.resize(warnings);
    conds = std::move(cache_.conds);
    body.insert(body.begin(), std::make_move_iterator(cache_.decls.begin()),
                std::make_move_iterator(cache_.decls.end()));
    cache_.mode = RowCache::Off;
    cache_.probe = false;
    cache_.held.clear();
    cache_.regs.clear();
    cache_.decls.clear();
    return body;
  };
  std::vector<K> conds, unused;
  cache_.reused.clear();
  cache_.values_seen.clear();
  cache_.values_reused.clear();
  cache_.first_reads.clear();
  cache_.bases.clear();
  cache_.reach.clear();
  cache_.arrays.clear();
  cache_.prefetched.clear();
  cache_.sizes.clear();
  const bool registers = knobs_.coop_registers;
  const int64_t capacity = static_cast<int64_t>(n) * v * r;
  plans_.back().cache_capacity = capacity;
  variant(v > 1 ? RowCache::Vector : RowCache::Scalar, true, unused);
  if (cache_.sizes.empty() || cache_.reused.empty()) {  // no row read twice: nothing to keep (--ir plan says so)
    for (kir::Stmt& s : streamed) emit(std::move(s));
    return;
  }
  // The rows copied (loaded) in whole up front, then every kept row's shared array, in the order
  // of the dry run's first reads (a ranking's lowering makes the same arrays without the bodies).
  // In registers a copied row's chunks are loaded before the first split's copies (register_read).
  std::vector<std::string> copied;
  for (const auto& [tensor, row] : cache_.first_reads)
    if (cache_.reused.count(row) && copied_whole(row, *p_.tensors.find(tensor))) copied.push_back(row);
  if (!registers) {
    for (const std::string& row : copied) cache_.prefetched[row];
    for (const auto& [tensor, row] : cache_.first_reads)
      if (cache_.reused.count(row)) cache_array(row, *p_.tensors.find(tensor));
  }
  std::vector<kir::Stmt> prefetch, vector_body, scalar_body;
  if (!ranking) {
    if (!registers) prefetch = nested([&] { cache_prefetch(copied); });
    if (v > 1) vector_body = variant(RowCache::Vector, false, conds);
    scalar_body = variant(v > 1 ? RowCache::Peeled : RowCache::Scalar, false, unused);
  }
  auto name_of = [&](const K& e) { return e.kind == K::Kind::Param ? e.name : render_key(e); };
  K fits;
  std::vector<std::string> names;
  for (const std::string& axis_size : cache_.sizes) {
    // (Under k<K>, every CTA's slice at most the cache: the same body in the whole cluster.)
    const K size = coop_cta_ ? cluster_slice(axis_size).span_of_sizes : size_value(axis_size);
    K le = kir::binary(kir::BinOp::Le, size, kir::ci(capacity, I));
    fits = names.empty() ? le : kir::binary(kir::BinOp::And, fits, le);
    names.push_back(coop_cta_ ? fmt::format("{} / {} (a CTA's slice)", axis_size, knobs_.coop_cluster) : name_of(size));
  }
  std::vector<std::string> kept, tensors;
  for (const auto& [row, array] : cache_.arrays) kept.push_back(array);
  for (const auto& [tensor, row] : cache_.first_reads)
    if (cache_.reused.count(row) && std::find(tensors.begin(), tensors.end(), tensor) == tensors.end())
      tensors.push_back(tensor);
  lower::KernelPlan& plan = plans_.back();
  plan.cache_kept = tensors;
  plan.cache_registers = registers;
  if (registers) {  // the kept values' registers, up to the target's registers for them
    for (const auto& [key, regs] : cache_.values_reused)
      if (plan.cache_values + regs <= knobs_.row_cache_value_registers) plan.cache_values += regs;
  }
  for (const std::string& row : copied)
    if (const std::string t = row.substr(0, row.find('@'));
        std::find(plan.cache_copied.begin(), plan.cache_copied.end(), t) == plan.cache_copied.end())
      plan.cache_copied.push_back(t);
  plan.cache_sizes = cache_.sizes;
  std::sort(plan.cache_sizes.begin(), plan.cache_sizes.end());
  for (const auto& [tensor, array] : weights_.arrays)
    if (std::find(cache_.sizes.begin(), cache_.sizes.end(), weights_.axis.at(tensor)) != cache_.sizes.end())
      plan.cache_weights.push_back(tensor);
  emit(kir::comment(
      registers
          ? fmt::format("COOP row cache (r{}): while {} <= {} (= {} threads x {} x {}), the rows read again are kept "
                        "in registers ({}{}): one read from memory; else the passes stream",
                        r, fmt::join(names, ", "), capacity, n, v, r, fmt::join(tensors, ", "),
                        copied.empty() ? "" : "; inputs' rows loaded whole before the first pass's chunks")
          : fmt::format("COOP row cache (c{}): while {} <= {} (= {} threads x {} x {}), the rows read again "
                        "are kept in shared memory ({}{}): one read from memory; else the passes stream",
                        r, fmt::join(names, ", "), capacity, n, v, r, fmt::join(kept, ", "),
                        copied.empty() ? "" : "; inputs' rows copied whole first, by cp.async")));
  std::vector<kir::Stmt> cached = std::move(scalar_body);
  if (v > 1) {
    K ok;
    std::vector<std::string> vec_names;
    for (const K& c : conds) {
      K m = kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, c, kir::ci(v, I)), kir::ci(0, I));
      ok = vec_names.empty() ? m : kir::binary(kir::BinOp::And, ok, m);
      vec_names.push_back(name_of(c));
    }
    if (vec_names.empty()) {
      cached = std::move(vector_body);
    } else {
      std::vector<kir::Stmt> choose;
      choose.push_back(kir::comment(fmt::format(
          "chunks of {} elements when {} {} of {}; else from each row's first {}-aligned element (the peeled "
          "path: its edges, and contiguous shares, one element at a time)",
          v, fmt::join(vec_names, ", "), vec_names.size() == 1 ? "is a multiple" : "are multiples", v, v)));
      choose.push_back(kir::if_then(ok, std::move(vector_body), std::move(cached)));
      cached = std::move(choose);
    }
  }
  cached.insert(cached.begin(), std::make_move_iterator(prefetch.begin()), std::make_move_iterator(prefetch.end()));
  emit(kir::if_then(fits, std::move(cached), std::move(streamed)));
}

// Whether a kept row is copied in whole before the first pass (cache_prefetch): a row of an
// input (no pass can change it), walked along one axis by every split that reads it. (Its place
// is computed from the row's indices and inputs alone: vec_read takes only row_invariant rows.)
bool KernelBuilder::copied_whole(const std::string& row, const tir::Tensor& t) const {
  return t.role == tir::Tensor::Role::Input && !cache_.reach.at(row).empty();
}

// Each row of `rows` copied in whole into its shared array before the first pass, every
// access in flight at once: the row's threads issue its 16-byte chunks by cp.async (element c at
// column c + (row start mod the chunk's elements), so that the chunks sit 16-byte aligned), its
// edges before and after them one element at a time; then the copies land and the block waits
// for all of them (a pass may read a chunk another thread copied).
void KernelBuilder::cache_prefetch(const std::vector<std::string>& rows) {
  if (rows.empty()) return;
  const ScalarType I = ScalarType::I64;
  const int n = knobs_.coop_threads;
  auto add = [](K a, K b) { return kir::binary(kir::BinOp::Add, std::move(a), std::move(b)); };
  auto sub = [](K a, K b) { return kir::binary(kir::BinOp::Sub, std::move(a), std::move(b)); };
  auto mul = [](K a, K b) { return kir::binary(kir::BinOp::Mul, std::move(a), std::move(b)); };
  auto rem = [](K a, K b) { return kir::binary(kir::BinOp::Rem, std::move(a), std::move(b)); };
  auto div = [](K a, K b) { return kir::binary(kir::BinOp::Div, std::move(a), std::move(b)); };
  for (const std::string& row : rows) {
    const std::string tensor = row.substr(0, row.find('@'));
    const tir::Tensor& t = *p_.tensors.find(tensor);
    const ScalarType type = scalar_of(t.dtype);
    const K e = kir::ci(16 / kir::type_bytes(type), I);
    K base = cache_.bases.at(row), size = size_value(cache_.reach.at(row));
    if (coop_cta_) {  // this CTA's slice of the row
      const Slice& slice = cluster_slice(cache_.reach.at(row));
      base = add(base, slice.lo);
      size = slice.len;
    }
    const std::string& array = cache_.arrays.at(row);
    const K slot = mul(coop_slot_, kir::ci(cache_slot(row, t), I));
    const K off = let(fresh("pf_off"), rem(base, e));
    const K head = let(fresh("pf_head"), kir::binary(kir::BinOp::Min, rem(sub(e, off), e), size));
    const K end = let(fresh("pf_end"), add(head, mul(div(sub(size, head), e), e)));
    cache_.prefetched[row] = off;
    const std::string j = fresh("pf_c");
    const K jv = kir::var({j}, I);
    std::vector<kir::Stmt> copy;
    copy.push_back(kir::intrinsic(
        kir::IntrinsicId::CpAsync16, {},
        {kir::shared_addr(array, kir::cast(add(slot, add(off, jv)), ScalarType::I32)), add(base, jv)}, {}, tensor));
    kir::Stmt chunks = kir::for_loop(j, I, add(head, mul(coop_lane_, e)), end, std::move(copy));
    chunks.step = n * (16 / kir::type_bytes(type));
    emit(std::move(chunks));
    const std::string x = fresh("pf_edge");
    const K xv = kir::var({x}, I);
    std::vector<kir::Stmt> edge = nested([&] {
      const K c = let(fresh("pf_c"), kir::select(kir::binary(kir::BinOp::Lt, xv, head), xv, add(end, sub(xv, head))));
      emit(kir::store(kir::Space::Shared, array, kir::cast(add(slot, add(off, c)), ScalarType::I32),
                      kir::load(kir::Space::Global, tensor, add(base, c), type)));
    });
    kir::Stmt edges = kir::for_loop(x, I, coop_lane_, add(head, sub(size, end)), std::move(edge));
    edges.step = n;
    emit(std::move(edges));
  }
  emit(kir::intrinsic(kir::IntrinsicId::CpAsyncCommit, {}, {}));
  emit(kir::intrinsic(kir::IntrinsicId::CpAsyncWait, {}, {}, {0}));
  emit(kir::barrier());
}

// A split under the row cache: the thread's share as a loop, strided or a contiguous range,
// whose variable has the same name in every pass, so that a later pass's chunk has the index
// expression of the earlier pass's (the same thread, the same elements) and finds it kept.
// The caller checks that the axis has at most N * V * R elements.
void KernelBuilder::coop_cached_split(const tir::Axis& axis, bool contiguous, const std::function<void()>& element) {
  if (cache_.mode == RowCache::Peeled && contiguous) {  // (a combine not proved commutative) the scalar variant's split
    cache_.mode = RowCache::Scalar;
    coop_cached_split(axis, contiguous, element);
    cache_.mode = RowCache::Peeled;
    return;
  }
  // In registers, a share one element at a time of a row of V-element chunks would take V * R
  // copies of the element: that split streams (the uncached split's paths).
  if (knobs_.coop_registers && cache_.mode == RowCache::Scalar && knobs_.coop_vec > 1) {
    cache_.mode = RowCache::Off;
    coop_split(axis, contiguous, element);
    cache_.mode = RowCache::Scalar;
    return;
  }
  const int n = knobs_.coop_threads, w = vec_width();
  const ScalarType I = ScalarType::I64;
  const K whole = size_value(axis.size), size = split_extent(axis);
  if (std::find(cache_.sizes.begin(), cache_.sizes.end(), axis.size) == cache_.sizes.end())
    cache_.sizes.push_back(axis.size);
  cache_.axis = axis.size;
  const std::string var = unclashed("rc_" + axis.name);
  if (cache_.mode == RowCache::Peeled) {  // the chunks' elements are known by their anchor (cached_read)
    cache_.guard = "peeled/" + std::to_string(n * w);
    coop_peeled(axis, var, n * w, element);
    return;
  }
  // Chunks of V elements cover the axis only where its size is a multiple of V (x[i] of a row of
  // one dim has no row stride to check it by): the vector body is chosen at run time then.
  if (w > 1 && std::none_of(cache_.conds.begin(), cache_.conds.end(), [&](const K& c) { return c.name == whole.name; }))
    cache_.conds.push_back(whole);
  K lo = kir::binary(kir::BinOp::Mul, coop_lane_, kir::ci(w, I));
  K hi = size;
  int step = n * w;
  if (contiguous) {  // thread r's contiguous range [r * per, min((r + 1) * per, size))
    const int64_t group = static_cast<int64_t>(n) * w;
    K per = kir::binary(
        kir::BinOp::Mul,
        kir::binary(kir::BinOp::Div, kir::binary(kir::BinOp::Add, size, kir::ci(group - 1, I)), kir::ci(group, I)),
        kir::ci(w, I));
    lo = kir::binary(kir::BinOp::Mul, coop_lane_, per);
    hi = kir::binary(kir::BinOp::Min, kir::binary(kir::BinOp::Add, lo, per), size);
    step = w;
  }
  cache_.guard = render_key(lo) + ".." + render_key(hi) + "/" + std::to_string(step);
  if (knobs_.coop_registers) {
    emit_copies(lower_copies(var, hi, [&](const K& at) { coop_chunk(axis, at, element); }), lo, hi, step);
    return;
  }
  std::vector<kir::Stmt> body = nested([&] { coop_chunk(axis, kir::var({var}, I), element); });
  kir::Stmt f = kir::for_loop(var, I, lo, hi, std::move(body));
  f.step = step;
  emit(std::move(f));
}

// The R copies of a split's chunk under COOP=.../r<R>: copy c at element lo + c * step, lowered
// with a first-element register of its own (`base`, made fresh), so that each copy's kept chunks
// have registers of their own; the first reads the copies hoist come back as `preload`.
KernelBuilder::ChunkCopies KernelBuilder::lower_copies(const std::string& base, const K& hi,
                                                       const std::function<void(const K&)>& body) {
  ChunkCopies out;
  std::vector<kir::Stmt> outer = std::exchange(cache_.preload, {});
  for (int c = 0; c < knobs_.coop_cache; ++c) {
    out.vars.push_back(fresh(base));
    const K at = kir::var({out.vars.back()}, ScalarType::I64);
    cache_.copy = c;
    cache_.copy_cond = kir::binary(kir::BinOp::Lt, at, hi);
    out.bodies.push_back(nested([&] { body(at); }));
  }
  cache_.copy = -1;
  out.preload = std::exchange(cache_.preload, std::move(outer));
  return out;
}

// The copies emitted: each one's first element, the loads hoisted out of them (every one in
// flight before the first chunk's arithmetic), then each copy behind its bounds test.
void KernelBuilder::emit_copies(ChunkCopies copies, const K& lo, const K& hi, int step) {
  const ScalarType I = ScalarType::I64;
  for (size_t c = 0; c < copies.vars.size(); ++c)
    emit(kir::decl(copies.vars[c], I,
                   c == 0 ? lo : kir::binary(kir::BinOp::Add, lo, kir::ci(static_cast<int64_t>(c) * step, I))));
  for (kir::Stmt& s : copies.preload) emit(std::move(s));
  for (size_t c = 0; c < copies.vars.size(); ++c)
    emit(kir::if_then(kir::binary(kir::BinOp::Lt, kir::var({copies.vars[c]}, I), hi), std::move(copies.bodies[c])));
}

// A row's elements in its shared array: the capacity, V more where the peeled variant shifts its
// columns to keep its chunks V-aligned, or, for a row copied in whole, 16 bytes' elements more and
// rounded up to them (its chunks 16-byte aligned, in every slot).
int64_t KernelBuilder::cache_slot(const std::string& row, const tir::Tensor& t) const {
  const int64_t capacity = cache_capacity(), v = knobs_.coop_vec;
  if (!cache_.prefetched.count(row)) return capacity + (v > 1 ? v : 0);
  const int64_t e = 16 / kir::type_bytes(scalar_of(t.dtype));
  return (capacity + e - 1 + e - 1) / e * e;
}

// The shared-memory array that keeps `row` (a tensor's row, by its index with column 0): the
// block's rows times N * V * R elements; past the target's shared memory, the schedule fails
// like any other that needs too much.
const std::string& KernelBuilder::cache_array(const std::string& row, const tir::Tensor& t) {
  if (auto it = cache_.arrays.find(row); it != cache_.arrays.end()) return it->second;
  const int64_t count = static_cast<int64_t>(knobs_.block_threads / knobs_.coop_threads) * cache_slot(row, t);
  const ScalarType type = scalar_of(t.dtype);
  int64_t bytes = count * kir::type_bytes(type);
  int64_t kept = 0;  // the weights a walk keeps (PERSIST), already declared
  for (const kir::SharedArray& a : *shared_) {
    bytes += a.count * kir::type_bytes(a.type);
    for (const auto& w : weights_.arrays)
      if (w.second == a.name) kept += a.count * kir::type_bytes(a.type);
  }
  if (bytes > knobs_.shared_memory)
    throw SharedMemoryError(fmt::format(
        "the row cache (COOP=t{}/v{}/c{}) keeps {} elements of {} a block in shared memory, {} bytes with the "
        "kernel's other arrays{}, more than the target's {}: lower c<R> or the threads a row{}",
        knobs_.coop_threads, knobs_.coop_vec, knobs_.coop_cache, count, t.name, bytes,
        kept ? fmt::format(" ({} of them the weights PERSIST keeps)", kept) : "", knobs_.shared_memory,
        kept ? ", drop PERSIST, or split the rows between more CTAs (k<K>)" : ""));
  std::string name = unclashed(fresh("rc_" + t.name));
  shared_->push_back({name, type, count, 16});
  return cache_.arrays[row] = name;
}

// Column `column` of the kept `row` as its place in the row's shared array (32-bit): past the
// slots of the block's earlier rows when a block holds several.
K KernelBuilder::cache_column(const std::string& row, const tir::Tensor& t, K column) const {
  if (knobs_.block_threads != knobs_.coop_threads)
    column = kir::binary(kir::BinOp::Add,
                         kir::binary(kir::BinOp::Mul, coop_slot_, kir::ci(cache_slot(row, t), ScalarType::I64)),
                         std::move(column));
  return kir::cast(std::move(column), ScalarType::I32);
}

// One element of a row copied whole into shared memory (cache_prefetch put the row's edges there
// too), read from there rather than from memory: the peeled path's edges and a scalar body's
// elements. Only where the cache holds the tensor's whole row (its last dimension is the axis the
// splits walk: every subscript lies in it) and the row is not this CTA's slice of a cluster's.
std::optional<K> KernelBuilder::prefetched_read(const tir::Tensor& t, std::vector<K> idx) {
  if (cache_.mode == RowCache::Off || cache_.probe || knobs_.coop_registers || coop_cta_ || idx.empty())
    return std::nullopt;
  const K column = idx.back();
  idx.back() = kir::ci(0, ScalarType::I64);
  const std::string row = t.name + "@" + render_key(linear_index(t, idx));
  auto copied = cache_.prefetched.find(row);
  auto reach = cache_.reach.find(row);
  if (copied == cache_.prefetched.end() || reach == cache_.reach.end() || reach->second != t.dims.back())
    return std::nullopt;
  return kir::load(kir::Space::Shared, cache_.arrays.at(row),
                   cache_column(row, t, kir::binary(kir::BinOp::Add, copied->second, column)), scalar_of(t.dtype));
}

// Element u of t[idx] (the chunk's first element last) under the row cache: from shared memory
// when an earlier pass kept the chunk (the same thread, the same index, the same loop), else
// loaded from memory, and kept where a later pass reads the row again.
// The dry run only records which rows a pass reads again.
K KernelBuilder::cached_read(const tir::Tensor& t, std::vector<K> idx) {
  const ScalarType I = ScalarType::I64;
  K at = linear_index(t, idx);
  const K first = vec_->local;  // the chunk's first column (in this CTA's slice, under k<K>)
  idx.back() = kir::ci(0, I);
  const K row_start = linear_index(t, idx);
  const std::string row = t.name + "@" + render_key(row_start);
  // The peeled variant's chunks start where their anchor's row is aligned: the anchor names them,
  // and their columns move V - peel on (V-aligned in shared memory too).
  // In registers a chunk is known by its row, its copy and its split (the copies' registers
  // differ in name from pass to pass).
  std::string key = knobs_.coop_registers ? fmt::format("{}#{}<{}", row, cache_.copy, cache_.guard)
                                          : t.name + "@" + render_key(at) + "<" + cache_.guard;
  if (peeling_) key += fmt::format("|{}", render_key(*peel_anchor_));
  auto local = vec_->loads.find(key);
  if (local != vec_->loads.end()) return kir::var(vec_reg(local->second, vec_->u), scalar_of(t.dtype));
  if (knobs_.coop_registers && !cache_.probe && cache_.reused.count(row)) return register_read(t, row, key, at);
  VecChunk::Access a = vec_access(t, at, "r_", *blocks_[vec_->block]);
  auto in_slot = [&](const K& column) { return cache_column(row, t, column); };
  std::vector<kir::Stmt>& block = *blocks_[vec_->block];
  if (auto copied = cache_.prefetched.find(row); copied != cache_.prefetched.end() && !cache_.probe) {
    const K column = in_slot(kir::binary(kir::BinOp::Add, copied->second, first));
    for (size_t j = 0; j < a.arrays.size(); ++j)
      block.push_back(vec_move(a, j, true, cache_.arrays.at(row), kir::Space::Shared, column));
    return kir::var(vec_reg(vec_->loads.emplace(key, std::move(a)).first->second, vec_->u), scalar_of(t.dtype));
  }
  const K column = in_slot(peeling_ ? kir::binary(kir::BinOp::Add, vec_->local,
                                                  kir::binary(kir::BinOp::Sub, kir::ci(knobs_.coop_vec, I), peel_))
                                    : vec_->local);
  const bool held = cache_.held.count(key) > 0;
  if (cache_.probe) {
    if (held) cache_.reused.insert(row);
    cache_.held.insert(key);
    if (std::none_of(cache_.first_reads.begin(), cache_.first_reads.end(),
                     [&](const std::pair<std::string, std::string>& r) { return r.second == row; })) {
      cache_.first_reads.emplace_back(t.name, row);
      cache_.bases.emplace(row, row_start);
      cache_.reach.emplace(row, cache_.axis);
    } else if (cache_.reach[row] != cache_.axis) {
      cache_.reach[row].clear();
    }
  }
  if (held && !cache_.probe) {
    for (size_t j = 0; j < a.arrays.size(); ++j)
      block.push_back(vec_move(a, j, true, cache_.arrays.at(row), kir::Space::Shared, column));
  } else {
    for (size_t j = 0; j < a.arrays.size(); ++j) block.push_back(vec_move(a, j, true, t.name, kir::Space::Global, at));
    if (!cache_.probe && cache_.reused.count(row)) {
      const std::string& array = cache_array(row, t);
      for (size_t j = 0; j < a.arrays.size(); ++j)
        block.push_back(vec_move(a, j, false, array, kir::Space::Shared, column));
      cache_.held.insert(key);
    }
  }
  return kir::var(vec_reg(vec_->loads.emplace(key, std::move(a)).first->second, vec_->u), scalar_of(t.dtype));
}

// Element u of a kept chunk under COOP=.../r<R>: its register arrays (declared at the body's
// top), loaded by the chunk's first read: before the split's copies for a row copied whole (an
// input's: copied_whole), else where the chunk reads it.
K KernelBuilder::register_read(const tir::Tensor& t, const std::string& row, const std::string& key, const K& at) {
  EMMY_INTERNAL_ASSERT(cache_.copy >= 0, "a register row cache's read outside a split's copies");
  auto it = cache_.regs.find(key);
  if (it == cache_.regs.end()) it = cache_.regs.emplace(key, vec_access(t, at, "rk_", cache_.decls)).first;
  const VecChunk::Access& a = it->second;
  if (!cache_.held.count(key)) {
    std::vector<kir::Stmt> loads;
    for (size_t j = 0; j < a.arrays.size(); ++j) loads.push_back(vec_move(a, j, true, t.name, kir::Space::Global, at));
    if (copied_whole(row, t)) {
      cache_.preload.push_back(kir::if_then(cache_.copy_cond, std::move(loads)));
    } else {
      for (kir::Stmt& s : loads) blocks_[vec_->block]->push_back(std::move(s));
    }
    cache_.held.insert(key);
  }
  return kir::var(vec_reg(vec_->loads.emplace(key, a).first->second, vec_->u), scalar_of(t.dtype));
}

// The key of a costly call `e` (exp, log... : kUnaryCalls) of type `t` in the element being
// lowered, where its value may be kept for a later pass: under r<R>, in a copy of a split, in the
// element's own block (not under a `where` or a branch of it, nor in a select's arm or the right of
// && or ||: a later pass must find it computed, and its first computation must run where the
// element's did — a guarded operand may divide by zero where it is not taken),
// and a value of the row's element alone: it reads inputs (whose rows no pass changes), registers
// of the body's own scope (the row's statistics, computed before the split) and no index but the
// split axis and the thread's own. The split axis is renamed in the key: passes that name their
// axes differently meet.
std::optional<std::string> KernelBuilder::kept_value_key(const Expr& e, ScalarType t) const {
  if (cache_.copy < 0 || cache_.mode == RowCache::Off || !vec_ || blocks_.size() != vec_->depth || lazy_ > 0)
    return std::nullopt;
  const bool costly = e.op == "log2" || std::any_of(std::begin(kUnaryCalls), std::end(kUnaryCalls),
                                                    [&](const UnaryRow& r) { return r.costly && r.name == e.op; });
  if (!costly) return std::nullopt;
  auto row_statistic = [&](const std::string& name) {
    for (size_t i = scopes_.size(); i-- > 0;)
      if (scopes_[i].regs.count(name)) return i <= cache_.body_scope;
    return false;
  };
  const bool foreign = tir::any_node(e, [&](const Expr& x) {
    switch (x.kind) {
      case Expr::Kind::Read: return !in_global(x.name) || p_.tensors.find(x.name)->role != tir::Tensor::Role::Input;
      case Expr::Kind::Reg: return !row_statistic(x.name);
      case Expr::Kind::Index:
        return x.name != vec_->axis && std::any_of(bound_axes_.begin(), bound_axes_.end(),
                                                   [&](const tir::Axis& a) { return a.name == x.name; });
      case Expr::Kind::Reduce:
      case Expr::Kind::Field: return true;
      default: return false;
    }
  });
  if (foreign) return std::nullopt;
  Expr split;
  split.kind = Expr::Kind::Index;
  split.dtype = DType::I64;
  split.name = "$split";
  return fmt::format("{}#{}.{}:{}", tir::print_expr(tir::substitute(e, {{vec_->axis, split}})), cache_.copy, vec_->u,
                     static_cast<int>(t));
}

// The value of the call keyed `key` (kept_value_key): the dry run counts the elements' calls (a
// call lowered twice is reused, charged its registers); a body keeps a reused one in a register
// declared at its top, from where the first pass computes it, while the target's registers for
// kept values last (row_cache_value_registers), and a later pass of the same path (the chunks'
// bounds, and a peeled row's anchor) reads the register.
K KernelBuilder::kept_value(const std::string& key, ScalarType t, const std::function<K()>& compute) {
  const int registers = kir::type_bytes(t) > 4 ? 2 : 1;
  if (cache_.probe) {
    if (!cache_.values_seen.insert(key).second) cache_.values_reused[key] = registers;
    return compute();
  }
  if (!cache_.values_reused.count(key)) return compute();
  const std::string at = fmt::format("{}<{}{}", key, cache_.guard, peeling_ ? "|" + render_key(*peel_anchor_) : "");
  if (auto it = cache_.values.find(at); it != cache_.values.end()) return it->second;
  if (cache_.value_registers + registers > knobs_.row_cache_value_registers) return compute();
  K value = compute();
  const std::string name = fresh("kv");
  cache_.decls.push_back(kir::decl(name, t));
  emit(kir::assign(kir::Reg{name}, std::move(value)));
  cache_.value_registers += registers;
  return cache_.values.emplace(at, kir::var({name}, t)).first->second;
}

// A store into `tensor` under the row cache: what was kept of it is stale.
void KernelBuilder::cache_forget(const std::string& tensor) {
  std::erase_if(cache_.held, [&](const std::string& key) { return key.starts_with(tensor + "@"); });
}

// __launch_bounds__'s CTAs an SM for a kernel `k` whose rows a row cache keeps: as many as its
// shared memory lets an SM hold (each CTA reserves 1 KB more, the SM the block's limit plus 1 KB),
// while each thread keeps the target's row_cache_registers, and with the cache in registers its
// row_cache_own_registers plus the kept chunks' (R chunks of V elements a kept tensor) and kept
// values' (KernelPlan::cache_values), but 1 for
// the cache in registers under PERSIST; else 1
// (every register a thread needs).
int KernelBuilder::cache_min_blocks(const kir::Kernel& k) const {
  if (plans_.empty() || plans_.back().cache_kept.empty()) return 1;
  const int64_t kReserved = 1024;
  const int64_t by_smem = (knobs_.shared_memory + kReserved) / (kir::shared_bytes(k) + kReserved);
  int64_t need = knobs_.row_cache_registers;
  if (knobs_.coop_registers) {
    int64_t kept = 0;
    for (const std::string& name : plans_.back().cache_kept)
      kept += static_cast<int64_t>(knobs_.coop_cache) * knobs_.coop_vec *
              kir::type_bytes(scalar_of(p_.tensors.find(name)->dtype)) / 4;
    need = std::max(need, knobs_.row_cache_own_registers + kept + plans_.back().cache_values);
  }
  // A walk over the rows (PERSIST) keeps what ptxas hoists out of it (layernorm's t128/v8/r4: 95
  // registers against 62, and 48 bytes of spills under the bound): its CTAs are what the
  // registers leave room for, and the launch starts as many as fit.
  if (knobs_.persist && knobs_.coop_registers) return 1;
  const int64_t by_registers = knobs_.register_file / (need * k.block_threads);
  return static_cast<int>(std::max<int64_t>(1, std::min(by_smem, by_registers)));
}

}  // namespace emmy::lower::detail
