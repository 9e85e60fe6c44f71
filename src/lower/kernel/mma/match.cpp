// The tensor-core tier's matching: which contraction or fold of a loop-IR kernel the atom takes,
// and every refusal, before anything is emitted.
#include "lower/kernel/mma/tier.hpp"
#include "lower/term_expr.hpp"

#include <set>

namespace emmy::lower::detail {
namespace {

// The reduced axis of sum(axes: row * col) the K loop chunks: one an operand holds innermost (the
// row operand's first: wgmma reads A K-major), else the last.
size_t chunked_axis(const std::vector<tir::Axis>& axes, const Expr& row, const Expr& col) {
  for (const Expr* operand : {&row, &col})
    for (size_t a = 0; a < axes.size(); ++a)
      if (!operand->args.empty() && operand->args.back().kind == Expr::Kind::Index &&
          operand->args.back().name == axes[a].name)
        return a;
  return axes.size() - 1;
}

// "h, d": a contraction's reduced axes, the outer ones first (the chunked axis alone: "d").
std::string reduced_axes(const Contraction& c) {
  std::vector<std::string> names;
  for (const tir::Axis& a : c.outer) names.push_back(a.name);
  names.push_back(c.axis.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// The N of every wgmma row (either operand form), multiples of `multiple`, smallest first: "64, 80, ... or 256".
std::string wgmma_widths(int multiple) {
  std::set<int> ns;
  for (kir::IntrinsicId id : kir::wgmma_ids())
    if (kir::wgmma_n(id) % multiple == 0) ns.insert(kir::wgmma_n(id));
  std::vector<std::string> out;
  for (int n : ns) out.push_back(std::to_string(n));
  const std::string last = out.back();
  out.pop_back();
  return fmt::format("{} or {}", fmt::join(out, ", "), last);
}

}  // namespace

bool MmaTier::build(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why) {
  if (!plan(k) || !plan_staging()) {
    why = why_;
    return false;
  }
  if (b_.knobs().wspec) plan_wspec();
  if (b_.knobs().overlap) plan_overlap();    // a contraction's needs the producers
  if (b_.knobs().pingpong) plan_pingpong();  // on an overlapped fold
  if (b_.knobs().raster) plan_raster();      // on a contraction
  if (b_.knobs().cluster) plan_cluster();    // on a contraction's ring of boxes
  plan_.persistent = b_.knobs().persist;
  // Tiles that alone overflow shared memory refuse the kernel before it is emitted (what the
  // pipeline's check of the whole kernel would say, sooner: a search lowers many such).
  const int64_t staged = planned_slab_bytes();
  if (staged > b_.knobs().shared_memory)
    throw SharedMemoryError(
        fmt::format("error: kernel {} needs at least {} bytes of shared memory for its staged "
                    "tiles; a block holds at most {}\n  help: {}",
                    out.name, staged, b_.knobs().shared_memory, kSharedMemoryHelp));
  if (fold_) fold_limits(program);
  if (b_.bodies() != KernelBodies::All) {
    out_ = &out;
    program_ = &program;
    emit_header(k, out);
    return true;
  }
  emit_kernel(k, out, program);
  EMMY_INTERNAL_ASSERT(kir::shared_bytes(out) >= staged, "the kernel stages less than its plan's slabs");
  return true;
}

bool MmaTier::reject(std::string why) {
  why_ = std::move(why);
  return false;
}

bool MmaTier::is_operand(const Expr& e) const {
  if (e.kind != Expr::Kind::Read || !b_.in_global(e.name)) return false;
  const tir::Tensor* t = b_.loops().tensors.find(e.name);
  return t && scalar_of(t->dtype) == t_.operand;
}

const Expr& MmaTier::peel_factors(const Expr& e, const std::string& axis,
                                  std::vector<std::pair<std::string, Expr>>& factors) {
  const Expr* x = &tir::strip_casts(e);
  while (x->kind == Expr::Kind::Binary && (x->op == "*" || x->op == "/") && x->args.size() == 2) {
    const int keep = x->op == "*" && !tir::uses_index(x->args[0], axis) && !tir::has_reduce(x->args[0]) ? 1 : 0;
    const Expr& factor = x->args[1 - keep];
    if (tir::uses_index(factor, axis) || tir::has_reduce(factor)) break;
    factors.emplace_back(x->op, factor);
    x = &tir::strip_casts(x->args[keep]);
  }
  return *x;
}

std::optional<Expr> MmaTier::extract(const Expr& e, const std::string& row_axis, const std::string& col_axis,
                                     std::vector<Contraction>& found, size_t most, bool several_axes) {
  if (e.kind == Expr::Kind::Read && !b_.in_global(e.name))
    return extract(b_.inline_def(e), row_axis, col_axis, found, most, several_axes);
  if (e.kind == Expr::Kind::Reduce) {
    if (found.size() >= most || e.op != "sum" || e.axes.empty() || e.args.size() != 1) return std::nullopt;
    if (e.axes.size() > 1 && !several_axes) return std::nullopt;
    const Expr& prod = e.args[0];
    if (prod.kind != Expr::Kind::Binary || prod.op != "*") return std::nullopt;
    auto reduced = [&](const Expr& x) {
      return std::any_of(e.axes.begin(), e.axes.end(), [&](const tir::Axis& a) { return tir::uses_index(x, a.name); });
    };
    // A predicate the axes do not change selects the whole sum: sum(e where j <= i: x) =
    // select(j <= i, sum(e: x), 0).
    if (std::any_of(e.where.begin(), e.where.end(), reduced)) return std::nullopt;
    // Factors of either side that the contraction's axes do not change leave the sum (it is
    // linear): sum(e: (do[i, e] / l[i]) * v[j, e]) = sum(e: do[i, e] * v[j, e]) / l[i].
    std::vector<std::pair<std::string, Expr>> factors;
    const Expr& x0 = tir::strip_casts(prod.args[0]);
    const Expr& y0 = tir::strip_casts(prod.args[1]);
    const tir::Axis axis = e.axes[chunked_axis(e.axes, x0, y0)];
    const std::string& d = axis.name;
    const Expr &x = peel_factors(prod.args[0], d, factors), &y = peel_factors(prod.args[1], d, factors);
    if (!is_operand(x) || !is_operand(y)) return std::nullopt;
    if (std::any_of(factors.begin(), factors.end(), [&](const auto& f) { return reduced(f.second); }))
      return std::nullopt;
    auto side = [&](const Expr& r, const std::string& own, const std::string& other) {
      return tir::uses_index(r, own) && tir::uses_index(r, d) && !tir::uses_index(r, other);
    };
    Contraction c{x, y, axis, {}, {}};
    // The other axes run outside the chunked one: each a bare subscript where an operand reads it.
    for (const tir::Axis& a : e.axes) {
      if (a.name == d) continue;
      for (const Expr* operand : {&x, &y})
        for (const Expr& arg : operand->args)
          if (tir::uses_index(arg, a.name) && (arg.kind != Expr::Kind::Index || arg.name != a.name))
            return std::nullopt;
      c.outer.push_back(a);
    }
    if (!side(x, row_axis, col_axis)) std::swap(c.row, c.col);
    if (!side(c.row, row_axis, col_axis) || !side(c.col, col_axis, row_axis)) return std::nullopt;
    Expr reg;
    reg.kind = Expr::Kind::Reg;
    reg.name = std::string(contracted_reg(found.size()));
    reg.dtype = DType::F32;
    found.push_back(c);
    for (auto& [op, factor] : factors) reg = binary_expr(op, std::move(reg), factor, DType::F32);
    for (const Expr& w : e.where) reg = call_expr("select", {w, std::move(reg), const_expr(0, DType::F32)}, DType::F32);
    return reg;
  }
  Expr out = tir::node_of(e);
  out.where = e.where;
  for (const Expr& a : e.args) {
    std::optional<Expr> sub = extract(a, row_axis, col_axis, found, most, several_axes);
    if (!sub) return std::nullopt;
    out.args.push_back(std::move(*sub));
  }
  return out;
}

std::vector<Contraction> MmaTier::contractions_in(const Expr& e, const std::string& row_axis,
                                                  const std::string& col_axis, size_t most, bool several_axes) {
  std::vector<Contraction> found;
  std::optional<Expr> around = extract(e, row_axis, col_axis, found, most, several_axes);
  if (!around || found.empty()) return {};
  found[0].around = *around;
  return found;
}

std::optional<Contraction> MmaTier::contraction_in(const Expr& e, const std::string& row_axis,
                                                   const std::string& col_axis, bool several_axes) {
  std::vector<Contraction> found = contractions_in(e, row_axis, col_axis, 1, several_axes);
  if (found.empty()) return std::nullopt;
  return found[0];
}

bool MmaTier::plan(const lir::Kernel& k) {
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
  } else if (std::vector<const lir::Stmt*> loops = sibling_loops(body); !loops.empty()) {
    tile_loop_ = loops[0];
    return plan_fold(k, loops[0]->body[0]) && plan_siblings(loops);
  } else if (std::optional<std::vector<lir::Stmt>> folded = body_as_fold(body)) {
    kernel_body_ = std::move(*folded);  // the emitters read kernel_body_
    fold = &kernel_body_[0];
  }
  if (fold) return plan_fold(k, *fold);
  return plan_contraction(k);
}

bool MmaTier::is_or_flag(const algebra::MonoidTerms& m, size_t f) {
  const algebra::Term& c = m.combine[f];
  const std::string& n = m.fields[f];
  return m.identity[f].op == algebra::TermOp::Const && m.identity[f].value.num == 0 && c.op == algebra::TermOp::Or &&
         c.args.size() == 2 && c.args[0].op == algebra::TermOp::Var && c.args[0].name == "a." + n &&
         c.args[1].op == algebra::TermOp::Var && c.args[1].name == "b." + n;
}

bool MmaTier::plan_fold(const lir::Kernel& k, const lir::Stmt& fold) {
  if (wgmma() && (!stage_ || !stage_->async))
    return reject(
        fmt::format("{} reads K and V from shared memory: it needs STAGE with an asynchronous copy, "
                    "cp or tma (e.g. STAGE=d2/cp/ring)",
                    t_.atom));
  if (wgmma() && (!kir::wgmma_of(t_.wgmma_n, false) || t_.wgmma_n % 16 != 0))
    return reject(
        fmt::format("{}: the fold's key block is the atom's N, which feeds P @ V's K in steps of 16: the "
                    "lowering issues N = {}",
                    t_.atom, wgmma_widths(16)));
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
  const algebra::FoldForm form = algebra::fold_form(core);
  const bool vector = std::any_of(fold.fields.begin(), fold.fields.end(), [](const auto& f) { return f.per_tile; });
  const std::string what =
      fmt::format("folds the reduction over {} a key block at a time, in trees across lanes", fold.axis.name);
  fold_ = &fold;
  row_axis_ = k.threads.back();
  if (!form.rescaled_sum() && vector && core.fields.size() == 1 && form.laws[0] == algebra::FieldLaw::Sum) {
    require_reorder(fold.terms, what);
    if (!plan_summed(fold, kept[0])) return false;
    return plan_fold_checks(fold);
  }
  if (!form.rescaled_sum()) {
    if (vector)
      return reject(
          fmt::format("the fold's monoid {} has a vector field, which the tensor cores contract as P @ V only for a "
                      "max-rescaled sum (a max and the sums it rescales)",
                      fold.monoid));
    if (tile_loop_) return reject("the fold sits in a register tile but has no vector field");
    general_ = true;
    flags_.clear();  // every field, flags too, through the combine
    if (!plan_general_lifts(fold)) return false;
    // A monoid whose laws do not allow the lanes' order (argmax with ties to the left) folds in
    // order on the scalar tier: a refusal, not an error, since TILE may be the program's.
    std::vector<std::string> missing =
        missing_laws(monoid_laws(fold.terms, b_.checked(), b_.law_memo()), Regroup::Reorder);
    if (!missing.empty())
      return reject(
          fmt::format("the tensor-core fold combines a row's scores in any order, which needs monoid {} "
                      "to be {} (not proved)",
                      fold.monoid, fmt::join(missing, " and ")));
    require_reorder(fold.terms, what);  // assumed laws: W053
    if (wgmma() && innermost_is(first_.row, row_axis_.name))
      return reject(
          fmt::format("{}'s contiguous axis is not {}: wgmma reads it K-major", first_.row.name, first_.axis.name));
    return true;
  }
  require_reorder(fold.terms, what);
  rescaled_.key = kept[*form.pivot];
  rescaled_.scale = form.scale.value();
  for (size_t w = 0; w < kept.size(); ++w)
    if (form.laws[w] == algebra::FieldLaw::Rescaled) rescaled_.weighted.push_back(kept[w]);
  std::optional<Contraction> c = contraction_in(fold.fields[rescaled_.key].lift, row_axis_.name, fold.axis.name);
  if (!c)
    return reject(fmt::format("the fold's key {} is not a contraction of two {} inputs over one axis",
                              tir::print_expr(fold.fields[rescaled_.key].lift), kir::type_name(t_.operand)));
  first_ = *c;
  for (size_t f : rescaled_.weighted) {
    const lir::CarrierField& field = fold.fields[f];
    if (!field.per_tile) continue;
    const Expr& v = tir::strip_casts(field.lift);
    if (!tile_loop_ || !is_operand(v) || !tir::uses_index(v, fold.axis.name) ||
        !tir::uses_index(v, tile_loop_->axis.name))
      return reject(fmt::format("the vector field {} lifts {}, not a {} input read at the fold's and the tile's axes",
                                field.name, tir::print_expr(field.lift), kir::type_name(t_.operand)));
    if (value_read_) return reject("the fold has two vector fields; the tensor-core tier contracts one");
    value_read_ = v;
    value_field_ = f;
  }
  return plan_fold_checks(fold);
}

std::optional<MmaTier::SummedParts> MmaTier::summed_parts(const Expr& prod, const std::string& fold_axis,
                                                          const std::string& tile_axis) {
  if (prod.kind != Expr::Kind::Binary || prod.op != "*" || prod.args.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    // A value scaled by a factor the tile's axis does not change, (do[i, e] / l[i]) * p: the
    // factor moves to the weight, do[i, e] * (p / l[i]) (exact in real arithmetic; one f32
    // rounding moves), so that the value is the input the tensor cores read.
    Expr w = prod.args[side];
    std::vector<std::pair<std::string, Expr>> factors;
    const Expr* v = &peel_factors(prod.args[1 - side], tile_axis, factors);
    for (auto& [op, factor] : factors) w = binary_expr(op, std::move(w), factor, DType::F32);
    if (!is_operand(*v) || !tir::uses_index(*v, fold_axis) || !tir::uses_index(*v, tile_axis) ||
        tir::uses_index(w, tile_axis))
      continue;
    std::vector<Contraction> c = contractions_in(w, row_axis_.name, fold_axis, 2);
    if (!c.empty()) return SummedParts{*v, std::move(c)};
  }
  return std::nullopt;
}

bool MmaTier::plan_summed(const lir::Stmt& fold, size_t f) {
  const lir::CarrierField& field = fold.fields[f];
  std::optional<SummedParts> parts =
      tile_loop_ ? summed_parts(field.lift, fold.axis.name, tile_loop_->axis.name) : std::nullopt;
  if (!parts)
    return reject(
        fmt::format("the vector field {} lifts {}, not a weight of one or two contractions (independent of {}) "
                    "times a {} input read at the fold's and the tile's axes",
                    field.name, tir::print_expr(field.lift), tile_loop_ ? tile_loop_->axis.name : "the tile's axis",
                    kir::type_name(t_.operand)));
  first_ = parts->contractions[0];
  // Attention's dS = P * (dO V^T - D): two products of a block, one weight.
  if (parts->contractions.size() == 2) second_ = parts->contractions[1];
  summed_ = true;
  value_read_ = parts->value;
  value_field_ = f;
  return true;
}

bool MmaTier::plan_fold_checks(const lir::Stmt& fold) {
  if (wgmma() && tile_loop_ && !kir::wgmma_of(tile_loop_->tile, true))
    return reject(fmt::format("the register tile of {} ({}) is P @ V's N: the lowering issues N = {}",
                              tile_loop_->axis.name, tile_loop_->tile, wgmma_widths(8)));
  if (tile_loop_ && (tile_loop_->tile % kAtomN != 0))
    return reject(fmt::format("the register tile of {} ({}) is not a multiple of the atom's n = 8",
                              tile_loop_->axis.name, tile_loop_->tile));
  for (size_t i = 1; tile_loop_ && i < tile_loop_->body.size(); ++i)
    if (tile_loop_->body[i].kind != lir::Stmt::Kind::Store && tile_loop_->body[i].kind != lir::Stmt::Kind::Compute)
      return reject("the register tile holds statements other than the fold, its results and stores");
  for (size_t f = 0; f < fold.fields.size(); ++f)
    if (!(f == value_field_ && value_read_) && !is_flag(f) && scalar_of(fold.fields[f].dtype) != F32)
      return reject(fmt::format("the carrier field {} is {}, not f32", fold.fields[f].name,
                                kir::type_name(scalar_of(fold.fields[f].dtype))));
  // wgmma reads the row operands' slabs K-major (with wgmma they always wait in slabs).
  for (const Contraction* c : {&first_, second_ ? &*second_ : nullptr})
    if (c && wgmma() && innermost_is(c->row, row_axis_.name))
      return reject(fmt::format("{}'s contiguous axis is not {}: wgmma reads it K-major", c->row.name, c->axis.name));
  return true;
}

bool MmaTier::reads_a_reduction(const Expr& e) const {
  if (e.kind == Expr::Kind::Reduce) return true;
  if (e.kind == Expr::Kind::Read && !b_.in_global(e.name))
    if (const tir::Stmt* def = b_.loops().tensors.def(e.name); def && reads_a_reduction(def->value)) return true;
  return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return reads_a_reduction(a); });
}

