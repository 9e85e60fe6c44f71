// COOP=.../k<K> and PERSIST=1 on cooperative rows: a row split between the K CTAs of a
// thread-block cluster (each a slice of its columns, the CTAs' carriers combined in rank order
// through distributed shared memory), and CTAs that stay resident and walk the rows. Members
// of KernelBuilder (builder.hpp), beside the cooperative rows of coop.cpp.
#include <set>

#include "ir/intrinsics.hpp"
#include "lower/kernel/builder.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

namespace {

constexpr ScalarType I = ScalarType::I64;

K add(K a, K b) { return kir::binary(kir::BinOp::Add, std::move(a), std::move(b)); }
K mul(K a, K b) { return kir::binary(kir::BinOp::Mul, std::move(a), std::move(b)); }
K div(K a, K b) { return kir::binary(kir::BinOp::Div, std::move(a), std::move(b)); }
K min(K a, K b) { return kir::binary(kir::BinOp::Min, std::move(a), std::move(b)); }
K sub(K a, K b) { return kir::binary(kir::BinOp::Sub, std::move(a), std::move(b)); }

// The ld.shared::cluster row for a value held as `t`.
kir::IntrinsicId dsmem_load_of(ScalarType t) {
  switch (t) {
    case ScalarType::F32: return kir::IntrinsicId::DsmemLdF32;
    case ScalarType::I32: return kir::IntrinsicId::DsmemLdI32;
    case ScalarType::F64: return kir::IntrinsicId::DsmemLdF64;
    case ScalarType::I64: return kir::IntrinsicId::DsmemLdI64;
    default:
      internal_error(__FILE__, __LINE__,
                     fmt::format("a carrier of {} in distributed shared memory", kir::type_name(t)));
  }
}

// The keys of a map, in order (for messages).
std::vector<std::string> names_of(const std::map<std::string, std::string>& m) {
  std::vector<std::string> out;
  for (const auto& [name, value] : m) out.push_back(name);
  return out;
}

// How a carrier field sits in shared memory: predicates as i32, 16-bit floats as f32.
ScalarType held_type(ScalarType t) {
  if (t == ScalarType::Pred || t == ScalarType::U32) return ScalarType::I32;
  if (t == ScalarType::F16 || t == ScalarType::BF16) return ScalarType::F32;
  return t;
}

}  // namespace

// PERSIST=1: the CTAs the launch starts (as many as the device holds at once; whole clusters)
// walk the units (a block's rows) in waves of the grid, unit = wave * CTAs + this CTA's; each
// unit ends at a barrier, so that no thread's next row overwrites what a slower warp of the
// block still reads (the combine's and the row cache's shared arrays). `setup` runs once, before
// the walk (lowered after it: what the walk's rows read from it is known then).
void KernelBuilder::coop_walk(const K& unit, const K& units, int threads, const std::function<void(const K&)>& body,
                              const std::function<void()>& setup) {
  const int kc = knobs_.coop_cluster;
  K ctas = as(kir::special(kir::Special::GridDim), I);
  if (kc > 1) ctas = div(ctas, kir::ci(kc, I));
  const std::string wave = fresh("row_wave");
  std::vector<kir::Stmt> walk = nested([&] {
    K u = let(unclashed("coop_unit"), add(mul(kir::var({wave}, I), ctas), unit));
    emit(kir::if_then(kir::binary(kir::BinOp::Lt, u, units), nested([&] {
                        body(u);
                        if (threads > 32) emit(kir::barrier());
                      })));
  });
  setup();
  K waves = let(fresh("row_waves"), div(add(units, sub(ctas, kir::ci(1, I))), ctas));
  emit(kir::comment(fmt::format("PERSIST: the CTAs walk the rows, {} in waves of gridDim.x{}",
                                threads / knobs_.coop_threads == 1 ? "one a CTA" : "a block's rows a unit",
                                kc > 1 ? " / the cluster's CTAs" : "")));
  emit(kir::for_loop(wave, I, kir::ci(0, I), waves, std::move(walk)));
}

// This CTA's slice of a split axis of `size` elements under k<K>: columns [lo, lo + len), lo a
// multiple of V (so a row's chunks keep their alignment in every slice), every slice `span`
// long but the last ones; declared once, at the kernel's top (the same for every row).
const KernelBuilder::Slice& KernelBuilder::cluster_slice(const std::string& size) {
  if (auto it = slices_.find(size); it != slices_.end()) return it->second;
  const int kc = knobs_.coop_cluster, v = knobs_.coop_vec;
  const K c = size_value(size);
  auto declare = [&](const std::string& name, K value) {
    const std::string reg = unclashed(fresh(name));
    top_block_->insert(top_block_->begin() + static_cast<std::ptrdiff_t>(top_block_at_++),
                       kir::decl(reg, I, std::move(value)));
    return kir::var({reg}, I);
  };
  Slice s;
  const int64_t group = static_cast<int64_t>(kc) * v;
  s.span_of_sizes = mul(div(add(c, kir::ci(group - 1, I)), kir::ci(group, I)), kir::ci(v, I));
  s.span = declare("span", s.span_of_sizes);
  s.lo = declare("slice_lo", min(mul(*coop_cta_, s.span), c));
  s.len = declare("slice_len", min(sub(c, s.lo), s.span));
  return slices_[size] = s;
}

