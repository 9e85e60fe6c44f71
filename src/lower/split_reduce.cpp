// REDUCE=g<N>k|g<N>a: splits one reduction of the loop IR across N groups of threads (CTAs):
// each group folds its contiguous range of the axis, then either a second kernel combines the
// N partial carriers in order through the same proved monoid (k), or each group combines its
// partial into an accumulator with an atomic after an init kernel wrote the identity (a).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "ir/intrinsics.hpp"
#include "lower/monoid_table.hpp"
#include "lower/passes.hpp"
#include "lower/regroup_laws.hpp"
#include "lower/term_expr.hpp"

namespace emmy::lower {
namespace {

using lir::Stmt;
using tir::Expr;

// ---- expressions ------------------------------------------------------------------------------

Expr size_expr(const std::string& size) {
  Expr e;
  e.kind = Expr::Kind::Size;
  e.dtype = DType::I64;
  e.name = size;
  return e;
}

Expr binary(const std::string& op, Expr a, Expr b) {
  Expr e;
  e.kind = Expr::Kind::Binary;
  e.dtype = DType::I64;
  e.op = op;
  e.args = {std::move(a), std::move(b)};
  return e;
}

Expr min_expr(Expr a, Expr b) {
  Expr e = binary("min", std::move(a), std::move(b));
  e.kind = Expr::Kind::Call;
  return e;
}

Expr read_expr(const std::string& tensor, const std::vector<tir::Axis>& at, DType dtype) {
  Expr e;
  e.kind = Expr::Kind::Read;
  e.dtype = dtype;
  e.name = tensor;
  for (const tir::Axis& a : at) e.args.push_back(index_expr(a.name));
  return e;
}

// Group g's range of an axis of size T: [g * c, min(T, (g + 1) * c)), c = ceil(T / N).
// Contiguous, so a non-commutative monoid still combines its elements in order.
std::vector<Expr> group_range(const tir::Axis& axis, const std::string& g, int groups) {
  Expr chunk = binary("/", binary("+", size_expr(axis.size), const_expr(groups - 1, DType::I64)),
                      const_expr(groups, DType::I64));
  Expr lo = binary("*", index_expr(g), chunk);
  Expr hi = min_expr(size_expr(axis.size), binary("*", binary("+", index_expr(g), const_expr(1, DType::I64)), chunk));
  return {lo, hi};
}

// Inside an f32 sum of 16-bit values the terms stay in f32 (as the kernel builder's serial
// reductions do): every 16-bit node but reads and explicit casts computes in f32.
Expr widened(const Expr& e) {
  Expr out = tir::map_args(e, widened);
  bool cast = out.kind == Expr::Kind::Call && parse_dtype(out.op).has_value();
  if (out.kind != Expr::Kind::Read && !cast && (out.dtype == DType::F16 || out.dtype == DType::BF16))
    out.dtype = DType::F32;
  return out;
}

void collect_regs(const Expr& e, std::set<std::string>& out) {
  tir::visit(e, [&](const Expr& x) {
    if (x.kind == Expr::Kind::Reg) out.insert(x.name);
  });
}

bool has_slice(const Expr& e) {
  return tir::any_node(e, [](const Expr& x) { return x.kind == Expr::Kind::Slice; });
}

// The first reduction of `e` over `axis` (any axis when empty), not inside another reduction
// (whose loop it would run in): a built-in one, or a user monoid's read through its fields
// (without vector fields, which to_loops folds where their reader runs).
const Expr* first_reduce(const Expr& e, const std::string& axis, const CheckedProgram& checked) {
  if (e.kind == Expr::Kind::Reduce) {
    bool known = builtin_monoid(e.op) || (checked.monoids.count(e.op) && !has_slice(e));
    return known && (axis.empty() || (!e.axes.empty() && e.axes[0].name == axis)) ? &e : nullptr;
  }
  for (const Expr& a : e.args)
    if (const Expr* r = first_reduce(a, axis, checked)) return r;
  return nullptr;
}

// The reduction `key` replaced by its carrier's registers: the reduction itself by its
// result field (built-ins), `reduction.f` by field f.
Expr replace_reduce(const Expr& e, const std::string& key, const std::map<std::string, Expr>& fields,
                    const std::string& result) {
  if (e.kind == Expr::Kind::Field && e.args.size() == 1 && e.args[0].kind == Expr::Kind::Reduce &&
      tir::print_expr(e.args[0]) == key)
    if (auto it = fields.find(e.name); it != fields.end()) return it->second;
  if (e.kind == Expr::Kind::Reduce && tir::print_expr(e) == key) return fields.at(result);
  return tir::map_args(e, [&](const Expr& x) { return replace_reduce(x, key, fields, result); });
}

// The definition of `tensor` with its reductions' axes renamed <axis>_<tensor>, so that
// inlining it where an axis of the same name is bound captures nothing (the same names each
// time: the search and the rewrite must see the same reduction).
Expr own_axes(const Expr& e, const std::string& tensor) {
  if (e.kind != Expr::Kind::Reduce) return tir::map_children(e, [&](const Expr& x) { return own_axes(x, tensor); });
  Expr out = tir::node_of(e);
  std::vector<std::pair<std::string, Expr>> by;
  for (tir::Axis& a : out.axes) {
    by.emplace_back(a.name, index_expr(a.name + "_" + tensor));
    a.name += "_" + tensor;
  }
  for (const Expr& x : e.args) out.args.push_back(own_axes(tir::substitute(x, by), tensor));
  for (const Expr& w : e.where) out.where.push_back(own_axes(tir::substitute(w, by), tensor));
  return out;
}

// Reads of intermediates that live in no buffer, replaced by their definitions (what the
// kernel builder inlines), so that a reduction behind them (an op call's output, a record
// read by several statements) can be split.
Expr inline_reads(const Expr& e, const lir::Program& p) {
  Expr out = tir::map_args(e, [&](const Expr& x) { return inline_reads(x, p); });
  if (out.kind != Expr::Kind::Read) return out;
  const tir::Tensor* t = p.tensors.find(out.name);
  const tir::Stmt* def = p.tensors.def(out.name);
  if (!t || !def || t->role != tir::Tensor::Role::Intermediate ||
      std::count(p.materialized.begin(), p.materialized.end(), out.name))
    return out;
  std::vector<std::pair<std::string, Expr>> by;
  for (size_t k = 0; k < def->vars.size() && k < out.args.size(); ++k) by.emplace_back(def->vars[k].name, out.args[k]);
  return inline_reads(tir::substitute(own_axes(def->value, out.name), by), p);
}

// A kernel whose whole body is one register-tiled loop, with that loop's axis as one more
// thread axis (innermost) and its per-tile carriers one value a thread. The combine kernel of
// a split folds only N partials an element: the register tile that paid for the long fold
// (TILE@e=f128) would leave it a thread per row and the GPU nearly idle.
void drop_per_tile(std::vector<Stmt>& body) {
  lir::visit(body, [](Stmt& s) {
    for (lir::CarrierField& f : s.fields) f.per_tile = false;
  });
}

lir::Kernel threads_over_register_tiles(lir::Kernel k) {
  while (k.body.size() == 1 && k.body[0].kind == Stmt::Kind::Loop && k.body[0].tile > 1) {
    Stmt loop = std::move(k.body[0]);
    k.threads.push_back(loop.axis);
    k.body = std::move(loop.body);
    drop_per_tile(k.body);
    k.doc.push_back(fmt::format("{}: one thread per element (the register tile of {} is the partial kernel's)",
                                loop.axis.name, loop.tile));
  }
  return k;
}

// ---- finding the reduction --------------------------------------------------------------------

struct Target {
  size_t kernel = 0;
  std::vector<size_t> path;      // body indices, outermost first; the last is the statement
  std::vector<tir::Axis> loops;  // the axes of the enclosing loops, outermost first
  std::optional<Expr> reduce;    // a Compute's or Store's reduction; nullopt: a Fold
};

std::string stmt_name(const Stmt& s) { return s.kind == Stmt::Kind::Store ? s.tensor : s.reg; }

bool fold_matches(const Stmt& s, const std::string& site) {
  if (site.empty() || s.axis.name == site) return true;
  return std::any_of(s.fields.begin(), s.fields.end(), [&](const lir::CarrierField& f) { return f.name == site; }) ||
         std::any_of(s.results.begin(), s.results.end(), [&](const Stmt& r) { return r.reg == site; });
}

bool find_in(const std::vector<Stmt>& body, const std::string& site, const lir::Program& p,
             const CheckedProgram& checked, Target& t) {
  for (size_t i = 0; i < body.size(); ++i) {
    const Stmt& s = body[i];
    t.path.push_back(i);
    if (s.kind == Stmt::Kind::Fold && fold_matches(s, site)) return true;
    if (s.kind == Stmt::Kind::Compute || s.kind == Stmt::Kind::Store) {
      bool named = !site.empty() && stmt_name(s) == site;
      for (const Expr& value : {s.value, inline_reads(s.value, p)})
        if (const Expr* r = first_reduce(value, named ? "" : site, checked)) {
          t.reduce = *r;
          return true;
        }
    }
    if (s.kind == Stmt::Kind::Loop) {
      t.loops.push_back(s.axis);
      if (find_in(s.body, site, p, checked, t)) return true;
      t.loops.pop_back();
    }
    t.path.pop_back();
  }
  return false;
}

// The kernel writing the outputs (the last) first, then the others in launch order.
std::optional<Target> find_target(const lir::Program& p, const std::string& site, const CheckedProgram& checked) {
  std::vector<size_t> order{p.kernels.size() - 1};
  for (size_t k = 0; k + 1 < p.kernels.size(); ++k) order.push_back(k);
  for (size_t k : order) {
    Target t;
    t.kernel = k;
    if (find_in(p.kernels[k].body, site, p, checked, t)) return t;
  }
  return std::nullopt;
}

// ---- rewriting ----------------------------------------------------------------------------------

const Stmt& at_path(const std::vector<Stmt>& body, const std::vector<size_t>& path, size_t depth = 0) {
  const Stmt& s = body[path[depth]];
  return depth + 1 == path.size() ? s : at_path(s.body, path, depth + 1);
}

// The body with the statement at `path` replaced by `with`.
std::vector<Stmt> replaced(std::vector<Stmt> body, const std::vector<size_t>& path, const std::vector<Stmt>& with,
                           size_t depth = 0) {
  size_t i = path[depth];
  if (depth + 1 < path.size()) {
    body[i].body = replaced(body[i].body, path, with, depth + 1);
    return body;
  }
  body.erase(body.begin() + static_cast<std::ptrdiff_t>(i));
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(i), with.begin(), with.end());
  return body;
}

// The statements up to the one at `path`, which becomes `with`; what follows is dropped.
std::vector<Stmt> prefix(const std::vector<Stmt>& body, const std::vector<size_t>& path, const std::vector<Stmt>& with,
                         size_t depth = 0) {
  std::vector<Stmt> out(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(path[depth]));
  if (depth + 1 == path.size()) {
    out.insert(out.end(), with.begin(), with.end());
    return out;
  }
  Stmt loop = body[path[depth]];
  loop.body = prefix(loop.body, path, with, depth + 1);
  out.push_back(std::move(loop));
  return out;
}

// Drops what no later statement needs: stores other than to `keep` (a partial kernel writes
// only its partials) and registers nobody reads. Walks backwards, `live` holding the
// registers still to be defined.
std::vector<Stmt> needed(const std::vector<Stmt>& body, const std::set<std::string>& keep,
                         std::set<std::string>& live) {
  std::vector<Stmt> out;
  for (size_t i = body.size(); i-- > 0;) {
    Stmt s = body[i];
    switch (s.kind) {
      case Stmt::Kind::Store:
        if (!keep.count(s.tensor)) continue;
        collect_regs(s.value, live);
        break;
      case Stmt::Kind::Compute:
        if (!live.count(s.reg)) continue;
        collect_regs(s.value, live);
        break;
      case Stmt::Kind::Loop:
        s.body = needed(s.body, keep, live);
        if (s.body.empty()) continue;
        break;
      case Stmt::Kind::Fold: {
        bool used =
            std::any_of(s.fields.begin(), s.fields.end(),
                        [&](const lir::CarrierField& f) { return live.count("run_" + f.name) > 0; }) ||
            std::any_of(s.results.begin(), s.results.end(), [&](const Stmt& r) { return live.count(r.reg) > 0; });
        if (!used) continue;
        for (const Stmt& r : s.results) collect_regs(r.value, live);
        for (const lir::CarrierField& f : s.fields) collect_regs(f.lift, live);
        for (const Expr& e : s.where) collect_regs(e, live);
        for (const Expr& e : s.range) collect_regs(e, live);
        break;
      }
    }
    out.insert(out.begin(), std::move(s));
  }
  return out;
}

Stmt store(const std::string& tensor, std::vector<tir::Axis> at, Expr value, std::string atomic = "") {
  Stmt s;
  s.kind = Stmt::Kind::Store;
  s.tensor = tensor;
  s.vars = std::move(at);
  s.value = std::move(value);
  s.atomic = std::move(atomic);
  return s;
}

// A reduction as a fold over its axis, its fields named after the statement `base` (so that
// its registers run_<base>... do not meet another fold's).
struct ReduceFold {
  Stmt fold;
  std::string result;                  // the field the reduction's value is (built-ins)
  std::map<std::string, Expr> fields;  // monoid field -> its carrier register
};

ReduceFold fold_of_reduce(const Expr& r, const std::string& base, bool per_tile, const CheckedProgram& checked) {
  MonoidLowering m;
  std::string result;
  if (const BuiltinMonoid* b = builtin_monoid(r.op)) {
    std::vector<kir::ScalarType> arg_types;
    for (const Expr& a : r.args) arg_types.push_back(scalar_of(a.dtype));
    m = b->lowering(scalar_of(r.dtype), arg_types);
    result = b->result;
  } else {
    m = user_monoid(*checked.monoids.at(r.op).decl);
  }
  ReduceFold out;
  Stmt& f = out.fold;
  f.kind = Stmt::Kind::Fold;
  f.axis = r.axes[0];
  f.where = r.where;
  f.monoid = r.op;
  f.terms.name = r.op;
  auto name_of = [&](const std::string& field) { return m.fields.size() == 1 ? base : base + "_" + field; };
  std::vector<std::pair<std::string, algebra::Term>> rename;
  for (const std::string& field : m.fields)
    for (const char* side : {"a.", "b."}) rename.emplace_back(side + field, algebra::Term::var(side + name_of(field)));
  bool widen =
      (r.op == "sum" || r.op == "prod") && (m.types[0] == kir::ScalarType::F32 || m.types[0] == kir::ScalarType::F64);
  std::map<std::string, Expr> params;
  for (size_t i = 0; i < r.args.size() && i < m.lift_params.size(); ++i)
    params[m.lift_params[i]] = widen ? widened(r.args[i]) : r.args[i];
  if (m.axis_param) params[*m.axis_param] = index_expr(f.axis.name);
  for (size_t i = 0; i < m.fields.size(); ++i) {
    DType dtype = kir::dtype_of(m.types[i]);
    f.fields.push_back({name_of(m.fields[i]), dtype, term_expr(m.lift[i], params, dtype), per_tile});
    f.terms.fields.push_back(name_of(m.fields[i]));
    f.terms.identity.push_back(m.identity[i]);
    f.terms.combine.push_back(algebra::substitute(m.combine[i], rename));
    out.fields[m.fields[i]] = reg_expr("run_" + name_of(m.fields[i]), dtype);
  }
  out.result = result;
  return out;
}

// ---- the split ------------------------------------------------------------------------------------

class Splitter {
 public:
  Splitter(const lir::Program& p, const CheckedProgram& checked, const SplitKnob& split, const LawMemo* laws)
      : p_(p), checked_(checked), law_memo_(laws), split_(split), knob_(print_knob(split.setting)) {}