std::optional<std::vector<lir::Stmt>> MmaTier::body_as_fold(const std::vector<lir::Stmt>& body) {
  // The reduction: a built-in's node, or a read r[...].f of a record intermediate defined by a
  // user monoid's; its elements read another reduction (the contraction).
  auto folds_one_axis = [&](const Expr& r) {
    return r.kind == Expr::Kind::Reduce && r.axes.size() == 1 && r.where.size() <= 1 &&
           std::any_of(r.args.begin(), r.args.end(), [&](const Expr& a) { return reads_a_reduction(a); });
  };
  const Expr* found = nullptr;
  bool record = false;
  std::function<void(const Expr&)> find = [&](const Expr& e) {
    if (found) return;
    if (e.kind == Expr::Kind::Reduce) {
      if (folds_one_axis(e) && builtin_monoid(e.op)) found = &e;
      return;
    }
    if (e.kind == Expr::Kind::Field && e.args.size() == 1 && e.args[0].kind == Expr::Kind::Read &&
        !b_.in_global(e.args[0].name))
      if (const tir::Stmt* def = b_.loops().tensors.def(e.args[0].name);
          def && folds_one_axis(def->value) && !builtin_monoid(def->value.op)) {
        found = &e.args[0];
        record = true;
        return;
      }
    for (const Expr& a : e.args) find(a);
  };
  for (const lir::Stmt& s : body) {
    if (s.kind != lir::Stmt::Kind::Compute && s.kind != lir::Stmt::Kind::Store) return std::nullopt;
    find(s.value);
  }
  if (!found) return std::nullopt;
  const std::string key = tir::print_expr(*found);
  const BuiltinMonoid* builtin = record ? nullptr : builtin_monoid(found->op);
  // Every other reduction of the body must be this one: the fold is the body's only loop.
  std::function<Expr(const Expr&)> to_carrier = [&](const Expr& e) -> Expr {
    if (!record && e.kind == Expr::Kind::Reduce && tir::print_expr(e) == key)
      return reg_expr("run_" + std::string(builtin->result), e.dtype);
    if (record && e.kind == Expr::Kind::Field && e.args.size() == 1 && tir::print_expr(e.args[0]) == key)
      return reg_expr("run_" + e.name, e.dtype);
    return tir::map_children(e, to_carrier);
  };
  std::vector<lir::Stmt> out(1);
  for (const lir::Stmt& s : body) {
    out.push_back(s);
    out.back().value = to_carrier(s.value);
    if (reads_a_reduction(out.back().value)) return std::nullopt;
  }
  const Expr r = record ? b_.inline_def(*found) : *found;
  MonoidLowering m = b_.monoid_of(r);
  lir::Stmt& f = out[0];
  f.kind = lir::Stmt::Kind::Fold;
  f.axis = r.axes[0];
  f.where = r.where;
  f.monoid = r.op;
  f.terms = terms_of(r.op, m);
  std::map<std::string, Expr> params;
  for (size_t i = 0; i < r.args.size() && i < m.lift_params.size(); ++i) params[m.lift_params[i]] = r.args[i];
  if (m.axis_param) {
    Expr j;
    j.kind = Expr::Kind::Index;
    j.dtype = DType::I64;
    j.name = f.axis.name;
    params[*m.axis_param] = j;
  }
  for (size_t i = 0; i < m.fields.size(); ++i) {
    const DType dt = kir::dtype_of(m.types[i]);
    f.fields.push_back({m.fields[i], dt, term_expr(m.lift[i], params, dt), false});
  }
  return out;
}

