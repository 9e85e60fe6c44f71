// The reference evaluator's expression compiler: expressions and user-monoid bodies into nodes.
#include "interp/reference_nodes.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"

namespace emmy::reference_detail {
namespace {

Fn binary_fn(const std::string& op, bool integer) {
  static const std::pair<std::string_view, Fn> kOps[] = {
      {"+", Fn::Add}, {"-", Fn::Sub}, {"*", Fn::Mul}, {"%", Fn::Mod}, {"==", Fn::Eq},
      {"!=", Fn::Ne}, {"<", Fn::Lt},  {"<=", Fn::Le}, {">", Fn::Gt},  {">=", Fn::Ge},
  };
  if (op == "/") return integer ? Fn::IDiv : Fn::Div;
  for (const auto& [name, fn] : kOps)
    if (name == op) return fn;
  fail(fmt::format("unsupported operator '{}'", op));
}

Fn call_fn(std::string_view name) {
  static const std::pair<std::string_view, Fn> kFns[] = {
      {"exp", Fn::Exp},     {"exp2", Fn::Exp2},   {"log", Fn::Log},     {"log2", Fn::Log2},       {"sqrt", Fn::Sqrt},
      {"rsqrt", Fn::Rsqrt}, {"tanh", Fn::Tanh},   {"erf", Fn::Erf},     {"sigmoid", Fn::Sigmoid}, {"abs", Fn::Abs},
      {"max", Fn::Max},     {"min", Fn::Min},     {"bool", Fn::ToBool}, {"i32", Fn::ToI32},       {"i64", Fn::ToI64},
      {"f16", Fn::ToF16},   {"bf16", Fn::ToBf16}, {"f32", Fn::ToF32},   {"f64", Fn::ToF64},
  };
  for (const auto& [n, fn] : kFns)
    if (n == name) return fn;
  fail(fmt::format("unsupported function '{}'", name));
}

bool is_comparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

// The width of an elementwise result: vectors must agree, scalars broadcast.
size_t joint_width(const std::vector<const Node*>& args) {
  size_t w = 1;
  for (const Node* a : args) {
    if (a->record()) fail("a monoid carrier used as a value; select a field with '.'");
    if (a->width() == 1) continue;
    if (w != 1 && w != a->width()) fail(fmt::format("vectors of different lengths: {} and {}", w, a->width()));
    w = a->width();
  }
  return w;
}

}  // namespace

// ---- expression compiler --------------------------------------------------------------------

NodePtr ExprCompiler::compile(const ast::Expr& e) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Int: return std::make_unique<ConstNode>(static_cast<double>(e.int_value), Type::scalar(DType::I64, true));
    case K::Float: return std::make_unique<ConstNode>(e.float_value, Type::scalar(DType::F32, true));
    case K::Inf: return std::make_unique<ConstNode>(kInf, Type::scalar(DType::F32, true));
    case K::Bool: return std::make_unique<ConstNode>(e.int_value ? 1.0 : 0.0, Type::scalar(DType::Bool));
    case K::Name: return name(e);
    case K::Index: return index(e);
    case K::Field: return field(e);
    case K::Slice: fail("a slice ':' outside the vector argument of a monoid reduction");
    case K::Unary: return unary(e);
    case K::Binary: return binary(e);
    case K::Call: return call(e);
    case K::Reduce: return reduce(e);
    case K::Tuple: fail("a tuple outside a monoid's identity, lift or yield");
  }
  fail("unknown expression kind");
}

NodePtr ExprCompiler::compile_scalar(const ast::Expr& e, const char* what) {
  NodePtr n = compile(e);
  if (n->width() != 1 || n->record()) fail(fmt::format("{} must be a scalar", what));
  return n;
}

