// COOP=t<N>/v<V>/c<R>, the row cache: a row of up to N * V * R elements is read from memory
// once; each thread keeps its chunks of the rows a later pass reads again in shared memory,
// at their column, and the later passes read them from there. Members of KernelBuilder
// (builder.hpp), beside the cooperative rows of coop.cpp.
#include <algorithm>

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
    row_cache_ = mode;
    cache_probe_ = probe;
    cache_held_.clear();
    cache_conds_.clear();
    const size_t shared_before = shared_->size();
    std::vector<kir::Stmt> body = nested([&] {
      for (const lir::Stmt& s : k.body) stmt(s);
    });
    if (probe) shared_->resize(shared_before);
    if (!(probe && ranking)) law_warnings_.resize(warnings);
    conds = std::move(cache_conds_);
    row_cache_ = RowCache::Off;
    cache_probe_ = false;
    cache_held_.clear();
    return body;
  };
  std::vector<K> conds, unused;
  cache_reused_.clear();
  cache_first_reads_.clear();
  cache_arrays_.clear();
  cache_sizes_.clear();
  const int64_t capacity = static_cast<int64_t>(n) * v * r;
  plans_.back().cache_capacity = capacity;
  variant(v > 1 ? RowCache::Vector : RowCache::Scalar, true, unused);
  if (cache_sizes_.empty() || cache_reused_.empty()) {  // no row read twice: nothing to keep (--ir plan says so)
    for (kir::Stmt& s : streamed) emit(std::move(s));
    return;
  }
  std::vector<kir::Stmt> vector_body, scalar_body;
  if (ranking) {
    // The arrays the cached bodies would keep, in the order their first reads would make them (the
    // dry run read as the first of them does).
    for (const auto& [tensor, row] : cache_first_reads_)
      if (cache_reused_.count(row)) cache_array(row, *p_.tensors.find(tensor));
  } else {
    if (v > 1) vector_body = variant(RowCache::Vector, false, conds);
    scalar_body = variant(v > 1 ? RowCache::Peeled : RowCache::Scalar, false, unused);
  }
  auto name_of = [&](const K& e) { return e.kind == K::Kind::Param ? e.name : render_key(e); };
  K fits;
  std::vector<std::string> names;
  for (const std::string& axis_size : cache_sizes_) {
    const K size = size_value(axis_size);
    K le = kir::binary(kir::BinOp::Le, size, kir::ci(capacity, I));
    fits = names.empty() ? le : kir::binary(kir::BinOp::And, fits, le);
    names.push_back(name_of(size));
  }
  std::vector<std::string> kept, tensors;
  for (const auto& [row, array] : cache_arrays_) {
    kept.push_back(array);
    const std::string tensor = row.substr(0, row.find('@'));
    if (std::find(tensors.begin(), tensors.end(), tensor) == tensors.end()) tensors.push_back(tensor);
  }
  lower::KernelPlan& plan = plans_.back();
  plan.cache_kept = tensors;
  plan.cache_sizes = cache_sizes_;
  std::sort(plan.cache_sizes.begin(), plan.cache_sizes.end());
  emit(
      kir::comment(fmt::format("COOP row cache (c{}): while {} <= {} (= {} threads x {} x {}), each thread keeps "
                               "its chunks of the rows read again in shared memory ({}): one read from memory; "
                               "else the passes stream",
                               r, fmt::join(names, ", "), capacity, n, v, r, fmt::join(kept, ", "))));
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
  emit(kir::if_then(fits, std::move(cached), std::move(streamed)));
}

// A split under the row cache: the thread's share as a loop, strided or a contiguous range,
// whose variable has the same name in every pass, so that a later pass's chunk has the index
// expression of the earlier pass's (the same thread, the same elements) and finds it kept.
// The caller checks that the axis has at most N * V * R elements.
void KernelBuilder::coop_cached_split(const tir::Axis& axis, bool contiguous, const std::function<void()>& element) {
  if (row_cache_ == RowCache::Peeled && contiguous) {  // (a combine not proved commutative) the scalar variant's split
    row_cache_ = RowCache::Scalar;
    coop_cached_split(axis, contiguous, element);
    row_cache_ = RowCache::Peeled;
    return;
  }
  const int n = knobs_.coop_threads, w = vec_width();
  const ScalarType I = ScalarType::I64;
  K size = size_value(axis.size);
  if (std::find(cache_sizes_.begin(), cache_sizes_.end(), axis.size) == cache_sizes_.end())
    cache_sizes_.push_back(axis.size);
  const std::string var = unclashed("rc_" + axis.name);
  if (row_cache_ == RowCache::Peeled) {  // the chunks' elements are known by their anchor (cached_read)
    cache_guard_ = "peeled/" + std::to_string(n * w);
    coop_peeled(axis, var, n * w, element);
    return;
  }
  // Chunks of V elements cover the axis only where its size is a multiple of V (x[i] of a row of
  // one dim has no row stride to check it by): the vector body is chosen at run time then.
  if (w > 1 && std::none_of(cache_conds_.begin(), cache_conds_.end(), [&](const K& c) { return c.name == size.name; }))
    cache_conds_.push_back(size);
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
  cache_guard_ = render_key(lo) + ".." + render_key(hi) + "/" + std::to_string(step);
  std::vector<kir::Stmt> body = nested([&] { coop_chunk(axis, kir::var({var}, I), element); });
  kir::Stmt f = kir::for_loop(var, I, lo, hi, std::move(body));
  f.step = step;
  emit(std::move(f));
}