bool MmaTier::plan_general_lifts(const lir::Stmt& fold) {
  std::optional<Contraction> shared;
  for (const lir::CarrierField& field : fold.fields) {
    std::vector<Contraction> found;
    std::optional<Expr> around = extract(field.lift, row_axis_.name, fold.axis.name, found, 1);
    if (!around)
      return reject(fmt::format("the fold's field {} lifts {}, whose reduction is not a contraction of two {} inputs",
                                field.name, tir::print_expr(field.lift), kir::type_name(t_.operand)));
    auto text = [](const Contraction& c) {
      return tir::print_expr(c.row) + " * " + tir::print_expr(c.col) + " over " + c.axis.name;
    };
    if (!found.empty() && shared && text(found[0]) != text(*shared))
      return reject(fmt::format("the fold's fields lift two contractions, {} and {}; the tier computes one",
                                text(*shared), text(found[0])));
    if (!found.empty()) shared = found[0];
    general_lifts_.push_back(*around);
  }
  if (!shared) return reject(fmt::format("no field of the fold's monoid {} lifts a contraction", fold.monoid));
  first_ = *shared;
  return true;
}

bool MmaTier::innermost_is(const Expr& read, const std::string& axis) {
  return !read.args.empty() && read.args.back().kind == Expr::Kind::Index && read.args.back().name == axis;
}