std::vector<CarrierPart> ExprCompiler::carrier(const ast::Expr& e, const RecordLayout& layout, const char* what) {
  std::vector<const ast::Expr*> parts;
  if (e.kind == ast::ExprKind::Tuple)
    for (const ast::Expr& a : e.args) parts.push_back(&a);
  else
    parts.push_back(&e);
  if (parts.size() != layout.fields.size())
    fail(fmt::format("{} of monoid {} has {} components for {} fields", what, layout.monoid, parts.size(),
                     layout.fields.size()));
  std::vector<CarrierPart> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    const FieldSlot& f = layout.fields[i];
    NodePtr v = compile(*parts[i]);
    if (v->record() || (v->width() != 1 && v->width() != f.width))
      fail(fmt::format("component {} of the {} of monoid {} does not fit field '{}'", i + 1, what, layout.monoid,
                       f.name));
    out.push_back({std::move(v), f.offset, f.width});
  }
  return out;
}

NodePtr ExprCompiler::index(const ast::Expr& e) { return vector_index(e); }

NodePtr ExprCompiler::reduce(const ast::Expr& e) { fail(fmt::format("a reduction ({}) inside a monoid", e.text)); }

NodePtr ExprCompiler::vector_index(const ast::Expr& e) {
  NodePtr base = compile(e.args[0]);
  if (base->type().kind != Type::Kind::Vector || base->record())
    fail(fmt::format("a {} cannot be indexed", base->type().str()));
  if (e.args.size() != 2) fail("a vector takes one index");
  NodePtr ix = compile_scalar(e.args[1], "a vector index");
  if (auto* l = dynamic_cast<LoadNode*>(base.get()); l && l->take_index(ix)) return base;
  return std::make_unique<VectorIndexNode>(std::move(base), std::move(ix), frame_);
}

NodePtr ExprCompiler::field(const ast::Expr& e) {
  NodePtr base = compile(e.args[0]);
  const LayoutPtr layout = base->record();
  if (!layout) fail(fmt::format("no field '{}': the value is a {}, not a monoid carrier", e.text, base->type().str()));
  const FieldSlot* f = layout->find(e.text);
  if (!f) fail(fmt::format("monoid {} has no field '{}'", layout->monoid, e.text));
  Type t = f->vector ? Type::vector(f->dtype, Size{"", static_cast<int64_t>(f->width)}) : Type::scalar(f->dtype);
  if (base->take_part(f->offset, f->width, t)) return base;
  return std::make_unique<FieldNode>(std::move(base), f->offset, f->width, t, frame_);
}

NodePtr ExprCompiler::unary(const ast::Expr& e) {
  NodePtr a = compile(e.args[0]);
  size_t w = joint_width({a.get()});
  Type t = a->type();
  if (e.text == "!") return std::make_unique<MapNode>(Fn::Not, vec(std::move(a)), Type::scalar(DType::Bool), w, frame_);
  if (e.text == "-") return std::make_unique<MapNode>(Fn::Neg, vec(std::move(a)), t, w, frame_);
  fail(fmt::format("unsupported unary operator '{}'", e.text));
}

NodePtr ExprCompiler::binary(const ast::Expr& e, bool in_exp) {
  NodePtr a = compile(e.args[0]);
  NodePtr b = compile(e.args[1]);
  size_t w = joint_width({a.get(), b.get()});
  if (e.text == "&&" || e.text == "||") {
    if (w != 1) fail(fmt::format("'{}' of vectors", e.text));
    return std::make_unique<LogicNode>(e.text == "&&", std::move(a), std::move(b));
  }
  Type t = promote(a->type(), b->type());
  if (is_comparison(e.text)) {
    if (w != 1) fail("a comparison of vectors");
    t = Type::scalar(DType::Bool);
  }
  Fn fn = binary_fn(e.text, is_int(materialize(t)));
  if (in_exp && fn == Fn::Sub) fn = Fn::ExpSub;
  if (fn == Fn::Mod && !is_int(materialize(t))) fail("'%' of non-integers");
  return std::make_unique<MapNode>(fn, vec(std::move(a), std::move(b)), t, w, frame_, e.range);
}

