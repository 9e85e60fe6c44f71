// Reductions in the kernel builder: a monoid's carriers, its lifted elements and its proved
// combine and identity as kernel-IR values, serial over the reduced axes.
#include "lower/kernel/builder.hpp"

#include <charconv>
#include <cmath>
#include <iterator>

namespace emmy::lower::detail {

std::string KernelBuilder::result_field(const Expr& e) {
  const BuiltinMonoid* b = builtin_monoid(e.op);
  return b ? std::string(b->result) : std::string();
}

MonoidLowering KernelBuilder::monoid_of(const Expr& e) {
  if (const BuiltinMonoid* b = builtin_monoid(e.op)) {
    std::vector<ScalarType> arg_types;
    for (const Expr& a : e.args) arg_types.push_back(scalar_of(a.dtype));
    return b->lowering(scalar_of(e.dtype), arg_types);
  }
  auto it = checked_.monoids.find(e.op);
  if (it == checked_.monoids.end()) throw LowerError(fmt::format("unknown monoid '{}'", e.op));
  return user_monoid(*it->second.decl);
}

// A field whose combine selects one of its operands (max, min) is exact in any width: a 16-bit
// float field folds in f32 (no rounding back after each element) and is rounded where it is
// stored. The same value: rounding to 16 bits is monotone, so it commutes with max and min.
MonoidLowering KernelBuilder::widen_selections(MonoidLowering m) {
  for (size_t i = 0; i < m.fields.size(); ++i) {
    const Term& c = m.combine[i];
    const bool selects = (c.op == TermOp::Max || c.op == TermOp::Min) && c.args.size() == 2 &&
                         c.args[0].op == TermOp::Var && c.args[0].name == "a." + m.fields[i] &&
                         c.args[1].op == TermOp::Var && c.args[1].name == "b." + m.fields[i];
    if (selects && (m.types[i] == ScalarType::F16 || m.types[i] == ScalarType::BF16)) m.types[i] = ScalarType::F32;
  }
  return m;
}

Carrier KernelBuilder::reduce(const Expr& e, const std::optional<K>& elem) {
  std::string key = tir::print_expr(e) + (elem ? "@" + render_key(*elem) : "");
  if (const Carrier* c = find_memo(key)) return *c;
  MonoidLowering m = widen_selections(monoid_of(e));
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
  const algebra::MonoidTerms terms = terms_of(e.op, m);
  const bool first_element = algebra::identity_unsafe(terms);
  std::optional<K> has;
  if ((coop_top() && !algebra::identity_exact(terms)) || first_element)
    has = let(fresh("has"), kir::ci(0, ScalarType::Pred));
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
  AxesBound bound(bound_axes_, e.axes);
  if (coop_top()) {
    MonoidLowering shares = m;  // (its laws proved without the lift's domain)
    shares.lift.clear();
    coop_reduce(e.op, e.axes, shares, carrier.values, has, element);
  } else {
    std::vector<kir::Stmt> loop = axis_loops(e.axes, element);
    for (kir::Stmt& s : loop) emit(std::move(s));
  }
  scopes_.back().memo[key] = carrier;
  return carrier;
}

std::vector<std::string> KernelBuilder::axis_list(const std::vector<tir::Axis>& axes) {
  std::vector<std::string> n;
  for (const tir::Axis& a : axes) n.push_back(a.name);
  return n;
}

std::string KernelBuilder::axes_names(const std::vector<tir::Axis>& axes) {
  std::vector<std::string> n;
  for (const tir::Axis& a : axes) n.push_back(a.name);
  return fmt::format("{}", fmt::join(n, ", "));
}

namespace {

void append_int(std::string& s, int64_t v) {
  char buf[24];
  s.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// `kind:type:ival:fval:name:reg[elem]:special:un:bin:space:nargs(arg,arg,)`, into one buffer. (The
// text, not just its uniqueness, is kept: the lane forms' maps order their terms by it.)
void append_key(std::string& s, const kir::Expr& e) {
  for (int64_t v : {int64_t{static_cast<int>(e.kind)}, int64_t{static_cast<int>(e.type)}, e.ival}) {
    append_int(s, v);
    s += ':';
  }
  if (e.fval == 0 && !std::signbit(e.fval))
    s += '0';
  else
    fmt::format_to(std::back_inserter(s), "{}", e.fval);
  s += ':';
  s += e.name;
  s += ':';
  s += e.reg.name;
  s += '[';
  append_int(s, e.reg.elem);
  s += ']';
  for (int v :
       {static_cast<int>(e.special), static_cast<int>(e.un), static_cast<int>(e.bin), static_cast<int>(e.space)}) {
    s += ':';
    append_int(s, v);
  }
  s += ':';
  append_int(s, static_cast<int64_t>(e.args.size()));
  s += '(';
  for (const kir::Expr& a : e.args) {
    append_key(s, a);
    s += ',';
  }
  s += ')';
}

}  // namespace

std::string KernelBuilder::render_key(const K& e) {
  // Every field that can tell two expressions apart: a key must never merge different values.
  std::string s;
  append_key(s, e);
  return s;
}

std::map<std::string, K> KernelBuilder::lift(const Expr& e, const MonoidLowering& m, const K& vector_elem) {
  std::map<std::string, K> params;
  for (size_t i = 0; i < e.args.size() && i < m.lift_params.size(); ++i)
    params[m.lift_params[i]] = let(fresh("term"), lower(with_elem(e.args[i], vector_elem)));
  if (m.axis_param && !e.axes.empty()) params[*m.axis_param] = *find_index(e.axes[0].name);
  std::map<std::string, K> b;
  for (size_t i = 0; i < m.fields.size(); ++i)
    b["b." + m.fields[i]] = as(term_value(m.lift[i], params, m.types[i]), m.types[i]);
  return b;
}

// A nested reduction's slices are its own (sum(e: softmax_pv(j: s, v[j, :]).o[e] * w[e]): the
// inner lift's slice is taken at e by the Field read, not at the outer sum's element).
Expr KernelBuilder::with_elem(const Expr& e, const K& elem) {
  Expr out = tir::map_args(e, [&](const Expr& a) {
    if (a.kind == Expr::Kind::Reduce) return a;
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

void KernelBuilder::combine_into(Carrier& c, const MonoidLowering& m, const std::map<std::string, K>& lifted,
                                 const std::optional<K>& has) {
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

std::optional<K> KernelBuilder::exp_below_max(const Term& d, const std::map<std::string, K>& env, ScalarType hint) {
  if (d.op != TermOp::Sub || d.args[1].op != TermOp::Max) return std::nullopt;
  const std::string x = d.args[0].str();
  const Term& n = d.args[1];
  if (x != n.args[0].str() && x != n.args[1].str()) return std::nullopt;
  K a = term_value(d.args[0], env, hint), m = term_value(n, env, hint);
  if (!kir::is_float(a.type) || !kir::is_float(m.type)) return std::nullopt;
  ScalarType ct = compute_type(wider(a.type, m.type));
  K safe = finite_max(m, ct);
  return shared(exp_value(kir::binary(kir::BinOp::Sub, as(a, ct), safe)));
}

K KernelBuilder::finite_max(const K& m, ScalarType ct) {
  const K mc = as(m, ct);
  return shared(kir::select(kir::binary(kir::BinOp::Eq, mc, kir::cf(-std::numeric_limits<double>::infinity(), ct)),
                            kir::cf(0, ct), mc));
}

K KernelBuilder::term_value(const Term& t, const std::map<std::string, K>& env, ScalarType hint) {
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
    case TermOp::Cast: return as(term_value(t.args[0], env, hint), scalar_of(parse_dtype(t.name).value_or(DType::I64)));
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

}  // namespace emmy::lower::detail