bool MmaTier::plan_contraction(const lir::Kernel& k) {
  if (wgmma() && (!stage_ || !stage_->async))
    return reject(
        fmt::format("{} reads A and B from shared memory: it needs STAGE with an asynchronous copy, "
                    "cp or tma (e.g. STAGE=d3/cp/ring)",
                    t_.atom));
  if (wgmma() && t_.warps_n != 1)
    return reject(
        fmt::format("{}: the warpgroups stack along the rows (w<M>x1); each covers the atom's N columns", t_.atom));
  if (wgmma() && !kir::wgmma_of(t_.wgmma_n, false))
    return reject(fmt::format("{}: the lowering issues N = {}", t_.atom, wgmma_widths(8)));
  if (k.threads.size() < 2) {  // nothing to tile here (a bias gradient's column sums): another kernel may be
    no_contraction_ = true;
    return reject("a contraction tile needs a row and a column axis in the thread space");
  }
  row_axis_ = k.threads[k.threads.size() - 2];
  col_axis_ = k.threads.back();
  for (size_t i = 0; i < k.body.size(); ++i) {
    const lir::Stmt& s = k.body[i];
    if (s.kind != lir::Stmt::Kind::Compute && s.kind != lir::Stmt::Kind::Store)
      return reject("the kernel's body holds loops or folds besides its contraction");
    if (!tir::has_reduce(s.value)) continue;
    if (contraction_stmt_ >= 0) return reject("the kernel computes two reductions; the tensor-core tier tiles one");
    std::optional<Contraction> c = contraction_in(s.value, row_axis_.name, col_axis_.name, /*several_axes=*/true);
    no_contraction_ = !c;
    if (!c)
      return reject(fmt::format("{} is not a contraction of two {} inputs with rows on {} and columns on {}",
                                tir::print_expr(s.value), kir::type_name(t_.operand), row_axis_.name, col_axis_.name));
    first_ = *c;
    contraction_stmt_ = static_cast<int>(i);
  }
  if (contraction_stmt_ < 0) {
    no_contraction_ = true;
    return reject("the kernel has no contraction");
  }
  // wgmma reads A's slab K-major.
  if (wgmma() && innermost_is(first_.row, row_axis_.name))
    return reject(
        fmt::format("{}'s contiguous axis is not {}: wgmma reads A K-major", first_.row.name, first_.axis.name));
  require_reorder(terms_of("sum", builtin_monoid("sum")->lowering(ScalarType::F32, {})),
                  fmt::format("sums the contraction over {} in the atoms' order", reduced_axes(first_)));
  return true;
}

