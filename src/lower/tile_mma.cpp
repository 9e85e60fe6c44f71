// The tensor-core tier: a loop-IR kernel whose contraction fits the knobs' mma.sync atom
// becomes a block of warps holding m16n8k16 fragments — a plain contraction with its
// epilogue (matmul), or a fold of a max-rescaled sum whose key is a contraction and whose
// vector field contracts again (the online softmax: scores on the tensor cores, P repacked
// from the C to the A layout in registers, row statistics reduced across the lanes sharing
// a row). Fragment layouts, the repack and the lane butterflies all come from the intrinsic
// table's lane maps; nothing here knows which op it lowers.
#include <functional>

#include "algebra/rescaled_sum.hpp"
#include "ir/expr_facts.hpp"
#include "ir/intrinsics.hpp"
#include "lower/kernel_builder.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {
namespace {

constexpr int kWarp = 32;
constexpr int kAtomM = 16, kAtomN = 8, kAtomK = 16;
// Blocks in a group of heads that a causal fold runs heaviest row tile first (two waves of one
// block an SM on an H200's 132 SMs): the group's keys stay in L2 while its row tiles run.
constexpr int64_t kCausalGroupBlocks = 256;
constexpr ScalarType I64 = ScalarType::I64, F32 = ScalarType::F32, U32 = ScalarType::U32;
constexpr std::string_view kContracted = "<mma>";  // the register a contraction's value is bound to
using CoordFn = kir::FragmentCoord (*)(int, int);

// A fragment element's matrix coordinate as an affine function of the lane's group
// (lane >> 2) and thread in group (lane & 3), derived from — and checked against — the
// intrinsic table's lane map at every lane.
struct LaneAffine {
  int row0 = 0, row_g = 0, row_t = 0, col0 = 0, col_g = 0, col_t = 0;
};

LaneAffine lane_affine(CoordFn fn, int elem) {
  kir::FragmentCoord o = fn(0, elem), g = fn(4, elem), t = fn(1, elem);
  LaneAffine a{o.row, g.row - o.row, t.row - o.row, o.col, g.col - o.col, t.col - o.col};
  for (int lane = 0; lane < kWarp; ++lane) {
    kir::FragmentCoord c = fn(lane, elem);
    int gi = lane >> 2, ti = lane & 3;
    if (c.row != a.row0 + a.row_g * gi + a.row_t * ti || c.col != a.col0 + a.col_g * gi + a.col_t * ti)
      throw std::logic_error("an mma fragment lane map is not affine in (group, thread in group)");
  }
  return a;
}

// The lane-mask bits whose butterfly partners hold the same rows of C: the row reductions'
// shuffles (for m16n8k16: 1 and 2, the four lanes of a quad).
std::vector<int> row_sharing_masks() {
  std::vector<int> masks;
  for (int bit = 1; bit < kWarp; bit <<= 1) {
    bool same = true;
    for (int lane = 0; lane < kWarp && same; ++lane)
      for (int e = 0; e < 4 && same; ++e) same = kir::mma_c_coord(lane, e).row == kir::mma_c_coord(lane ^ bit, e).row;
    if (same) masks.push_back(bit);
  }
  return masks;
}

// The C -> A repack: A element x of k-step t is C element `elem` of n-atom 2t + `atom`, in the
// same lane — for every lane, or the layouts do not match and there is no register repack.
struct RepackSource {
  int atom = 0, elem = 0;
};
std::vector<RepackSource> c_to_a_map() {
  std::vector<RepackSource> map;
  for (int x = 0; x < 8; ++x) {
    std::optional<RepackSource> found;
    for (int atom = 0; atom < 2 && !found; ++atom)
      for (int y = 0; y < 4 && !found; ++y) {
        bool all = true;
        for (int lane = 0; lane < kWarp && all; ++lane) {
          kir::FragmentCoord a = kir::mma_a_coord(lane, x), c = kir::mma_c_coord(lane, y);
          all = a.row == c.row && a.col == c.col + kAtomN * atom;
        }
        if (all) found = RepackSource{atom, y};
      }
    if (!found) throw std::logic_error("the mma C and A fragment layouts do not match element for element");
    map.push_back(*found);
  }
  return map;
}

// The contraction's operands: `row` reads the output's row axis and the reduced axis, `col`
// the column axis and the reduced axis; `around` is the expression with the contraction
// replaced by the register kContracted.
struct Contraction {
  Expr row, col;
  tir::Axis axis;
  Expr around;
};

// The row-major index math of an element: binds an axis to base + offset, clamped into the
// axis (loads stay in bounds) or zero past its end (a contraction's padding).
struct AxisAt {
  std::string name;
  K base;
  K size;
  bool zero_past_end = false;
};

}  // namespace

class MmaTier {
 public:
  MmaTier(KernelBuilder& b, const MmaTile& tile, std::optional<MmaStage> stage) : b_(b), t_(tile), stage_(stage) {}

  bool build(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why) {
    try {
      if (!plan(k)) {
        why = why_;
        return false;
      }
      emit_kernel(k, out, program);
      return true;
    } catch (const Unsupported& u) {
      why = u.why;
      return false;
    }
  }

 private:
  struct Unsupported {
    std::string why;
  };
  [[noreturn]] static void unsupported(std::string why) { throw Unsupported{std::move(why)}; }

  // ---- matching --------------------------------------------------------------------------
  bool reject(std::string why) {
    why_ = std::move(why);
    return false;
  }

  static const Expr& strip_casts(const Expr& e) {
    if (e.kind == Expr::Kind::Call && parse_dtype(e.op) && e.args.size() == 1) return strip_casts(e.args[0]);
    return e;
  }

  // A read of a global input whose elements the atom takes as they are.
  bool is_operand(const Expr& e) const {
    if (e.kind != Expr::Kind::Read || !b_.in_global(e.name)) return false;
    const tir::Tensor* t = b_.p_.tensors.find(e.name);
    return t && t->role == tir::Tensor::Role::Input && scalar_of(t->dtype) == t_.operand;
  }

  // Finds the one contraction sum(d: row * col) in `e` (inlining register intermediates on
  // the way) and returns `e` with it replaced by kContracted.
  std::optional<Expr> extract(const Expr& e, const std::string& row_axis, const std::string& col_axis,
                              std::optional<Contraction>& found) {
    if (e.kind == Expr::Kind::Read && !b_.in_global(e.name))
      return extract(b_.inline_def(e), row_axis, col_axis, found);
    if (e.kind == Expr::Kind::Reduce) {
      if (found || e.op != "sum" || e.axes.size() != 1 || !e.where.empty() || e.args.size() != 1) return std::nullopt;
      const Expr& prod = e.args[0];
      if (prod.kind != Expr::Kind::Binary || prod.op != "*") return std::nullopt;
      const Expr &x = strip_casts(prod.args[0]), &y = strip_casts(prod.args[1]);
      if (!is_operand(x) || !is_operand(y)) return std::nullopt;
      const std::string& d = e.axes[0].name;
      auto side = [&](const Expr& r, const std::string& own, const std::string& other) {
        return tir::uses_index(r, own) && tir::uses_index(r, d) && !tir::uses_index(r, other);
      };
      Contraction c{x, y, e.axes[0], {}};
      if (!side(x, row_axis, col_axis)) std::swap(c.row, c.col);
      if (!side(c.row, row_axis, col_axis) || !side(c.col, col_axis, row_axis)) return std::nullopt;
      found = c;
      Expr reg;
      reg.kind = Expr::Kind::Reg;
      reg.name = std::string(kContracted);
      reg.dtype = DType::F32;
      return reg;
    }
    Expr out = tir::node_of(e);
    out.where = e.where;
    for (const Expr& a : e.args) {
      std::optional<Expr> sub = extract(a, row_axis, col_axis, found);
      if (!sub) return std::nullopt;
      out.args.push_back(std::move(*sub));
    }
    return out;
  }

  std::optional<Contraction> contraction_in(const Expr& e, const std::string& row_axis, const std::string& col_axis) {
    std::optional<Contraction> found;
    std::optional<Expr> around = extract(e, row_axis, col_axis, found);
    if (!around || !found) return std::nullopt;
    found->around = *around;
    return found;
  }

  // The kernel's shape: a fold over a max-rescaled sum (inside a register tile of its vector
  // field, or alone), or a contraction followed by stores.
  bool plan(const lir::Kernel& k) {
    if (k.threads.empty()) return reject("the kernel has no thread space to tile");
    if (t_.warps_m < 1 || t_.warps_n < 1 || t_.warps_m * t_.warps_n * kWarp > 1024)
      return reject(fmt::format("the warp grid w{}x{} does not fit a block", t_.warps_m, t_.warps_n));
    const std::vector<lir::Stmt>& body = k.body;
    const lir::Stmt* fold = nullptr;
    if (body.size() == 1 && body[0].kind == lir::Stmt::Kind::Loop && !body[0].body.empty() &&
        body[0].body[0].kind == lir::Stmt::Kind::Fold) {
      tile_loop_ = &body[0];
      fold = &body[0].body[0];
    } else if (!body.empty() && body[0].kind == lir::Stmt::Kind::Fold) {
      fold = &body[0];
    }
    if (fold) return plan_fold(k, *fold);
    return plan_contraction(k);
  }

  static bool is_or_flag(const algebra::MonoidTerms& m, size_t f) {
    const algebra::Term& c = m.combine[f];
    const std::string& n = m.fields[f];
    return m.identity[f].op == algebra::TermOp::Const && m.identity[f].value.num == 0 && c.op == algebra::TermOp::Or &&
           c.args.size() == 2 && c.args[0].op == algebra::TermOp::Var && c.args[0].name == "a." + n &&
           c.args[1].op == algebra::TermOp::Var && c.args[1].name == "b." + n;
  }

  bool plan_fold(const lir::Kernel& k, const lir::Stmt& fold) {
    if (wgmma() && (!stage_ || !stage_->async))
      return reject(
          fmt::format("{} reads K and V from shared memory: it needs STAGE with an asynchronous copy, "
                      "cp or tma (e.g. STAGE=d2/cp/ring)",
                      t_.atom));
    if (wgmma() && t_.wgmma_n != 64 && t_.wgmma_n != 128)
      return reject(fmt::format("{}: the fold's key block is the atom's N, 64 or 128", t_.atom));
    if (t_.warps_n != 1)
      return reject(
          fmt::format("a fold's rows are split over warps only: w{}x{} would split its keys, whose "
                      "carriers would then need a cross-warp combine (use w<M>x1)",
                      t_.warps_m, t_.warps_n));
    if (t_.frag_n % 2 != 0)
      return reject(
          fmt::format("f{}x{}: the fold's key block feeds the second contraction's K in steps of 16, "
                      "so it needs an even number of n-atoms",
                      t_.frag_m, t_.frag_n));
    // Flags a split adds ("this range folded something": or-combined, identity false) ride
    // along: a row folded something exactly when its key left -inf.
    algebra::MonoidTerms core = fold.terms;
    std::vector<size_t> kept;
    for (size_t f = 0; f < fold.fields.size(); ++f) {
      if (is_or_flag(fold.terms, f)) {
        flags_.push_back(f);
        continue;
      }
      kept.push_back(f);
    }
    core.fields.clear();
    core.identity.clear();
    core.combine.clear();
    for (size_t f : kept) {
      core.fields.push_back(fold.terms.fields[f]);
      core.identity.push_back(fold.terms.identity[f]);
      core.combine.push_back(fold.terms.combine[f]);
    }
    std::optional<algebra::RescaledSum> rs = algebra::as_rescaled_sum(core);
    if (!rs) return reject(fmt::format("the fold's monoid {} is not a max-rescaled sum", fold.monoid));
    require_reorder(fold.terms, fmt::format("folds the reduction over {} a key block at a time, in trees across lanes",
                                            fold.axis.name));
    fold_ = &fold;
    rescaled_.key = kept[rs->key];
    for (size_t w : rs->weighted) rescaled_.weighted.push_back(kept[w]);
    row_axis_ = k.threads.back();
    std::optional<Contraction> c = contraction_in(fold.fields[rescaled_.key].lift, row_axis_.name, fold.axis.name);
    if (!c)
      return reject(fmt::format("the fold's key {} is not a contraction of two {} inputs over one axis",
                                tir::print_expr(fold.fields[rescaled_.key].lift), kir::type_name(t_.operand)));
    first_ = *c;
    for (size_t f : rescaled_.weighted) {
      const lir::CarrierField& field = fold.fields[f];
      if (!field.per_tile) continue;
      const Expr& v = strip_casts(field.lift);
      if (!tile_loop_ || !is_operand(v) || !tir::uses_index(v, fold.axis.name) ||
          !tir::uses_index(v, tile_loop_->axis.name))
        return reject(fmt::format("the vector field {} lifts {}, not a {} input read at the fold's and the tile's axes",
                                  field.name, tir::print_expr(field.lift), kir::type_name(t_.operand)));
      if (value_read_) return reject("the fold has two vector fields; the tensor-core tier contracts one");
      value_read_ = v;
      value_field_ = f;
    }
    if (tile_loop_ && (tile_loop_->tile % kAtomN != 0))
      return reject(fmt::format("the register tile of {} ({}) is not a multiple of the atom's n = 8",
                                tile_loop_->axis.name, tile_loop_->tile));
    for (size_t i = 1; tile_loop_ && i < tile_loop_->body.size(); ++i)
      if (tile_loop_->body[i].kind != lir::Stmt::Kind::Store)
        return reject("the register tile holds statements other than the fold and its stores");
    for (size_t f = 0; f < fold.fields.size(); ++f)
      if (!(f == value_field_ && value_read_) && !is_flag(f) && scalar_of(fold.fields[f].dtype) != F32)
        return reject(fmt::format("the carrier field {} is {}, not f32", fold.fields[f].name,
                                  kir::type_name(scalar_of(fold.fields[f].dtype))));
    // wgmma reads the row operand's slab K-major (with wgmma it always waits in a slab).
    if (wgmma() && innermost_is(first_.row, row_axis_.name))
      return reject(
          fmt::format("{}'s contiguous axis is not {}: wgmma reads it K-major", first_.row.name, first_.axis.name));
    return true;
  }

  // Whether the read's last subscript is the bare index `axis` (its contiguous axis).
  static bool innermost_is(const Expr& read, const std::string& axis) {
    return !read.args.empty() && read.args.back().kind == Expr::Kind::Index && read.args.back().name == axis;
  }

