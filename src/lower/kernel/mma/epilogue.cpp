// Stores staged through shared memory: C fragments written to a staging tile, then stored to
// global memory in coalesced rows.
#include "lower/kernel/mma/tier.hpp"

namespace emmy::lower::detail {

std::optional<MmaTier::StagedOut> MmaTier::staged_form(const std::vector<lir::Stmt>& body, const std::string& col_axis,
                                                       int cols, const std::vector<const Slab*>& slabs,
                                                       bool slab_layout) const {
  auto is_store = [](const lir::Stmt& s) { return s.kind == lir::Stmt::Kind::Store; };
  if (!stage_ || body.empty() || !is_store(body.back()) || std::count_if(body.begin(), body.end(), is_store) != 1 ||
      !body.back().atomic.empty() || b_.coop_on())
    return std::nullopt;
  const lir::Stmt& st = body.back();
  const tir::Tensor& t = *b_.loops().tensors.find(st.tensor);
  if (scalar_of(t.dtype) != t_.operand || st.vars.empty() || st.vars.back().name != col_axis ||
      std::count_if(st.vars.begin(), st.vars.end(), [&](const tir::Axis& v) { return v.name == row_axis_.name; }) != 1)
    return std::nullopt;
  // The C lane map: a lane's rows are grp + 8 k and its columns 2 tig (+ 1) within each
  // 8-column atom, so an element's chunk is its atom's XORed with grp (stage_element); the
  // XOR stays inside a warp's own chunks (xor_mod divides the warp's chunk count).
  for (const LaneAffine& c : c_aff_)
    if (c.row_g != 1 || c.row_t != 0 || c.row0 % 8 != 0 || c.col_g != 0 || c.col0 + 3 * c.col_t >= 8)
      return std::nullopt;
  StagedOut so{{}, st.tensor, col_axis, {}, t_.operand, t_.warps_m * rows_per_warp_, cols, 1, cols, 0};
  const int warp_chunks = (t_.warps_n > 1 ? cols_per_warp_ : cols) / 8;
  while (so.xor_mod < 8 && warp_chunks % (so.xor_mod * 2) == 0) so.xor_mod *= 2;
  if (slab_layout) {
    // The slab's 128-byte swizzle: 64-column panels, chunk c of row r at c ^ (r % 8); the tile's
    // columns within the slab's, its rows the slab's.
    const Slab* slab = slabs.size() == 1 ? slabs[0] : nullptr;
    if (!slab || !slab->swizzled || t_.warps_n != 1 || cols % 64 != 0 || cols > slab->cols || so.rows != slab->rows)
      return std::nullopt;
    so.xor_mod = 8;
    so.row_elems = 64;
    so.panel_elems = int64_t{slab->rows} * 64;
  }
  for (const Slab* slab : slabs)
    if (slab && slab->elems() * slab->buffers >= int64_t{so.rows} * cols) {
      so.array = slab->array;
      for (const tir::Axis& v : st.vars) so.vars.push_back(v.name);
      return so;
    }
  return std::nullopt;
}

std::optional<MmaTier::StagedOut> MmaTier::staged_out(const std::vector<lir::Stmt>& body, const std::string& col_axis,
                                                      int cols, const std::vector<const Slab*>& slabs,
                                                      bool slab_layout) {
  std::optional<StagedOut> so = staged_form(body, col_axis, cols, slabs, slab_layout);
  if (so)
    emit(
        kir::comment(fmt::format("{} through shared memory ({}, free after the loop): each C element to its place "
                                 "in the block's tile, then the tile out 16 bytes a thread",
                                 so->tensor, so->array)));
  return so;
}

std::optional<std::pair<Slab, int>> MmaTier::own_epilogue() {
  const int cols_per_block = static_cast<int>(cols_per_block_);
  const int most_passes = t_.warps_n == 1 ? kEpiloguePasses : 1;
  for (int p = 1; p <= most_passes && cols_per_block % (p * 64) == 0; p *= 2)
    if (std::optional<Slab> own = epilogue_buffer(static_cast<int>(rows_per_block_), cols_per_block / p))
      if (staged_form(kernel_body_, col_axis_.name, cols_per_block / p, {&*own})) return std::pair{*own, p};
  return std::nullopt;
}

std::optional<Slab> MmaTier::epilogue_buffer(int rows, int cols) {
  const int64_t bytes = int64_t{rows} * cols * kir::type_bytes(t_.operand);
  // (At the end, 16-byte aligned: the kernel's bytes so far, rounded up, plus the tile's.)
  if ((kir::shared_bytes(*out_) + 15) / 16 * 16 + bytes > b_.knobs().shared_memory) return std::nullopt;
  Slab s;
  s.array = b_.fresh("out_tile");
  s.rows = rows;
  s.cols = s.pitch = cols;
  return s;
}

bool MmaTier::reads_tensor(const std::vector<lir::Stmt>& stmts) {
  std::set<std::string> read;
  for (const lir::Stmt& s : stmts) {
    tir::add_reads(s.value, read);
    if (!s.results.empty() && reads_tensor(s.results)) return true;
  }
  return !read.empty();
}

void MmaTier::element_stmt(const lir::Stmt& s, bool shared_scope) {
  if (!shared_scope || s.kind != lir::Stmt::Kind::Compute) return b_.stmt(s);
  lir::Stmt own = s;
  own.reg = b_.fresh(s.reg);
  b_.stmt(own);
  b_.scope().regs[s.reg] = b_.scope().regs.at(own.reg);
}

void MmaTier::emit_element(bool guarded, const K& in_range, std::vector<kir::Stmt> one) {
  if (guarded) return emit(kir::if_then(in_range, std::move(one)));
  for (kir::Stmt& st : one) emit(std::move(st));
}

K MmaTier::staged_at(const StagedOut& so, const K& r, const K& c) const {
  using kir::BinOp;
  K in_panel = so.panel_elems ? kir::binary(BinOp::Rem, c, ci32(so.row_elems)) : c;
  K chunk = kir::binary(BinOp::BitXor, kir::binary(BinOp::Div, in_panel, ci32(8)),
                        kir::binary(BinOp::Rem, r, ci32(so.xor_mod)));
  K at = add(mul(r, ci32(so.row_elems)), add(mul(chunk, ci32(8)), kir::binary(BinOp::Rem, c, ci32(8))));
  if (!so.panel_elems) return at;
  return add(mul(kir::binary(BinOp::Div, c, ci32(so.row_elems)), ci32(so.panel_elems)), at);
}

void MmaTier::stage_element(const StagedOut& so, K value, int a, int n, int e, std::optional<K>* held) {
  const LaneAffine& c = c_aff_[e];
  // Element e and e + 1 side by side in a row (columns 2 tig and 2 tig + 1): one 4-byte store.
  auto pairs_with = [&](int f) {
    return f < 4 && c_aff_[f].row0 == c_aff_[f - 1].row0 && c_aff_[f].col0 == c_aff_[f - 1].col0 + 1 &&
           c_aff_[f - 1].col0 % 2 == 0 && c_aff_[f - 1].col_t % 2 == 0 && c_aff_[f].col_t == c_aff_[f - 1].col_t;
  };
  if (held && !*held && pairs_with(e + 1)) {
    *held = as(std::move(value), so.type);
    return;
  }
  const bool pair = held && *held && e > 0 && pairs_with(e);
  const LaneAffine& first = pair ? c_aff_[e - 1] : c;
  // Column 8 n + (its lane's part, under 8): panel n / per_panel, chunk n % per_panel there.
  const int per_panel = so.row_elems / 8;
  K g = hoisted("out_swz", kir::binary(kir::BinOp::Rem, i32(grp_), ci32(so.xor_mod)));
  K lane = hoisted(fmt::format("out_lane{}", first.col_t), add(mul(add(warp_rows32_, i32(grp_)), ci32(so.row_elems)),
                                                               add(warp_cols32_, mul(i32(tig_), ci32(first.col_t)))));
  const int64_t constant = (so.panel_elems ? n / per_panel * so.panel_elems : 0) +
                           (int64_t{a} * kAtomM + first.row0) * so.row_elems + first.col0;
  K at = add(add(lane, ci32(constant)),
             mul(kir::binary(kir::BinOp::BitXor, g, ci32(so.panel_elems ? n % per_panel : n)), ci32(8)));
  if (!pair) return emit(kir::store(kir::Space::Shared, so.array, at, as(std::move(value), so.type)));
  const std::string two = b_.fresh("out_pair");
  emit(kir::decl(two, so.type, 2));
  emit(kir::assign({two, 0}, **held));
  emit(kir::assign({two, 1}, as(std::move(value), so.type)));
  emit(kir::vec_store(so.array, at, two, so.type, 2, kir::Space::Shared));
  held->reset();
}

void MmaTier::write_out(const StagedOut& so, const K& col0, const K& rows, const K& cols, const Crew* crew) {
  emit(crew_barrier(crew));
  const int per_row = so.cols / 8, chunks = (crew ? crew->rows : so.rows) * per_row;
  const int threads = crew_threads(crew);
  const tir::Tensor& t = *b_.loops().tensors.find(so.tensor);
  const std::string qv = b_.fresh("out_chunk"), vec = b_.fresh("out_vec");
  K q = kir::var({qv}, ScalarType::I32);
  std::vector<kir::Stmt> body = b_.nested([&] {
    K r = let(b_.fresh("out_row"), crew_row(crew, kir::binary(kir::BinOp::Div, q, ci32(per_row))));
    K c = let(b_.fresh("out_col"), mul(kir::binary(kir::BinOp::Rem, q, ci32(per_row)), ci32(8)));
    K row = add(row_block0_, as(r, I64)), col = let(b_.fresh("out_c"), add(col0, as(c, I64)));
    std::vector<K> idx;
    for (const std::string& v : so.vars)
      idx.push_back(v == row_axis_.name ? row : v == so.col_axis ? col : *b_.find_index(v));
    K at = let(b_.fresh("out_at"), b_.linear_index(t, idx));
    K from = let(b_.fresh("out_from"), staged_at(so, r, c));
    K whole = kir::binary(kir::BinOp::And, kir::binary(kir::BinOp::Le, add(col, i64(8)), cols),
                          kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, at, i64(8)), i64(0)));
    std::vector<kir::Stmt> vector = b_.nested([&] {
      emit(kir::decl(vec, so.type, 8));
      emit(kir::vec_load(vec, so.type, 8, so.array, from, kir::Space::Shared));
      emit(kir::vec_store(so.tensor, at, vec, so.type, 8));
    });
    std::vector<kir::Stmt> scalar = b_.nested([&] {
      for (int u = 0; u < 8; ++u)
        emit(kir::if_then(lt(add(col, i64(u)), cols),
                          {kir::store(kir::Space::Global, so.tensor, add(at, i64(u)),
                                      kir::load(kir::Space::Shared, so.array, add(from, ci32(u)), so.type))}));
    });
    emit(kir::if_then(lt(row, rows), {kir::if_then(whole, std::move(vector), std::move(scalar))}));
  });
  kir::Stmt loop = kir::for_loop(qv, ScalarType::I32, crew_tid(crew), ci32(chunks), std::move(body));
  loop.step = threads;
  emit(std::move(loop));
  emit(crew_barrier(crew));  // the slab is the next pass's (another register tile's) ring again
}

}  // namespace emmy::lower::detail