bool MmaTier::plan_staging() {
  const int fm = t_.frag_m, fn = t_.frag_n, ks = std::max(1, t_.k_chunk);
  plan_.atom = t_.atom;
  plan_.warps_m = t_.warps_m;
  plan_.warps_n = t_.warps_n;
  plan_.frag_m = fm;
  plan_.frag_n = fn;
  plan_.k_steps = ks;
  plan_.block_threads = t_.warps_m * t_.warps_n * kWarp;
  plan_.rows = row_axis_.name;
  plan_.reduced = first_.axis.name;
  for (const tir::Axis& a : first_.outer) plan_.reduced_outer.push_back(a.name);
  plan_.contraction =
      fmt::format("{} * {} over {}", tir::print_expr(first_.row), tir::print_expr(first_.col), reduced_axes(first_));
  const int rows_per_block = t_.warps_m * fm * kAtomM;
  if (!fold_) {
    plan_.tier = KernelPlan::Tier::MmaContraction;
    plan_.cols = col_axis_.name;
    if (!stage_) return true;
    const int chunk = ks * kAtomK;
    return plan_slab("row", first_.row, row_axis_, rows_per_block, first_.axis, chunk, 0, wgmma()) &&
           plan_slab("col", first_.col, first_.axis, chunk, col_axis_, t_.warps_n * fn * kAtomN, 0, wgmma());
  }
  const lir::Stmt& fold = *fold_;
  plan_.tier = KernelPlan::Tier::MmaFold;
  plan_.cols = fold.axis.name;
  plan_.monoid = fold.monoid;
  // The bounds the predicate's conjuncts put on the keys: one of each side skips whole blocks.
  if (fold.where.size() == 1)
    for (const KeyBound& b : key_bounds(fold.where[0], fold)) {
      if (!key_limit_)
        key_limit_ = b;
      else if (!key_other_ && b.upper != key_limit_->upper)
        key_other_ = b;
    }
  if (key_limit_) {
    std::function<size_t(const Expr&)> conjuncts = [&](const Expr& e) -> size_t {
      return e.kind == Expr::Kind::Binary && e.op == "&&" && e.args.size() == 2
                 ? conjuncts(e.args[0]) + conjuncts(e.args[1])
                 : 1;
    };
    key_exact_ = conjuncts(fold.where[0]) == (key_other_ ? 2 : 1) &&
                 key_bounds(fold.where[0], fold).size() == (key_other_ ? 2 : 1);
  }
  if (key_limit_) plan_.key_bound = tir::print_expr(fold.where[0]);
  std::vector<std::string> weighted;
  for (size_t f : rescaled_.weighted) weighted.push_back(fold.fields[f].name);
  auto scaled_difference = [&](const char* d) {
    return rescaled_.scale == 1 ? std::string(d) : fmt::format("{}·({})", rescaled_.scale, d);
  };
  if (summed_)
    plan_.fold_update =
        fmt::format("{} a plain sum: the block's weights {} as P, P @ {} on the tensor cores, nothing rescaled",
                    fold.fields[value_field_].name, tir::print_expr(first_.around), value_read_->name);
  else if (general_)
    plan_.fold_update = fmt::format(
        "each score through {}'s combine into the lane's ({}); the lanes of a row combined after the last block",
        fold.monoid, field_names());
  else
    plan_.fold_update = fmt::format(
        "{} the pivot (the block's row max); {} rescaled by exp({}), plus the block's sums of exp({}) times their "
        "lifts",
        fold.fields[rescaled_.key].name, fmt::join(weighted, ", "), scaled_difference("old - new"),
        scaled_difference("x - max"));
  // The loop-invariant operand (Q) stays in registers when the fold's fragments leave room for
  // it; else (FA-2's default) it waits in a shared slab, re-read with ldmatrix each block. With
  // wgmma it always waits in a swizzled slab, which the scores' wgmma read through descriptors.
  const int ne = tile_loop_ ? tile_loop_->tile / kAtomN : 0;  // the vector field's n-atoms a tile
  // A second contraction's fragments double the row operands': both then wait in slabs.
  plan_.row_fragments_in_registers =
      !wgmma() && (!stage_ || (!second_ && fold_fragment_regs(fm, fn, ks, ne, true) <= b_.knobs().fold_fragment_regs));
  const int bound = ks * kAtomK, chunk = fn * kAtomN;
  if (!plan_.row_fragments_in_registers &&
      !plan_slab("row", first_.row, row_axis_, rows_per_block, first_.axis, bound, 1, wgmma()))
    return false;
  if (second_) {
    plan_.reduced2 = second_->axis.name;
    plan_.contraction += fmt::format("; {} * {} over {}", tir::print_expr(second_->row), tir::print_expr(second_->col),
                                     second_->axis.name);
    if (!plan_.row_fragments_in_registers &&
        !plan_slab("row2", second_->row, row_axis_, rows_per_block, second_->axis, bound, 1, wgmma()))
      return false;
    if (stage_ && !plan_slab("col2", second_->col, fold.axis, chunk, second_->axis, bound, 0, wgmma())) return false;
  }
  for (const Sibling& s : siblings_)
    plan_.fold_update += fmt::format("; {} a plain sum: the block's weights {} as P, P @ {}", s.loop->axis.name,
                                     tir::print_expr(s.weight), s.value.name);
  if (!stage_) return true;
  if (!plan_slab("col", first_.col, fold.axis, chunk, first_.axis, bound, 0, wgmma())) return false;
  if (value_read_ && !plan_value_slab("value", *value_read_, fold.axis, chunk, tile_loop_->axis, tile_loop_->tile))
    return false;
  for (size_t i = 0; i < siblings_.size(); ++i)
    if (!plan_value_slab(sibling_role(i), siblings_[i].value, fold.axis, chunk, siblings_[i].loop->axis,
                         siblings_[i].loop->tile))
      return false;
  return true;
}

