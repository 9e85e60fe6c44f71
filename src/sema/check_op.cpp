// Checks one op: names, dtypes, index variables bound to sizes, reductions and outputs.
#include <cctype>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "sema/op_checker.hpp"
#include "support/limits.hpp"

namespace emmy::sema {
namespace op_check {

std::string sizes_str(const std::vector<Size>& s) {
  std::string out;
  for (const Size& x : s) out += (out.empty() ? "" : ", ") + x.str();
  return "[" + out + "]";
}

// A shape whose literal dims alone hold more than kMaxElements (2^60) is refused (E049).

bool literal_elements_fit(const std::vector<Size>& shape) {
  int64_t n = 1;
  for (const Size& s : shape)
    if (s.symbol.empty() && s.literal > 0 && (__builtin_mul_overflow(n, s.literal, &n) || n > kMaxElements))
      return false;
  return true;
}

// A parameter's declared type as written: "f16[S, D]", or "f32" for a scalar.
std::string declared_type(const ast::Param& p) {
  std::vector<std::string> dims;
  for (const ast::Dim& d : p.dims) dims.push_back(d.is_literal() ? std::to_string(d.value) : d.name);
  return dims.empty() ? p.dtype.name : fmt::format("{}[{}]", p.dtype.name, fmt::join(dims, ", "));
}

std::string param_names(const std::vector<ast::Param>& params) {
  std::vector<std::string> names;
  for (const ast::Param& p : params) names.push_back(p.name.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// "y" for a scalar, "y[i, j]" for two dims: how a statement defining `name` starts.
std::string lhs_example(const std::string& name, size_t dims) {
  static const char* kVars[] = {"i", "j", "k", "l", "m", "n"};
  std::vector<std::string> vars;
  for (size_t i = 0; i < dims; ++i) vars.push_back(i < 6 ? kVars[i] : fmt::format("i{}", i));
  return dims == 0 ? name : fmt::format("{}[{}]", name, fmt::join(vars, ", "));
}

void OpChecker::run() {
  declare_params(op_.params, TensorInfo::Role::Input);
  declare_params(op_.outputs, TensorInfo::Role::Output);
  for (const ast::Stmt& s : op_.body) {
    const ast::Ident& n =
        std::holds_alternative<ast::LetStmt>(s) ? std::get<ast::LetStmt>(s).name : std::get<ast::AssignStmt>(s).target;
    later_.try_emplace(n.name, n.range);
  }
  for (const ast::Stmt& s : op_.body) {
    if (const auto* let = std::get_if<ast::LetStmt>(&s))
      check_let(*let);
    else
      check_assign(std::get<ast::AssignStmt>(s));
  }
  for (const ast::Param& p : op_.outputs)
    if (const TensorInfo* t = tensor(p.name.name);
        t && t->role == TensorInfo::Role::Output && t->def.begin == p.name.range.begin && !defined_.count(p.name.name))
      diags_.error("E017", p.name.range, fmt::format("output '{}' is never defined", p.name.name))
          .hint(fmt::format("add a statement such as {} = ...;", lhs_example(p.name.name, p.dims.size())));
}

void OpChecker::declare_params(const std::vector<ast::Param>& params, TensorInfo::Role role) {
  for (const ast::Param& p : params) {
    for (const ast::Dim& d : p.dims) {
      if (d.computed) {
        check_computed_dim(p, d, role);
        dims_[d.name] = d.range;
      } else if (d.is_literal()) {
        if (d.value <= 0)
          diags_.error("E037", d.range, fmt::format("dim {} must be positive", d.value)).hint("use a size >= 1");
      } else if (!dims_.count(d.name)) {
        dims_[d.name] = d.range;
      }
    }
  }
  for (const ast::Param& p : params) {
    TensorInfo t;
    t.name = p.name.name;
    t.role = role;
    t.def = p.name.range;
    std::optional<DType> dt = parse_dtype(p.dtype.name);
    if (!dt)
      diags_.error("E014", p.dtype.range, fmt::format("unknown dtype '{}'", p.dtype.name))
          .hint(dtype_hint(p.dtype.name));
    t.elem = Type::scalar(dt.value_or(DType::F32));
    for (const ast::Dim& d : p.dims) t.shape.push_back(d.is_literal() ? Size{"", d.value} : Size{d.name, 0});
    if (!literal_elements_fit(t.shape))
      diags_
          .error("E049", {p.dims.front().range.file, p.dims.front().range.begin, p.dims.back().range.end},
                 fmt::format("'{}' of shape {} has more than 2^60 elements", t.name, sizes_str(t.shape)))
          .hint(kElementsHint);
    if (dims_.count(t.name))
      diags_.error("E019", p.name.range, fmt::format("'{}' is both a tensor and a dim", t.name))
          .hint("rename the tensor (tensors are usually lower-case, dims upper-case)");
    if (!add_tensor(std::move(t), p.name)) duplicate_params_.insert(p.name.name);
  }
}

void OpChecker::check_computed_dim(const ast::Param& p, const ast::Dim& d, TensorInfo::Role role) {
  std::set<std::string> bound;
  for (const ast::Param& in : op_.params)
    for (const ast::Dim& x : in.dims)
      if (!x.is_literal() && !x.computed) bound.insert(x.name);
  const ast::Expr* bad = nullptr;
  std::string why;
  bool reads_size = false;
  std::function<void(const ast::Expr&)> walk = [&](const ast::Expr& e) {
    if (bad) return;
    switch (e.kind) {
      case ast::ExprKind::Int: return;
      case ast::ExprKind::Name:
        reads_size = true;
        if (!bound.count(e.text)) {
          bad = &e;
          why = fmt::format("'{}' is not a size of {}'s inputs", e.text, op_.name.name);
        }
        return;
      case ast::ExprKind::Unary:
        if (e.text == "-") return walk(e.args[0]);
        break;
      case ast::ExprKind::Binary:
        if (e.text == "+" || e.text == "-" || e.text == "*" || e.text == "/" || e.text == "%") {
          walk(e.args[0]);
          walk(e.args[1]);
          return;
        }
        break;
      default: break;
    }
    bad = &e;
    why = "a computed dim is integer arithmetic (+ - * / %) on sizes and integers";
  };
  walk(*d.computed);
  // An input's computed dim (a derived op's seed dy: f32[B, T - K + 1]) binds nothing: the tensor
  // passed is checked against it, so it must read a size the other dims bind.
  if (!bad && role != TensorInfo::Role::Output && !reads_size) {
    diags_.error("E065", d.range, fmt::format("input '{}' has a dim computed from no size", p.name.name))
        .hint(
            "write a positive number or a size name here; a computed input dim reads sizes other dims bind "
            "(dy: f32[B, T - K + 1])");
    return;
  }
  if (bad)
    diags_.error("E065", bad->range, why)
        .hint(bound.empty() ? std::string("give the inputs' dims size names first")
                            : fmt::format("the sizes of {}'s inputs are: {}", op_.name.name, fmt::join(bound, ", ")));
}

bool OpChecker::add_tensor(TensorInfo t, const ast::Ident& at) {
  if (auto it = tensor_index_.find(t.name); it != tensor_index_.end()) {
    const TensorInfo& prev = out_.tensors[it->second];
    bool is_param = prev.role == TensorInfo::Role::Input || prev.role == TensorInfo::Role::Output;
    bool both_params = is_param && (t.role == TensorInfo::Role::Input || t.role == TensorInfo::Role::Output);
    if (both_params)
      diags_.error("E013", at.range, fmt::format("'{}' is declared twice", t.name))
          .note(prev.def, "first declared here")
          .hint("give each parameter and output its own name");
    else
      diags_.error("E015", at.range, fmt::format("'{}' is already defined", t.name))
          .note(prev.def, "first defined here")
          .hint("give it another name");
    return false;
  }
  tensor_index_[t.name] = out_.tensors.size();
  out_.tensors.push_back(std::move(t));
  return true;
}

const TensorInfo* OpChecker::tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &out_.tensors[it->second];
}

void OpChecker::begin_statement() {
  lhs_vars_.clear();
  lhs_ranges_.clear();
  lhs_rejected_ = false;
  free_reported_.clear();
  scopes_.clear();
  bindings_.clear();
}

void OpChecker::check_let(const ast::LetStmt& let) {
  begin_statement();
  Type t = check(let.value);
  if (!t.is_error() && t.kind != Type::Kind::Scalar) {
    require_value(let.value, t, "in a let");
    if (t.kind == Type::Kind::Vector)
      diags_.error("E020", let.value.range, fmt::format("a let holds a scalar, not a {}", t.str()))
          .hint("index the vector");
    t = Type::error();
  }
  if (dims_.count(let.name.name)) {
    diags_.error("E019", let.name.range, fmt::format("'{}' is a dim of this op", let.name.name))
        .hint("choose another name for the let");
    return;
  }
  TensorInfo info{let.name.name, TensorInfo::Role::Let, t.is_error() ? t : Type::scalar(materialize(t)), {}, {},
                  let.name.range};
  if (add_tensor(std::move(info), let.name)) defined_.insert(let.name.name);
}

void OpChecker::check_assign(const ast::AssignStmt& a) {
  begin_statement();
  const std::string& name = a.target.name;
  const TensorInfo* existing = tensor(name);
  bool is_output = existing && existing->role == TensorInfo::Role::Output;
  if (existing && existing->role == TensorInfo::Role::Input && duplicate_params_.count(name)) return;  // E013 said it
  if (existing && existing->role == TensorInfo::Role::Input) {
    diags_
        .error("E016", a.target.range,
               fmt::format("'{}' is an input of {} and cannot be assigned", name, op_.name.name))
        .note(existing->def, "declared here")
        .hint("define a new tensor instead");
    return;
  }
  if (defined_.count(name)) {
    diags_.error("E015", a.target.range, fmt::format("'{}' is defined twice", name))
        .note(existing ? existing->def : SourceRange{}, "first defined here")
        .hint("each tensor has exactly one defining statement; use a new name");
    return;
  }
  if (dims_.count(name) && !is_output) {  // an output named like a dim was reported at its declaration
    diags_.error("E019", a.target.range, fmt::format("'{}' is a dim of this op", name))
        .note(dims_.at(name), "the dim is declared here")
        .hint("choose another name for the tensor");
    return;
  }
  declare_lhs(a, is_output ? existing : nullptr);

  int errors_before = diags_.error_count();
  Type value = check(a.value);
  std::vector<Size> shape;
  bool sized = true;
  for (size_t i = 0; i < lhs_vars_.size(); ++i) {
    auto it = bindings_.find(lhs_vars_[i]);
    if (it == bindings_.end() && (lhs_rejected_ || diags_.error_count() > errors_before)) {
      sized = false;  // the left or right side's own error explains it
      shape.push_back(kUnknownSize);
    } else if (it == bindings_.end()) {
      diags_
          .error("E024", lhs_ranges_[i],
                 fmt::format("cannot infer the size of '{}': it does not index any tensor on the right", lhs_vars_[i]))
          .hint("use it as an index of an input tensor, or write the tensor as an output with a declared shape");
      sized = false;
      shape.push_back(kUnknownSize);
    } else {
      shape.push_back(it->second.size);
    }
  }
  if (!value.is_error() && value.kind == Type::Kind::Vector) {
    diags_.error("E020", a.value.range, fmt::format("the right side is a vector ({}); index it", value.str()))
        .hint("write r.o[e] with e on the left side");
    value = Type::error();
  } else if (!value.is_error() && value.kind == Type::Kind::Tuple) {
    require_value(a.value, value, "as a tensor element");
    value = Type::error();
  }
  if (is_output) {
    defined_.insert(name);
    if (!value.is_error() && !storable(value, existing->elem.dtype)) {
      diags_
          .error("E033", a.value.range,
                 fmt::format("cannot store a {} into '{}' of dtype {}", value.str(), name, existing->elem.str()))
          .hint(value.kind == Type::Kind::Record
                    ? fields_hint(value)
                    : fmt::format("convert explicitly, e.g. {}(...)", existing->elem.str()));
    }
    auto& out = out_.tensors[tensor_index_.at(name)];
    out.index_vars = lhs_vars_;
    return;
  }
  if (!sized) value = Type::error();
  if (lhs_rejected_) shape.assign(a.indices.size(), kUnknownSize);  // later uses index it as written
  if (sized && !literal_elements_fit(shape)) {
    diags_
        .error("E049", a.target.range,
               fmt::format("'{}' of shape {} has more than 2^60 elements", name, sizes_str(shape)))
        .hint(kElementsHint);
    value = Type::error();
  }
  TensorInfo t{name, TensorInfo::Role::Intermediate, value, shape, lhs_vars_, a.target.range};
  if (!value.is_error() && value.kind == Type::Kind::Scalar) t.elem = Type::scalar(materialize(value));
  if (add_tensor(std::move(t), a.target)) defined_.insert(name);
}

void OpChecker::declare_lhs(const ast::AssignStmt& a, const TensorInfo* output) {
  if (output && output->shape.size() != a.indices.size()) {
    std::string declared = output->shape.empty()
                               ? std::string("a scalar")
                               : fmt::format("declared with {} dim{} {}", output->shape.size(),
                                             output->shape.size() == 1 ? "" : "s", sizes_str(output->shape));
    diags_
        .error("E026", a.target.range,
               fmt::format("output '{}' is {} but defined with {} ind{}", a.target.name, declared, a.indices.size(),
                           a.indices.size() == 1 ? "ex" : "ices"))
        .note(output->def, "declared here")
        .hint(fmt::format("write one index variable per declared dim: {} = ...",
                          lhs_example(a.target.name, output->shape.size())));
  }
  for (size_t i = 0; i < a.indices.size(); ++i) {
    const ast::Expr& ix = a.indices[i];
    if (ix.kind != ast::ExprKind::Name) {
      diags_.error("E029", ix.range, "an index on the left must be a plain index variable")
          .hint("move the arithmetic to the right side, e.g. y[i] = x[i + 1]");
      adopt_names(ix);  // so the right side does not also report them as free
      lhs_rejected_ = true;
      continue;
    }
    if (dims_.count(ix.text) || tensor(ix.text)) {
      diags_
          .error(
              "E019", ix.range,
              fmt::format("'{}' names a {}, not an index variable", ix.text, dims_.count(ix.text) ? "dim" : "tensor"))
          .hint("use a lower-case index name, e.g. i");
      continue;
    }
    if (ix.text == a.target.name)  // reported, then used as the index variable it was meant to be
      diags_
          .error("E019", ix.range,
                 fmt::format("'{}' names both the tensor being defined and one of its index variables", ix.text))
          .hint(fmt::format("rename the tensor or the index, e.g. {}[k] = ...", a.target.name));
    if (std::find(lhs_vars_.begin(), lhs_vars_.end(), ix.text) != lhs_vars_.end()) {
      diags_.error("E025", ix.range, fmt::format("index variable '{}' appears twice on the left", ix.text))
          .hint("a diagonal is written on the right: d[i] = x[i, i]");
      continue;
    }
    lhs_vars_.push_back(ix.text);
    lhs_ranges_.push_back(ix.range);
    types_[ix.id] = Type::scalar(DType::I64);
    if (output && i < output->shape.size())
      bindings_[ix.text] = {output->shape[i], ix.range, fmt::format("dim {} of output {}", i, output->name)};
  }
}

void OpChecker::adopt_names(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Name && !dims_.count(e.text) && !tensor(e.text) &&
      std::find(lhs_vars_.begin(), lhs_vars_.end(), e.text) == lhs_vars_.end()) {
    lhs_vars_.push_back(e.text);
    lhs_ranges_.push_back(e.range);
  }
  for (const ast::Expr& a : e.args) adopt_names(a);
}

bool OpChecker::is_index_var(const std::string& n) const {
  if (std::find(lhs_vars_.begin(), lhs_vars_.end(), n) != lhs_vars_.end()) return true;
  for (const auto& s : scopes_)
    if (s.count(n)) return true;
  return false;
}

void OpChecker::bind(const std::string& var, const Size& size, SourceRange at, std::string origin) {
  auto [it, fresh] = bindings_.try_emplace(var, Binding{size, at, origin});
  if (fresh || it->second.size == size || size == kUnknownSize) return;
  if (it->second.size == kUnknownSize) {
    it->second = Binding{size, at, std::move(origin)};
    return;
  }
  diags_
      .error("E023", at,
             fmt::format("index '{}' has size {} here ({}) but {} elsewhere", var, size.str(), origin,
                         it->second.size.str()))
      .note(it->second.at, fmt::format("size {} comes from {}", it->second.size.str(), it->second.origin))
      .hint("use a different index variable for each size");
}

Type OpChecker::name(const ast::Expr& e) {
  const std::string& n = e.text;
  if (is_index_var(n)) return Type::scalar(DType::I64);
  if (const TensorInfo* t = tensor(n)) return bare_tensor(e, *t);
  if (dims_.count(n)) return Type::scalar(DType::I64);
  if (auto it = later_.find(n); it != later_.end()) {
    diags_.error("E018", e.range, fmt::format("'{}' is used before it is defined", n))
        .note(it->second, "defined here")
        .hint("move its definition above this statement");
    return Type::error();
  }
  // An upper-case name in index arithmetic (k[b, h / G, j, d]) reads as a size.
  if (index_depth_ > 0 && !n.empty() && std::isupper(static_cast<unsigned char>(n[0]))) {
    diags_.error("E012", e.range, fmt::format("unknown size '{}'", n))
        .hint(fmt::format("sizes come from parameter shapes; define this one with a let, e.g. let {} = H / KH;", n));
    return Type::error();
  }
  if (index_depth_ > 0) {
    if (!free_reported_.insert(n).second) return Type::error();  // once per statement
    diags_.error("E021", e.range, fmt::format("index variable '{}' is neither on the left side nor reduced", n))
        .hint(fmt::format("add '{}' to the left side, or reduce over it: sum({}: ...)", n, n));
    return Type::error();
  }
  std::vector<std::string> names;
  for (const auto& [k, _] : tensor_index_) names.push_back(k);
  for (const auto& [k, _] : dims_) names.push_back(k);
  std::string guess = closest_name(n, names);
  diags_.error("E012", e.range, fmt::format("unknown name '{}'", n))
      .hint(guess.empty() ? "define it with let, or declare it as a parameter"
                          : fmt::format("did you mean '{}'?", guess));
  return Type::error();
}

bool OpChecker::usable(const ast::Expr& e, const TensorInfo& t) {
  if (t.role == TensorInfo::Role::Input || defined_.count(t.name)) return true;
  auto later = later_.find(t.name);  // an output: point at its defining statement, if it has one
  bool has_def = later != later_.end() && later->second.begin > e.range.begin;
  diags_.error("E018", e.range, fmt::format("'{}' is used before it is defined", t.name))
      .note(has_def ? later->second : t.def, has_def ? "defined here" : "declared here, and never defined")
      .hint("move its definition above this statement");
  return false;
}

Type OpChecker::bare_tensor(const ast::Expr& e, const TensorInfo& t) {
  if (!usable(e, t)) return Type::error();
  if (t.shape.empty()) return t.elem;
  if (t.role == TensorInfo::Role::Input || t.index_vars.size() != t.shape.size()) {
    diags_.error("E045", e.range, fmt::format("'{}' is a tensor of shape {}; index it", t.name, sizes_str(t.shape)))
        .hint(fmt::format("write {}[...] with one index per dim", t.name));
    return Type::error();
  }
  for (size_t k = 0; k < t.index_vars.size(); ++k) {
    const std::string& v = t.index_vars[k];
    if (!is_index_var(v)) {
      diags_
          .error("E045", e.range,
                 fmt::format("bare '{}' stands for {}[{}], but '{}' is not an index variable here", t.name, t.name,
                             fmt::join(t.index_vars, ", "), v))
          .hint(fmt::format("index it explicitly: {}[...]", t.name));
      return Type::error();
    }
    bind(v, t.shape[k], e.range, fmt::format("dim {} of {}", k, t.name));
  }
  return t.elem;
}

std::optional<TensorView> OpChecker::tensor_view(const ast::Expr& base) {
  if (base.kind == ast::ExprKind::Name) {
    const TensorInfo* t = tensor(base.text);
    if (!t && !is_index_var(base.text) && later_.count(base.text)) return TensorView{base.text, name(base), {}};
    if (!t) return std::nullopt;
    types_[base.id] = t->elem;
    if (!usable(base, *t)) return TensorView{t->name, Type::error(), t->shape};
    return TensorView{t->name, t->elem, t->shape};
  }
  if (base.kind == ast::ExprKind::Call && globals_.ops.count(base.text)) return op_call(base, nullptr);
  if (base.kind == ast::ExprKind::Field && base.args[0].kind == ast::ExprKind::Call &&
      globals_.ops.count(base.args[0].text))
    return op_call(base.args[0], &base);
  return std::nullopt;
}

Type OpChecker::index(const ast::Expr& e) {
  const ast::Expr& base = e.args[0];
  size_t n = e.args.size() - 1;
  if (std::optional<TensorView> view = tensor_view(base)) {
    if (view->elem.is_error() && view->shape.empty()) {  // already reported
      for (size_t i = 1; i < e.args.size(); ++i)
        if (e.args[i].kind != ast::ExprKind::Slice) check_index_expr(e.args[i]);
      return view->elem;
    }
    if (view->shape.size() != n) {
      diags_
          .error("E020", e.range,
                 view->shape.empty() ? fmt::format("'{}' is a scalar and takes no indices", view->name)
                                     : fmt::format("'{}' has {} dim{} {} but {} ind{} given", view->name,
                                                   view->shape.size(), view->shape.size() == 1 ? "" : "s",
                                                   sizes_str(view->shape), n, n == 1 ? "ex is" : "ices are"))
          .hint(view->shape.empty() ? fmt::format("write {} without brackets", view->name)
                                    : std::string("give one index per dim"));
      for (size_t i = 1; i < e.args.size(); ++i) check_index_expr(e.args[i]);
      return Type::error();
    }
    int slices = 0;
    Size slice_len;
    for (size_t i = 1; i < e.args.size(); ++i) {
      const ast::Expr& ix = e.args[i];
      if (ix.kind == ast::ExprKind::Slice) {
        if (!allow_slice_) {
          check(ix);  // reports E035
          return Type::error();
        }
        ++slices;
        slice_len = view->shape[i - 1];
        types_[ix.id] = Type::scalar(DType::I64);
        continue;
      }
      if (ix.kind == ast::ExprKind::Name && is_index_var(ix.text)) {
        types_[ix.id] = Type::scalar(DType::I64);
        bind(ix.text, view->shape[i - 1], ix.range, fmt::format("dim {} of {}", i - 1, view->name));
        continue;
      }
      check_index_expr(ix);
      check_constant_index(ix, view->shape[i - 1], view->name);
    }
    if (view->elem.is_error()) return view->elem;
    if (slices > 1) {
      diags_.error("E035", e.range, "at most one ':' per argument").hint("a monoid lift takes vectors, not matrices");
      return Type::error();
    }
    if (slices == 1) return Type::vector(view->elem.dtype, slice_len);
    return view->elem;
  }
  // Indexing a vector: r.o[e].
  Type bt = check(base);
  if (bt.is_error()) {
    for (size_t i = 1; i < e.args.size(); ++i) check_index_expr(e.args[i]);
    return bt;
  }
  if (bt.kind != Type::Kind::Vector) {
    diags_.error("E020", e.range, fmt::format("a {} cannot be indexed", bt.str()))
        .hint(base.kind == ast::ExprKind::Name ? "only tensors and vector fields take indices" : "remove the indices");
    return Type::error();
  }
  if (n != 1) {
    diags_.error("E020", e.range, fmt::format("a vector takes one index, {} given", n)).hint("write v[e]");
    return Type::error();
  }
  const ast::Expr& ix = e.args[1];
  if (ix.kind == ast::ExprKind::Name && is_index_var(ix.text)) {
    types_[ix.id] = Type::scalar(DType::I64);
    bind(ix.text, bt.length, ix.range, "the vector length");
  } else {
    check_index_expr(ix);
  }
  return Type::scalar(bt.dtype);
}

void OpChecker::check_constant_index(const ast::Expr& ix, const Size& dim, const std::string& tensor_name) {
  bool negated = ix.kind == ast::ExprKind::Unary && ix.text == "-" && ix.args[0].kind == ast::ExprKind::Int;
  if (ix.kind != ast::ExprKind::Int && !negated) return;
  int64_t v = negated ? -ix.args[0].int_value : ix.int_value;
  if (v < 0) {
    diags_.error("E046", ix.range, fmt::format("index {} is negative", v))
        .hint(dim.symbol.empty()
                  ? fmt::format("indices of this dim run from 0 to {}", dim.literal - 1)
                  : fmt::format("indices run from 0 to {} - 1; write {} - 1 for the last", dim.str(), dim.str()));
  } else if (dim.symbol.empty() && dim.literal > 0 && v >= dim.literal) {
    diags_
        .error("E046", ix.range,
               fmt::format("index {} is out of range: {} has size {} here", v, tensor_name, dim.literal))
        .hint(fmt::format("indices of this dim run from 0 to {}", dim.literal - 1));
  }
}

void OpChecker::check_index_expr(const ast::Expr& ix) {
  ++index_depth_;
  bool saved = allow_slice_;
  allow_slice_ = false;
  Type t = check(ix);
  allow_slice_ = saved;
  --index_depth_;
  if (!t.is_error() && !(t.kind == Type::Kind::Scalar && is_int(t.dtype)))
    diags_.error("E034", ix.range, fmt::format("an index must be an integer, not {}", t.str()))
        .hint("index arithmetic uses integers: i + 1, h / G, j % 4");
}

}  // namespace op_check

CheckedOp check_op(const ast::OpDecl& op, const Globals& globals, const std::map<std::string, CheckedMonoid>& monoids,
                   Diagnostics& diags) {
  CheckedOp out;
  out.decl = &op;
  op_check::OpChecker(op, globals, monoids, diags, out).run();
  return out;
}

}  // namespace emmy::sema
