// The kernel builder shared by the scalar tier (to_kernel.cpp) and the tensor-core tier
// (tile_mma.cpp): expression lowering, monoid terms, carriers and register scopes.
// Internal to the lower layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"
#include "ir/ieee_rules.hpp"
#include "ir/intrinsics.hpp"
#include "lower/monoid_table.hpp"
#include "lower/passes.hpp"
#include "lower/regroup_laws.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

using algebra::Term;
using algebra::TermOp;
using kir::ScalarType;
using tir::Expr;
using K = kir::Expr;

// Arithmetic on 16-bit floats runs in f32 and rounds once at the end, as the GPU does it.
inline constexpr double kLog2e = 1.4426950408889634;  // FAST_EXP: exp(x) = exp2(x * log2 e)

inline ScalarType compute_type(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 ? ScalarType::F32 : t;
}

inline ScalarType wider(ScalarType a, ScalarType b) {
  if (kir::is_float(a) || kir::is_float(b)) {
    if (a == ScalarType::F64 || b == ScalarType::F64) return ScalarType::F64;
    return ScalarType::F32;
  }
  if (a == ScalarType::Pred && b == ScalarType::Pred) return ScalarType::Pred;
  return ScalarType::I64;
}

// A literal converted to an integer as a C cast would on the GPU (cvt.rzi): toward zero,
// saturated, NaN to 0 — never the undefined behaviour of an out-of-range conversion.
inline int64_t saturated_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

inline K as(K e, ScalarType t) {
  if (e.type == t) return e;
  if (t == ScalarType::Pred && e.type != ScalarType::Pred)
    return kir::binary(kir::BinOp::Ne, e, kir::is_float(e.type) ? kir::cf(0, e.type) : kir::ci(0, e.type));
  if (e.kind == K::Kind::Const)
    return kir::is_float(t) ? kir::cf(e.fval, t) : kir::ci(kir::is_float(e.type) ? saturated_int(e.fval) : e.ival, t);
  return kir::cast(std::move(e), t);
}

inline K arith(kir::BinOp op, K a, K b, ScalarType result) {
  ScalarType ct = compute_type(result);
  return as(kir::binary(op, as(std::move(a), ct), as(std::move(b), ct)), result);
}

struct UnaryRow {
  std::string_view name;
  kir::UnOp op;
};
inline constexpr UnaryRow kUnaryCalls[] = {
    {"exp", kir::UnOp::Exp},   {"exp2", kir::UnOp::Exp2},       {"log", kir::UnOp::Log},
    {"sqrt", kir::UnOp::Sqrt}, {"rsqrt", kir::UnOp::Rsqrt},     {"tanh", kir::UnOp::Tanh},
    {"erf", kir::UnOp::Erf},   {"sigmoid", kir::UnOp::Sigmoid}, {"abs", kir::UnOp::Abs}};
struct BinaryRow {
  std::string_view spelling;
  kir::BinOp op;
};
inline constexpr BinaryRow kBinaryOps[] = {{"+", kir::BinOp::Add},   {"-", kir::BinOp::Sub},  {"*", kir::BinOp::Mul},
                                           {"/", kir::BinOp::Div},   {"%", kir::BinOp::Rem},  {"max", kir::BinOp::Max},
                                           {"min", kir::BinOp::Min}, {"<", kir::BinOp::Lt},   {"<=", kir::BinOp::Le},
                                           {">", kir::BinOp::Gt},    {">=", kir::BinOp::Ge},  {"==", kir::BinOp::Eq},
                                           {"!=", kir::BinOp::Ne},   {"&&", kir::BinOp::And}, {"||", kir::BinOp::Or}};
struct TermRow {
  TermOp term;
  kir::BinOp op;
};
inline constexpr TermRow kTermBinary[] = {
    {TermOp::Add, kir::BinOp::Add}, {TermOp::Sub, kir::BinOp::Sub}, {TermOp::Mul, kir::BinOp::Mul},
    {TermOp::Div, kir::BinOp::Div}, {TermOp::Max, kir::BinOp::Max}, {TermOp::Min, kir::BinOp::Min},
    {TermOp::Lt, kir::BinOp::Lt},   {TermOp::Le, kir::BinOp::Le},   {TermOp::Gt, kir::BinOp::Gt},
    {TermOp::Ge, kir::BinOp::Ge},   {TermOp::Eq, kir::BinOp::Eq},   {TermOp::Ne, kir::BinOp::Ne},
    {TermOp::And, kir::BinOp::And}, {TermOp::Or, kir::BinOp::Or}};

inline std::optional<kir::BinOp> binop_of(std::string_view spelling) {
  for (const BinaryRow& r : kBinaryOps)
    if (r.spelling == spelling) return r.op;
  return std::nullopt;
}

inline K binop(kir::BinOp op, K a, K b, ScalarType result) {
  if (kir::is_comparison(op) && op != kir::BinOp::And && op != kir::BinOp::Or) {
    ScalarType ct = compute_type(wider(a.type, b.type));
    return kir::binary(op, as(std::move(a), ct), as(std::move(b), ct));
  }
  if (op == kir::BinOp::And || op == kir::BinOp::Or)
    return kir::binary(op, as(std::move(a), ScalarType::Pred), as(std::move(b), ScalarType::Pred));
  return arith(op, std::move(a), std::move(b), result);
}

// A reduction's carrier: one register per field (a vector field: one element of it).
struct Carrier {
  std::vector<std::string> fields;
  std::vector<K> values;
  const K& at(const std::string& field) const {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i] == field) return values[i];
    internal_error(__FILE__, __LINE__, fmt::format("no carrier field '{}'", field));
  }
};

// One chunk of V elements of a split axis in the vector path: the loads it shares between
// its elements and the stores it gathers into one vector store each. At namespace scope: a
// nested class with member initializers cannot be default-constructed inside its enclosing
// class (clang).
struct VecChunk {
  size_t block = 0;  // index in blocks_ of the chunk's body, where its vector loads go
  K base;            // the chunk's first element index
  K elem;            // the current element's index (base + u)
  int u = 0;
  // A row of a tensor in the chunk: register arrays of `width` elements, one per access of at
  // most 16 bytes (V f16: one array of 8; V = 8 f32: two arrays of 4).
  struct Access {
    std::vector<std::string> arrays;
    int width = 1;
    std::string tensor;
    K index;
  };
  std::map<std::string, Access> loads;   // tensor + row -> its vector loads
  std::map<std::string, Access> stores;  // tensor + row -> arrays filled element by element
};