void MmaTier::plan_overlap() {
  // A fold's next block's scores go out before this block's elementwise work, its P @ V one
  // block behind: the asynchronous wgmma groups, a vector field to overlap, and a ring of three
  // buffers or more (the tile landing, the one the P @ V in flight reads, the one being scored).
  const std::string what = fold_ ? fmt::format("the fold over {}", fold_->axis.name)
                                 : fmt::format("the contraction over {}", first_.axis.name);
  if (!wgmma())
    plan_.no_overlap = "the atom is mma.sync, whose products complete in order (OVERLAP needs wgmma)";
  else if (!fold_ && plan_.producer_threads == 0)  // measured: ptxas remark C7518 on every wgmma of the kernel
    plan_.no_overlap =
        "a contraction's next chunk reads the accumulator of the chunk in flight, and between them the ring's "
        "copies branch on one thread: ptxas would serialize every wgmma; it needs the copies in producer warps "
        "(WSPEC=p1)";
  else if (!fold_ && stage_->depth < 3)
    plan_.no_overlap =
        "the ring has fewer than three buffers (STAGE=d3/tma/ring or deeper: one landing, one a batch in flight "
        "reads, one the batch before it frees)";
  else if (!fold_)
    plan_.overlap = true;
  else if (!value_read_ || general_)
    plan_.no_overlap = "the fold has no vector field: one product a block, nothing to issue ahead of it";
  else if (!stage_ || !stage_->ring || stage_->depth < 3)
    plan_.no_overlap =
        "the ring has fewer than three buffers (STAGE=d3/.../ring or deeper: one landing, one a product in flight "
        "reads, one issued)";
  else if (second_ || !siblings_.empty())
    plan_.no_overlap =
        "the fold's weights read two contractions or feed sibling register tiles, whose products the block "
        "completes in step (OVERLAP issues one scores batch and one P @ V ahead)";
  else
    plan_.overlap = true;
  if (!plan_.no_overlap.empty())
    b_.law_warnings().push_back({"W050", fmt::format("OVERLAP=1 has no effect on {}: {}", what, plan_.no_overlap)});
}