// The shared-memory array that keeps `row` (a tensor's row, by its index with column 0): the
// block's rows times N * V * R elements; past the target's shared memory, the schedule fails
// like any other that needs too much.
const std::string& KernelBuilder::cache_array(const std::string& row, const tir::Tensor& t) {
  if (auto it = cache_arrays_.find(row); it != cache_arrays_.end()) return it->second;
  const int64_t count = static_cast<int64_t>(knobs_.block_threads / knobs_.coop_threads) * cache_slot();
  const ScalarType type = scalar_of(t.dtype);
  int64_t bytes = count * kir::type_bytes(type);
  for (const kir::SharedArray& a : *shared_) bytes += a.count * kir::type_bytes(a.type);
  if (bytes > knobs_.shared_memory)
    throw SharedMemoryError(fmt::format(
        "the row cache (COOP=t{}/v{}/c{}) keeps {} elements of {} a block in shared memory, {} bytes with the "
        "kernel's other arrays, more than the target's {}: lower c<R> or the threads a row",
        knobs_.coop_threads, knobs_.coop_vec, knobs_.coop_cache, count, t.name, bytes, knobs_.shared_memory));
  std::string name = unclashed(fresh("rc_" + t.name));
  shared_->push_back({name, type, count, 16});
  return cache_arrays_[row] = name;
}

// Element u of t[idx] (the chunk's first element last) under the row cache: from shared memory
// when an earlier pass kept the chunk (the same thread, the same index, the same loop), else
// loaded from memory, and kept where a later pass reads the row again.
// The dry run only records which rows a pass reads again.
K KernelBuilder::cached_read(const tir::Tensor& t, std::vector<K> idx) {
  const ScalarType I = ScalarType::I64;
  K at = linear_index(t, idx);
  idx.back() = kir::ci(0, I);
  const std::string row = t.name + "@" + render_key(linear_index(t, idx));
  // The peeled variant's chunks start where their anchor's row is aligned: the anchor names them,
  // and their columns move V - peel on (V-aligned in shared memory too).
  std::string key = t.name + "@" + render_key(at) + "<" + cache_guard_;
  if (peeling_) key += fmt::format("|{}", render_key(*peel_anchor_));
  auto local = vec_->loads.find(key);
  if (local == vec_->loads.end()) {
    VecChunk::Access a = vec_access(t, at, "r_", vec_->block);
    K column = peeling_ ? kir::binary(kir::BinOp::Add, vec_->base,
                                      kir::binary(kir::BinOp::Sub, kir::ci(knobs_.coop_vec, I), peel_))
                        : vec_->base;
    if (knobs_.block_threads != knobs_.coop_threads)
      column = kir::binary(kir::BinOp::Add, kir::binary(kir::BinOp::Mul, coop_slot_, kir::ci(cache_slot(), I)), column);
    column = kir::cast(column, ScalarType::I32);  // shared memory is addressed by 32-bit indices
    const bool held = cache_held_.count(key) > 0;
    if (cache_probe_) {
      if (held) cache_reused_.insert(row);
      cache_held_.insert(key);
      if (std::none_of(cache_first_reads_.begin(), cache_first_reads_.end(),
                       [&](const std::pair<std::string, std::string>& r) { return r.second == row; }))
        cache_first_reads_.emplace_back(t.name, row);
    }
    if (held && !cache_probe_) {
      for (size_t j = 0; j < a.arrays.size(); ++j)
        blocks_[vec_->block]->push_back(vec_move(a, j, true, cache_arrays_.at(row), kir::Space::Shared, column));
    } else {
      for (size_t j = 0; j < a.arrays.size(); ++j)
        blocks_[vec_->block]->push_back(vec_move(a, j, true, t.name, kir::Space::Global, at));
      if (!cache_probe_ && cache_reused_.count(row)) {
        const std::string& array = cache_array(row, t);
        for (size_t j = 0; j < a.arrays.size(); ++j)
          blocks_[vec_->block]->push_back(vec_move(a, j, false, array, kir::Space::Shared, column));
        cache_held_.insert(key);
      }
    }
    local = vec_->loads.emplace(key, std::move(a)).first;
  }
  return kir::var(vec_reg(local->second, vec_->u), scalar_of(t.dtype));
}

// A store into `tensor` under the row cache: what was kept of it is stale.
void KernelBuilder::cache_forget(const std::string& tensor) {
  std::erase_if(cache_held_, [&](const std::string& key) { return key.starts_with(tensor + "@"); });
}

}  // namespace emmy::lower::detail
