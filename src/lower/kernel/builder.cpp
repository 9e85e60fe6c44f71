// The kernel builder's core: names and register scopes, sizes and addresses, and the lowering
// of tensor-IR expressions to kernel-IR values.
#include "lower/kernel/builder.hpp"

namespace emmy::lower::detail {

kir::Program KernelBuilder::run() {
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
  const bool tiled = std::any_of(plans_.begin(), plans_.end(), [](const KernelPlan& p) {
    return p.tier == KernelPlan::Tier::MmaFold || p.tier == KernelPlan::Tier::MmaContraction;
  });
  if (!tiled) out.warnings.insert(out.warnings.end(), untileable_.begin(), untileable_.end());
  out.warnings.insert(out.warnings.end(), law_warnings_.begin(), law_warnings_.end());
  return out;
}

K KernelBuilder::exp_value(K x) const {
  if (!knobs_.fast_exp || x.type != ScalarType::F32) return kir::unary(kir::UnOp::Exp, std::move(x));
  return kir::unary(kir::UnOp::Exp2Ftz, kir::binary(kir::BinOp::Mul, std::move(x), kir::cf(kLog2e, ScalarType::F32)));
}

K KernelBuilder::unary_value(kir::UnOp op, K x) {
  // sigmoid(x) = 1 / (1 + exp(-x)): under FAST_EXP its exp is exp_value's too.
  if (op == kir::UnOp::Sigmoid && knobs_.fast_exp && x.type == ScalarType::F32) {
    const K one = kir::cf(1, ScalarType::F32);
    return kir::binary(kir::BinOp::Div, one,
                       kir::binary(kir::BinOp::Add, one, exp_value(kir::unary(kir::UnOp::Neg, std::move(x)))));
  }
  if (op != kir::UnOp::Exp && op != kir::UnOp::Exp2) return kir::unary(op, std::move(x));
  K* d = &x;
  while (d->kind == K::Kind::Cast) d = &d->args.mut(0);
  if (d->kind == K::Kind::Binary && d->bin == kir::BinOp::Sub && kir::is_float(d->type)) {
    auto operand = [&](K v) { return v.kind == K::Kind::Var || v.kind == K::Kind::Const ? v : shared(std::move(v)); };
    K a = operand(d->args[0]), b = operand(d->args[1]);
    *d = kir::exp_difference(std::move(a), std::move(b));
  }
  return op == kir::UnOp::Exp ? exp_value(std::move(x)) : kir::unary(op, std::move(x));
}

std::string KernelBuilder::unclashed(std::string name) const {
  auto taken = [&](const std::string& n) {
    if (std::count(p_.tensors.sizes.begin(), p_.tensors.sizes.end(), n)) return true;
    const tir::Tensor* t = p_.tensors.find(n);
    return t && (t->role != tir::Tensor::Role::Intermediate ||
                 std::count(p_.materialized.begin(), p_.materialized.end(), n));
  };
  while (taken(name)) name += "_";
  return name;
}

const K* KernelBuilder::find_index(const std::string& name, bool as_value) const {
  for (size_t i = scopes_.size(); i-- > 0;) {
    if (as_value)
      if (auto it = scopes_[i].value.find(name); it != scopes_[i].value.end()) return &it->second;
    if (auto it = scopes_[i].index.find(name); it != scopes_[i].index.end()) return &it->second;
  }
  return nullptr;
}

const K* KernelBuilder::find_reg(const std::string& name) const {
  for (size_t i = scopes_.size(); i-- > 0;)
    if (auto it = scopes_[i].regs.find(name); it != scopes_[i].regs.end()) return &it->second;
  return nullptr;
}

const Carrier* KernelBuilder::find_memo(const std::string& key) const {
  for (size_t i = scopes_.size(); i-- > 0;)
    if (auto it = scopes_[i].memo.find(key); it != scopes_[i].memo.end()) return &it->second;
  return nullptr;
}

const K* KernelBuilder::find_reciprocal(const K& divisor) const {
  if (!kir::is_float(divisor.type)) return nullptr;
  const std::string key = render_key(divisor);
  for (size_t i = scopes_.size(); i-- > 0;)
    if (auto it = scopes_[i].reciprocal.find(key); it != scopes_[i].reciprocal.end()) return &it->second;
  return nullptr;
}

K KernelBuilder::shared(K value) {
  std::string key = render_key(value);
  for (size_t i = scopes_.size(); i-- > 0;)
    if (auto it = scopes_[i].cse.find(key); it != scopes_[i].cse.end()) return it->second;
  K reg = let(fresh("t"), std::move(value));
  scopes_.back().cse[key] = reg;
  return reg;
}

K KernelBuilder::let(const std::string& name, K value) {
  ScalarType t = value.type;
  emit(kir::decl(name, t, std::move(value)));
  return kir::var({name}, t);
}

K KernelBuilder::size_value(const std::string& size) {
  if (!size.empty() && std::isdigit(static_cast<unsigned char>(size[0])))
    return kir::ci(std::stoll(size), ScalarType::I64);
  return kir::param(size, ScalarType::I64);
}

K KernelBuilder::linear_index(const tir::Tensor& t, const std::vector<K>& idx) const {
  if (idx.empty()) return kir::ci(0, ScalarType::I64);
  K acc = as(idx[0], ScalarType::I64);
  for (size_t k = 1; k < idx.size(); ++k)
    acc = kir::binary(kir::BinOp::Add, kir::binary(kir::BinOp::Mul, std::move(acc), size_value(t.dims[k])),
                      as(idx[k], ScalarType::I64));
  return acc;
}

K KernelBuilder::subscript(const tir::Tensor& t, const Expr& index, size_t k) {
  K v = lower(index);
  if (index.kind == Expr::Kind::Index || v.kind == K::Kind::Const) return v;
  const ScalarType I = ScalarType::I64;
  return kir::binary(kir::BinOp::Min, kir::binary(kir::BinOp::Max, as(std::move(v), I), kir::ci(0, I)),
                     kir::binary(kir::BinOp::Sub, size_value(t.dims[k]), kir::ci(1, I)));
}

bool KernelBuilder::in_global(const std::string& name) const {
  const tir::Tensor* t = p_.tensors.find(name);
  return t && (t->role != tir::Tensor::Role::Intermediate ||
               std::count(p_.materialized.begin(), p_.materialized.end(), name));
}

K KernelBuilder::lower(const Expr& e) {
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
      if (const K* v = find_index(e.name, address_depth_ == 0)) return *v;
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
      K lhs = lower(e.args[0]);
      const bool lazy = *op == kir::BinOp::And || *op == kir::BinOp::Or;  // the right operand may not run
      lazy_ += lazy;
      K rhs = lower(e.args[1]);
      lazy_ -= lazy;
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

namespace {

const Expr& strip_float_casts(const Expr& e) {
  if (e.kind != Expr::Kind::Call || e.args.size() != 1) return e;
  const std::optional<DType> d = parse_dtype(e.op);
  if (!d || !kir::is_float(scalar_of(*d))) return e;
  return strip_float_casts(e.args[0]);
}

}  // namespace

std::optional<K> KernelBuilder::exp_below_row_max(const Expr& e, ScalarType t) {
  const Expr& d = strip_float_casts(e.args[0]);
  if (d.kind != Expr::Kind::Binary || d.op != "-") return std::nullopt;
  const Expr& m = strip_float_casts(d.args[1]);
  if (m.kind != Expr::Kind::Reg) return std::nullopt;
  const Expr* max = nullptr;
  for (size_t i = scopes_.size(); i-- > 0 && !max;)
    if (auto it = scopes_[i].maxima.find(m.name); it != scopes_[i].maxima.end()) max = &it->second;
  if (!max) return std::nullopt;
  const Expr& a = strip_float_casts(d.args[0]);
  const Expr& element = strip_float_casts(max->args[0]);
  if (tir::print_expr(a) != tir::print_expr(element)) return std::nullopt;
  // a ranges over the max's elements: its axis bound here to the same extent, every other index
  // the thread's own (bound by no loop or reduction since).
  const tir::Axis& axis = max->axes[0];
  auto bound =
      std::find_if(bound_axes_.rbegin(), bound_axes_.rend(), [&](const tir::Axis& b) { return b.name == axis.name; });
  if (bound == bound_axes_.rend() || bound->size != axis.size) return std::nullopt;
  const bool own_indices = !tir::any_node(element, [&](const Expr& x) {
    return x.kind == Expr::Kind::Index && x.name != axis.name &&
           std::any_of(bound_axes_.begin(), bound_axes_.end(), [&](const tir::Axis& b) { return b.name == x.name; });
  });
  if (!own_indices || !kir::is_float(compute_type(t))) return std::nullopt;
  const ScalarType ct = compute_type(t);
  const K safe = finite_max(lower(d.args[1]), ct);
  return as(exp_value(kir::binary(kir::BinOp::Sub, as(lower(d.args[0]), ct), safe)), t);
}

K KernelBuilder::call(const Expr& e, ScalarType t) {
  if (std::optional<std::string> key = kept_value_key(e, t))
    return kept_value(*key, t, [&] { return call_value(e, t); });
  return call_value(e, t);
}

K KernelBuilder::call_value(const Expr& e, ScalarType t) {
  if (e.op == "exp")
    if (std::optional<K> v = exp_below_row_max(e, t)) return *v;
  for (const UnaryRow& r : kUnaryCalls)
    if (r.name == e.op) return as(unary_value(r.op, as(lower(e.args[0]), compute_type(t))), t);
  if (e.op == "log2")
    return as(kir::binary(kir::BinOp::Mul, kir::unary(kir::UnOp::Log, as(lower(e.args[0]), compute_type(t))),
                          kir::cf(1.0 / std::log(2.0), compute_type(t))),
              t);
  if (e.op == "max" || e.op == "min")
    return binop(e.op == "max" ? kir::BinOp::Max : kir::BinOp::Min, lower(e.args[0]), lower(e.args[1]), t);
  if (e.op == "select") {  // (each arm runs only where it is taken)
    K cond = as(lower(e.args[0]), ScalarType::Pred);
    ++lazy_;
    K a = as(lower(e.args[1]), t), b = as(lower(e.args[2]), t);
    --lazy_;
    return kir::select(cond, a, b);
  }
  if (parse_dtype(e.op)) return as(lower(e.args[0]), t);
  throw LowerError(fmt::format("the function '{}' has no scalar lowering yet", e.op));
}

K KernelBuilder::read(const Expr& e) {
  if (in_global(e.name)) {
    struct InAddress {  // the subscripts are addresses: their indices take the clamped bindings
      int& depth;
      explicit InAddress(int& d) : depth(++d) {}
      ~InAddress() { --depth; }
    } in_address(address_depth_);
    if (vec_)
      if (std::optional<K> v = vec_read(e)) return *v;
    const tir::Tensor& t = *p_.tensors.find(e.name);
    if (!t.record.empty()) internal_error(__FILE__, __LINE__, fmt::format("carrier '{}' read as a value", e.name));
    std::vector<K> idx;
    for (size_t k = 0; k < e.args.size(); ++k) idx.push_back(subscript(t, e.args[k], k));
    if (std::optional<K> kept = prefetched_read(t, idx)) return *kept;
    return load_input(e.name, linear_index(t, idx), scalar_of(t.dtype));
  }
  if (const K* r = find_reg(e.name); r && is_own_row(e)) return *r;
  return lower(inline_def(e));
}

bool KernelBuilder::is_own_row(const Expr& e) const {
  const tir::Stmt* def = p_.tensors.def(e.name);
  if (!def) return false;
  for (size_t k = 0; k < e.args.size(); ++k)
    if (e.args[k].kind != Expr::Kind::Index || e.args[k].name != def->vars[k].name) return false;
  return true;
}

Expr KernelBuilder::inline_def(const Expr& e) {
  const tir::Stmt* def = p_.tensors.def(e.name);
  if (!def) internal_error(__FILE__, __LINE__, fmt::format("'{}' has no definition", e.name));
  std::vector<std::pair<std::string, Expr>> by;
  for (size_t k = 0; k < def->vars.size(); ++k) by.emplace_back(def->vars[k].name, e.args[k]);
  return fresh_axes(tir::substitute(def->value, by));
}

Expr KernelBuilder::fresh_axes(const Expr& e) {
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

Carrier KernelBuilder::record(const Expr& e, const std::optional<K>& elem) {
  if (e.kind == Expr::Kind::Reduce) return reduce(e, elem);
  if (e.kind == Expr::Kind::Read && !in_global(e.name)) return record(inline_def(e), elem);
  throw LowerError("a monoid carrier must come from a reduction");
}

}  // namespace emmy::lower::detail