void MmaTier::plan_wspec() {
  // Producer warps after the consumers issue the ring's copies, waiting on each buffer's free
  // mbarrier; the consumers only wait on the full ones. The copies must all be TMA boxes (one
  // thread issues them) into a ring the producers can run ahead in.
  const WspecValue& w = *b_.knobs().wspec;
  const int consumers = plan_.block_threads;
  std::string& why = plan_.no_wspec;
  const SlabPlan* by_copy = nullptr;
  bool streamed = false;
  for (const SlabPlan& s : plan_.slabs)
    if (s.buffers > 1) {
      streamed = true;
      if (s.transport != "tma" && !by_copy) by_copy = &s;
    }
  if (!stage_ || !stage_->ring || stage_->depth < 2 || !streamed)
    why = "the producers run ahead in a ring of two buffers or more (STAGE=d2/tma/ring or deeper)";
  else if (by_copy)
    why = fmt::format("the {} slab comes by {}{}: the producers' one thread issues TMA boxes", by_copy->role,
                      by_copy->transport, by_copy->no_tma.empty() ? "" : fmt::format(" ({})", by_copy->no_tma));
  else if ((w.regs || wgmma()) && consumers % 128 != 0)
    why = fmt::format("setmaxnreg moves registers between whole warpgroups, and the {} consumer threads are not",
                      consumers);
  // setmaxnreg.inc takes registers only from those the block's setmaxnreg.dec released: the
  // producer warpgroup gives up what the consumers take above the block's starting count.
  // wgmma's consumers take all a producer warpgroup can give (it keeps 24, or under CLUSTER
  // kClusterProducerRegisters) unless r<R> says;
  // a block that starts with the most a thread may hold has nothing to move (the H200 faults on
  // a setmaxnreg.dec above the count a warp holds).
  const int file = b_.knobs().register_file, start = std::min(256, file / (consumers + 128) / 8 * 8);
  const bool at_most = start > b_.knobs().max_thread_registers;
  const int keep = b_.knobs().cluster && !fold_ ? kClusterProducerRegisters : 24;
  std::optional<int> regs = w.regs ? w.regs
                            : wgmma() && !at_most
                                ? std::optional<int>(std::min(256, (start + (start - keep) * 128 / consumers) / 8 * 8))
                                : std::nullopt;
  int producer_registers = 0;
  if (why.empty() && regs) {
    const int taken = consumers * (*regs - start), left = (start * 128 - taken) / 128 / 8 * 8;
    if (at_most)
      why = fmt::format(
          "a block of {} threads starts with the most registers a thread may hold ({}): setmaxnreg has "
          "none to move",
          consumers + 128, b_.knobs().max_thread_registers);
    else if (*regs < start)
      why = fmt::format(
          "r{} is below the {} registers a thread a block of {} starts with (setmaxnreg.inc cannot lower "
          "them)",
          *regs, start, consumers + 128);
    else if (left < 24)
      why = fmt::format(
          "{} consumer threads from {} to {} registers take {} a producer thread gives, which keeps "
          "{} (setmaxnreg: at least 24)",
          consumers, start, *regs, taken / 128, left);
    producer_registers = left;
  }
  if (!why.empty()) {
    b_.law_warnings().push_back({"W050", fmt::format("WSPEC=p{}{} has no effect: {}", w.producers,
                                                     w.regs ? fmt::format("/r{}", *w.regs) : std::string(), why)});
    return;
  }
  // A whole warpgroup where setmaxnreg or wgmma count the block in warpgroups; p<N> warps otherwise.
  plan_.producer_threads = regs || wgmma() ? 4 * kWarp : kWarp * w.producers;
  plan_.consumer_registers = regs.value_or(0);
  plan_.producer_registers = regs ? producer_registers : 0;
}