NodePtr ExprCompiler::call(const ast::Expr& e) {
  const BuiltinFn* fn = find_builtin_fn(e.text);
  if (!fn) return call_other(e);
  if (static_cast<int>(e.args.size()) != fn->arity)
    fail(fmt::format("{} takes {} arguments, got {}", e.text, fn->arity, e.args.size()));
  std::vector<NodePtr> args;
  const bool exp = e.text == "exp" || e.text == "exp2";
  for (const ast::Expr& a : e.args)
    args.push_back(exp && a.kind == ast::ExprKind::Binary && a.text == "-" ? binary(a, true) : compile(a));
  std::vector<const Node*> raw;
  for (const NodePtr& a : args) raw.push_back(a.get());
  size_t w = joint_width(raw);
  Type t = args[0]->type();
  switch (fn->rule) {
    case FnRule::FloatUnary:
      if (!is_float(t.dtype)) {
        t.dtype = DType::F32;
        t.weak = false;
      }
      break;
    case FnRule::SameAsArgs:
      for (size_t i = 1; i < args.size(); ++i) t = promote(t, args[i]->type());
      break;
    case FnRule::Select: {
      if (args[0]->width() != 1) fail("select's condition must be a scalar");
      Type r = args[1]->type().dtype == DType::Bool ? args[1]->type() : promote(args[1]->type(), args[2]->type());
      if (w > 1 && r.kind != Type::Kind::Vector) r = Type::vector(r.dtype, Size{"", static_cast<int64_t>(w)});
      return std::make_unique<SelectNode>(std::move(args[0]), std::move(args[1]), std::move(args[2]), r, w);
    }
    case FnRule::Cast:
      t.dtype = *parse_dtype(e.text);
      t.weak = false;
      break;
  }
  return std::make_unique<MapNode>(call_fn(e.text), std::move(args), t, w, frame_);
}

NodePtr ExprCompiler::call_other(const ast::Expr& e) { fail(fmt::format("unknown function '{}'", e.text)); }

std::vector<NodePtr> ExprCompiler::vec(NodePtr a, NodePtr b) {
  std::vector<NodePtr> v;
  v.push_back(std::move(a));
  if (b) v.push_back(std::move(b));
  return v;
}

// ---- monoid bodies ----------------------------------------------------------------------------

namespace {

// A name inside a monoid body: a lift parameter, a or b of combine, or a let of combine.
struct Local {
  size_t offset = 0;
  size_t width = 1;
  Type type;
  LayoutPtr record;
};

class MonoidCompiler : public ExprCompiler {
 public:
  MonoidCompiler(FrameLayout& frame, std::string monoid) : ExprCompiler(frame), monoid_(std::move(monoid)) {}
  void define(const std::string& name, Local local) { locals_[name] = std::move(local); }

 protected:
  NodePtr name(const ast::Expr& e) override {
    auto it = locals_.find(e.text);
    if (it == locals_.end()) fail(fmt::format("unknown name '{}' in monoid {}", e.text, monoid_));
    const Local& l = it->second;
    return std::make_unique<LocalNode>(l.offset, l.width, l.type, l.record);
  }

 private:
  std::string monoid_;
  std::map<std::string, Local> locals_;
};

Type field_type(const ast::Field& f, size_t width) {
  DType d = parse_dtype(f.dtype.name).value_or(DType::F32);
  return f.vector_dim ? Type::vector(d, Size{"", static_cast<int64_t>(width)}) : Type::scalar(d);
}

// The width of a field or lift parameter, with the monoid's vector dims bound at the use site.
size_t declared_width(const ast::Field& f, const std::map<std::string, int64_t>& dims) {
  if (!f.vector_dim) return 1;
  if (f.vector_dim->is_literal()) return static_cast<size_t>(f.vector_dim->value);
  auto it = dims.find(f.vector_dim->name);
  if (it == dims.end())
    fail(fmt::format("the length {} of field '{}' is not bound by the arguments", f.vector_dim->name, f.name.name));
  return static_cast<size_t>(it->second);
}

LayoutPtr record_layout(const ast::MonoidDecl& d, const std::map<std::string, int64_t>& dims) {
  auto layout = std::make_shared<RecordLayout>();
  layout->monoid = d.name.name;
  for (const ast::Field& f : d.fields) {
    size_t w = declared_width(f, dims);
    layout->fields.push_back(
        {f.name.name, parse_dtype(f.dtype.name).value_or(DType::F32), layout->width, w, f.vector_dim.has_value()});
    layout->width += w;
  }
  return layout;
}

}  // namespace