  lir::Program run() {
    std::optional<Target> t = find_target(p_, split_.site, checked_);
    if (!t) fail_not_found();
    if (t->reduce && t->reduce->axes.size() != 1)
      fail(fmt::format("{} splits a reduction over one axis; the reduction of {} runs over ({})", knob_,
                       stmt_name(at_path(p_.kernels[t->kernel].body, t->path)), axes_text(t->reduce->axes)),
           "split a reduction over one axis (REDUCE@<axis>=...)");
    target_ = *t;
    names_ = taken_names();
    g_ = fresh("g");
    const lir::Kernel& k = p_.kernels[t->kernel];
    const Stmt& s = at_path(k.body, t->path);
    Stmt fold;
    bool converted = t->reduce.has_value();
    std::string result;
    if (converted) {
      ReduceFold rf = fold_of_reduce(*t->reduce, stmt_name(s), !t->loops.empty(), checked_);
      fold = rf.fold;
      result = rf.result;
      fields_ = rf.fields;
    } else {
      fold = s;
    }
    // Groups of contiguous ranges combined in order regroup; atomics reorder as well.
    laws_ = monoid_laws(fold.terms, checked_, law_memo_);
    if (split_.atomic) atomic_ = atomic_form(fold);
    require_laws(laws_, split_.atomic ? Regroup::Atomic : Regroup::Tree, {split_.setting, split_.origin},
                 fmt::format("splits the reduction over {} into {} groups{}", fold.axis.name, split_.groups,
                             split_.atomic ? " combined by atomics" : ""),
                 warnings_);
    std::vector<lir::Kernel> kernels =
        split_.atomic ? atomic_kernels(k, s, fold, result) : combine_kernels(k, s, fold, converted, result);
    lir::Program out = p_;
    out.kernels.erase(out.kernels.begin() + static_cast<std::ptrdiff_t>(t->kernel));
    out.kernels.insert(out.kernels.begin() + static_cast<std::ptrdiff_t>(t->kernel), kernels.begin(), kernels.end());
    for (const tir::Tensor& temp : temps_) {
      out.tensors.tensors.push_back(temp);
      out.materialized.push_back(temp.name);
    }
    out.decisions.push_back(decision_);
    out.warnings.insert(out.warnings.end(), warnings_.begin(), warnings_.end());
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& message, const std::string& help) const {
    throw LowerError(knob_error(split_.origin, split_.setting, message, help));
  }