void MmaTier::plan_pingpong() {
  // The consumer warpgroups issue each key block's products in turn (named barriers, round
  // robin), so that one's softmax runs while another's products occupy the tensor cores.
  const int groups = t_.warps_m * t_.warps_n / 4;
  std::string& why = plan_.no_pingpong;
  if (!wgmma())
    why = "the atom is mma.sync (PINGPONG orders warpgroups' wgmma)";
  else if (!fold_)
    why =
        "a contraction's warpgroups share each chunk's tiles: taking turns only delays them (PINGPONG orders an "
        "overlapped fold's key blocks)";
  else if (!plan_.overlap)
    why = "the fold is in step: its products wait for each other within the block (PINGPONG needs OVERLAP=1 applied)";
  else if (groups < 2)
    why = fmt::format("one warpgroup a CTA has nobody to take turns with (TILE .../w8x1 or more: {} warps)",
                      t_.warps_m * t_.warps_n);
  if (!why.empty()) {
    b_.law_warnings().push_back({"W050", fmt::format("PINGPONG=1 has no effect: {}", why)});
    return;
  }
  plan_.turns = groups;
  // With producers the row slab (wgmma's: swizzled) is the consumers' alone: each warpgroup a crew.
  plan_.crews = plan_.producer_threads > 0 && !plan_.row_fragments_in_registers && t_.warps_n == 1;
}

void MmaTier::plan_raster() {
  const RasterValue& r = *b_.knobs().raster;
  if (fold_) {
    plan_.no_raster =
        "a fold's block owns whole rows (one column tile): there is no tile order to group (RASTER orders a "
        "contraction's tiles)";
    b_.law_warnings().push_back(
        {"W050", fmt::format("RASTER=g{}{} has no effect: {}", r.axis, r.group, plan_.no_raster)});
    return;
  }
  plan_.raster_axis = r.axis;
  plan_.raster_group = r.group;
}

K MmaTier::warpgroup() const { return kir::binary(kir::BinOp::Div, warp_m_, i64(4)); }

K MmaTier::turn_barrier(bool next) {
  K group = warpgroup();
  if (next) group = kir::binary(kir::BinOp::Rem, add(group, i64(1)), i64(plan_.turns));
  return hoisted(next ? "turn_next" : "turn_mine", i32(add(group, i64(kTurnBarrier0))));
}

void MmaTier::require_reorder(const algebra::MonoidTerms& terms, const std::string& what) {
  auto use = b_.knobs().uses.find(Knob::Tile);
  if (use == b_.knobs().uses.end()) internal_error(__FILE__, __LINE__, "a tensor-core tile without its TILE setting");
  require_laws(monoid_laws(terms, b_.checked(), b_.law_memo()), Regroup::Reorder, use->second, what, b_.law_warnings());
}

}  // namespace emmy::lower::detail