Type record_type(const std::string& monoid) {
  Type t;
  t.kind = Type::Kind::Record;
  t.monoid = monoid;
  return t;
}

CompiledMonoid compile_monoid(const ast::MonoidDecl& d, const std::vector<size_t>& arg_widths, FrameLayout& frame) {
  const std::vector<ast::Field>& params = d.lift_params ? *d.lift_params : d.fields;
  std::map<std::string, int64_t> dims;
  for (size_t k = 0; k < params.size(); ++k) {
    const ast::Field& p = params[k];
    if (!p.vector_dim) {
      if (arg_widths[k] != 1) fail(fmt::format("argument {} of {} must be a scalar", k + 1, d.name.name));
      continue;
    }
    auto n = static_cast<int64_t>(arg_widths[k]);
    int64_t want = p.vector_dim->is_literal() ? p.vector_dim->value : dims.emplace(p.vector_dim->name, n).first->second;
    if (n != want)
      fail(fmt::format("argument {} of {} has length {}, which does not fit {}", k + 1, d.name.name, n,
                       p.vector_dim->is_literal() ? std::to_string(p.vector_dim->value) : p.vector_dim->name));
  }
  CompiledMonoid m;
  m.layout = record_layout(d, dims);
  size_t w = m.layout->width;
  m.acc = frame.region(w);
  m.a = frame.region(w);
  m.b = frame.region(w);
  m.tmp = frame.region(w);
  m.has_lift = d.lift_value.has_value();
  std::string why;
  if (std::optional<algebra::MonoidTerms> terms = algebra::monoid_terms(d, why))
    m.first_element = algebra::identity_unsafe(*terms);
  if (!d.identity) fail(fmt::format("monoid {} has no identity", d.name.name));
  if (!d.has_combine || !d.combine_yield) fail(fmt::format("monoid {} has no combine", d.name.name));

  MonoidCompiler identity(frame, d.name.name);
  m.identity = identity.carrier(*d.identity, *m.layout, "identity");

  MonoidCompiler lift(frame, d.name.name);
  size_t at = m.b;
  for (size_t k = 0; k < params.size(); ++k) {
    size_t pw = arg_widths[k];
    size_t offset = m.has_lift ? frame.region(pw) : at;
    at += pw;
    m.arg_offsets.push_back(offset);
    lift.define(params[k].name.name, Local{offset, pw, field_type(params[k], pw), nullptr});
  }
  if (m.has_lift) m.lift = lift.carrier(*d.lift_value, *m.layout, "lift");

  MonoidCompiler combine(frame, d.name.name);
  combine.define(d.combine_lhs.name, Local{m.a, w, record_type(d.name.name), m.layout});
  combine.define(d.combine_rhs.name, Local{m.b, w, record_type(d.name.name), m.layout});
  for (const ast::LetStmt& let : d.combine_lets) {
    NodePtr v = combine.compile(let.value);
    if (v->record()) fail(fmt::format("let {} of monoid {} holds a carrier", let.name.name, d.name.name));
    size_t offset = frame.region(v->width());
    combine.define(let.name.name, Local{offset, v->width(), v->type(), nullptr});
    m.lets.emplace_back(std::move(v), offset);
  }
  m.yield = combine.carrier(*d.combine_yield, *m.layout, "yield");
  return m;
}

}  // namespace emmy::reference_detail