  static std::string axes_text(const std::vector<tir::Axis>& axes) {
    std::vector<std::string> names;
    for (const tir::Axis& a : axes) names.push_back(a.name);
    return fmt::format("{}", fmt::join(names, ", "));
  }

  // What the op reduces, for the errors: statements with a reduction and their axes.
  [[noreturn]] void fail_not_found() const {
    const std::string& op = p_.tensors.op;
    std::vector<std::string> stmts, axes;
    for (const tir::Stmt& s : p_.tensors.stmts)
      if (tir::has_reduce(s.value)) {
        stmts.push_back(s.name);
        collect_axes(s.value, axes);
      }
    if (split_.site.empty())
      fail(fmt::format("{}: op {} has no reduction to split", knob_, op),
           "remove the REDUCE entry: every thread of this op computes its elements alone");
    std::string what =
        stmts.empty() ? fmt::format("op {} has no reduction", op)
                      : fmt::format("op {} reduces in {} (over {})", op, fmt::join(stmts, ", "), fmt::join(axes, ", "));
    std::string help = stmts.empty()
                           ? "remove the REDUCE entry"
                           : fmt::format("name a statement or an axis that a kernel reduces, e.g. REDUCE@{}={}",
                                         stmts.front(), print_knob_value(split_.setting));
    if (p_.tensors.def(split_.site))
      fail(fmt::format("{}: no kernel of {} reduces in statement {} ({})", knob_, op, split_.site, what), help);
    fail(fmt::format("{}: {} names no statement and no reduction axis of {} ({})", knob_, split_.site, op, what), help);
  }