// The elements a split of `axis` walks: this CTA's slice under k<K>, else the whole axis.
K KernelBuilder::split_extent(const tir::Axis& axis) {
  return coop_cta_ ? cluster_slice(axis.size).len : size_value(axis.size);
}

// The axis's index of a split's element `local` (counted from the slice's first column).
K KernelBuilder::split_index(const tir::Axis& axis, const K& local) {
  if (!coop_cta_) return local;
  return add(cluster_slice(axis.size).lo, local);
}

// Every thread of the row holds its CTA's carrier: the cluster's K carriers combined in rank
// order (the slices are the row's consecutive ranges, so associativity suffices, as for a
// contiguous split). The row's first thread publishes its CTA's in a shared array, the cluster
// meets, and every thread reads the K of them (ld.shared::cluster) and combines. The arrays are
// double-buffered (a register's parity, flipped at each combine), so the next combine at this
// site writes the other half while a slow CTA may still read this one: every combine meets the
// cluster once, which orders the half's next write after every read of it.
void KernelBuilder::cluster_combine(const CarrierSpec& spec, const std::vector<K>& carrier,
                                    const std::optional<K>& has) {
  const int kc = knobs_.coop_cluster;
  std::vector<K> values = carrier;
  std::vector<std::string> names = spec.fields;
  if (has) {
    values.push_back(*has);
    names.push_back("has");
  }
  emit(
      kir::comment(fmt::format("combine the cluster's {} CTA carriers ({}) in rank order, through distributed "
                               "shared memory",
                               kc, fmt::join(spec.fields, ", "))));
  const std::string parity = unclashed(fresh("cl_half"));
  if (!cache_.probe) {  // (a row cache's dry run is dropped: its registers would be dead)
    top_block_->insert(top_block_->begin(), kir::decl(parity, ScalarType::I32, kir::ci(0)));
    ++top_block_at_;
  }
  const K half = kir::var({parity}, ScalarType::I32);
  std::vector<std::string> arrays;
  std::vector<ScalarType> held;
  std::vector<kir::Stmt> publish;
  for (size_t i = 0; i < values.size(); ++i) {
    held.push_back(held_type(values[i].type));
    arrays.push_back(unclashed(fresh("cl_" + names[i])));
    shared_->push_back({arrays[i], held[i], 2, 16});
    publish.push_back(kir::store(kir::Space::Shared, arrays[i], half, as(values[i], held[i])));
  }
  emit(kir::if_then(kir::binary(kir::BinOp::Eq, coop_lane_, kir::ci(0, I)), std::move(publish)));
  emit(kir::intrinsic(kir::IntrinsicId::ClusterSync, {}, {}));
  auto peer = [&](int cta) {
    std::vector<K> part;
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string out = fresh("peer_" + names[i]);
      emit(kir::decl(out, held[i]));
      emit(kir::intrinsic(dsmem_load_of(held[i]), {kir::Reg{out}},
                          {kir::shared_addr(arrays[i], half), kir::ci(cta, ScalarType::U32)}));
      part.push_back(as(kir::var({out}, held[i]), values[i].type));
    }
    return part;
  };
  std::vector<K> first = peer(0);
  for (size_t i = 0; i < values.size(); ++i) emit(kir::assign(values[i].reg, first[i]));
  for (int cta = 1; cta < kc; ++cta) {
    std::vector<K> next = combine_held(spec, values, peer(cta), has.has_value());
    for (size_t i = 0; i < values.size(); ++i) emit(kir::assign(values[i].reg, next[i]));
  }
  emit(kir::assign({parity}, kir::binary(kir::BinOp::Sub, kir::ci(1), half)));
}

// The weights a walk keeps (PERSIST with c<R>): inputs of one dimension (gamma[c]) the kernel
// reads, directly or through the intermediates it inlines, each with a shared array of the row
// cache's capacity plus V elements (the realigned reads' upper vector past a slice's end),
// rounded up to 16 bytes.
KernelBuilder::WeightCache KernelBuilder::row_weights(const lir::Kernel& k) {
  WeightCache w;
  std::set<std::string> seen;
  std::function<void(const Expr&)> reads = [&](const Expr& top) {
    tir::visit(top, [&](const Expr& e) {
      if (e.kind != Expr::Kind::Read || !seen.insert(e.name).second) return;
      if (!in_global(e.name)) {
        if (const tir::Stmt* def = p_.tensors.def(e.name)) reads(def->value);
        return;
      }
      const tir::Tensor& t = *p_.tensors.find(e.name);
      if (t.role != tir::Tensor::Role::Input || t.dims.size() != 1 || !t.record.empty() ||
          std::isdigit(static_cast<unsigned char>(t.dims[0][0])))
        return;
      w.axis[t.name] = t.dims[0];
    });
  };
  lir::visit(k.body, [&](const lir::Stmt& s) { lir::visit_exprs(s, reads); });
  const int64_t v = knobs_.coop_vec;
  for (const auto& [name, size] : w.axis) {
    const tir::Tensor& t = *p_.tensors.find(name);
    const int64_t e = 16 / kir::type_bytes(scalar_of(t.dtype));
    const int64_t count = (cache_capacity() + v + e - 1) / e * e;
    w.arrays[name] = unclashed(fresh("wc_" + name));
    shared_->push_back({w.arrays[name], scalar_of(t.dtype), count, 16});
  }
  return w;
}