class KernelBuilder {
  friend class MmaTier;

 public:
  KernelBuilder(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs)
      : p_(program), checked_(checked), knobs_(knobs) {}

  kir::Program run() {
    kir::Program out;
    out.op = p_.tensors.op;
    out.knobs = print_knob_list(knobs_.settings);
    out.sizes = p_.tensors.sizes;
    for (const tir::Tensor& t : p_.tensors.tensors) {
      bool temp = t.role == tir::Tensor::Role::Intermediate &&
                  std::count(p_.materialized.begin(), p_.materialized.end(), t.name) > 0;
      if (t.role == tir::Tensor::Role::Intermediate && !temp) continue;
      kir::Buffer b;
      b.name = t.name;
      b.role = temp                                 ? kir::Buffer::Role::Temp
               : t.role == tir::Tensor::Role::Input ? kir::Buffer::Role::Input
                                                    : kir::Buffer::Role::Output;
      b.type = scalar_of(t.dtype);
      b.dims = t.dims;
      out.buffers.push_back(b);
    }
    for (const lir::Kernel& k : p_.kernels) out.kernels.push_back(kernel(k, out));
    out.warnings.insert(out.warnings.end(), law_warnings_.begin(), law_warnings_.end());
    return out;
  }

 private:
  // The tensor-core tier (tile_mma.cpp): fills `out`'s launch shape and body when the kernel's
  // contractions fit the knobs' mma atom; else false with `why`.
  bool mma_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why);

  // exp(x); with FAST_EXP=1 on an f32 value, exp2(x * log2 e) as ex2.approx.ftz: one multiply
  // and one MUFU.EX2 instead of expf's range reduction (within a few ulp of it; results below
  // 2^-126 flush to 0, which a softmax weight that small never notices).
  K exp_value(K x) const {
    if (!knobs_.fast_exp || x.type != ScalarType::F32) return kir::unary(kir::UnOp::Exp, std::move(x));
    return kir::unary(kir::UnOp::Exp2Ftz, kir::binary(kir::BinOp::Mul, std::move(x), kir::cf(kLog2e, ScalarType::F32)));
  }

  // op(x), every exp through exp_value (the one place FAST_EXP acts); an exp or exp2 of a
  // difference takes it as kir::exp_difference (-inf - -inf is -inf there: ir/ieee_rules.hpp).
  K unary_value(kir::UnOp op, K x) {
    if (op != kir::UnOp::Exp && op != kir::UnOp::Exp2) return kir::unary(op, std::move(x));
    K* d = &x;
    while (d->kind == K::Kind::Cast) d = &d->args[0];
    if (d->kind == K::Kind::Binary && d->bin == kir::BinOp::Sub && kir::is_float(d->type)) {
      auto operand = [&](K v) { return v.kind == K::Kind::Var || v.kind == K::Kind::Const ? v : shared(std::move(v)); };
      K a = operand(d->args[0]), b = operand(d->args[1]);
      *d = kir::exp_difference(std::move(a), std::move(b));
    }
    return op == kir::UnOp::Exp ? exp_value(std::move(x)) : kir::unary(op, std::move(x));
  }

  // ---- names and scopes -----------------------------------------------------------------
  std::string fresh(const std::string& base) { return fmt::format("{}_{}", base, ++counter_); }

  // A register named after a tensor or an index, unless a parameter already has the name
  // (matmul's tensor b and an index b): then with a trailing underscore.
  std::string unclashed(std::string name) const {
    auto taken = [&](const std::string& n) {
      if (std::count(p_.tensors.sizes.begin(), p_.tensors.sizes.end(), n)) return true;
      const tir::Tensor* t = p_.tensors.find(n);
      return t && (t->role != tir::Tensor::Role::Intermediate ||
                   std::count(p_.materialized.begin(), p_.materialized.end(), n));
    };
    while (taken(name)) name += "_";
    return name;
  }

  struct Scope {
    std::map<std::string, K> index;       // index variable -> value
    std::map<std::string, K> regs;        // Reg name -> value
    std::map<std::string, Carrier> memo;  // reductions already computed in this block
    std::map<std::string, K> cse;         // expensive subexpressions already in a register
    std::map<std::string, K> reciprocal;  // a float divisor (rendered) -> the register holding 1 / it
  };
  std::vector<Scope> scopes_;
  std::vector<std::vector<kir::Stmt>*> blocks_;

  void emit(kir::Stmt s) { blocks_.back()->push_back(std::move(s)); }

  template <class F>
  std::vector<kir::Stmt> nested(F&& body) {
    std::vector<kir::Stmt> out;
    blocks_.push_back(&out);
    scopes_.push_back({});
    body();
    scopes_.pop_back();
    blocks_.pop_back();
    return out;
  }

  const K* find_index(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > 0;)
      if (auto it = scopes_[i].index.find(name); it != scopes_[i].index.end()) return &it->second;
    return nullptr;
  }
  const K* find_reg(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > 0;)
      if (auto it = scopes_[i].regs.find(name); it != scopes_[i].regs.end()) return &it->second;
    return nullptr;
  }
  const Carrier* find_memo(const std::string& key) const {
    for (size_t i = scopes_.size(); i-- > 0;)
      if (auto it = scopes_[i].memo.find(key); it != scopes_[i].memo.end()) return &it->second;
    return nullptr;
  }

  // An expensive value computed once per block: the combine of a carrier repeats
  // max(a.m, b.m) and exp(a.m - n) in every field, and must not pay for them each time.
  // A divisor whose reciprocal a tier computed once (a row's normalizer, divided into every
  // element of the row): x / d becomes x * (1 / d).
  const K* find_reciprocal(const K& divisor) const {
    if (!kir::is_float(divisor.type)) return nullptr;
    const std::string key = render_key(divisor);
    for (size_t i = scopes_.size(); i-- > 0;)
      if (auto it = scopes_[i].reciprocal.find(key); it != scopes_[i].reciprocal.end()) return &it->second;
    return nullptr;
  }

  K shared(K value) {
    std::string key = render_key(value);
    for (size_t i = scopes_.size(); i-- > 0;)
      if (auto it = scopes_[i].cse.find(key); it != scopes_[i].cse.end()) return it->second;
    K reg = let(fresh("t"), std::move(value));
    scopes_.back().cse[key] = reg;
    return reg;
  }

  // A register initialized to `value`, in the current block; returns its value.
  K let(const std::string& name, K value) {
    ScalarType t = value.type;
    emit(kir::decl(name, t, std::move(value)));
    return kir::var({name}, t);
  }

  // ---- sizes and addresses ----------------------------------------------------------------
  static K size_value(const std::string& size) {
    if (!size.empty() && std::isdigit(static_cast<unsigned char>(size[0])))
      return kir::ci(std::stoll(size), ScalarType::I64);
    return kir::param(size, ScalarType::I64);
  }

  K linear_index(const tir::Tensor& t, const std::vector<K>& idx) const {
    if (idx.empty()) return kir::ci(0, ScalarType::I64);
    K acc = as(idx[0], ScalarType::I64);
    for (size_t k = 1; k < idx.size(); ++k)
      acc = kir::binary(kir::BinOp::Add, kir::binary(kir::BinOp::Mul, acc, size_value(t.dims[k])),
                        as(idx[k], ScalarType::I64));
    return acc;
  }

  bool in_global(const std::string& name) const {
    const tir::Tensor* t = p_.tensors.find(name);
    return t && (t->role != tir::Tensor::Role::Intermediate ||
                 std::count(p_.materialized.begin(), p_.materialized.end(), name));
  }

  // ---- expressions ------------------------------------------------------------------------
  K lower(const Expr& e) {
    ScalarType t = scalar_of(e.dtype);
    // Inside an f32 sum of 16-bit values, products and sums of the terms stay in f32, as on
    // a tensor core: f16 x f16 is exact in f32, so the schedule does not decide the rounding.
    // An explicit cast to a 16-bit type is the user's rounding and is kept: the same value
    // must come out whether the tensor is recomputed here (fuse) or stored and read (cut).
    const bool explicit_cast = e.kind == Expr::Kind::Call && parse_dtype(e.op).has_value();
    if (widen_half_ > 0 && (t == ScalarType::F16 || t == ScalarType::BF16) && e.kind != Expr::Kind::Read &&
        !explicit_cast)
      t = ScalarType::F32;
    switch (e.kind) {
      case Expr::Kind::Const:
        if (t == ScalarType::Pred) return kir::ci(e.value != 0, ScalarType::Pred);
        return kir::is_float(t) ? kir::cf(e.value, t) : kir::ci(saturated_int(e.value), t);
      case Expr::Kind::Size: return size_value(e.name);
      case Expr::Kind::Index: {
        if (const K* v = find_index(e.name)) return *v;
        internal_error(__FILE__, __LINE__, fmt::format("index '{}' is unbound", e.name));
      }
      case Expr::Kind::Reg: {
        if (const K* v = find_reg(e.name)) return *v;
        internal_error(__FILE__, __LINE__, fmt::format("register '{}' is unbound", e.name));
      }
      case Expr::Kind::Read: return read(e);
      case Expr::Kind::Unary: {
        K a = lower(e.args[0]);
        if (e.op == "!") return kir::unary(kir::UnOp::Not, as(a, ScalarType::Pred));
        return as(kir::unary(kir::UnOp::Neg, as(a, compute_type(t))), t);
      }
      case Expr::Kind::Binary: {
        std::optional<kir::BinOp> op = binop_of(e.op);
        if (!op) throw LowerError(fmt::format("the operator '{}' has no scalar lowering yet", e.op));
        K lhs = lower(e.args[0]), rhs = lower(e.args[1]);
        if (*op == kir::BinOp::Div)
          if (const K* inv = find_reciprocal(rhs)) return binop(kir::BinOp::Mul, std::move(lhs), *inv, t);
        return binop(*op, std::move(lhs), std::move(rhs), t);
      }
      case Expr::Kind::Call: return call(e, t);
      case Expr::Kind::Reduce: {
        Carrier c = reduce(e, std::nullopt);
        std::string field = result_field(e);
        if (field.empty()) throw LowerError(fmt::format("the carrier of {} is a record: read one of its fields", e.op));
        return c.at(field);
      }
      case Expr::Kind::Field: {
        std::optional<K> elem;
        if (e.args.size() > 1) elem = lower(e.args[1]);
        Carrier c = record(e.args[0], elem);
        return c.at(e.name);
      }
      case Expr::Kind::Slice: break;
    }
    throw LowerError("a whole vector (':') is only a value as a monoid's lift argument");
  }

  K call(const Expr& e, ScalarType t) {
    for (const UnaryRow& r : kUnaryCalls)
      if (r.name == e.op) return as(unary_value(r.op, as(lower(e.args[0]), compute_type(t))), t);
    if (e.op == "log2")
      return as(kir::binary(kir::BinOp::Mul, kir::unary(kir::UnOp::Log, as(lower(e.args[0]), compute_type(t))),
                            kir::cf(1.0 / std::log(2.0), compute_type(t))),
                t);
    if (e.op == "max" || e.op == "min")
      return binop(e.op == "max" ? kir::BinOp::Max : kir::BinOp::Min, lower(e.args[0]), lower(e.args[1]), t);
    if (e.op == "select")
      return kir::select(as(lower(e.args[0]), ScalarType::Pred), as(lower(e.args[1]), t), as(lower(e.args[2]), t));
    if (parse_dtype(e.op)) return as(lower(e.args[0]), t);
    throw LowerError(fmt::format("the function '{}' has no scalar lowering yet", e.op));
  }

  K read(const Expr& e) {
    if (in_global(e.name)) {
      if (vec_)
        if (std::optional<K> v = vec_read(e)) return *v;
      const tir::Tensor& t = *p_.tensors.find(e.name);
      if (!t.record.empty()) internal_error(__FILE__, __LINE__, fmt::format("carrier '{}' read as a value", e.name));
      std::vector<K> idx;
      for (const Expr& a : e.args) idx.push_back(lower(a));
      return kir::load(kir::Space::Global, e.name, linear_index(t, idx), scalar_of(t.dtype));
    }
    if (const K* r = find_reg(e.name); r && is_own_row(e)) return *r;
    return lower(inline_def(e));
  }

  // Reads of a register statement by its own index variables (the thread's row).
  bool is_own_row(const Expr& e) const {
    const tir::Stmt* def = p_.tensors.def(e.name);
    if (!def) return false;
    for (size_t k = 0; k < e.args.size(); ++k)
      if (e.args[k].kind != Expr::Kind::Index || e.args[k].name != def->vars[k].name) return false;
    return true;
  }

  // The definition of an intermediate at the read's indices, its own axes renamed fresh.
  Expr inline_def(const Expr& e) {
    const tir::Stmt* def = p_.tensors.def(e.name);
    if (!def) internal_error(__FILE__, __LINE__, fmt::format("'{}' has no definition", e.name));
    std::vector<std::pair<std::string, Expr>> by;
    for (size_t k = 0; k < def->vars.size(); ++k) by.emplace_back(def->vars[k].name, e.args[k]);
    return fresh_axes(tir::substitute(def->value, by));
  }

  Expr fresh_axes(const Expr& e) {
    if (e.kind != Expr::Kind::Reduce) return tir::map_children(e, [&](const Expr& x) { return fresh_axes(x); });
    Expr out = tir::node_of(e);
    std::vector<std::pair<std::string, Expr>> by;
    for (tir::Axis& a : out.axes) {
      Expr i;
      i.kind = Expr::Kind::Index;
      i.dtype = DType::I64;
      i.name = fresh(a.name);
      by.emplace_back(a.name, i);
      a.name = i.name;
    }
    for (const Expr& x : e.args) out.args.push_back(fresh_axes(tir::substitute(x, by)));
    for (const Expr& w : e.where) out.where.push_back(fresh_axes(tir::substitute(w, by)));
    return out;
  }

  Carrier record(const Expr& e, const std::optional<K>& elem) {
    if (e.kind == Expr::Kind::Reduce) return reduce(e, elem);
    if (e.kind == Expr::Kind::Read && !in_global(e.name)) return record(inline_def(e), elem);
    throw LowerError("a monoid carrier must come from a reduction");
  }

  // ---- reductions -------------------------------------------------------------------------
  static std::string result_field(const Expr& e) {
    const BuiltinMonoid* b = builtin_monoid(e.op);
    return b ? std::string(b->result) : std::string();
  }

  MonoidLowering monoid_of(const Expr& e) {
    if (const BuiltinMonoid* b = builtin_monoid(e.op)) {
      std::vector<ScalarType> arg_types;
      for (const Expr& a : e.args) arg_types.push_back(scalar_of(a.dtype));
      return b->lowering(scalar_of(e.dtype), arg_types);
    }
    auto it = checked_.monoids.find(e.op);
    if (it == checked_.monoids.end()) throw LowerError(fmt::format("unknown monoid '{}'", e.op));
    return user_monoid(*it->second.decl);
  }

  Carrier reduce(const Expr& e, const std::optional<K>& elem) {
    std::string key = tir::print_expr(e) + (elem ? "@" + render_key(*elem) : "");
    if (const Carrier* c = find_memo(key)) return *c;
    MonoidLowering m = monoid_of(e);
    if (!quiet_reduce_) emit(kir::comment(fmt::format("{} over {}", e.op, axes_names(e.axes))));
    quiet_reduce_ = false;
    Carrier carrier;
    std::map<std::string, K> identity_env;
    std::string base = fmt::format("{}_{}", e.op, fmt::join(axis_list(e.axes), "_"));
    for (size_t i = 0; i < m.fields.size(); ++i) {
      K init = as(term_value(m.identity[i], identity_env, m.types[i]), m.types[i]);
      carrier.fields.push_back(m.fields[i]);
      carrier.values.push_back(let(fresh(m.fields.size() == 1 ? base : base + "_" + m.fields[i]), init));
    }
    K vector_elem = elem ? *elem : kir::ci(0, ScalarType::I64);
    // Whether this thread's fold combined an element: for COOP's shares, and where the identity
    // must not meet a value (algebra::identity_unsafe: the fold starts from its first element).
    const bool first_element = algebra::identity_unsafe(terms_of(e.op, m));
    std::optional<K> has;
    if (coop_top() || first_element) has = let(fresh("has"), kir::ci(0, ScalarType::Pred));
    auto element = [&] {
      auto body = [&] {
        bool widen =
            (e.op == "sum" || e.op == "prod") && kir::is_float(m.types[0]) && compute_type(m.types[0]) == m.types[0];
        widen_half_ += widen;
        std::map<std::string, K> lifted = lift(e, m, vector_elem);
        widen_half_ -= widen;
        combine_into(carrier, m, lifted, first_element ? has : std::nullopt);
        if (has) emit(kir::assign(has->reg, kir::ci(1, ScalarType::Pred)));
      };
      if (e.where.empty()) return body();
      emit(kir::if_then(as(lower(e.where[0]), ScalarType::Pred), nested(body)));
    };
    if (coop_top()) {
      coop_reduce(e.op, e.axes, {m.fields, m.types, m.identity, m.combine}, carrier.values, *has, element);
    } else {
      std::vector<kir::Stmt> loop = axis_loops(e.axes, element);
      for (kir::Stmt& s : loop) emit(std::move(s));
    }
    scopes_.back().memo[key] = carrier;
    return carrier;
  }

  static std::vector<std::string> axis_list(const std::vector<tir::Axis>& axes) {
    std::vector<std::string> n;
    for (const tir::Axis& a : axes) n.push_back(a.name);
    return n;
  }

  static std::string axes_names(const std::vector<tir::Axis>& axes) {
    std::vector<std::string> n;
    for (const tir::Axis& a : axes) n.push_back(a.name);
    return fmt::format("{}", fmt::join(n, ", "));
  }

  static std::string render_key(const K& e) {
    // Every field that can tell two expressions apart: a key must never merge different values.
    std::string s =
        fmt::format("{}:{}:{}:{}:{}:{}[{}]:{}:{}:{}:{}:{}(", static_cast<int>(e.kind), static_cast<int>(e.type), e.ival,
                    e.fval, e.name, e.reg.name, e.reg.elem, static_cast<int>(e.special), static_cast<int>(e.un),
                    static_cast<int>(e.bin), static_cast<int>(e.space), e.args.size());
    for (const K& a : e.args) s += render_key(a) + ",";
    return s + ")";
  }

  // Nested loops over `axes` (outermost first) around `body`, as statements.
  template <class F>
  std::vector<kir::Stmt> axis_loops(const std::vector<tir::Axis>& axes, F&& body, size_t k = 0) {
    std::vector<kir::Stmt> out;
    if (k == axes.size()) return out;
    const tir::Axis& a = axes[k];
    // A reduction axis named like an enclosing loop's variable (softmax's c, reduced inside
    // the loop over c that stores y) gets a fresh name instead of shadowing it.
    std::string loop_var = find_index(a.name) ? fresh(a.name) : unclashed(a.name);
    std::vector<kir::Stmt> inner = nested([&] {
      scopes_.back().index[a.name] = kir::var({loop_var}, ScalarType::I64);
      if (k + 1 == axes.size())
        body();
      else
        for (kir::Stmt& s : axis_loops(axes, body, k + 1)) emit(std::move(s));
    });
    out.push_back(
        kir::for_loop(loop_var, ScalarType::I64, kir::ci(0, ScalarType::I64), size_value(a.size), std::move(inner)));
    return out;
  }

  // The lifted element: field -> value, for the current point of the reduction.
  std::map<std::string, K> lift(const Expr& e, const MonoidLowering& m, const K& vector_elem) {
    std::map<std::string, K> params;
    for (size_t i = 0; i < e.args.size() && i < m.lift_params.size(); ++i)
      params[m.lift_params[i]] = let(fresh("term"), lower(with_elem(e.args[i], vector_elem)));
    if (m.axis_param && !e.axes.empty()) params[*m.axis_param] = *find_index(e.axes[0].name);
    std::map<std::string, K> b;
    for (size_t i = 0; i < m.fields.size(); ++i)
      b["b." + m.fields[i]] = as(term_value(m.lift[i], params, m.types[i]), m.types[i]);
    return b;
  }

  // v[b, h, j, :] at element `elem`: the slice replaced by the element index.
  Expr with_elem(const Expr& e, const K& elem) {
    Expr out = tir::map_args(e, [&](const Expr& a) {
      if (a.kind != Expr::Kind::Slice) return with_elem(a, elem);
      Expr r = tir::node_of(a);
      r.kind = Expr::Kind::Reg;
      r.name = "<elem>";
      r.dtype = DType::I64;
      scopes_.back().regs["<elem>"] = elem;
      return r;
    });
    return out;
  }

  // carrier <- combine(carrier, lifted), every field from the old values.
  // With `has` (the fold starts from its first element): the lifted value itself until has.
  void combine_into(Carrier& c, const MonoidLowering& m, const std::map<std::string, K>& lifted,
                    const std::optional<K>& has = std::nullopt) {
    std::map<std::string, K> env = lifted;
    for (size_t i = 0; i < m.fields.size(); ++i) env["a." + m.fields[i]] = c.values[i];
    auto value = [&](size_t i) {
      K v = as(term_value(m.combine[i], env, m.types[i]), m.types[i]);
      return has ? kir::select(*has, v, as(lifted.at("b." + m.fields[i]), m.types[i])) : v;
    };
    if (m.fields.size() == 1) {  // nothing to keep consistent: update in place
      emit(kir::assign(c.values[0].reg, value(0)));
      return;
    }
    std::vector<K> next;
    for (size_t i = 0; i < m.fields.size(); ++i) next.push_back(let(fresh("new_" + m.fields[i]), value(i)));
    for (size_t i = 0; i < m.fields.size(); ++i) emit(kir::assign(c.values[i].reg, next[i]));
  }

  // exp(x - max(..., x, ...)), online softmax's rescale: the maximum n is never below x, so
  // -inf - -inf arises only where n is -inf, and n replaced by 0 there (once, shared by every
  // exp against it) is the exp of a difference's rule at one select a carrier, not one an exp.
  std::optional<K> exp_below_max(const Term& d, const std::map<std::string, K>& env, ScalarType hint) {
    if (d.op != TermOp::Sub || d.args[1].op != TermOp::Max) return std::nullopt;
    const std::string x = d.args[0].str();
    const Term& n = d.args[1];
    if (x != n.args[0].str() && x != n.args[1].str()) return std::nullopt;
    K a = term_value(d.args[0], env, hint), m = term_value(n, env, hint);
    if (!kir::is_float(a.type) || !kir::is_float(m.type)) return std::nullopt;
    ScalarType ct = compute_type(wider(a.type, m.type));
    m = as(m, ct);
    K safe = shared(kir::select(kir::binary(kir::BinOp::Eq, m, kir::cf(-std::numeric_limits<double>::infinity(), ct)),
                                kir::cf(0, ct), m));
    return shared(exp_value(kir::binary(kir::BinOp::Sub, as(a, ct), safe)));
  }

  // A term of the monoid as a kernel expression; `hint` types constants and infinities.
  K term_value(const Term& t, const std::map<std::string, K>& env, ScalarType hint) {
    ScalarType ft = kir::is_float(hint) ? compute_type(hint) : hint;
    switch (t.op) {
      case TermOp::Const:
        if (!kir::is_float(ft) && t.value.den == 1) return kir::ci(t.value.num, ft);  // exact, no double round trip
        return kir::cf(t.value.value(), kir::is_float(ft) ? ft : ScalarType::F32);    // 0.5 is a float literal
      case TermOp::Var: {
        auto it = env.find(t.name);
        if (it == env.end()) internal_error(__FILE__, __LINE__, fmt::format("monoid variable '{}' is unbound", t.name));
        return it->second;
      }
      case TermOp::NegInf:
      case TermOp::PosInf: {
        double inf = std::numeric_limits<double>::infinity();
        return kir::cf(t.op == TermOp::NegInf ? -inf : inf, kir::is_float(ft) ? ft : ScalarType::F32);
      }
      case TermOp::Neg: {
        K a = term_value(t.args[0], env, hint);
        return kir::unary(kir::UnOp::Neg, as(a, compute_type(a.type)));
      }
      case TermOp::Not: return kir::unary(kir::UnOp::Not, as(term_value(t.args[0], env, hint), ScalarType::Pred));
      case TermOp::Exp:
        if (std::optional<K> e = exp_below_max(t.args[0], env, hint)) return *e;
        [[fallthrough]];
      case TermOp::Log:
      case TermOp::Sqrt: {
        K a = term_value(t.args[0], env, hint);
        ScalarType at = kir::is_float(a.type) ? compute_type(a.type) : ScalarType::F32;
        kir::UnOp op = t.op == TermOp::Exp ? kir::UnOp::Exp : t.op == TermOp::Log ? kir::UnOp::Log : kir::UnOp::Sqrt;
        return shared(unary_value(op, as(a, at)));
      }
      case TermOp::Select: {
        K c = as(term_value(t.args[0], env, hint), ScalarType::Pred);
        K a = term_value(t.args[1], env, hint), b = term_value(t.args[2], env, hint);
        ScalarType rt = wider(a.type, b.type);
        if (!kir::is_float(a.type) && !kir::is_float(b.type) && a.type == b.type) rt = a.type;
        return kir::select(c, as(a, rt), as(b, rt));
      }
      case TermOp::Cast:
        return as(term_value(t.args[0], env, hint), scalar_of(parse_dtype(t.name).value_or(DType::I64)));
      case TermOp::IDiv:
      case TermOp::Mod: {  // truncating integer / and %, in the operands' integer type
        K a = term_value(t.args[0], env, hint), b = term_value(t.args[1], env, hint);
        ScalarType it = !kir::is_float(a.type) ? a.type : !kir::is_float(b.type) ? b.type : ScalarType::I64;
        return binop(t.op == TermOp::IDiv ? kir::BinOp::Div : kir::BinOp::Rem, as(a, it), as(b, it), it);
      }
      default: break;
    }
    for (const TermRow& r : kTermBinary)
      if (r.term == t.op) {
        K a = term_value(t.args[0], env, hint), b = term_value(t.args[1], env, hint);
        ScalarType rt = wider(a.type, b.type);
        K v = binop(r.op, a, b, rt);
        return r.term == TermOp::Max || r.term == TermOp::Min ? shared(std::move(v)) : v;
      }
    internal_error(__FILE__, __LINE__, fmt::format("monoid term '{}' has no lowering", t.str()));
  }

  // ---- loop IR statements -----------------------------------------------------------------
  void stmt(const lir::Stmt& s) {
    switch (s.kind) {
      case lir::Stmt::Kind::Compute: {
        if (s.value.kind != Expr::Kind::Reg)
          emit(kir::comment(fmt::format("{} = {}", s.reg, tir::print_expr(s.value))));
        quiet_reduce_ = s.value.kind == Expr::Kind::Reduce;
        K v = lower(s.value);
        scopes_.back().regs[s.reg] = let(unclashed(s.reg), v);
        return;
      }
      case lir::Stmt::Kind::Store: {
        const tir::Tensor& t = *p_.tensors.find(s.tensor);
        std::vector<K> idx;
        for (const tir::Axis& a : s.vars) idx.push_back(*find_index(a.name));
        K v = as(lower(s.value), scalar_of(t.dtype));
        if (!s.atomic.empty()) return emit(atomic_store(s, t, linear_index(t, idx), v));
        if (coop_on()) return coop_store(t, idx, v);
        emit(kir::store(kir::Space::Global, s.tensor, linear_index(t, idx), v));
        return;
      }
      case lir::Stmt::Kind::Loop: return coop_top() ? coop_loop(s) : loop(s);
      case lir::Stmt::Kind::Fold: return fold(s, 1);
    }
  }

  // A split reduction's partial combined into its accumulator (REDUCE=g<N>a).
  static kir::Stmt atomic_store(const lir::Stmt& s, const tir::Tensor& t, K index, K value) {
    std::optional<kir::IntrinsicId> id = kir::atomic_intrinsic(s.atomic, scalar_of(t.dtype));
    if (!id) internal_error(__FILE__, __LINE__, fmt::format("no atomic {} of {}", s.atomic, dtype_name(t.dtype)));
    return kir::intrinsic(*id, {}, {std::move(index), std::move(value)}, {}, s.tensor);
  }

  // `start`/`threads`: COOP's register tiles, strided over the row's threads.
  void loop(const lir::Stmt& s, std::optional<K> start = std::nullopt, int threads = 1) {
    bool carries =
        std::any_of(s.body.begin(), s.body.end(), [](const lir::Stmt& b) { return b.kind == lir::Stmt::Kind::Fold; });
    if (s.tile <= 1 && !carries) {
      emit(kir::comment(fmt::format("for every {} < {}", s.axis.name, s.axis.size)));
      for (kir::Stmt& st : axis_loops({s.axis}, [&] {
             for (const lir::Stmt& b : s.body) stmt(b);
           }))
        emit(std::move(st));
      return;
    }
    // A register tile: tile elements per iteration, each statement unrolled per element,
    // indices clamped so loads stay in bounds and stores guarded for the tail.
    std::string base = s.tile > 1 ? s.axis.name + "0" : s.axis.name;
    K size = size_value(s.axis.size);
    if (s.tile > 1)
      emit(kir::comment(
          fmt::format("{} in register tiles of {} (TILE@{}=f{})", s.axis.name, s.tile, s.axis.name, s.tile)));
    else
      emit(kir::comment(fmt::format("for every {} < {}", s.axis.name, s.axis.size)));
    std::vector<kir::Stmt> body = nested([&] {
      K b = kir::var({base}, ScalarType::I64);
      tile_ = s.tile;
      tile_base_ = b;
      tile_size_ = size;
      tile_axis_ = s.axis.name;
      for (const lir::Stmt& st : s.body) {
        if (st.kind == lir::Stmt::Kind::Fold) {
          fold(st, s.tile);
          continue;
        }
        for (int u = 0; u < s.tile; ++u) {
          K e = s.tile > 1 ? kir::binary(kir::BinOp::Add, b, kir::ci(u, ScalarType::I64)) : b;
          std::vector<kir::Stmt> one = nested([&] {
            bind_tile_element(u);
            scopes_.back().index[s.axis.name] = e;
            stmt(st);
          });
          if (s.tile == 1) {
            for (kir::Stmt& x : one) emit(std::move(x));
            continue;
          }
          emit(kir::if_then(kir::binary(kir::BinOp::Lt, e, size), std::move(one)));
        }
      }
      tile_ = 1;
      tile_arrays_.clear();  // the tile's carrier arrays die with its loop
    });
    kir::Stmt f =
        kir::for_loop(base, ScalarType::I64, start.value_or(kir::ci(0, ScalarType::I64)), size, std::move(body));
    f.step = std::max(1, s.tile) * threads;
    emit(std::move(f));
  }

  // Inside a tile: per-tile carrier registers read as element u.
  void bind_tile_element(int u) {
    for (const auto& [name, reg] : tile_arrays_)
      scopes_.back().regs[name] = kir::var({reg.first, tile_ > 1 ? u : -1}, reg.second);
  }

  void fold(const lir::Stmt& s, int tile) {
    std::vector<std::string> names;
    for (const lir::CarrierField& f : s.fields) names.push_back(f.name);
    emit(kir::comment(fmt::format("one pass over {} carrying ({}) through the proved monoid {}", s.axis.name,
                                  fmt::join(names, ", "), s.monoid)));
    // Carrier registers: per-tile fields are arrays of `tile`.
    std::vector<K> scalars(s.fields.size());
    std::vector<std::string> array_names(s.fields.size());
    for (size_t i = 0; i < s.fields.size(); ++i) {
      const lir::CarrierField& f = s.fields[i];
      ScalarType t = scalar_of(f.dtype);
      K init = as(term_value(s.terms.identity[i], {}, t), t);
      std::string reg = "run_" + f.name;
      if (f.per_tile) {
        emit(kir::decl(reg, t, init, tile));
        array_names[i] = reg;
        tile_arrays_[reg] = {reg, t};
      } else {
        scalars[i] = let(reg, init);
      }
    }
    auto elem_of = [&](size_t i, int u) {
      if (!s.fields[i].per_tile) return scalars[i];
      return kir::var({array_names[i], tile > 1 ? u : -1}, scalar_of(s.fields[i].dtype));
    };
    // Whether this thread's fold combined an element: for COOP's shares, and where the identity
    // must not meet a value (algebra::identity_unsafe: the fold starts from its first element).
    const bool first_element = algebra::identity_unsafe(s.terms);
    const bool per_tile =
        std::any_of(s.fields.begin(), s.fields.end(), [](const lir::CarrierField& f) { return f.per_tile; });
    const bool coop = coop_top() && tile == 1 && !per_tile && s.range.empty();
    std::optional<K> has;
    if (coop || first_element) has = let(fresh("has"), kir::ci(0, ScalarType::Pred));
    auto element = [&] {
      auto body = [&] {
        // Lift the element once for scalar fields, once per tile element for per-tile ones.
        std::vector<std::vector<K>> lifted(s.fields.size());
        for (size_t i = 0; i < s.fields.size(); ++i)
          for (int u = 0; u < (s.fields[i].per_tile ? tile : 1); ++u) {
            if (s.fields[i].per_tile) bind_clamped(u);
            lifted[i].push_back(
                let(fresh("lift_" + s.fields[i].name), as(lower(s.fields[i].lift), scalar_of(s.fields[i].dtype))));
          }
        // New values from the old ones, then assign: the combine reads a whole old carrier.
        std::vector<std::vector<K>> next(s.fields.size());
        for (size_t i = 0; i < s.fields.size(); ++i)
          for (int u = 0; u < (s.fields[i].per_tile ? tile : 1); ++u) {
            std::map<std::string, K> env;
            for (size_t j = 0; j < s.fields.size(); ++j) {
              int uj = s.fields[j].per_tile ? u : 0;
              env["a." + s.fields[j].name] = elem_of(j, s.fields[j].per_tile ? u : 0);
              env["b." + s.fields[j].name] = lifted[j][uj];
            }
            ScalarType t = scalar_of(s.fields[i].dtype);
            K v = as(term_value(s.terms.combine[i], env, t), t);
            if (first_element) v = kir::select(*has, v, lifted[i][s.fields[i].per_tile ? u : 0]);
            next[i].push_back(let(fresh("next_" + s.fields[i].name), v));
          }
        for (size_t i = 0; i < s.fields.size(); ++i)
          for (size_t u = 0; u < next[i].size(); ++u)
            emit(kir::assign(elem_of(i, static_cast<int>(u)).reg, next[i][u]));
        if (has) emit(kir::assign(has->reg, kir::ci(1, ScalarType::Pred)));
      };
      if (s.where.empty()) return body();
      emit(kir::if_then(as(lower(s.where[0]), ScalarType::Pred), nested(body)));
    };
    if (coop) {
      CarrierSpec spec;
      spec.fields = names;
      for (const lir::CarrierField& f : s.fields) spec.types.push_back(scalar_of(f.dtype));
      spec.identity = s.terms.identity;
      spec.combine = s.terms.combine;
      coop_reduce(s.monoid, {s.axis}, spec, scalars, *has, element);
    } else {
      std::vector<kir::Stmt> loop = axis_loops({s.axis}, element);
      if (s.range.size() == 2)  // a split's group: only [lo, hi) of the axis
        for (size_t b = 0; b < 2; ++b) loop.front().args[b] = as(lower(s.range[b]), ScalarType::I64);
      for (kir::Stmt& st : loop) emit(std::move(st));
    }
    for (size_t i = 0; i < s.fields.size(); ++i)
      if (!s.fields[i].per_tile) scopes_.back().regs["run_" + s.fields[i].name] = scalars[i];
    for (const lir::Stmt& r : s.results) stmt(r);
  }

  // The tile element u's index, clamped into the axis so its loads stay in bounds.
  void bind_clamped(int u) {
    if (tile_ == 1) {
      scopes_.back().index[tile_axis_] = tile_base_;
      return;
    }
    K e = kir::binary(kir::BinOp::Add, tile_base_, kir::ci(u, ScalarType::I64));
    K last = kir::binary(kir::BinOp::Sub, tile_size_, kir::ci(1, ScalarType::I64));
    scopes_.back().index[tile_axis_] = kir::binary(kir::BinOp::Min, e, last);
    scopes_.back().memo.clear();
  }

  // ---- kernels ----------------------------------------------------------------------------
  kir::Kernel kernel(const lir::Kernel& k, kir::Program& program) {
    kir::Kernel out;
    std::string part = k.name.empty() ? "" : "_" + k.name;
    uint64_t h = 1469598103934665603ull;
    for (char c : program.knobs + part) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    // A long op or statement name is cut (NVRTC and the driver take kernel names, not novels);
    // the hash then covers the whole name.
    std::string base = p_.tensors.op + part;
    if (base.size() > 96) {
      for (char c : base) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
      base.resize(96);
    }
    out.name = fmt::format("k_{}_{:06x}", base, h & 0xffffff);
    out.doc = k.doc;
    if (knobs_.mma && !k.scalar_tier) {
      std::string why;
      counter_ = 0;
      // The tier builds into a copy: a refusal leaves neither its shared arrays and tensor-map
      // parameters in the kernel the scalar tier then builds, nor its limits and warnings.
      kir::Kernel attempt = out;
      const size_t warnings = program.warnings.size(), limits = program.limits.size(), laws = law_warnings_.size();
      if (mma_kernel(k, attempt, program, why)) {
        collect_params(attempt, program);
        return attempt;
      }
      program.warnings.resize(warnings);
      program.limits.resize(limits);
      law_warnings_.resize(laws);
      program.warnings.push_back(
          {"W054", fmt::format("{} (kernel {}): {}; it runs on the scalar tier", knobs_.atom, out.name, why)});
    }
    out.block_threads = knobs_.block_threads;
    out.min_blocks_per_sm = 1;
    K total = kir::ci(1, ScalarType::I64);
    for (size_t i = 0; i < k.threads.size(); ++i)
      total =
          i == 0 ? size_value(k.threads[i].size) : kir::binary(kir::BinOp::Mul, total, size_value(k.threads[i].size));
    K threads = kir::ci(out.block_threads, ScalarType::I64);
    out.grid_x = kir::binary(
        kir::BinOp::Div, kir::binary(kir::BinOp::Add, total, kir::ci(out.block_threads - 1, ScalarType::I64)), threads);

    std::vector<kir::Stmt> body;
    blocks_ = {&body};
    scopes_ = {{}};
    counter_ = 0;
    if (coop_on()) {
      coop_kernel(k, out, total);
      out.body = std::move(body);
      collect_params(out, program);
      return out;
    }
    emit(kir::comment("the flat thread id and the point of the thread space it owns"));
    K gid =
        let("gid", kir::binary(kir::BinOp::Add,
                               kir::binary(kir::BinOp::Mul, as(kir::special(kir::Special::BlockIdx), ScalarType::I64),
                                           as(kir::special(kir::Special::BlockDim), ScalarType::I64)),
                               as(kir::special(kir::Special::ThreadIdx), ScalarType::I64)));
    std::vector<kir::Stmt> guarded = nested([&] {
      K rest = gid;
      for (size_t i = k.threads.size(); i-- > 0;) {
        const tir::Axis& a = k.threads[i];
        K v = i == 0 ? rest : kir::binary(kir::BinOp::Rem, rest, size_value(a.size));
        scopes_.back().index[a.name] = let(unclashed(a.name), v);
        if (i > 0) rest = kir::binary(kir::BinOp::Div, rest, size_value(a.size));
      }
      for (const lir::Stmt& s : k.body) stmt(s);
    });
    emit(kir::if_then(kir::binary(kir::BinOp::Lt, gid, total), std::move(guarded)));
    out.body = std::move(body);
    collect_params(out, program);
    return out;
  }

  // Parameters: the buffers the body touches, in program order, then every size.
  static void collect_params(kir::Kernel& k, const kir::Program& program) {
    std::set<std::string> loads, stores, sizes;
    auto expr = [&](const K& e) {
      if (e.kind == K::Kind::Load) loads.insert(e.name);
      if (e.kind == K::Kind::Param) sizes.insert(e.name);
    };
    kir::visit(k.body, [&](const kir::Stmt& s) {
      if (s.kind == kir::Stmt::Kind::Store || s.kind == kir::Stmt::Kind::VecStore ||
          (s.kind == kir::Stmt::Kind::Intrinsic && kir::is_atomic(s.intrinsic)))
        stores.insert(s.name);
      if (s.kind == kir::Stmt::Kind::VecLoad) loads.insert(s.name);
    });
    kir::visit_exprs(k.body, expr);
    for (const kir::Buffer& b : program.buffers)
      if (loads.count(b.name) || stores.count(b.name))
        k.params.push_back({kir::Param::Kind::Buffer, b.name, b.type, !stores.count(b.name), {}, {}});
    kir::visit(k.grid_x, expr);
    for (const std::string& s : program.sizes)
      if (sizes.count(s)) k.params.push_back({kir::Param::Kind::Scalar, s, ScalarType::I64, true, {}, {}});
  }

  const lir::Program& p_;
  const CheckedProgram& checked_;
  const Knobs& knobs_;
  int counter_ = 0;
  int widen_half_ = 0;
  bool quiet_reduce_ = false;  // the statement's comment already says what the reduction is
  int tile_ = 1;
  K tile_base_, tile_size_;
  std::string tile_axis_;
  std::map<std::string, std::pair<std::string, ScalarType>> tile_arrays_;

  // ---- COOP=t<N>[/v<V>]: cooperative rows and vector accesses (coop_rows.hpp) -------------
  // A carrier's fields, types and proved identity and combine (over a.<field>, b.<field>).
  struct CarrierSpec {
    std::vector<std::string> fields;
    std::vector<ScalarType> types;
    std::vector<Term> identity, combine;
  };
  bool coop_on() const { return knobs_.coop_threads > 1; }
  bool coop_top() const { return coop_on() && !coop_inner_; }
  void coop_kernel(const lir::Kernel& k, kir::Kernel& out, const K& total);
  void coop_reduce(const std::string& monoid, const std::vector<tir::Axis>& axes, const CarrierSpec& spec,
                   const std::vector<K>& carrier, const K& has, const std::function<void()>& element);
  void coop_split(const tir::Axis& axis, bool contiguous, const std::function<void()>& element);
  void coop_chunk(const tir::Axis& axis, const K& base, const std::function<void()>& element);
  void coop_combine(const std::string& monoid, const CarrierSpec& spec, const std::vector<K>& carrier, const K& has);
  std::vector<K> combine_shares(const CarrierSpec& spec, const std::vector<K>& a, const K& a_has,
                                const std::vector<K>& b, const K& b_has);
  std::vector<K> combine_pair(const CarrierSpec& spec, const std::vector<K>& a, const std::vector<K>& b);
  const MonoidLaws& coop_laws(const std::string& monoid, const CarrierSpec& spec);
  void coop_loop(const lir::Stmt& s);
  void coop_store(const tir::Tensor& t, const std::vector<K>& idx, const K& value);
  std::optional<K> vec_read(const Expr& e);
  bool row_invariant(const Expr& e) const;
  bool vec_stride_ok(const tir::Tensor& t);
  VecChunk::Access vec_access(const tir::Tensor& t, const K& index, const std::string& prefix);
  static K vec_part_index(const VecChunk::Access& a, size_t j);
  K shuffle_xor(const K& value, int mask);

  bool coop_inner_ = false;                                 // lowering one thread's share of a row (no more splitting)
  K coop_lane_, coop_row_ok_, coop_warp_lane_, coop_warp_;  // the thread's place in its row
  std::set<std::string> coop_axes_;                         // the thread-space axes (a row's index variables)
  std::map<std::string, MonoidLaws> laws_;                  // by monoid, as the algebra layer proved it
  std::vector<Warning> law_warnings_;                       // regroupings that rely on assumed laws (W053)
  std::optional<VecChunk> vec_;
  std::vector<K> vec_conds_;  // what the vector path needs at run time (strides % V == 0)
  int vec_used_ = 0;          // vector accesses the current split made
  std::vector<kir::SharedArray>* shared_ = nullptr;
};

}  // namespace emmy::lower::detail

#include "lower/coop_rows.hpp"  // NOLINT(build/include): the COOP members of KernelBuilder