  // The body: statements computed per output element (the epilogue chain) and stores, one of
  // which holds the contraction; the others read it through registers.
  bool plan_contraction(const lir::Kernel& k) {
    if (wgmma() && (!stage_ || !stage_->async))
      return reject(
          fmt::format("{} reads A and B from shared memory: it needs STAGE with an asynchronous copy, "
                      "cp or tma (e.g. STAGE=d3/cp/ring)",
                      t_.atom));
    if (wgmma() && t_.warps_n != 1)
      return reject(
          fmt::format("{}: the warpgroups stack along the rows (w<M>x1); each covers the atom's N columns", t_.atom));
    if (wgmma() && t_.wgmma_n != 64 && t_.wgmma_n != 128)
      return reject(fmt::format("{}: the lowering issues N = 64 or 128", t_.atom));
    if (k.threads.size() < 2) return reject("a contraction tile needs a row and a column axis in the thread space");
    row_axis_ = k.threads[k.threads.size() - 2];
    col_axis_ = k.threads.back();
    for (size_t i = 0; i < k.body.size(); ++i) {
      const lir::Stmt& s = k.body[i];
      if (s.kind != lir::Stmt::Kind::Compute && s.kind != lir::Stmt::Kind::Store)
        return reject("the kernel's body holds loops or folds besides its contraction");
      if (!tir::has_reduce(s.value)) continue;
      if (contraction_stmt_ >= 0) return reject("the kernel computes two reductions; the tensor-core tier tiles one");
      std::optional<Contraction> c = contraction_in(s.value, row_axis_.name, col_axis_.name);
      if (!c)
        return reject(fmt::format("{} is not a contraction of two {} inputs with rows on {} and columns on {}",
                                  tir::print_expr(s.value), kir::type_name(t_.operand), row_axis_.name,
                                  col_axis_.name));
      first_ = *c;
      contraction_stmt_ = static_cast<int>(i);
    }
    if (contraction_stmt_ < 0) return reject("the kernel has no contraction");
    // wgmma reads A's slab K-major.
    if (wgmma() && innermost_is(first_.row, row_axis_.name))
      return reject(
          fmt::format("{}'s contiguous axis is not {}: wgmma reads A K-major", first_.row.name, first_.axis.name));
    require_reorder(terms_of("sum", builtin_monoid("sum")->lowering(ScalarType::F32, {})),
                    fmt::format("sums the contraction over {} in the atoms' order", first_.axis.name));
    return true;
  }

  // The atoms sum a contraction's products in their own order, and a fold's key blocks
  // combine in trees: both reorder the reduction, which its monoid's laws must allow.
  void require_reorder(const algebra::MonoidTerms& terms, const std::string& what) {
    auto use = b_.knobs_.uses.find(Knob::Tile);
    if (use == b_.knobs_.uses.end()) internal_error(__FILE__, __LINE__, "a tensor-core tile without its TILE setting");
    require_laws(monoid_laws(terms, b_.checked_), Regroup::Reorder, use->second, what, b_.law_warnings_);
  }

  // ---- emission helpers -----------------------------------------------------------------
  void emit(kir::Stmt s) { b_.emit(std::move(s)); }
  K let(const std::string& name, K v) { return b_.let(name, std::move(v)); }
  static K i64(int64_t v) { return kir::ci(v, I64); }
  static K add(K a, K b) { return kir::binary(kir::BinOp::Add, std::move(a), std::move(b)); }
  static K mul(K a, K b) { return kir::binary(kir::BinOp::Mul, std::move(a), std::move(b)); }
  static K lt(K a, K b) { return kir::binary(kir::BinOp::Lt, std::move(a), std::move(b)); }
  static K ceil_div(K a, int64_t b) { return kir::binary(kir::BinOp::Div, add(std::move(a), i64(b - 1)), i64(b)); }
  static K ceil_div_by(K a, K b) {  // b > 0
    return kir::binary(kir::BinOp::Div, add(std::move(a), kir::binary(kir::BinOp::Sub, b, i64(1))), b);
  }
  static K elem(const std::string& array, int i, ScalarType t) { return kir::var({array, i}, t); }

  // base + row0 + row_g * group + row_t * thread (I64).
  K lane_coord(K base, int off, int g, int t) const {
    K v = add(std::move(base), i64(off));
    if (g) v = add(v, mul(grp_, i64(g)));
    if (t) v = add(v, mul(tig_, i64(t)));
    return v;
  }

  // Binds `at` to its element index in the current scope: clamped into the axis.
  void bind(const AxisAt& at, const K& index) {
    K last = kir::binary(kir::BinOp::Sub, at.size, i64(1));
    b_.scopes_.back().index[at.name] = kir::binary(kir::BinOp::Min, index, last);
  }

  // One 16-bit operand element as f32: `read` at the two bound axes; zero past the end of
  // an axis that pads (the contraction's), clamped elsewhere.
  K operand_value(const Expr& read, const AxisAt& r, const K& ri, const AxisAt& c, const K& ci) {
    b_.scopes_.push_back({});
    bind(r, ri);
    bind(c, ci);
    K v = as(b_.lower(read), F32);
    b_.scopes_.pop_back();
    std::optional<K> ok;
    for (const auto& [at, idx] : {std::pair{&r, &ri}, std::pair{&c, &ci}})
      if (at->zero_past_end) ok = ok ? kir::binary(kir::BinOp::And, *ok, lt(*idx, at->size)) : lt(*idx, at->size);
    return ok ? kir::select(*ok, v, kir::cf(0, F32)) : v;
  }

  // Loads fragment registers array[off .. off + regs) of the lane map `fn` (rows and columns
  // of the atom's operand) from global memory, packing element pairs with cvt.rn.
  void load_fragment(const Expr& read, CoordFn fn, int regs, const std::string& array, int off, const AxisAt& r,
                     const AxisAt& c) {
    for (int reg = 0; reg < regs; ++reg) {
      K half[2];
      for (int h = 0; h < 2; ++h) {
        LaneAffine a = lane_affine(fn, 2 * reg + h);
        K ri = lane_coord(r.base, a.row0, a.row_g, a.row_t), ci = lane_coord(c.base, a.col0, a.col_g, a.col_t);
        half[h] = operand_value(read, r, ri, c, ci);
      }
      // The element with the higher index goes to the upper half (cvt's first operand).
      kir::IntrinsicId cvt =
          t_.operand == ScalarType::BF16 ? kir::IntrinsicId::CvtRnBf16x2F32 : kir::IntrinsicId::CvtRnF16x2F32;
      emit(kir::intrinsic(cvt, {{array, off + reg}}, {half[1], half[0]}));
    }
  }

  void mma(const std::string& acc, int acc_off, const std::string& a, int a_off, const std::string& b, int b_off) {
    kir::IntrinsicId id = t_.operand == ScalarType::BF16 ? kir::IntrinsicId::MmaBf16F32 : kir::IntrinsicId::MmaF16F32;
    std::vector<kir::Reg> outs;
    std::vector<K> ins;
    for (int i = 0; i < 4; ++i) outs.push_back({acc, acc_off + i});
    for (int i = 0; i < 4; ++i) ins.push_back(elem(a, a_off + i, U32));
    for (int i = 0; i < 2; ++i) ins.push_back(elem(b, b_off + i, U32));
    for (int i = 0; i < 4; ++i) ins.push_back(elem(acc, acc_off + i, F32));
    emit(kir::intrinsic(id, std::move(outs), std::move(ins)));
  }

  // v <- op(v, partner's v) over the butterflies that stay within a row of C.
  void row_allreduce(const K& v, kir::BinOp op) {
    for (int mask : masks_) {
      std::string other = b_.fresh("shfl");
      emit(kir::decl(other, F32));
      emit(kir::intrinsic(kir::IntrinsicId::ShflBfly, {{other}}, {v}, {mask}));
      emit(kir::assign(v.reg, kir::binary(op, v, kir::var({other}, F32))));
    }
  }

  // ---- shared-memory staging --------------------------------------------------------------
  // A streamed operand's tile in shared memory: rows along `outer`, the read's contiguous axis
  // `inner` along a row padded by 16 bytes (ldmatrix's eight rows then hit distinct banks).
  // With `swizzled` (wgmma's operands), rows are 128 bytes in panels of 64 columns, each 16-byte
  // chunk at its index XORed with the row's index mod 8 (the 128-byte swizzle: eight rows of a
  // column of chunks hit distinct banks, and wgmma's descriptors read the layout as it is).
  struct Slab {
    std::string array;
    Expr read;
    AxisAt outer, inner;
    int rows = 0, cols = 0, pitch = 0;
    std::string stream;    // the axis the loop streams tiles of; the other axis's base is fixed
    bool strided = false;  // the read's element index is first + row * stride + col
    bool swizzled = false;
    std::string map;  // the TensorMap parameter its tiles come through (empty: cp.async)
    int64_t elems() const { return int64_t{rows} * pitch; }
    K buffer_start(const K& buf) const {  // buffer `buf`'s first element in the array (I32)
      return kir::binary(kir::BinOp::Mul, as(buf, ScalarType::I32), kir::ci(elems(), ScalarType::I32));
    }
    // The element offset of (row, col) within a buffer (I32; col a multiple of 8 plus at most 7).
    K offset(const K& r, const K& c) const {
      using kir::BinOp;
      auto op = [](BinOp o, K a, K b) { return kir::binary(o, std::move(a), std::move(b)); };
      auto c32 = [](int64_t v) { return kir::ci(v, ScalarType::I32); };
      if (!swizzled) return op(BinOp::Add, op(BinOp::Mul, r, c32(pitch)), c);
      K panel = op(BinOp::Mul, op(BinOp::Div, c, c32(64)), c32(int64_t{rows} * 64));
      K chunk = op(BinOp::BitXor, op(BinOp::Div, op(BinOp::Rem, c, c32(64)), c32(8)), op(BinOp::Rem, r, c32(8)));
      return op(BinOp::Add, op(BinOp::Add, panel, op(BinOp::Mul, r, c32(64))),
                op(BinOp::Add, op(BinOp::Mul, chunk, c32(8)), op(BinOp::Rem, c, c32(8))));
    }
  };

  Slab make_slab(const std::string& name, const Expr& read, const AxisAt& x, int x_extent, const AxisAt& y,
                 int y_extent, int depth = 0, bool swizzled = false) {
    bool y_inner = innermost_is(read, y.name);
    bool x_inner = innermost_is(read, x.name);
    if (!x_inner && !y_inner)
      unsupported(
          fmt::format("STAGE: {}'s innermost index is neither {} nor {}, so its tile has no contiguous rows "
                      "to copy",
                      tir::print_expr(read), x.name, y.name));
    Slab s{name,
           read,
           y_inner ? x : y,
           y_inner ? y : x,
           y_inner ? x_extent : y_extent,
           y_inner ? y_extent : x_extent,
           0,
           {},
           false,
           false,
           {}};
    // Rows at a constant element stride: each axis a bare index of exactly one subscript.
    auto bare_once = [&](const std::string& axis) {
      int uses = 0, bare = 0;
      for (const Expr& a : read.args) {
        uses += tir::uses_index(a, axis);
        bare += a.kind == Expr::Kind::Index && a.name == axis;
      }
      return uses == 1 && bare == 1;
    };
    s.strided = bare_once(s.outer.name) && bare_once(s.inner.name);
    // Streamed tiles (depth 0: the stage's) by TMA where the tile is a box of the tensor.
    if (depth == 0 && stage_->tma) {
      if (std::string why = tma_refusal(s); why.empty()) {
        swizzled = true;
        s.map = tensor_map_param(s);
      } else {
        Warning w{"W055", fmt::format("STAGE with tma: {}'s tiles are copied with cp.async: {}", read.name, why)};
        if (std::find(program_->warnings.begin(), program_->warnings.end(), w) == program_->warnings.end())
          program_->warnings.push_back(std::move(w));
      }
    }
    s.pitch = swizzled ? s.cols : s.cols + 8;
    s.swizzled = swizzled;
    if (swizzled && (s.cols % 64 != 0 || s.rows % 8 != 0))
      unsupported(
          fmt::format("wgmma reads {}'s tile ({} rows of {}) from 128-byte swizzled rows: it needs a multiple of "
                      "64 columns and of 8 rows",
                      read.name, s.rows, s.cols));
    out_->shared.push_back({name, t_.operand, s.elems() * (depth > 0 ? depth : stage_->depth), swizzled ? 1024 : 16});
    return s;
  }

  static K i32(K e) { return as(std::move(e), ScalarType::I32); }

  // ---- TMA ----------------------------------------------------------------------------------
  // A streamed tile is one box per 64-column panel of the tensor it reads: rows along one
  // subscript, the panel along the last (the 128-byte swizzle: wgmma's layout, and ldmatrix's
  // rows in distinct banks), every other subscript one index. Why `s` is not such a box (empty:
  // it is).
  std::string tma_refusal(const Slab& s) const {
    const tir::Tensor* t = b_.p_.tensors.find(s.read.name);
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

  // The TensorMap parameter of `s`'s boxes (one per tensor and box shape).
  std::string tensor_map_param(const Slab& s) {
    std::vector<int> box(s.read.args.size(), 1);
    box[0] = 64;
    for (size_t i = 0; i < s.read.args.size(); ++i)
      if (s.read.args[i].kind == Expr::Kind::Index && s.read.args[i].name == s.outer.name)
        box[s.read.args.size() - 1 - i] = s.rows;
    for (const kir::Param& p : out_->params)
      if (p.kind == kir::Param::Kind::TensorMap && p.map_of == s.read.name && p.box == box) return p.name;
    std::string name = b_.fresh(s.read.name + "_map");
    out_->params.push_back({kir::Param::Kind::TensorMap, name, t_.operand, true, s.read.name, box, kir::Swizzle::B128});
    if (tma_bars_.empty()) tma_setup();
    return name;
  }

  // A `full` mbarrier a ring buffer, armed by the thread that issues the buffer's boxes and
  // waited on by every thread; each thread keeps each buffer's phase parity in a bit of one
  // register.
  void tma_setup() {
    tma_bars_ = b_.fresh("tma_bar");
    tma_phase_ = b_.fresh("tma_phase");
    init_mbarriers("TMA: a full mbarrier a buffer, initialised by thread 0; its phases, a bit each", tma_bars_,
                   tma_phase_, 1, 0);
  }

  // A `free` mbarrier a ring buffer, which every thread arrives at once done with the buffer and
  // the issuing thread waits on before refilling it (a ring without a block barrier a tile); the
  // issuer's parities start at 1: a fresh buffer counts as released.
  void tma_free_setup() {
    tma_free_ = b_.fresh("tma_free");
    tma_free_phase_ = b_.fresh("tma_free_phase");
    init_mbarriers("TMA: a free mbarrier a buffer, every thread arriving; the issuer's phases", tma_free_,
                   tma_free_phase_, out_->block_threads, 0xffffffffLL);
  }

  // `depth` mbarriers of `count` arrivals initialised by thread 0 at the top of the kernel, and
  // the register of their phase bits.
  void init_mbarriers(const std::string& why, const std::string& bars, const std::string& phases, int count,
                      int64_t bits) {
    out_->shared.push_back({bars, ScalarType::I64, stage_->depth, 8});
    std::vector<kir::Stmt> init;
    for (int i = 0; i < stage_->depth; ++i)
      init.push_back(kir::intrinsic(kir::IntrinsicId::MbarrierInit, {}, {kir::shared_addr(bars, ci32(i))}, {count}));
    init.push_back(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));  // the barriers, seen by the copies
    auto at = [&] { return top_->begin() + static_cast<std::ptrdiff_t>(hoist_at_++); };
    top_->insert(at(), kir::comment(why));
    top_->insert(at(), kir::decl(phases, U32, kir::ci(bits, U32)));
    top_->insert(at(), kir::if_then(kir::binary(kir::BinOp::Eq, kir::special(kir::Special::ThreadIdx), ci32(0)),
                                    std::move(init)));
    top_->insert(at(), kir::barrier());
  }