  static void collect_axes(const Expr& e, std::vector<std::string>& out) {
    tir::visit(e, [&](const Expr& x) {
      if (x.kind == Expr::Kind::Reduce)
        for (const tir::Axis& a : x.axes)
          if (std::find(out.begin(), out.end(), a.name) == out.end()) out.push_back(a.name);
    });
  }

  // Every name an index, register or buffer of the program has, so that new ones differ.
  std::set<std::string> taken_names() const {
    std::set<std::string> n(p_.tensors.sizes.begin(), p_.tensors.sizes.end());
    for (const tir::Tensor& t : p_.tensors.tensors) n.insert(t.name);
    for (const tir::Stmt& s : p_.tensors.stmts) {
      for (const tir::Axis& a : s.vars) n.insert(a.name);
      std::vector<std::string> axes;
      collect_axes(s.value, axes);
      n.insert(axes.begin(), axes.end());
    }
    return n;
  }

  std::string fresh(std::string name) {
    while (names_.count(name)) name += "_";
    names_.insert(name);
    return name;
  }

  std::string temp(const std::string& base, DType dtype, const std::vector<tir::Axis>& at) {
    tir::Tensor t;
    t.name = fresh(base);
    t.role = tir::Tensor::Role::Intermediate;
    t.dtype = dtype;
    for (const tir::Axis& a : at) t.dims.push_back(a.size);
    temps_.push_back(t);
    return t.name;
  }