// Before the walk: each kept weight's slice copied into its array by the CTA's threads, while the
// slice fits the row cache (as the rows' own test: then the cached bodies, which alone read the
// copy, run); then the block meets. Past the target's shared memory the schedule fails like a
// row cache that does.
void KernelBuilder::weights_copy(int threads) {
  // Only the weights a cached body reads (--ir plan's `weights`): the others' arrays go.
  const std::vector<std::string>& read = plans_.back().cache_weights;
  for (auto it = weights_.arrays.begin(); it != weights_.arrays.end();) {
    if (std::find(read.begin(), read.end(), it->first) != read.end()) {
      ++it;
      continue;
    }
    std::erase_if(*shared_, [&](const kir::SharedArray& a) { return a.name == it->second; });
    it = weights_.arrays.erase(it);
  }
  if (weights_.arrays.empty()) return;
  int64_t bytes = 0;
  for (const kir::SharedArray& a : *shared_) bytes += a.count * kir::type_bytes(a.type);
  if (bytes > knobs_.shared_memory)
    throw SharedMemoryError(fmt::format(
        "the weights a walk keeps (PERSIST with COOP=t{}/v{}/c{}{}: {}) and the row cache take {} bytes of shared "
        "memory a block, more than the target's {}: lower c<R>, or split the rows between more CTAs (k<K>)",
        knobs_.coop_threads, knobs_.coop_vec, knobs_.coop_cache,
        knobs_.coop_cluster > 1 ? fmt::format("/k{}", knobs_.coop_cluster) : "",
        fmt::join(names_of(weights_.arrays), ", "), bytes, knobs_.shared_memory));
  const K tid = as(kir::special(kir::Special::ThreadIdx), I);
  emit(kir::comment(fmt::format("PERSIST: the weights ({}) kept in shared memory for the whole walk{}",
                                fmt::join(names_of(weights_.arrays), ", "),
                                coop_cta_ ? ", this CTA's slice of each" : "")));
  for (const auto& [name, array] : weights_.arrays) {
    const std::string& axis = weights_.axis.at(name);
    const K c = size_value(axis);
    K lo = kir::ci(0, I), span = c, fits = c;
    if (coop_cta_) {
      lo = cluster_slice(axis).lo;
      span = cluster_slice(axis).span;
      fits = cluster_slice(axis).span_of_sizes;
    }
    const K end = min(c, add(lo, add(span, kir::ci(knobs_.coop_vec, I))));
    const std::string j = fresh("wc_" + name);
    const K jv = kir::var({j}, I);
    kir::Stmt copy = kir::for_loop(
        j, I, tid, sub(end, lo),
        {kir::store(kir::Space::Shared, array, kir::cast(jv, ScalarType::I32),
                    kir::load(kir::Space::Global, name, add(lo, jv), scalar_of(p_.tensors.find(name)->dtype)))});
    copy.step = threads;
    emit(kir::if_then(kir::binary(kir::BinOp::Le, fits, kir::ci(cache_capacity(), I)), {std::move(copy)}));
  }
  emit(kir::barrier());
}

// A read of an input's element at `index`: from a kept weight's shared array (weight_at), else
// from global memory.
K KernelBuilder::load_input(const std::string& tensor, const K& index, ScalarType type) {
  if (auto kept = weight_at(tensor, index)) return kir::load(kir::Space::Shared, kept->first, kept->second, type);
  return kir::load(kir::Space::Global, tensor, index, type);
}

std::optional<std::pair<std::string, K>> KernelBuilder::weight_at(const std::string& tensor, const K& index) {
  if (cache_.mode == RowCache::Off) return std::nullopt;
  auto it = weights_.arrays.find(tensor);
  if (it == weights_.arrays.end()) return std::nullopt;
  const std::string& axis = weights_.axis.at(tensor);
  if (std::find(cache_.sizes.begin(), cache_.sizes.end(), axis) == cache_.sizes.end()) return std::nullopt;
  const K local = coop_cta_ ? sub(index, cluster_slice(axis).lo) : index;
  return std::make_pair(it->second, kir::cast(local, ScalarType::I32));
}

}  // namespace emmy::lower::detail