  // Whether the sizes let every tensor map of the kernel exist (rows 16-byte multiples, no empty
  // dimension: the host's rule, kir::tma_map_of); else the tiles come by cp.async.
  K tma_ok() {
    std::set<std::string> rows, dims;
    for (const kir::Param& p : out_->params) {
      if (p.kind != kir::Param::Kind::TensorMap) continue;
      const tir::Tensor& t = *b_.p_.tensors.find(p.map_of);
      rows.insert(t.dims.back());
      dims.insert(t.dims.begin(), t.dims.end());
    }
    std::optional<K> ok;
    auto both = [&](K c) { ok = ok ? kir::binary(kir::BinOp::And, *ok, std::move(c)) : std::move(c); };
    const int64_t per_16_bytes = 16 / kir::type_bytes(t_.operand);
    for (const std::string& r : rows)
      both(kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, KernelBuilder::size_value(r), i64(per_16_bytes)),
                       i64(0)));
    for (const std::string& d : dims) both(kir::binary(kir::BinOp::Gt, KernelBuilder::size_value(d), i64(0)));
    if (!ok) throw std::logic_error("tma_ok without a tensor map");
    return hoisted("tma_ok", *ok);
  }

  // Thread 0 arms buffer `buf`'s mbarrier with the tiles' bytes and issues their boxes; where the
  // sizes rule TMA out, every thread copies them with cp.async instead (the same layout).
  // With `wait_free` (a ring), the issuer first waits until every thread released the buffer.
  void tma_fill(const std::vector<const Slab*>& slabs, const K& buf, const K& origin, bool wait_free) {
    int64_t bytes = 0;
    for (const Slab* s : slabs) bytes += s->elems() * kir::type_bytes(t_.operand);
    K bar = kir::shared_addr(tma_bars_, i32(buf));
    std::vector<kir::Stmt> issue = b_.nested([&] {
      if (wait_free) wait_phase(tma_free_, tma_free_phase_, buf);
      // The buffer's last reads (generic proxy, ordered by the barrier or the free mbarrier
      // before) before the copies.
      emit(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));
      emit(kir::intrinsic(kir::IntrinsicId::MbarrierExpectTx, {}, {bar, kir::ci(bytes, U32)}));
      for (const Slab* s : slabs)
        for (int p = 0; p < s->cols / 64; ++p) {
          // Unclamped coordinates: the box's elements past the tensor's ends read as zero.
          auto [outer, inner] = tile_base(*s, origin);
          b_.scopes_.push_back({});
          b_.scopes_.back().index[s->outer.name] = outer;
          b_.scopes_.back().index[s->inner.name] = add(inner, i64(int64_t{p} * 64));
          std::vector<K> args{kir::shared_addr(s->array, add(s->buffer_start(buf), ci32(int64_t{p} * s->rows * 64))),
                              bar};
          for (size_t i = s->read.args.size(); i-- > 0;) args.push_back(i32(b_.lower(s->read.args[i])));
          b_.scopes_.pop_back();
          emit(kir::intrinsic(kir::tma_load_of_rank(static_cast<int>(s->read.args.size())), {}, std::move(args), {},
                              s->map));
        }
    });
    std::vector<kir::Stmt> by_tma;
    by_tma.push_back(
        kir::if_then(kir::binary(kir::BinOp::Eq, kir::special(kir::Special::ThreadIdx), ci32(0)), std::move(issue)));
    emit(kir::if_then(tma_ok(), std::move(by_tma), b_.nested([&] {
      for (const Slab* s : slabs) fill_tile(*s, buf, origin);
    })));
  }

  // Waits on mbarrier `bars`[buf] for the phase parity in bit `buf` of `phases`, then flips it.
  void wait_phase(const std::string& bars, const std::string& phases, const K& buf) {
    K bit = kir::binary(kir::BinOp::Shl, kir::ci(1, U32), as(buf, U32));
    K parity =
        kir::binary(kir::BinOp::Ne, kir::binary(kir::BinOp::BitAnd, kir::var({phases}, U32), bit), kir::ci(0, U32));
    emit(kir::intrinsic(kir::IntrinsicId::MbarrierTryWait, {}, {kir::shared_addr(bars, i32(buf)), as(parity, U32)}));
    emit(kir::assign({phases}, kir::binary(kir::BinOp::BitXor, kir::var({phases}, U32), bit)));
  }

  bool wgmma() const { return t_.wgmma_n > 0; }

  // A wgmma operand: A in four registers of `regs` from `off` (each warp's mma A fragment) or in
  // shared memory through `desc`; B through `desc`, N-major or K-major.
  struct AOperand {
    std::string regs;
    int off = 0;
    std::optional<std::pair<K, K>> desc;
  };
  struct BOperand {
    std::pair<K, K> desc;
    bool n_major = false;
  };

  // k16 step `step` of a K-major swizzled slab: 32 bytes a step within a 64-column panel, then
  // the next panel (rows of 128 bytes).
  static int64_t k_major_step_bytes(const Slab& s, int step) {
    return step * kAtomK / 64 * (int64_t{s.rows} * 128) + step * kAtomK % 64 * 2;
  }

  // The B operand for k16 step `step` of a swizzled slab whose rows (K-major: the contiguous axis
  // is the contraction's, `k_axis`) or columns (N-major) are B's N.
  BOperand b_operand(const Slab& s, const K& buf, const std::string& k_axis, int step) {
    const bool n_major = s.inner.name != k_axis;
    const int64_t panel_bytes = int64_t{s.rows} * 128;
    const int64_t byte_off = n_major ? int64_t{step} * kAtomK * 128 : k_major_step_bytes(s, step);
    return {descriptor_words(b_.shared(kir::shared_addr(s.array, s.buffer_start(buf))), byte_off,
                             kir::wgmma_descriptor(0, n_major ? static_cast<uint32_t>(panel_bytes) : 16, 1024, 1)),
            n_major};
  }

  // A descriptor's two words: the start address field of base + byte_off (shared bytes, U32)
  // over the fixed fields (offsets and swizzle) of `fixed`.
  static std::pair<K, K> descriptor_words(const K& base, int64_t byte_off, uint64_t fixed) {
    auto u32 = [](uint64_t v) { return kir::ci(static_cast<int64_t>(v & 0xffffffffu), U32); };
    K field =
        kir::binary(kir::BinOp::BitAnd,
                    kir::binary(kir::BinOp::Shr, add(base, u32(static_cast<uint64_t>(byte_off))), u32(4)), u32(0x3FFF));
    return {kir::binary(kir::BinOp::BitOr, field, u32(fixed)), u32(fixed >> 32)};
  }

  // The A operand from shared memory: the warpgroup's 64 rows of a K-major swizzled slab (rows:
  // the output's, columns: the contraction's), k16 step `step`.
  AOperand a_operand(const Slab& s, int step, const K& buf) {
    K group = hoisted("group_rows",
                      as(mul(kir::binary(kir::BinOp::Div, warp_m_, i64(4)), i64(4 * rows_per_warp_ * 128)), U32));
    return {{},
            0,
            descriptor_words(b_.shared(add(kir::shared_addr(s.array, s.buffer_start(buf)), group)),
                             k_major_step_bytes(s, step), kir::wgmma_descriptor(0, 16, 1024, 1))};
  }

  // acc[0 .. n/2) += A * B, one m64nNk16 wgmma of the warpgroup. The caller brackets a batch
  // with wgmma_fence / wgmma_done.
  void wgmma_step(const std::string& acc, int n, const AOperand& a, const BOperand& b) {
    EMMY_INTERNAL_ASSERT(n == 64 || n == 128, fmt::format("a wgmma of N = {} (the plan admits 64 and 128)", n));
    std::vector<kir::Reg> outs;
    std::vector<K> ins;
    for (int i = 0; i < n / 2; ++i) outs.push_back({acc, i});
    if (a.desc) {
      ins.push_back(a.desc->first);
      ins.push_back(a.desc->second);
    } else {
      for (int i = 0; i < 4; ++i) ins.push_back(elem(a.regs, a.off + i, U32));
    }
    ins.push_back(b.desc.first);
    ins.push_back(b.desc.second);
    for (int i = 0; i < n / 2; ++i) ins.push_back(elem(acc, i, F32));
    using enum kir::IntrinsicId;
    emit(kir::intrinsic(a.desc ? (n == 64 ? WgmmaSsN64 : WgmmaSsN128) : (n == 64 ? WgmmaRsN64 : WgmmaRsN128),
                        std::move(outs), std::move(ins), {t_.operand == ScalarType::BF16 ? 1 : 0, b.n_major ? 1 : 0}));
  }
  void wgmma_fence() { emit(kir::intrinsic(kir::IntrinsicId::WgmmaFence, {}, {})); }
  // Commits the batch, emits `under` (work for the tensor cores' latency), waits for the batch;
  // the results are pinned after the wait (no use of them moves above it).
  void wgmma_done(const std::string& acc, int regs, const std::function<void()>& under = {}) {
    emit(kir::intrinsic(kir::IntrinsicId::WgmmaCommit, {}, {}));
    if (under) under();
    emit(kir::intrinsic(kir::IntrinsicId::WgmmaWait, {}, {}, {0}));
    for (int i = 0; i < regs; ++i) emit(kir::intrinsic(kir::IntrinsicId::RegFence, {{acc, i}}, {elem(acc, i, F32)}));
  }

  // The global element index the slab's read has at (outer, inner), the indices unclamped.
  K element_index(const Slab& s, const K& outer, const K& inner) {
    b_.scopes_.push_back({});
    b_.scopes_.back().index[s.outer.name] = outer;
    b_.scopes_.back().index[s.inner.name] = inner;
    K load = b_.lower(s.read);
    b_.scopes_.pop_back();
    return load.args[0];
  }

  // The block's threads copy one tile into buffer `buf`.
  void fill(const Slab& s, const K& buf, const K& outer_base, const K& inner_base) {
    if (!stage_->async || !s.strided) return fill_by_chunks(s, buf, outer_base, inner_base);
    // A tile wholly inside the tensor whose every chunk is 16-byte aligned (the first element
    // and the row stride multiples of 8) copies with one cp.async a chunk and no tests; only
    // the ragged edges and odd strides take the checked path.
    K first = let(b_.fresh("tile_src"), element_index(s, outer_base, inner_base));
    K stride = let(b_.fresh("row_stride"),
                   kir::binary(kir::BinOp::Sub, element_index(s, add(outer_base, i64(1)), inner_base), first));
    K inside = kir::binary(kir::BinOp::And, kir::binary(kir::BinOp::Le, add(outer_base, i64(s.rows)), s.outer.size),
                           kir::binary(kir::BinOp::Le, add(inner_base, i64(s.cols)), s.inner.size));
    auto multiple_of_8 = [](const K& v) {
      return kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, v, i64(8)), i64(0));
    };
    K whole =
        kir::binary(kir::BinOp::And, inside, kir::binary(kir::BinOp::And, multiple_of_8(first), multiple_of_8(stride)));
    const int per_row = s.cols / 8, chunks = s.rows * per_row;
    const std::string cv = b_.fresh("chunk");
    K c32 = kir::var({cv}, ScalarType::I32);
    const int threads = out_->block_threads;
    std::vector<kir::Stmt> fast = b_.nested([&] {
      if (threads % per_row == 0 && chunks % threads == 0 && (!s.swizzled || (threads / per_row) % 8 == 0)) {
        // The thread's chunks are rows apart by threads / per_row, in one column: one address
        // pair per tile, then a constant step each (unrolled: the copies issue back to back).
        const int row_step = threads / per_row;
        K tid = kir::special(kir::Special::ThreadIdx);
        K r0 = hoisted("fill_row", kir::binary(kir::BinOp::Div, tid, ci32(per_row)));
        K q0 = hoisted("fill_col", mul(kir::binary(kir::BinOp::Rem, tid, ci32(per_row)), ci32(8)));
        K src0 = let(b_.fresh("fill_src"), add(first, add(mul(as(r0, I64), stride), as(q0, I64))));
        K src_step = let(b_.fresh("fill_step"), mul(stride, i64(row_step)));
        K dst0 = let(b_.fresh("fill_at"), add(s.buffer_start(buf), s.offset(r0, q0)));
        const int64_t row_elems = s.swizzled ? 64 : s.pitch;  // swizzled: rows 8k apart keep their chunk order
        for (int i = 0; i < chunks / threads; ++i) {
          K dst = i ? add(dst0, ci32(int64_t{i} * row_step * row_elems)) : dst0;
          K src = i ? add(src0, mul(src_step, i64(i))) : src0;
          emit(kir::intrinsic(kir::IntrinsicId::CpAsync16, {}, {kir::shared_addr(s.array, dst), src}, {}, s.read.name));
        }
        return;
      }
      std::vector<kir::Stmt> chunk = b_.nested([&] {
        K r32 = kir::binary(kir::BinOp::Div, c32, ci32(per_row));
        K q32 = mul(kir::binary(kir::BinOp::Rem, c32, ci32(per_row)), ci32(8));
        K dst = add(s.buffer_start(buf), s.offset(r32, q32));
        K src = add(first, add(mul(as(r32, I64), stride), as(q32, I64)));
        emit(kir::intrinsic(kir::IntrinsicId::CpAsync16, {}, {kir::shared_addr(s.array, dst), src}, {}, s.read.name));
      });
      kir::Stmt loop =
          kir::for_loop(cv, ScalarType::I32, kir::special(kir::Special::ThreadIdx), ci32(chunks), std::move(chunk));
      loop.step = threads;
      emit(std::move(loop));
    });
    emit(kir::if_then(whole, std::move(fast), b_.nested([&] { fill_by_chunks(s, buf, outer_base, inner_base); })));
  }

  // 16-byte cp.async per chunk of 8 elements where the chunk is inside the tensor and aligned,
  // else element by element through registers with zeros past the ends (ragged sizes, odd strides).
  void fill_by_chunks(const Slab& s, const K& buf, const K& outer_base, const K& inner_base) {
    const int per_row = s.cols / 8, chunks = s.rows * per_row, threads = out_->block_threads;
    // A real loop over the thread's chunks (not unrolled): unrolled, the compiler hoists each
    // chunk's addresses out of the key loop and the fragments spill.
    const std::string cv = b_.fresh("chunk");
    K c32 = kir::var({cv}, ScalarType::I32);
    std::vector<kir::Stmt> chunk = b_.nested([&] {
      K r32 = kir::binary(kir::BinOp::Div, c32, ci32(per_row));
      K q32 = mul(kir::binary(kir::BinOp::Rem, c32, ci32(per_row)), ci32(8));
      K at32 = s.offset(r32, q32);
      K r = let(b_.fresh("fill_row"), as(r32, I64)), q = let(b_.fresh("fill_col"), as(q32, I64));
      K orow = add(outer_base, r), icol = add(inner_base, q);
      K dst = let(b_.fresh("fill_at"), as(add(s.buffer_start(buf), at32), I64));
      auto element = [&](int u) {
        b_.scopes_.push_back({});
        bind(s.outer, orow);
        bind(s.inner, add(icol, i64(u)));
        K v = b_.lower(s.read);
        b_.scopes_.pop_back();
        return v;
      };
      std::vector<kir::Stmt> by_elements = b_.nested([&] {
        for (int u = 0; u < 8; ++u) {
          K ok = kir::binary(kir::BinOp::And, lt(orow, s.outer.size), lt(add(icol, i64(u)), s.inner.size));
          emit(kir::store(kir::Space::Shared, s.array, i32(add(dst, i64(u))),
                          kir::select(ok, as(element(u), t_.operand), kir::cf(0, t_.operand))));
        }
      });
      if (!stage_->async) {
        for (kir::Stmt& x : by_elements) emit(std::move(x));
        return;
      }
      // The chunk's first element: the copy only runs when it is inside.
      K index = let(b_.fresh("fill_src"), element_index(s, orow, icol));
      K whole = kir::binary(kir::BinOp::And, lt(orow, s.outer.size),
                            kir::binary(kir::BinOp::Le, add(icol, i64(8)), s.inner.size));
      whole = kir::binary(kir::BinOp::And, whole,
                          kir::binary(kir::BinOp::Eq, kir::binary(kir::BinOp::Rem, index, i64(8)), i64(0)));
      std::vector<kir::Stmt> copy;
      copy.push_back(kir::intrinsic(kir::IntrinsicId::CpAsync16, {}, {kir::shared_addr(s.array, i32(dst)), index}, {},
                                    s.read.name));
      emit(kir::if_then(whole, std::move(copy), std::move(by_elements)));
    });
    kir::Stmt loop =
        kir::for_loop(cv, ScalarType::I32, kir::special(kir::Special::ThreadIdx), ci32(chunks), std::move(chunk));
    loop.step = threads;
    emit(std::move(loop));
  }

  void commit() {
    if (stage_->async) emit(kir::intrinsic(kir::IntrinsicId::CpAsyncCommit, {}, {}));
  }
  // With wgmma, each thread's landed copies (generic proxy) are fenced for the tensor cores'
  // operand reads (async proxy) before the barrier publishes them.
  // `tma_buf`: the buffer whose boxes (if the tiles came by TMA) this wait is for; with
  // `boxes_only` every tile of the ring comes by TMA and the full mbarrier is all a thread waits
  // for (the block barrier stays for the cp.async path the sizes may force).
  void wait(int pending, const std::optional<K>& tma_buf = std::nullopt, bool boxes_only = false) {
    if (stage_->async) emit(kir::intrinsic(kir::IntrinsicId::CpAsyncWait, {}, {}, {pending}));
    if (tma_buf && !tma_bars_.empty())
      emit(kir::if_then(tma_ok(), b_.nested([&] { wait_phase(tma_bars_, tma_phase_, *tma_buf); })));
    if (wgmma()) emit(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));
    if (boxes_only)
      emit(kir::if_then(kir::unary(kir::UnOp::Not, tma_ok()), {kir::barrier()}));
    else
      emit(kir::barrier());
  }

  // A value computed once at the top of the kernel (before every loop): the lane's parts of
  // shared-memory addresses, invariant scales, the same on every trip.
  K hoisted(const std::string& base, K value) {
    std::string key = KernelBuilder::render_key(value);
    if (auto it = hoisted_.find(key); it != hoisted_.end()) return it->second;
    std::string name = b_.fresh(base);
    top_->insert(top_->begin() + static_cast<std::ptrdiff_t>(hoist_at_++), kir::decl(name, value.type, value));
    return hoisted_[key] = kir::var({name}, value.type);
  }

  // `e` with its launch-invariant parts (computed from parameters and constants only, like a
  // score scale 1 / sqrt(D)) hoisted to the top of the kernel: computed once, not per tile.
  K hoist_invariants(K e) {
    if (kir::launch_invariant(e)) {
      bool leaf = e.kind == K::Kind::Const || e.kind == K::Kind::Param ||
                  (e.kind == K::Kind::Cast && e.args[0].kind != K::Kind::Unary && e.args[0].kind != K::Kind::Binary);
      return leaf ? e : hoisted("invariant", std::move(e));
    }
    for (K& a : e.args) a = hoist_invariants(std::move(a));
    return e;
  }

  // The key's lift as `contraction * scale` (or `/ scale`), the scale launch-invariant and
  // positive (sdpa's 1 / sqrt(D)): max commutes with it, so the row max runs on the raw scores
  // and is scaled once per row, and the scale folds into the exponential's multiply (FA-2's
  // scale_log2).
  std::optional<K> key_scale(const lir::Stmt& fold) {
    b_.scopes_.push_back({});
    bind(axis_at(row_axis_, {}, false), i64(0));
    bind(axis_at(fold.axis, {}, false), i64(0));
    K raw = kir::var({std::string(kContracted)}, F32);
    b_.scopes_.back().regs[std::string(kContracted)] = raw;
    K v = as(b_.lower(first_.around), F32);
    b_.scopes_.pop_back();
    auto is_raw = [&](const K& x) { return x.kind == K::Kind::Var && x.reg == raw.reg; };
    auto scale_ok = [&](const K& x) {
      return kir::launch_invariant(x) && kir::positive_for_every_launch(x, b_.p_.tensors.sizes);
    };
    if (v.kind != K::Kind::Binary) return std::nullopt;
    if (v.bin == kir::BinOp::Div && is_raw(v.args[0]) && scale_ok(v.args[1]))  // raw / s = raw * (1 / s)
      return hoist_invariants(kir::binary(kir::BinOp::Div, kir::cf(1, F32), v.args[1]));
    if (v.bin != kir::BinOp::Mul) return std::nullopt;
    for (int side = 0; side < 2; ++side)
      if (is_raw(v.args[side]) && scale_ok(v.args[1 - side])) return hoist_invariants(v.args[1 - side]);
    return std::nullopt;
  }

  // Registers of fragments read from a slab with one ldmatrix: piece m is register `reg` of a
  // fragment of lane map `fn` at (row, col) from the group's origin in the slab's frame;
  // `row_is_outer` says whether the fragment's rows run along the slab's rows.
  struct Piece {
    kir::Reg dest;
    CoordFn fn;
    int reg;
    int row, col;
  };
  // The group's origin (row_dyn, col_dyn) is a run-time offset (a warp's place), I32.
  void drain(const Slab& s, const K& buf, const std::vector<Piece>& pieces, const K& row_dyn, const K& col_dyn,
             bool row_is_outer) {
    std::optional<bool> trans;
    std::vector<std::pair<int, int>> at;  // each piece's 8x8 block origin: (outer, inner)
    for (const Piece& p : pieces) {
      int row = 1 << 20, col = 1 << 20;
      for (int lane = 0; lane < kWarp; ++lane)
        for (int h = 0; h < 2; ++h) {
          kir::FragmentCoord c = p.fn(lane, 2 * p.reg + h);
          row = std::min(row, c.row);
          col = std::min(col, c.col);
        }
      kir::FragmentCoord lo = p.fn(0, 2 * p.reg), hi = p.fn(0, 2 * p.reg + 1);
      bool pair_along_rows = hi.row == lo.row + 1;
      bool t = pair_along_rows == row_is_outer;  // the register pairs run along the slab's rows
      if (trans && *trans != t) throw std::logic_error("one ldmatrix cannot mix transposed and plain pieces");
      trans = t;
      row += p.row;
      col += p.col;
      at.emplace_back(row_is_outer ? row : col, row_is_outer ? col : row);
    }
    if (pieces.size() == 3 || pieces.empty() || pieces.size() > 4)
      throw std::logic_error("ldmatrix takes 1, 2 or 4 matrices");
    // Lanes 8m..8m+7 address the rows of matrix m (lanes past the pieces repeat them): the
    // lane's offset from piece 0, a constant per lane, hoisted out of every loop.
    const int n = static_cast<int>(pieces.size());
    K m = kir::binary(kir::BinOp::Rem, kir::binary(kir::BinOp::Div, lane32_, ci32(8)), ci32(n));
    K delta = ci32(0);
    for (int i = n - 1; i > 0; --i)
      delta = kir::select(kir::binary(kir::BinOp::Eq, m, ci32(i)),
                          ci32((at[i].first - at[0].first) * s.pitch + at[i].second - at[0].second), delta);
    K outer_dyn = row_is_outer ? row_dyn : col_dyn, inner_dyn = row_is_outer ? col_dyn : row_dyn;
    K addr = s.swizzled ? swizzled_row_address(s, buf, at, m, outer_dyn, inner_dyn) : K{};
    if (!s.swizzled) {
      K lane_off = hoisted("ldm_off", add(mul(kir::binary(kir::BinOp::Rem, lane32_, ci32(8)), ci32(s.pitch)), delta));
      // The run-time part once per tile (shared by every ldmatrix of the slab), plus a constant:
      // the constant becomes the instruction's immediate offset.
      K dynamic = b_.shared(add(add(add(s.buffer_start(buf), mul(outer_dyn, ci32(s.pitch))), inner_dyn), lane_off));
      addr = add(dynamic, ci32(at[0].first * s.pitch + at[0].second));
    }
    using enum kir::IntrinsicId;
    static constexpr kir::IntrinsicId kPlain[] = {LdmatrixX1, LdmatrixX2, LdmatrixX4, LdmatrixX4};
    static constexpr kir::IntrinsicId kTrans[] = {LdmatrixX1Trans, LdmatrixX2Trans, LdmatrixX4Trans, LdmatrixX4Trans};
    std::vector<kir::Reg> outs;
    for (const Piece& p : pieces) outs.push_back(p.dest);
    emit(kir::intrinsic((*trans ? kTrans : kPlain)[pieces.size() - 1], std::move(outs),
                        {kir::shared_addr(s.array, addr)}));
  }

  static K ci32(int64_t v) { return kir::ci(v, ScalarType::I32); }

  // The lane's row address in a swizzled slab (128-byte rows in panels of 64 columns, chunk c of
  // row r at c ^ r % 8): the lane's row of its matrix m (lane % 8, plus the matrix's row offset)
  // and the matrix's column. Block origins and the dynamic row offsets are multiples of 8 rows,
  // so the row's phase r % 8 is lane % 8; the XOR is one instruction a ldmatrix.
  K swizzled_row_address(const Slab& s, const K& buf, const std::vector<std::pair<int, int>>& at, const K& m,
                         const K& outer_dyn, const K& inner_dyn) {
    for (auto [r, c] : at)
      if (r % 8 != 0 || c % 8 != 0) throw std::logic_error("ldmatrix blocks off the swizzle's 8 x 8 grid");
    K drow = ci32(0), dcol = ci32(0);
    for (size_t i = at.size(); i-- > 1;) {
      K is_i = kir::binary(kir::BinOp::Eq, m, ci32(static_cast<int64_t>(i)));
      drow = kir::select(is_i, ci32(at[i].first - at[0].first), drow);
      dcol = kir::select(is_i, ci32(at[i].second - at[0].second), dcol);
    }
    using kir::BinOp;  // columns >= 0: shifts and masks, not signed division
    K phase = hoisted("ldm_phase", kir::binary(BinOp::Rem, lane32_, ci32(8)));
    // The common case in one register a lane: the matrices' columns within one panel and their
    // chunk offsets (0 or 1 chunk) on bits the constant chunk leaves clear, so that
    // (c + d) ^ phase = c ^ (d ^ phase); with the row (a multiple of 64 elements) or-ed in, the
    // address is the tile's base plus that register XOR a constant, plus an immediate.
    const int c0 = at[0].second;
    int spread = 0, delta_bits = 0;
    for (auto [r, c] : at) {
      spread = std::max(spread, c - c0);
      delta_bits |= (c - c0) / 8;
    }
    // A warp's column offset in whole panels (f..x8 warps: 64 columns each) moves whole panels,
    // once per kernel; the chunk then depends on constants and the lane only.
    const bool panels = whole_panels(inner_dyn);
    auto panel_offset = [&] {
      return !panels || inner_dyn.kind == K::Kind::Const
                 ? ci32(0)
                 : hoisted("ldm_panel", mul(kir::binary(BinOp::Shr, inner_dyn, ci32(6)), ci32(int64_t{s.rows} * 64)));
    };
    K row = mul(add(phase, drow), ci32(64));
    if (panels && c0 % 64 + spread < 64 && ((c0 % 64 / 8) & delta_bits) == 0) {
      K lane_chunk =
          kir::binary(BinOp::Shl, kir::binary(BinOp::BitXor, kir::binary(BinOp::Shr, dcol, ci32(3)), phase), ci32(3));
      K lane = hoisted("ldm_swz", kir::binary(BinOp::BitOr, row, lane_chunk));
      K tile = b_.shared(add(add(s.buffer_start(buf), mul(outer_dyn, ci32(64))), panel_offset()));
      return add(add(tile, kir::binary(BinOp::BitXor, lane, ci32(c0 % 64 / 8 * 8))),
                 ci32(int64_t{at[0].first} * 64 + int64_t{c0 / 64} * s.rows * 64));
    }
    K row_part = hoisted("ldm_row", row);
    K col = add(hoisted("ldm_col", dcol), ci32(at[0].second));
    K panel_dyn = panel_offset();
    if (!panels) col = add(inner_dyn, col);
    K chunk =
        kir::binary(BinOp::BitXor, kir::binary(BinOp::BitAnd, kir::binary(BinOp::Shr, col, ci32(3)), ci32(7)), phase);
    K within = kir::binary(BinOp::Shl, chunk, ci32(3));
    if (s.cols > 64) within = add(within, mul(kir::binary(BinOp::Shr, col, ci32(6)), ci32(int64_t{s.rows} * 64)));
    K tile = b_.shared(add(add(add(s.buffer_start(buf), mul(outer_dyn, ci32(64))), row_part), panel_dyn));
    return add(add(tile, within), ci32(int64_t{at[0].first} * 64));
  }

  // Whether a drain's dynamic column offset is a multiple of 64 columns on every warp: zero, or
  // the warp's column (row) offset when a warp spans whole panels.
  bool whole_panels(const K& dyn) const {
    auto is = [&](const K& v) { return dyn.kind == K::Kind::Var && v.kind == K::Kind::Var && dyn.reg == v.reg; };
    if (dyn.kind == K::Kind::Const) return dyn.ival == 0;
    return (is(warp_cols32_) && cols_per_warp_ % 64 == 0) || (is(warp_rows32_) && rows_per_warp_ % 64 == 0);
  }

  // Fragment registers of `n_frags` fragments (regs each) into array[off + f * regs + r]
  // from a slab, four matrices per ldmatrix where they pair up; fragment f sits at
  // (row_dyn, col_dyn) + origin(f).
  void drain_fragments(const Slab& s, const K& buf, CoordFn fn, int regs, int n_frags, const std::string& array,
                       int off, const K& row_dyn, const K& col_dyn,
                       const std::function<std::pair<int, int>(int)>& origin, bool row_is_outer) {
    std::vector<Piece> all;
    for (int f = 0; f < n_frags; ++f) {
      auto [r, c] = origin(f);
      for (int g = 0; g < regs; ++g) all.push_back({{array, off + f * regs + g}, fn, g, r, c});
    }
    for (size_t i = 0; i < all.size();) {
      size_t n = all.size() - i >= 4 ? 4 : all.size() - i >= 2 ? 2 : 1;
      drain(s, buf,
            std::vector<Piece>(all.begin() + static_cast<std::ptrdiff_t>(i),
                               all.begin() + static_cast<std::ptrdiff_t>(i + n)),
            row_dyn, col_dyn, row_is_outer);
      i += n;
    }
  }

  // The tile at `origin` of the streamed axis: its (outer, inner) base, the other axis's fixed.
  static std::pair<K, K> tile_base(const Slab& s, const K& origin) {
    return {s.outer.name == s.stream ? origin : s.outer.base, s.inner.name == s.stream ? origin : s.inner.base};
  }

  void fill_tile(const Slab& s, const K& buf, const K& origin) {
    auto [outer, inner] = tile_base(s, origin);
    fill(s, buf, outer, inner);
  }

  // for v in [0, size) step chunk: compute(v, buf, issue) on the tiles at v. With STAGE the
  // block waits for the tile's copies before computing; with the ring the copies of the next
  // depth - 1 tiles stay in flight under this tile's math. With `late_issue` the compute calls
  // `issue()`, which emits the copy of the tile ahead, once its first mma are issued (the fold:
  // the copies' address math runs under the tensor cores' latency, 3% on hd128; the wgmma
  // matmul by TMA); else the copy goes first (the mma.sync matmul: 8% faster that way with
  // cp.async, 7% with TMA, measured) and `issue` does nothing.
  using Issue = std::function<void()>;
  void stream_loop(const std::string& var, const K& lo, const K& size, int chunk, const std::vector<const Slab*>& slabs,
                   bool late_issue, const std::function<void(const K&, const K&, const Issue&)>& compute,
                   bool barrier_free = false) {
    const int depth = stage_ ? stage_->depth : 1, dist = stage_ && stage_->ring ? depth - 1 : 0;
    // With `barrier_free`, a ring whose every tile comes by TMA synchronises through the
    // mbarriers alone (the contraction; the fold keeps its barrier a tile). Measurements:
    // tests/bench/RESULTS.md, "Measurements that were code comments".
    const bool boxes_only = barrier_free && dist > 0 && !slabs.empty() &&
                            std::all_of(slabs.begin(), slabs.end(), [](const Slab* s) { return !s->map.empty(); });
    if (boxes_only && tma_free_.empty()) tma_free_setup();
    auto fill_all = [&](const K& buf, const K& origin) {
      std::vector<const Slab*> boxes;
      for (const Slab* sl : slabs)
        if (sl->map.empty())
          fill_tile(*sl, buf, origin);
        else
          boxes.push_back(sl);
      if (!boxes.empty()) tma_fill(boxes, buf, origin, boxes_only);
    };
    if (stage_ && dist > 0) {
      emit(kir::comment(fmt::format("prologue: the first {} tiles' copies in flight", dist)));
      for (int p = 0; p < dist; ++p) {
        K origin = add(lo, i64(int64_t{p} * chunk));
        emit(kir::if_then(lt(origin, size), b_.nested([&] { fill_all(i64(p), origin); })));
        commit();
      }
      if (boxes_only) {
        // What came by cp.async before the loop (a row tile's slab) lands and is published
        // here: the loop's tiles have no block barrier.
        emit(kir::if_then(tma_ok(), {kir::intrinsic(kir::IntrinsicId::CpAsyncWait, {}, {}, {0})}));
        if (wgmma()) emit(kir::intrinsic(kir::IntrinsicId::FenceProxyAsync, {}, {}));
        emit(kir::barrier());
      }
    }
    K v = kir::var({var}, I64);
    // The tile's buffer, counted round the ring in a small register (not divided out of v).
    const std::string bv = b_.fresh("buf");
    K buf = kir::var({bv}, ScalarType::I32);
    auto wrap = [&](K x) {  // x in [0, 2 depth) -> x mod depth
      return kir::select(kir::binary(kir::BinOp::Ge, x, ci32(depth)), kir::binary(kir::BinOp::Sub, x, ci32(depth)), x);
    };
    if (stage_) emit(kir::decl(bv, ScalarType::I32, ci32(0)));
    std::vector<kir::Stmt> body = b_.nested([&] {
      if (!stage_) return compute(v, i64(0), [] {});
      Issue issue = [] {};
      if (dist > 0) {
        // One barrier a tile: past it this tile has landed for every thread, and every warp has
        // finished the previous tile, whose buffer the copy issued next overwrites. A ring of
        // boxes only waits on the tile's full mbarrier instead, and its issuer on the free one.
        wait(dist - 1, buf, boxes_only);
        K ahead = add(v, i64(int64_t{dist} * chunk));
        K nb = let(b_.fresh("ahead_buf"), wrap(add(buf, ci32(dist))));
        issue = [this, ahead, nb, size, dist, &fill_all] {
          emit(kir::comment(fmt::format("ring: copy tile +{} while this one computes", dist)));
          emit(kir::if_then(lt(ahead, size), b_.nested([&] { fill_all(nb, ahead); })));
          commit();
        };
        if (!late_issue) {
          issue();
          issue = [] {};
        }
      } else {
        fill_all(buf, v);
        commit();
        wait(0, buf);
      }
      compute(v, buf, issue);
      if (boxes_only)  // this thread is done with the buffer
        emit(kir::if_then(
            tma_ok(), {kir::intrinsic(kir::IntrinsicId::MbarrierArrive, {}, {kir::shared_addr(tma_free_, i32(buf))})}));
      // Without the ring, a single buffer is refilled by the next trip: wait for every warp.
      if (dist == 0 && depth == 1) emit(kir::barrier());
      emit(kir::assign({bv}, wrap(add(buf, ci32(1)))));
    });
    kir::Stmt f = kir::for_loop(var, I64, lo, size, std::move(body));
    f.step = chunk;
    emit(std::move(f));
    // The slabs are free for whatever fills them next (another register tile's prologue).
    if (stage_ && !(dist == 0 && depth == 1)) emit(kir::barrier());
  }

  // ---- the kernel -----------------------------------------------------------------------
  void emit_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program) {
    masks_ = row_sharing_masks();
    for (int e = 0; e < 4; ++e) c_aff_[e] = lane_affine(kir::mma_c_coord, e);
    const bool fold = fold_ != nullptr;
    rows_per_warp_ = t_.frag_m * kAtomM;
    cols_per_warp_ = fold ? 0 : t_.frag_n * kAtomN;
    const int warps = t_.warps_m * t_.warps_n;
    out.block_threads = warps * kWarp;
    out.min_blocks_per_sm = 1;
    const int64_t rows_per_block = int64_t{t_.warps_m} * rows_per_warp_;
    const int64_t cols_per_block = int64_t{t_.warps_n} * cols_per_warp_;

    std::vector<kir::Stmt> body;
    b_.blocks_ = {&body};
    b_.scopes_ = {{}};
    const size_t tiled = fold ? 1 : 2;  // trailing thread axes the block tiles
    K row_tiles = ceil_div(KernelBuilder::size_value(row_axis_.size), rows_per_block);
    K col_tiles = fold ? i64(1) : ceil_div(KernelBuilder::size_value(col_axis_.size), cols_per_block);
    K grid = mul(row_tiles, col_tiles);
    for (size_t i = 0; i + tiled < k.threads.size(); ++i)
      grid = mul(grid, KernelBuilder::size_value(k.threads[i].size));
    out.grid_x = grid;

    emit(kir::comment(fmt::format("{}: {} warps (w{}x{}), each {} rows{} of m16n8k16 fragments{}", t_.atom, warps,
                                  t_.warps_m, t_.warps_n, rows_per_warp_,
                                  fold ? "" : fmt::format(" x {} columns", cols_per_warp_),
                                  wgmma() ? " (a warpgroup's wgmma accumulators, warp by warp)" : "")));
    K rest = let("block", as(kir::special(kir::Special::BlockIdx), I64));
    K col_tile = i64(0);
    if (!fold) {
      col_tile = let("col_tile", kir::binary(kir::BinOp::Rem, rest, col_tiles));
      rest = kir::binary(kir::BinOp::Div, rest, col_tiles);
    }
    K row_tile;
    key_limit_ = fold ? key_bound(*fold_) : std::nullopt;
    if (const std::optional<KeyBound>& bound = key_limit_) {
      // Under a key bound (causal) row tiles fold different numbers of keys: the longest go
      // first (row tile slowest, heaviest first), the short ones fill the last wave instead of
      // trailing it. Within groups of heads (the other block axes) of about kCausalGroupBlocks
      // blocks: every row tile of a head runs while its keys are in L2 (heaviest first over all
      // heads re-read (16, 16, 1024, 128)'s 128 MB of keys from DRAM for each row tile).
      using kir::BinOp;
      K others = i64(1);
      for (size_t i = 0; i + tiled < k.threads.size(); ++i)
        others = mul(others, KernelBuilder::size_value(k.threads[i].size));
      K group = let("head_group", kir::binary(BinOp::Min, others, ceil_div_by(i64(kCausalGroupBlocks), row_tiles)));
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
      b_.scopes_.back().index[a.name] = let(b_.unclashed(a.name), v);
      if (i > 0) rest = kir::binary(kir::BinOp::Div, rest, KernelBuilder::size_value(a.size));
    }
    out_ = &out;
    program_ = &program;
    K lane = let("lane", as(kir::special(kir::Special::LaneId), I64));
    K warp = let("warp", as(kir::special(kir::Special::WarpId), I64));
    lane32_ = let("lane32", kir::special(kir::Special::LaneId));
    grp_ = let("grp", kir::binary(kir::BinOp::Div, lane, i64(4)));
    tig_ = let("tig", kir::binary(kir::BinOp::Rem, lane, i64(4)));
    warp_m_ = t_.warps_n == 1 ? warp : let("warp_m", kir::binary(kir::BinOp::Div, warp, i64(t_.warps_n)));
    warp_n_ = t_.warps_n == 1 ? i64(0) : let("warp_n", kir::binary(kir::BinOp::Rem, warp, i64(t_.warps_n)));
    warp_rows32_ = let("warp_rows", i32(mul(warp_m_, i64(rows_per_warp_))));
    warp_cols32_ = let("warp_cols", i32(mul(warp_n_, i64(cols_per_warp_))));
    top_ = &body;
    hoist_at_ = body.size();
    row_block0_ = let("row_block0", mul(row_tile, i64(rows_per_block)));
    row0_ = let("row0", add(row_block0_, mul(warp_m_, i64(rows_per_warp_))));
    if (wgmma())
      group_row0_ = let("group_row0",
                        add(row_block0_, mul(kir::binary(kir::BinOp::Div, warp_m_, i64(4)), i64(4 * rows_per_warp_))));
    if (!fold) {
      col_block0_ = let("col_block0", mul(col_tile, i64(cols_per_block)));
      col0_ = let("col0", add(col_block0_, mul(warp_n_, i64(cols_per_warp_))));
    }
    if (fold)
      emit_fold(program);
    else
      emit_contraction();
    out.body = std::move(body);
  }

  AxisAt axis_at(const tir::Axis& a, K base, bool zero) const {
    return {a.name, std::move(base), KernelBuilder::size_value(a.size), zero};
  }

  // The accumulator element (atom a, n-atom n, element e) of a frag_m x n_atoms C tile.
  static int c_index(int a, int n, int e, int n_atoms) { return (a * n_atoms + n) * 4 + e; }

  // ---- a contraction and its epilogue (matmul) --------------------------------------------
  void emit_contraction() {
    const int fm = t_.frag_m, fn = t_.frag_n, steps = std::max(1, t_.k_chunk);
    // Fresh names: the op's own registers (an epilogue's `acc`) must not shadow them.
    const std::string acc = b_.fresh("acc"), af = b_.fresh("a_frag"), bf = b_.fresh("b_frag");
    emit(kir::comment(fmt::format("C tile in registers: {} x {} atoms per warp", fm, fn)));
    emit(kir::decl(acc, F32, kir::cf(0, F32), fm * fn * 4));
    if (!wgmma()) {
      emit(kir::decl(af, U32, fm * 4));
      emit(kir::decl(bf, U32, fn * 2));
    }
    const std::string kv = b_.fresh("k0");
    K ksize = KernelBuilder::size_value(first_.axis.size);
    const int chunk = steps * kAtomK;
    std::optional<Slab> sa, sb;
    if (stage_) {
      sa = make_slab(b_.fresh("a_tile"), first_.row, axis_at(row_axis_, row_block0_, false),
                     t_.warps_m * rows_per_warp_, axis_at(first_.axis, i64(0), true), chunk, 0, wgmma());
      sb = make_slab(b_.fresh("b_tile"), first_.col, axis_at(first_.axis, i64(0), true), chunk,
                     axis_at(col_axis_, col_block0_, false), t_.warps_n * cols_per_warp_, 0, wgmma());
      sa->stream = sb->stream = first_.axis.name;
      EMMY_INTERNAL_ASSERT(!wgmma() || sa->inner.name == first_.axis.name,
                           "A's slab is not K-major (the plan checks it)");
    }
    std::vector<const Slab*> slabs;
    if (stage_) slabs = {&*sa, &*sb};
    // wgmma by TMA: the next tile's boxes go under this tile's wgmma batch (the issuing thread
    // waits for every warp to release the buffer meanwhile); mma.sync issues them first, which
    // measured faster there (tests/bench/RESULTS.md, "Measurements that were code comments").
    const bool late = wgmma() && sa && !sa->map.empty() && sb && !sb->map.empty();
    stream_loop(
        kv, i64(0), ksize, chunk, slabs, late,
        [&](const K& k0, const K& buf, const Issue& issue) {
          if (wgmma()) {  // the chunk's k16 steps, one wgmma each a warpgroup, A and B by descriptor
            emit(kir::comment(fmt::format("{} k16 steps: one wgmma each, A and B read from shared memory", steps)));
            wgmma_fence();
            for (int s = 0; s < steps; ++s) {  // B's address before A's: one emission order on every compiler
              BOperand b = b_operand(*sb, buf, first_.axis.name, s);
              wgmma_step(acc, t_.wgmma_n, a_operand(*sa, s, buf), b);
            }
            wgmma_done(acc, fm * fn * 4, issue);
            return;
          }
          for (int s = 0; s < steps; ++s) {
            K kb = add(k0, i64(s * kAtomK));
            emit(kir::comment(fmt::format("K step {}: fragments from {}, then {} mma", s,
                                          stage_ ? "shared memory (ldmatrix)" : "global memory", fm * fn)));
            {  // in the tile's scope: the slabs' per-tile address parts are shared by every step
              if (stage_) {
                drain_fragments(
                    *sa, buf, kir::mma_a_coord, 4, fm, af, 0, warp_rows32_, ci32(0),
                    [&](int a) {
                      return std::pair{a * kAtomM, s * kAtomK};
                    },
                    sa->outer.name == row_axis_.name);
                drain_fragments(
                    *sb, buf, kir::mma_b_coord, 2, fn, bf, 0, ci32(0), warp_cols32_,
                    [&](int n) {
                      return std::pair{s * kAtomK, n * kAtomN};
                    },
                    sb->outer.name == first_.axis.name);
              } else {
                for (int a = 0; a < fm; ++a)
                  load_fragment(first_.row, kir::mma_a_coord, 4, af, a * 4,
                                axis_at(row_axis_, add(row0_, i64(a * kAtomM)), false), axis_at(first_.axis, kb, true));
                for (int n = 0; n < fn; ++n)
                  load_fragment(first_.col, kir::mma_b_coord, 2, bf, n * 2, axis_at(first_.axis, kb, true),
                                axis_at(col_axis_, add(col0_, i64(n * kAtomN)), false));
              }
              for (int a = 0; a < fm; ++a)
                for (int n = 0; n < fn; ++n) mma(acc, c_index(a, n, 0, fn), af, a * 4, bf, n * 2);
            }
            // Unguarded: a step past the end multiplies zero padding, and straight-line steps let
            // the compiler load step s + 1's fragments under step s's mma.
          }
        },
        /*barrier_free=*/true);
    emit(kir::comment("epilogue: each C element at its row and column"));
    const K rows = KernelBuilder::size_value(row_axis_.size), cols = KernelBuilder::size_value(col_axis_.size);
    const std::optional<StagedOut> staged = staged_out(kernel_body_, col_axis_.name, t_.warps_n * cols_per_warp_,
                                                       {sa ? &*sa : nullptr, sb ? &*sb : nullptr});
    for_each_c(
        fm, fn,
        [&](int a, int n, int e, const K& row, const K& col) {
          std::vector<kir::Stmt> one = b_.nested([&] {
            b_.scopes_.back().index[row_axis_.name] = row;
            b_.scopes_.back().index[col_axis_.name] = col;
            b_.scopes_.back().regs[std::string(kContracted)] = elem(acc, c_index(a, n, e, fn), F32);
            for (size_t i = 0; i < kernel_body_.size(); ++i) {
              lir::Stmt st = kernel_body_[i];
              if (static_cast<int>(i) == contraction_stmt_) st.value = first_.around;
              if (staged && i + 1 == kernel_body_.size()) return stage_element(*staged, b_.lower(st.value), a, n, e);
              b_.stmt(st);
            }
          });
          emit(kir::if_then(kir::binary(kir::BinOp::And, lt(row, rows), lt(col, cols)), std::move(one)));
        },
        col0_);
    if (staged) write_out(*staged, col_block0_, rows, cols);
  }

  // ---- a fold of a max-rescaled sum (the online softmax) -------------------------------------
  void emit_fold(kir::Program& program) {
    const lir::Stmt& fold = *fold_;
    const int fm = t_.frag_m, fn = t_.frag_n, ks = std::max(1, t_.k_chunk);
    const int bound = ks * kAtomK;
    program.limits.push_back({first_.axis.size, bound,
                              fmt::format("{}'s fragments are kept in registers, {} k-steps of 16 deep (k{} of TILE); "
                                          "raise k to cover {} (k{} covers {})",
                                          first_.row.name, ks, ks, first_.axis.size, 2 * ks, 2 * bound)});
    const std::string qf = b_.fresh("row_frag"), kf = b_.fresh("col_frag"), vf = b_.fresh("val_frag"),
                      pf = b_.fresh("p_frag"), sc = b_.fresh("score");
    const K rows = KernelBuilder::size_value(row_axis_.size);
    // The keys this block folds: the whole axis, or a split's range (REDUCE), uniform per block.
    K keys_lo = fold.range.empty() ? i64(0) : let(b_.fresh("keys_lo"), as(b_.lower(fold.range[0]), I64));
    K keys = fold.range.empty() ? KernelBuilder::size_value(fold.axis.size)
                                : let(b_.fresh("keys_hi"), as(b_.lower(fold.range[1]), I64));
    // A predicate comparing the key with the row (causal: j <= i) bounds the keys any row of
    // this block folds: blocks of keys masked for every row are never loaded nor computed.
    const std::optional<KeyBound>& key_limit = key_limit_;
    if (key_limit) {
      const int64_t rows_per_block = int64_t{t_.warps_m} * rows_per_warp_;
      K first_row = row_block0_, last_row = add(row_block0_, i64(rows_per_block - 1));
      K edge = add(key_limit->upper ? last_row : first_row, i64(key_limit->offset));
      emit(kir::comment(
          fmt::format("the fold's predicate {} bounds the keys of this block's rows", tir::print_expr(fold.where[0]))));
      if (key_limit->upper)
        keys = let(b_.fresh("keys_hi"), kir::binary(kir::BinOp::Min, keys, edge));
      else
        keys_lo = let(b_.fresh("keys_lo"), kir::binary(kir::BinOp::Max, keys_lo, edge));
    }
    scale_ = key_scale(fold);
    const int ne = tile_loop_ ? tile_loop_->tile / kAtomN : 0;  // the vector field's n-atoms a tile
    // The loop-invariant operand (Q) stays in registers when the fold's fragments leave room
    // for it; else (FA-2's default) it waits in a shared slab, re-read with ldmatrix each block.
    // With wgmma, Q waits in a swizzled slab that the score wgmma read through descriptors (A
    // from shared memory: no registers, and one coalesced copy instead of per-lane loads).
    const bool q_regs = !wgmma() && (!stage_ || fold_fragment_regs(fm, fn, ks, ne, true) <= kFragmentRegBudget);
    std::optional<Slab> qslab;
    if (q_regs) {
      emit(kir::comment(fmt::format("{}'s fragments are loop-invariant over {}: loaded once ({} k-steps)",
                                    first_.row.name, fold.axis.name, ks)));
      emit(kir::decl(qf, U32, fm * ks * 4));
      for (int a = 0; a < fm; ++a)
        for (int s = 0; s < ks; ++s)
          load_fragment(first_.row, kir::mma_a_coord, 4, qf, (a * ks + s) * 4,
                        axis_at(row_axis_, add(row0_, i64(a * kAtomM)), false),
                        axis_at(first_.axis, i64(s * kAtomK), true));
    } else {
      if (wgmma())
        emit(
            kir::comment(fmt::format("{}'s block is loop-invariant over {}: copied to shared memory once, read by the "
                                     "scores' wgmma through descriptors",
                                     first_.row.name, fold.axis.name)));
      else
        emit(kir::comment(fmt::format(
            "{}'s block is loop-invariant over {}: copied to shared memory once, its "
            "fragments re-read each block (registers: {} with them kept, over {})",
            first_.row.name, fold.axis.name, fold_fragment_regs(fm, fn, ks, ne, true), kFragmentRegBudget)));
      const int rows_per_block = t_.warps_m * rows_per_warp_;
      qslab = make_slab(b_.fresh("row_tile"), first_.row, axis_at(row_axis_, row_block0_, false), rows_per_block,
                        axis_at(first_.axis, i64(0), true), bound, 1, wgmma());
      EMMY_INTERNAL_ASSERT(!wgmma() || qslab->inner.name == first_.axis.name,
                           "the row slab is not K-major (the plan checks it)");
      fill(*qslab, i64(0), qslab->outer.name == row_axis_.name ? row_block0_ : i64(0),
           qslab->inner.name == row_axis_.name ? row_block0_ : i64(0));
      commit();
      if (!wgmma()) emit(kir::decl(qf, U32, fm * 4));
    }
    auto tile_body = [&](const K& tile0) {
      // Carriers: per m-atom, one value per row slot of C (rows g and g + 8), and the vector
      // field as C fragments over the tile.
      emit(kir::comment(fmt::format("carrier ({}) through the proved monoid {}, per row of the warp's {} rows",
                                    field_names(), fold.monoid, rows_per_warp_)));
      std::vector<std::string> carrier(fold.fields.size());
      for (size_t f = 0; f < fold.fields.size(); ++f) {
        carrier[f] = b_.fresh("run_" + fold.fields[f].name);
        ScalarType t = scalar_of(fold.fields[f].dtype);
        if (f == value_field_ && value_read_) {
          emit(kir::decl(carrier[f], F32, kir::cf(0, F32), fm * ne * 4));
          continue;
        }
        if (is_flag(f)) continue;
        double init = f == rescaled_.key ? -std::numeric_limits<double>::infinity() : 0.0;
        EMMY_INTERNAL_ASSERT(t == F32, "a carrier field that is not f32 (the plan checks it)");
        emit(kir::decl(carrier[f], F32, kir::cf(init, F32), fm * 2));
      }
      // wgmma reads B from shared memory, and every P fragment of the block stays live until
      // the batch of P @ V completes.
      if (!wgmma()) emit(kir::decl(kf, U32, fn * 2));
      emit(kir::decl(pf, U32, wgmma() ? fm * 4 * (fn / 2) : fm * 4));
      if (value_read_ && !wgmma()) emit(kir::decl(vf, U32, 2 * ne));
      const std::string jv = b_.fresh(fold.axis.name + "0");
      const int chunk = fn * kAtomN;
      std::vector<const Slab*> slabs;
      if (stage_) {
        kslab_ = make_slab(b_.fresh("col_tile"), first_.col, axis_at(fold.axis, i64(0), false), chunk,
                           axis_at(first_.axis, i64(0), true), bound, 0, wgmma());
        kslab_->stream = fold.axis.name;
        slabs.push_back(&*kslab_);
        if (value_read_) {
          vslab_ = make_slab(b_.fresh("val_tile"), *value_read_, axis_at(fold.axis, i64(0), true), chunk,
                             axis_at(tile_loop_->axis, tile0, false), tile_loop_->tile, 0, wgmma());
          vslab_->stream = fold.axis.name;
          slabs.push_back(&*vslab_);
        }
      }
      stream_loop(jv, keys_lo, keys, chunk, slabs, true, [&](const K& j0, const K& buf, const Issue& issue) {
        // A block of keys inside the axis, and (under a key bound) wholly visible to this warp's
        // rows, needs no mask: only the ragged last block and the diagonal ones do.
        std::optional<K> interior;
        if (fold.where.empty()) interior = kir::binary(kir::BinOp::Le, add(j0, i64(chunk)), keys);
        if (key_limit) {
          // Per warp, or per warpgroup with wgmma (whose warps must take the same branch).
          const K& rows0 = wgmma() ? group_row0_ : row0_;
          const int64_t span = wgmma() ? 4 * rows_per_warp_ : rows_per_warp_;
          K visible = key_limit->upper
                          ? kir::binary(kir::BinOp::Le, add(j0, i64(chunk)), add(rows0, i64(key_limit->offset)))
                          : kir::binary(kir::BinOp::Ge, j0, add(rows0, i64(span - 1 + key_limit->offset)));
          interior = kir::binary(kir::BinOp::And, kir::binary(kir::BinOp::Le, add(j0, i64(chunk)), keys), visible);
        }
        auto block_math = [&](bool masked) {
          emit(kir::comment(
              fmt::format("scores of {} keys: {} on the tensor cores", chunk, tir::print_expr(first_.around))));
          emit(kir::decl(sc, F32, kir::cf(0, F32), fm * fn * 4));
          if (wgmma()) {
            wgmma_fence();
            for (int s = 0; s < ks; ++s) {
              BOperand b = b_operand(*kslab_, buf, first_.axis.name, s);
              wgmma_step(sc, chunk, a_operand(*qslab, s, i64(0)), b);
            }
            wgmma_done(sc, fm * fn * 4, issue);  // the next tile's copies issued under the scores' wgmma
          }
          for (int s = 0; s < ks && !wgmma(); ++s) {  // every step, past D too: zero padding, as in a contraction
            if (stage_)
              drain_fragments(
                  *kslab_, buf, kir::mma_b_coord, 2, fn, kf, 0, ci32(0), ci32(0),
                  [&](int n) {
                    return std::pair{s * kAtomK, n * kAtomN};
                  },
                  kslab_->outer.name == first_.axis.name);
            else
              for (int n = 0; n < fn; ++n)
                load_fragment(first_.col, kir::mma_b_coord, 2, kf, n * 2, axis_at(first_.axis, i64(s * kAtomK), true),
                              axis_at(fold.axis, add(j0, i64(n * kAtomN)), false));
            if (qslab)
              drain_fragments(
                  *qslab, i64(0), kir::mma_a_coord, 4, fm, qf, 0, warp_rows32_, ci32(0),
                  [&](int a) {
                    return std::pair{a * kAtomM, s * kAtomK};
                  },
                  qslab->outer.name == row_axis_.name);
            for (int a = 0; a < fm; ++a)
              for (int n = 0; n < fn; ++n) mma(sc, c_index(a, n, 0, fn), qf, (qslab ? a : a * ks + s) * 4, kf, n * 2);
          }
          if (!wgmma()) issue();
          // Each score element: the key field's lift around the contraction, -inf where the
          // key is past the end or the fold's predicate excludes it.
          emit(kir::comment(fmt::format(
              "lift {}: {}{}{}", fold.fields[rescaled_.key].name, tir::print_expr(first_.around),
              masked ? fmt::format(", masked to -inf past {} and outside the fold's predicate", fold.axis.size) : "",
              scale_ ? "; its positive scale waits for the row max and the exponential" : "")));
          // With wgmma, masks in 32-bit offsets from the block's corner where the predicate is
          // absent or the key bound (col - row against a constant): per block two differences, per
          // element two compares with constants, not each element's 64-bit indices. (The mma.sync
          // folds keep the indices: f2x8 has no register left for the lane parts.)
          std::optional<BlockMask> bm;
          if (wgmma() && masked && (fold.where.empty() || key_limit)) bm = block_mask(j0, keys, chunk, key_limit);
          if (!(scale_ && !masked))  // unmasked raw scores are the lift, up to the positive scale
            for_each_c(
                fm, fn,
                [&](int a, int n, int e, const K& row, const K& col) {
                  K slot = elem(sc, c_index(a, n, e, fn), F32);
                  b_.scopes_.push_back({});
                  bind(axis_at(row_axis_, {}, false), row);
                  bind(axis_at(fold.axis, {}, false), col);
                  b_.scopes_.back().regs[std::string(kContracted)] = slot;
                  K v = scale_ ? slot : hoist_invariants(as(b_.lower(first_.around), F32));
                  K ok = bm ? element_mask(*bm, a, n, e, key_limit) : lt(col, keys);
                  if (!bm && !fold.where.empty())
                    ok = kir::binary(kir::BinOp::And, ok, as(b_.lower(fold.where[0]), ScalarType::Pred));
                  b_.scopes_.pop_back();
                  emit(kir::assign(
                      slot.reg,
                      masked ? kir::select(ok, v, kir::cf(-std::numeric_limits<double>::infinity(), F32)) : v));
                },
                j0);
          emit_online_update(carrier, fm, fn, ne, sc, pf, vf, j0, tile0, buf);
        };
        // The interior blocks (all but the ragged last and the diagonal ones) run a straight-line
        // copy of the block's math without the mask: one basic block the compiler schedules whole.
        if (interior)
          emit(kir::if_then(*interior, b_.nested([&] { block_math(false); }), b_.nested([&] { block_math(true); })));
        else
          block_math(true);
      });
      emit_fold_results(carrier, fm, ne, tile0, rows);
    };
    if (!tile_loop_) return tile_body(i64(0));
    const std::string ev = b_.fresh(tile_loop_->axis.name + "0");
    std::vector<kir::Stmt> tiles = b_.nested([&] { tile_body(kir::var({ev}, I64)); });
    kir::Stmt f = kir::for_loop(ev, I64, i64(0), KernelBuilder::size_value(tile_loop_->axis.size), std::move(tiles));
    f.step = tile_loop_->tile;
    emit(kir::comment(fmt::format("{} in register tiles of {}", tile_loop_->axis.name, tile_loop_->tile)));
    emit(std::move(f));
  }

  // Fragment registers a thread of the fold holds: the row operand's (all k-steps when kept,
  // one step when re-read), scores, the vector field's accumulators, and the B and P fragments.
  // Past the budget, kept row fragments would leave the compiler too few registers (255 a
  // thread) for addresses and the softmax: measured, w4x1/f2x8/k4 with Q kept (200) spills.
  static constexpr int kFragmentRegBudget = 184;
  static int fold_fragment_regs(int fm, int fn, int ks, int ne, bool keep_rows) {
    return fm * 4 * (keep_rows ? ks : 1) + fm * fn * 4 + fm * ne * 4 + 2 * fn + fm * 4 + 2 * ne;
  }

  // `key OP row + c` read off the fold's predicate: the keys a row folds end before row + c
  // (+1 for <=) or start at it. Only comparisons of the bare fold axis with the bare row axis
  // plus a constant qualify; anything else is masked element by element.
  struct KeyBound {
    bool upper = true;   // keys < edge (else keys >= edge)
    int64_t offset = 0;  // edge = the block's last row (upper) or first row (lower) + offset
  };
  std::optional<KeyBound> key_bound(const lir::Stmt& fold) const {
    if (fold.where.size() != 1) return std::nullopt;
    const Expr& w = fold.where[0];
    if (w.kind != Expr::Kind::Binary) return std::nullopt;
    auto offset_of = [](const Expr& e, const std::string& axis) -> std::optional<int64_t> {
      if (e.kind == Expr::Kind::Index && e.name == axis) return 0;
      if (e.kind != Expr::Kind::Binary || (e.op != "+" && e.op != "-") || e.args.size() != 2) return std::nullopt;
      const Expr &a = e.args[0], &b = e.args[1];
      auto whole = [](const Expr& c) { return c.kind == Expr::Kind::Const && c.value == std::floor(c.value); };
      if (a.kind == Expr::Kind::Index && a.name == axis && whole(b))
        return static_cast<int64_t>(e.op == "+" ? b.value : -b.value);
      if (e.op == "+" && b.kind == Expr::Kind::Index && b.name == axis && whole(a))
        return static_cast<int64_t>(a.value);
      return std::nullopt;
    };
    std::string op = w.op;
    const Expr *key = &w.args[0], *row = &w.args[1];
    if (!offset_of(*key, fold.axis.name) || *offset_of(*key, fold.axis.name) != 0) {
      std::swap(key, row);
      static const std::map<std::string, std::string> flip{{"<", ">"}, {"<=", ">="}, {">", "<"}, {">=", "<="}};
      auto it = flip.find(op);
      if (it == flip.end()) return std::nullopt;
      op = it->second;
    }
    std::optional<int64_t> k = offset_of(*key, fold.axis.name), c = offset_of(*row, row_axis_.name);
    if (!k || *k != 0 || !c) return std::nullopt;
    if (op == "<=") return KeyBound{true, *c + 1};
    if (op == "<") return KeyBound{true, *c};
    if (op == ">=") return KeyBound{false, *c};
    if (op == ">") return KeyBound{false, *c + 1};
    return std::nullopt;
  }

  std::string field_names() const {
    std::vector<std::string> n;
    for (const lir::CarrierField& f : fold_->fields) n.push_back(f.name);
    return fmt::format("{}", fmt::join(n, ", "));
  }

  // A block's mask in 32-bit offsets: `room` keys of the block inside the axis (at most the
  // block), `diag` = j0 - row0 - the key bound's offset (clamped: only its sign near the
  // diagonal matters), and the lane's parts of (col - j0) and (row - row0).
  struct BlockMask {
    K room, diag;
  };
  BlockMask block_mask(const K& j0, const K& keys, int chunk, const std::optional<KeyBound>& bound) {
    constexpr int64_t kClamp = int64_t{1} << 30;
    K room = let(b_.fresh("key_room"),
                 i32(kir::binary(kir::BinOp::Min, kir::binary(kir::BinOp::Sub, keys, j0), i64(chunk))));
    K diag = ci32(0);
    if (bound) {
      K d = kir::binary(kir::BinOp::Sub, kir::binary(kir::BinOp::Sub, j0, row0_), i64(bound->offset));
      d = kir::binary(kir::BinOp::Max, kir::binary(kir::BinOp::Min, d, i64(kClamp)), i64(-kClamp));
      diag = let(b_.fresh("key_diag"), i32(d));
    }
    return {room, diag};
  }
  // Element (a, n, e)'s mask: its key inside the axis and (under the bound) on the kept side:
  // col - row < offset (upper) or >= offset (lower), i.e. dcol - drow + diag < 0 or >= 0.
  K element_mask(const BlockMask& m, int a, int n, int e, const std::optional<KeyBound>& bound) {
    const LaneAffine& c = c_aff_[e];
    auto lane_part = [&](const char* name, int g, int t) {
      K v = ci32(0);
      if (g) v = add(v, mul(i32(grp_), ci32(g)));
      if (t) v = add(v, mul(i32(tig_), ci32(t)));
      return g || t ? hoisted(name, v) : v;
    };
    K dcol = add(lane_part("lane_col", c.col_g, c.col_t), ci32(n * kAtomN + c.col0));
    K ok = lt(dcol, m.room);
    if (!bound) return ok;
    K drow = add(lane_part("lane_row", c.row_g, c.row_t), ci32(int64_t{a} * kAtomM + c.row0));
    K side = add(kir::binary(kir::BinOp::Sub, dcol, drow), m.diag);
    K kept = bound->upper ? lt(side, ci32(0)) : kir::binary(kir::BinOp::Ge, side, ci32(0));
    return kir::binary(kir::BinOp::And, ok, kept);
  }

  // Calls fn(a, n, e, row, col) for every C element of an fm x fn tile at row0_ / col_base.
  template <class F>
  void for_each_c(int fm, int fn, F&& fnc, const K& col_base) {
    for (int a = 0; a < fm; ++a)
      for (int n = 0; n < fn; ++n)
        for (int e = 0; e < 4; ++e) {
          const LaneAffine& c = c_aff_[e];
          K row = lane_coord(add(row0_, i64(a * kAtomM)), c.row0, c.row_g, c.row_t);
          K col = lane_coord(add(col_base, i64(n * kAtomN)), c.col0, c.col_g, c.col_t);
          fnc(a, n, e, row, col);
        }
  }

  // op over the values as a balanced tree: independent halves, not one long dependent chain.
  static K tree(std::vector<K> v, kir::BinOp op) {
    while (v.size() > 1) {
      std::vector<K> next;
      for (size_t i = 0; i + 1 < v.size(); i += 2) next.push_back(kir::binary(op, v[i], v[i + 1]));
      if (v.size() % 2) next.push_back(v.back());
      v = std::move(next);
    }
    return v.front();
  }

  // The row slot (0 or 1) of C element e: which distinct row offset of the lane map it has.
  int slot_of(int e) const { return c_aff_[e].row0 == c_aff_[0].row0 ? 0 : 1; }

  // exp(x - y) as the builder lowers every exp (FAST_EXP=1: exp2 of the scaled difference).
  K exp_of_difference(const K& x, const K& y) const { return b_.exp_value(kir::binary(kir::BinOp::Sub, x, y)); }
  bool fast_exp() const { return b_.knobs_.fast_exp; }

  // One key block through the carrier: new row max, rescale factor, p = exp(s - max), the
  // scalar weighted sums across the quad, the vector field's P @ V on the tensor cores.
  void emit_online_update(const std::vector<std::string>& carrier, int fm, int fn, int ne, const std::string& sc,
                          const std::string& pf, const std::string& vf, const K& j0, const K& tile0, const K& buf) {
    const lir::Stmt& fold = *fold_;
    const std::string& mrun = carrier[rescaled_.key];
    const double ninf = -std::numeric_limits<double>::infinity();
    emit(kir::comment("row maxima of the block, across the lanes sharing a row; the carrier's new key"));
    std::vector<K> alpha(fm * 2), use(fm * 2);
    for (int a = 0; a < fm; ++a)
      for (int r = 0; r < 2; ++r) {
        std::vector<K> row;
        for (int n = 0; n < fn; ++n)
          for (int e = 0; e < 4; ++e)
            if (slot_of(e) == r) row.push_back(elem(sc, c_index(a, n, e, fn), F32));
        K mx = let(b_.fresh("row_max"), tree(std::move(row), kir::BinOp::Max));
        row_allreduce(mx, kir::BinOp::Max);
        if (scale_) emit(kir::assign(mx.reg, mul(mx, *scale_)));
        K old = elem(mrun, a * 2 + r, F32);
        K mnew = let(b_.fresh("key_new"), kir::binary(kir::BinOp::Max, old, mx));
        // A row with no key yet keeps -inf; subtracting 0 instead keeps exp(-inf - -inf) out.
        use[a * 2 + r] = let(b_.fresh("key_use"),
                             kir::select(kir::binary(kir::BinOp::Eq, mnew, kir::cf(ninf, F32)), kir::cf(0, F32), mnew));
        alpha[a * 2 + r] = let(b_.fresh("rescale"), exp_of_difference(old, use[a * 2 + r]));
        if (fast_exp()) use[a * 2 + r] = let(b_.fresh("key_log2"), mul(use[a * 2 + r], kir::cf(kLog2e, F32)));
        emit(kir::assign({mrun, a * 2 + r}, mnew));
      }
    emit(kir::comment("p = exp(score - key) in place"));
    for (int a = 0; a < fm; ++a)
      for (int n = 0; n < fn; ++n)
        for (int e = 0; e < 4; ++e) {
          K s = elem(sc, c_index(a, n, e, fn), F32);
          K x = fast_exp()
                    ? mul(s, scale_ ? hoisted("scale_log2", mul(*scale_, kir::cf(kLog2e, F32))) : kir::cf(kLog2e, F32))
                : scale_ ? mul(s, *scale_)
                         : s;
          K p = kir::unary(fast_exp() ? kir::UnOp::Exp2Ftz : kir::UnOp::Exp,
                           kir::binary(kir::BinOp::Sub, x, use[a * 2 + slot_of(e)]));
          emit(kir::assign(s.reg, p));
        }
    for (size_t f : rescaled_.weighted) {
      if (f == value_field_ && value_read_) continue;
      const lir::CarrierField& field = fold.fields[f];
      emit(kir::comment(
          fmt::format("{} <- {} * rescale + sum of p * {}", field.name, field.name, tir::print_expr(field.lift))));
      std::vector<std::vector<K>> terms(fm * 2);
      for_each_c(
          fm, fn,
          [&](int a, int n, int e, const K& row, const K& col) {
            b_.scopes_.push_back({});
            bind(axis_at(row_axis_, {}, false), row);
            bind(axis_at(fold.axis, {}, false), col);
            K w = as(b_.lower(field.lift), F32);
            b_.scopes_.pop_back();
            K p = elem(sc, c_index(a, n, e, fn), F32);
            terms[a * 2 + slot_of(e)].push_back(w.kind == K::Kind::Const && w.fval == 1.0 ? p : mul(p, w));
          },
          j0);
      std::vector<K> sums(fm * 2);
      for (size_t i = 0; i < sums.size(); ++i)
        sums[i] = let(b_.fresh("row_sum"), tree(std::move(terms[i]), kir::BinOp::Add));
      // Each lane keeps its own part of the row's sum: the rescale factors are the same on the
      // lanes sharing a row, so the parts add up across them once, after the last block.
      for (int a = 0; a < fm; ++a)
        for (int r = 0; r < 2; ++r) {
          K run = elem(carrier[f], a * 2 + r, F32);
          emit(kir::assign(run.reg, add(mul(run, alpha[a * 2 + r]), sums[a * 2 + r])));
        }
    }
    if (!value_read_) return;
    const lir::CarrierField& field = fold.fields[value_field_];
    const std::string& orun = carrier[value_field_];
    emit(kir::comment(fmt::format("{} <- {} * rescale + P @ {}: P repacked from C to A fragments in registers",
                                  field.name, field.name, value_read_->name)));
    auto rescale_o = [&] {
      for (int a = 0; a < fm; ++a)
        for (int n = 0; n < ne; ++n)
          for (int e = 0; e < 4; ++e) {
            K o = elem(orun, c_index(a, n, e, ne), F32);
            emit(kir::assign(o.reg, mul(o, alpha[a * 2 + slot_of(e)])));
          }
    };
    // Once a row's max settles its rescale is exactly 1. Where the thread holds more of o than
    // the block has keys (hd128 over 32-key blocks: 128 multiplies a block, as many as its mma),
    // the multiplies are skipped unless a row of the thread moved. With fewer (hd64 over 64
    // keys) the branch costs more than it saves, and under a key bound (causal) it costs
    // registers: there the multiplies always run (tests/bench/RESULTS.md, "Measurements that
    // were code comments").
    if (fm * ne * 4 > fn * kAtomN && !key_limit_) {
      std::optional<K> moved;
      for (const K& al : alpha) {
        K changed = kir::binary(kir::BinOp::Ne, al, kir::cf(1, F32));
        moved = moved ? kir::binary(kir::BinOp::Or, *moved, changed) : changed;
      }
      emit(kir::if_then(*moved, b_.nested(rescale_o)));
    } else {
      rescale_o();
    }
    const std::vector<RepackSource> repack = c_to_a_map();
    kir::IntrinsicId cvt =
        t_.operand == ScalarType::BF16 ? kir::IntrinsicId::CvtRnBf16x2F32 : kir::IntrinsicId::CvtRnF16x2F32;
    const tir::Axis& tile_axis = tile_loop_->axis;
    if (wgmma()) {  // every k16 step's P repacked, then one batch of wgmma reading V in place
      for (int step = 0; step < fn / 2; ++step)
        for (int r = 0; r < 4; ++r) {
          const RepackSource &lo = repack[2 * r], &hi = repack[2 * r + 1];
          emit(kir::intrinsic(cvt, {{pf, step * 4 + r}},
                              {elem(sc, c_index(0, 2 * step + hi.atom, hi.elem, fn), F32),
                               elem(sc, c_index(0, 2 * step + lo.atom, lo.elem, fn), F32)}));
        }
      wgmma_fence();
      for (int step = 0; step < fn / 2; ++step)
        wgmma_step(orun, ne * kAtomN, {pf, step * 4, {}}, b_operand(*vslab_, buf, fold.axis.name, step));
      wgmma_done(orun, ne * 4);
      return;
    }
    for (int step = 0; step < fn / 2; ++step) {  // keys past the end too: p = 0 against zero rows
      K kb = add(j0, i64(step * kAtomK));
      {
        for (int a = 0; a < fm; ++a)
          for (int r = 0; r < 4; ++r) {
            const RepackSource &lo = repack[2 * r], &hi = repack[2 * r + 1];
            emit(kir::intrinsic(cvt, {{pf, a * 4 + r}},
                                {elem(sc, c_index(a, 2 * step + hi.atom, hi.elem, fn), F32),
                                 elem(sc, c_index(a, 2 * step + lo.atom, lo.elem, fn), F32)}));
          }
        if (stage_)
          drain_fragments(
              *vslab_, buf, kir::mma_b_coord, 2, ne, vf, 0, ci32(0), ci32(0),
              [&](int n) {
                return std::pair{step * kAtomK, n * kAtomN};
              },
              vslab_->outer.name == fold.axis.name);
        for (int n = 0; n < ne; ++n) {
          if (!stage_)
            load_fragment(*value_read_, kir::mma_b_coord, 2, vf, n * 2, axis_at(fold.axis, kb, true),
                          axis_at(tile_axis, add(tile0, i64(n * kAtomN)), false));
          for (int a = 0; a < fm; ++a) mma(orun, c_index(a, n, 0, ne), pf, a * 4, vf, n * 2);
        }
      }
    }
  }

  // After the keys: the fold's results and the tile's stores, per C element of the vector
  // field (or per row when there is none), guarded to the rows and tile columns that exist.
  void emit_fold_results(const std::vector<std::string>& carrier, int fm, int ne, const K& tile0, const K& rows) {
    const lir::Stmt& fold = *fold_;
    emit(kir::comment("the weighted sums' lane parts added across the lanes sharing a row"));
    for (size_t f : rescaled_.weighted)
      if (!(f == value_field_ && value_read_))
        for (int a = 0; a < fm; ++a)
          for (int r = 0; r < 2; ++r) row_allreduce(elem(carrier[f], a * 2 + r, F32), kir::BinOp::Add);
    emit(kir::comment("the fold's results and stores"));
    auto bind_carrier = [&](int a, int r) {
      K key = elem(carrier[rescaled_.key], a * 2 + r, F32);
      for (size_t f = 0; f < fold.fields.size(); ++f) {
        std::string reg = "run_" + fold.fields[f].name;
        if (is_flag(f))
          b_.scopes_.back().regs[reg] =
              kir::binary(kir::BinOp::Ne, key, kir::cf(-std::numeric_limits<double>::infinity(), F32));
        else if (!(f == value_field_ && value_read_))
          b_.scopes_.back().regs[reg] = elem(carrier[f], a * 2 + r, F32);
      }
    };
    std::vector<lir::Stmt> stores;
    if (tile_loop_)
      for (size_t i = 1; i < tile_loop_->body.size(); ++i) stores.push_back(tile_loop_->body[i]);
    else
      for (const lir::Stmt& s : kernel_body_)
        if (&s != fold_) stores.push_back(s);
    if (!value_read_) {
      // Rows only: lane group g holds rows g and g + 8 of each atom; one thread of the quad stores.
      for (int a = 0; a < fm; ++a)
        for (int r = 0; r < 2; ++r) {
          const LaneAffine& c = c_aff_[r == 0 ? 0 : 2];
          K row = lane_coord(add(row0_, i64(a * kAtomM)), c.row0, c.row_g, c.row_t);
          std::vector<kir::Stmt> one = b_.nested([&] {
            b_.scopes_.back().index[row_axis_.name] = row;
            bind_carrier(a, r);
            for (const lir::Stmt& s : fold.results) b_.stmt(s);
            for (const lir::Stmt& s : stores) b_.stmt(s);
          });
          emit(kir::if_then(kir::binary(kir::BinOp::And, lt(row, rows), kir::binary(kir::BinOp::Eq, tig_, i64(0))),
                            std::move(one)));
        }
      return;
    }
    const tir::Axis& tile_axis = tile_loop_->axis;
    K tsize = KernelBuilder::size_value(tile_axis.size);
    // Each row's scalar sums inverted once (FA-2's 1 / l): a result dividing the vector field by
    // one (or by the result register holding it) multiplies by the reciprocal instead.
    std::map<std::string, K> inverse;  // a sum's element (rendered) -> 1 / it
    for (size_t f : rescaled_.weighted)
      if (!(f == value_field_ && value_read_))
        for (int slot = 0; slot < fm * 2; ++slot) {
          K sum = elem(carrier[f], slot, F32);
          inverse[KernelBuilder::render_key(sum)] =
              let(b_.fresh("inv_" + fold.fields[f].name), kir::binary(kir::BinOp::Div, kir::cf(1, F32), sum));
        }
    auto invert_copies = [&] {  // the results' registers that copy a sum share its reciprocal
      for (const kir::Stmt& d : *b_.blocks_.back())
        if (d.kind == kir::Stmt::Kind::Decl && d.args.size() == 1 && d.count == 1)
          if (auto it = inverse.find(KernelBuilder::render_key(d.args[0])); it != inverse.end())
            b_.scopes_.back().reciprocal[KernelBuilder::render_key(kir::var({d.reg.name}, d.type))] = it->second;
    };
    const std::optional<StagedOut> staged =
        staged_out(stores, tile_axis.name, ne * kAtomN, {kslab_ ? &*kslab_ : nullptr, vslab_ ? &*vslab_ : nullptr});
    for_each_c(
        fm, ne,
        [&](int a, int n, int e, const K& row, const K& col) {
          std::vector<kir::Stmt> one = b_.nested([&] {
            b_.scopes_.back().index[row_axis_.name] = row;
            b_.scopes_.back().index[tile_axis.name] = col;
            bind_carrier(a, slot_of(e));
            b_.scopes_.back().regs["run_" + fold.fields[value_field_].name] =
                elem(carrier[value_field_], c_index(a, n, e, ne), F32);
            for (const lir::Stmt& s : fold.results) b_.stmt(s);
            invert_copies();
            if (staged) return stage_element(*staged, b_.lower(stores.back().value), a, n, e);
            for (const lir::Stmt& s : stores) b_.stmt(s);
          });
          emit(kir::if_then(kir::binary(kir::BinOp::And, lt(row, rows), lt(col, tsize)), std::move(one)));
        },
        tile0);
    if (staged) write_out(*staged, tile0, rows, tsize);
  }

  // ---- stores staged through shared memory ---------------------------------------------------
  // A C element's lanes hold two adjacent columns of eight rows: stored from registers, each
  // warp store touches eight 8-byte pieces of eight rows (2-byte stores, a quarter of each
  // sector; on a one-block-an-SM fold the epilogue was a quarter of the stall samples, all on
  // the load/store queue). Staged in a slab the loop no longer needs, the block's tile leaves
  // as whole 16-byte chunks, consecutive threads on consecutive chunks of a row.
  struct StagedOut {
    std::string array, tensor, col_axis;
    std::vector<std::string> vars;  // the store's subscripts (axis names), the column axis last
    ScalarType type = ScalarType::F32;
    int rows = 0, cols = 0, xor_mod = 1;  // chunk c of row r sits at chunk c ^ (r % xor_mod)
  };

  // Staged when the element's statements end with its one store, a plain one of the operands'
  // type contiguous along the column axis, and one of `slabs` (free once the loop is done) holds
  // the block's tile. Says so in a comment of the kernel.
  std::optional<StagedOut> staged_out(const std::vector<lir::Stmt>& body, const std::string& col_axis, int cols,
                                      const std::vector<const Slab*>& slabs) {
    auto is_store = [](const lir::Stmt& s) { return s.kind == lir::Stmt::Kind::Store; };
    if (!stage_ || body.empty() || !is_store(body.back()) || std::count_if(body.begin(), body.end(), is_store) != 1 ||
        !body.back().atomic.empty() || b_.coop_on())
      return std::nullopt;
    const lir::Stmt& st = body.back();
    const tir::Tensor& t = *b_.p_.tensors.find(st.tensor);
    if (scalar_of(t.dtype) != t_.operand || st.vars.empty() || st.vars.back().name != col_axis ||
        std::count_if(st.vars.begin(), st.vars.end(), [&](const tir::Axis& v) { return v.name == row_axis_.name; }) !=
            1)
      return std::nullopt;
    // The C lane map: a lane's rows are grp + 8 k and its columns 2 tig (+ 1) within each
    // 8-column atom, so an element's chunk is its atom's XORed with grp (stage_element); the
    // XOR stays inside a warp's own chunks (xor_mod divides the warp's chunk count).
    for (const LaneAffine& c : c_aff_)
      if (c.row_g != 1 || c.row_t != 0 || c.row0 % 8 != 0 || c.col_g != 0 || c.col0 + 3 * c.col_t >= 8)
        return std::nullopt;
    StagedOut so{{}, st.tensor, col_axis, {}, t_.operand, t_.warps_m * rows_per_warp_, cols, 1};
    const int warp_chunks = (t_.warps_n > 1 ? cols_per_warp_ : cols) / 8;
    while (so.xor_mod < 8 && warp_chunks % (so.xor_mod * 2) == 0) so.xor_mod *= 2;
    for (const Slab* slab : slabs)
      if (slab && slab->elems() * stage_->depth >= int64_t{so.rows} * cols) {
        so.array = slab->array;
        for (const tir::Axis& v : st.vars) so.vars.push_back(v.name);
        emit(
            kir::comment(fmt::format("{} through shared memory ({}, free after the loop): each C element to its "
                                     "place in the block's tile, then the tile out 16 bytes a thread",
                                     so.tensor, so.array)));
        return so;
      }
    return std::nullopt;
  }

  // Element (r, c) of the staged tile (I32): 16-byte chunks XOR-swizzled by the row, so the
  // eight rows of a warp's C store, and the chunks a warp reads out, fall in distinct banks.
  K staged_at(const StagedOut& so, const K& r, const K& c) const {
    using kir::BinOp;
    K chunk =
        kir::binary(BinOp::BitXor, kir::binary(BinOp::Div, c, ci32(8)), kir::binary(BinOp::Rem, r, ci32(so.xor_mod)));
    return add(mul(r, ci32(so.cols)), add(mul(chunk, ci32(8)), kir::binary(BinOp::Rem, c, ci32(8))));
  }

  // C element (a, n, e) at row warp_rows + 16 a + row0 + grp, column warp_cols + 8 n + col0 +
  // col_t tig of the tile: staged_at folded into a per-lane base (hoisted) and a constant, the
  // chunk warp_cols / 8 + (n ^ (grp % xor_mod)).
  void stage_element(const StagedOut& so, K value, int a, int n, int e) {
    const LaneAffine& c = c_aff_[e];
    K g = hoisted("out_swz", kir::binary(kir::BinOp::Rem, i32(grp_), ci32(so.xor_mod)));
    K lane = hoisted(fmt::format("out_lane{}", c.col_t), add(mul(add(warp_rows32_, i32(grp_)), ci32(so.cols)),
                                                             add(warp_cols32_, mul(i32(tig_), ci32(c.col_t)))));
    K at = add(add(lane, ci32((int64_t{a} * kAtomM + c.row0) * so.cols + c.col0)),
               mul(kir::binary(kir::BinOp::BitXor, g, ci32(n)), ci32(8)));
    emit(kir::store(kir::Space::Shared, so.array, at, as(std::move(value), so.type)));
  }

  // After a barrier, chunk q of the tile (row q / (cols / 8), 8 columns from col0) goes out with
  // one 16-byte load and store where it is whole and aligned in the tensor, else element by element.
  void write_out(const StagedOut& so, const K& col0, const K& rows, const K& cols) {
    emit(kir::barrier());
    const int per_row = so.cols / 8, chunks = so.rows * per_row, threads = out_->block_threads;
    const tir::Tensor& t = *b_.p_.tensors.find(so.tensor);
    const std::string qv = b_.fresh("out_chunk"), vec = b_.fresh("out_vec");
    K q = kir::var({qv}, ScalarType::I32);
    std::vector<kir::Stmt> body = b_.nested([&] {
      K r = let(b_.fresh("out_row"), kir::binary(kir::BinOp::Div, q, ci32(per_row)));
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
    kir::Stmt loop =
        kir::for_loop(qv, ScalarType::I32, kir::special(kir::Special::ThreadIdx), ci32(chunks), std::move(body));
    loop.step = threads;
    emit(std::move(loop));
    emit(kir::barrier());  // the slab is the next pass's (another register tile's) ring again
  }

 public:
  std::vector<lir::Stmt> kernel_body_;

 private:
  KernelBuilder& b_;
  MmaTile t_;
  std::string why_;
  const lir::Stmt* tile_loop_ = nullptr;
  const lir::Stmt* fold_ = nullptr;
  int contraction_stmt_ = -1;  // the body statement holding the contraction
  algebra::RescaledSum rescaled_;
  std::vector<size_t> flags_;  // or-combined flags riding along the fold
  bool is_flag(size_t f) const { return std::find(flags_.begin(), flags_.end(), f) != flags_.end(); }
  tir::Axis row_axis_, col_axis_;
  Contraction first_;
  std::optional<Expr> value_read_;
  size_t value_field_ = static_cast<size_t>(-1);
  std::vector<int> masks_;
  LaneAffine c_aff_[4];
  K grp_, tig_, row0_, col0_, warp_m_, warp_n_, row_block0_, col_block0_, group_row0_;
  std::optional<MmaStage> stage_;
  std::optional<Slab> kslab_, vslab_;
  std::optional<K> scale_;             // the key lift's positive scale, when it is raw * scale
  std::optional<KeyBound> key_limit_;  // the fold's key bound (causal), read once per kernel
  K lane32_, warp_rows32_, warp_cols32_;
  std::vector<kir::Stmt>* top_ = nullptr;  // the kernel's outermost block, where hoisted values go
  size_t hoist_at_ = 0;
  std::map<std::string, K> hoisted_;
  kir::Kernel* out_ = nullptr;
  kir::Program* program_ = nullptr;
  std::string tma_bars_, tma_free_, tma_phase_, tma_free_phase_;  // TMA mbarriers and phase bits (empty: no TMA)
  int rows_per_warp_ = 0, cols_per_warp_ = 0;
};

bool KernelBuilder::mma_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why) {
  MmaTier tier(*this, *knobs_.mma, knobs_.stage);
  tier.kernel_body_ = k.body;
  return tier.build(k, out, program, why);
}

}  // namespace emmy::lower::detail