  std::vector<tir::Axis> group_threads(const lir::Kernel& k) const {
    std::vector<tir::Axis> t{{g_, std::to_string(split_.groups)}};
    t.insert(t.end(), k.threads.begin(), k.threads.end());
    return t;
  }

  // Where a field's partial lives: per group and point of the thread space, and per element
  // of the enclosing loops when it holds one value per element (o[e]).
  std::vector<tir::Axis> field_at(const lir::Kernel& k, const lir::CarrierField& f, bool group) const {
    std::vector<tir::Axis> at = group ? group_threads(k) : k.threads;
    if (f.per_tile) at.insert(at.end(), target_.loops.begin(), target_.loops.end());
    return at;
  }

  // The partial kernel's fold: the group's range only; with a flag field saying whether the
  // range folded any element (an empty or fully masked range keeps the identity, and an
  // identity such as online softmax's -inf must not meet another one: -inf - -inf).
  Stmt ranged(Stmt fold, const std::string& flag) const {
    fold.range = group_range(fold.axis, g_, split_.groups);
    fold.results.clear();
    if (!flag.empty()) {
      fold.fields.push_back({flag, DType::Bool, const_expr(1, DType::Bool), false});
      fold.terms.fields.push_back(flag);
      fold.terms.identity.push_back(algebra::Term::constant(algebra::Rational::of(0)));
      fold.terms.combine.push_back(
          algebra::Term::make(algebra::TermOp::Or, {algebra::Term::var("a." + flag), algebra::Term::var("b." + flag)}));
    }
    return fold;
  }

  static bool needs_flag(const Stmt& fold) { return builtin_monoid(fold.terms.name) == nullptr; }

  lir::Kernel partial_kernel(const lir::Kernel& k, std::vector<Stmt> tail) const {
    lir::Kernel a;
    a.name = k.name.empty() ? "partial" : k.name + "_partial";
    a.threads = group_threads(k);
    std::set<std::string> live, keep;
    for (const tir::Tensor& t : temps_) keep.insert(t.name);
    a.body = needed(prefix(k.body, target_.path, tail), keep, live);
    return a;
  }

  std::vector<lir::Kernel> combine_kernels(const lir::Kernel& k, const Stmt& s, const Stmt& fold, bool converted,
                                           const std::string& result) {
    std::string flag = needs_flag(fold) ? fresh(fold.fields.front().name + "_folded") : "";
    Stmt part = ranged(fold, flag);
    std::vector<Stmt> stores{part};
    Stmt combine = fold;  // over the groups, each lifting its stored partial
    combine.axis = {g_, std::to_string(split_.groups)};
    combine.where.clear();
    std::vector<std::string> parts;
    for (size_t i = 0; i < part.fields.size(); ++i) {
      const lir::CarrierField& f = part.fields[i];
      std::string name = temp("part_" + f.name, f.dtype, field_at(k, f, true));
      parts.push_back(name);
      stores.push_back(store(name, field_at(k, f, true), reg_expr("run_" + f.name, f.dtype)));
      if (f.name == flag)
        combine.where = {read_expr(name, field_at(k, f, true), DType::Bool)};
      else
        combine.fields[i].lift = read_expr(name, field_at(k, f, true), f.dtype);
    }
    std::vector<Stmt> with{combine};
    if (converted) with.push_back(rewrite(s, fields_, result));  // the statement reads the combined carrier
    lir::Kernel a = partial_kernel(k, stores);
    a.doc = {fmt::format("{}: group {} < {} folds its contiguous range of {} < {} and writes its partial carrier.",
                         knob_, g_, split_.groups, fold.axis.name, fold.axis.size),
             "An empty (or fully masked) range writes the identity."};
    lir::Kernel b = k;
    b.body = replaced(k.body, target_.path, with);
    if (converted) rewrite_later(b.body, 0, with.size(), fields_, result);
    b = threads_over_register_tiles(std::move(b));
    b.scalar_tier = true;
    b.doc.insert(b.doc.begin(), fmt::format("{}: the {} partial carriers combined in order through {}.", knob_,
                                            split_.groups, fold.monoid));
    decision_ = fmt::format(
        "{}: the fold over {} split into {} groups of ceil({} / {}) — kernel {} folds each group's "
        "range into {}; kernel {} combines them in order through {}",
        knob_, fold.axis.name, split_.groups, fold.axis.size, split_.groups, kernel_label(a), fmt::join(parts, ", "),
        kernel_label(b), fold.monoid);
    return {a, b};
  }

  std::string kernel_label(const lir::Kernel& k) const {
    return k.name.empty() ? p_.tensors.op : p_.tensors.op + "_" + k.name;
  }

  // The atomic that combines the fold's partials: its one field's a + b, max or min, which the
  // target has for the field's type.
  std::string atomic_form(const Stmt& fold) const {
    if (!target_.reduce || fold.fields.size() > 1)
      fail(fmt::format("{}: the reduction over {} carries ({}) through the monoid {}, which has no atomic form: an "
                       "atomic combines one field with a commutative sum, max or min",
                       knob_, fold.axis.name, field_names(fold), fold.monoid),
           fmt::format("use REDUCE{}=g{}k: a second kernel combines the partial carriers through the monoid itself",
                       split_.site.empty() ? "" : "@" + split_.site, split_.groups));
    const std::string atomic = laws_.atomic.value_or(fold.monoid);
    if (!kir::atomic_intrinsic(atomic, scalar_of(fold.fields.front().dtype)))
      fail(fmt::format("{}: {} of {} has no atomic form (atomics exist for {})", knob_, atomic,
                       dtype_name(fold.fields.front().dtype), kir::atomic_forms()),
           fmt::format("use REDUCE{}=g{}k: a second kernel combines the partials",
                       split_.site.empty() ? "" : "@" + split_.site, split_.groups));
    return atomic;
  }

  std::vector<lir::Kernel> atomic_kernels(const lir::Kernel& k, const Stmt& s, const Stmt& fold,
                                          const std::string& result) {
    const std::string& atomic = atomic_;
    const lir::CarrierField& f = fold.fields.front();
    std::vector<tir::Axis> at = field_at(k, f, false);
    std::string acc = temp("acc_" + f.name, f.dtype, at);
    // The init kernel: the identity at every element the partials combine into.
    lir::Kernel init;
    init.name = k.name.empty() ? "init" : k.name + "_init";
    init.threads = k.threads;
    Stmt body = store(acc, at, term_expr(fold.terms.identity[0], {}, f.dtype));
    for (size_t i = f.per_tile ? target_.loops.size() : 0; i-- > 0;) {
      Stmt loop;
      loop.kind = Stmt::Kind::Loop;
      loop.axis = target_.loops[i];
      loop.body = {body};
      body = loop;
    }
    init.body = {body};
    init.doc = {fmt::format("{}: {}[{}] set to the identity of {}.", knob_, acc, axes_text(at), fold.monoid)};
    lir::Kernel a = partial_kernel(k, {ranged(fold, ""), store(acc, at, reg_expr("run_" + f.name, f.dtype), atomic)});
    a.doc = {
        fmt::format("{}: group {} < {} folds its contiguous range of {} < {} and combines it into {} with an "
                    "atomic {}.",
                    knob_, g_, split_.groups, fold.axis.name, fold.axis.size, acc, atomic)};
    // The combined value: a built-in's result, or the one field of a user monoid (y = plus(c: ...).x).
    const std::string field = result.empty() && fields_.size() == 1 ? fields_.begin()->first : result;
    std::map<std::string, Expr> from_acc{{field, read_expr(acc, at, f.dtype)}};
    lir::Kernel b = k;
    b.body = replaced(k.body, target_.path, {rewrite(s, from_acc, field)});
    rewrite_later(b.body, 0, 1, from_acc, field);
    b.doc.insert(b.doc.begin(), fmt::format("{}: reads the combined {} from {}.", knob_, field, acc));
    decision_ = fmt::format(
        "{}: the {} over {} split into {} groups of ceil({} / {}) — kernel {} writes the identity to "
        "{}, kernel {} folds each group's range and adds it with an atomic {}, kernel {} reads it",
        knob_, fold.monoid, fold.axis.name, split_.groups, fold.axis.size, split_.groups, kernel_label(init), acc,
        kernel_label(a), fold.monoid, kernel_label(b));
    return {init, a, b};
  }

  // The statement with the split reduction read from `fields` (looked for in its value as
  // written, else behind the intermediates it inlines).
  Stmt rewrite(Stmt s, const std::map<std::string, Expr>& fields, const std::string& result) const {
    std::string key = tir::print_expr(*target_.reduce);
    Expr v = replace_reduce(s.value, key, fields, result);
    if (tir::print_expr(v) == tir::print_expr(s.value))
      v = replace_reduce(inline_reads(s.value, p_), key, fields, result);
    s.value = v;
    return s;
  }

  // The statements after the split one (and its `count` replacements) in the same body that
  // compute the same reduction read the combined carrier too (mean = w.u; var = w.q / w.n).
  void rewrite_later(std::vector<Stmt>& body, size_t depth, size_t count, const std::map<std::string, Expr>& fields,
                     const std::string& result) const {
    if (depth + 1 < target_.path.size())
      return rewrite_later(body[target_.path[depth]].body, depth + 1, count, fields, result);
    std::string key = tir::print_expr(*target_.reduce);
    for (size_t i = target_.path[depth] + count; i < body.size(); ++i) {
      Stmt& s = body[i];
      if ((s.kind == Stmt::Kind::Compute || s.kind == Stmt::Kind::Store) &&
          tir::print_expr(inline_reads(s.value, p_)).find(key) != std::string::npos)
        s = rewrite(s, fields, result);
    }
  }

  static std::string field_names(const Stmt& fold) {
    std::vector<std::string> n;
    for (const lir::CarrierField& f : fold.fields) n.push_back(f.name);
    return fmt::format("{}", fmt::join(n, ", "));
  }

  const lir::Program& p_;
  const CheckedProgram& checked_;
  const LawMemo* law_memo_;
  const SplitKnob& split_;
  std::string knob_;
  Target target_;
  std::set<std::string> names_;
  std::string g_;
  std::vector<tir::Tensor> temps_;
  std::string decision_;
  std::map<std::string, Expr> fields_;  // a converted reduction's monoid fields -> carrier registers
  MonoidLaws laws_;                     // the split fold's monoid, as the prover found it
  std::string atomic_;                  // REDUCE=g<N>a: the atomic that combines the partials
  std::vector<Warning> warnings_;       // laws the split relies on that are only assumed (W053)
};

}  // namespace

lir::Program split_reduce(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
                          const LawMemo* laws) {
  if (knobs.splits.empty() || program.kernels.empty()) return program;
  return Splitter(program, checked, knobs.splits.front(), laws).run();
}

}  // namespace emmy::lower
