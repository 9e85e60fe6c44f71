// Checks one op: names, dtypes, index variables bound to sizes, reductions and outputs.
#include <cctype>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "sema/expr_typer.hpp"
#include "sema/passes.hpp"
#include "support/limits.hpp"

namespace emmy::sema {
namespace {

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

const char* kElementsHint =
    "a tensor or a loop nest holds at most 2^60 elements (indices are 64-bit); use smaller dims";

// The size of an index variable whose size an earlier error left unknown: it matches
// every size, so one mistake is reported once and not again at every use.
const Size kUnknownSize{"<unknown>", -1};

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

// Where an index variable got its size, for the note of a mismatch.
struct Binding {
  Size size;
  SourceRange at;
  std::string origin;  // "dim 3 of k"
};

// A tensor-valued expression: a named tensor, an op call's output, or a vector field.
struct TensorView {
  std::string name;
  Type elem;
  std::vector<Size> shape;
};

class OpChecker : public ExprTyper {
 public:
  OpChecker(const ast::OpDecl& op, const Globals& globals, const std::map<std::string, CheckedMonoid>& monoids,
            Diagnostics& diags, CheckedOp& out)
      : ExprTyper(diags, out.expr_types), op_(op), globals_(globals), monoids_(monoids), out_(out) {}

  void run() {
    declare_params(op_.params, TensorInfo::Role::Input);
    declare_params(op_.outputs, TensorInfo::Role::Output);
    for (const ast::Stmt& s : op_.body) {
      const ast::Ident& n = std::holds_alternative<ast::LetStmt>(s) ? std::get<ast::LetStmt>(s).name
                                                                    : std::get<ast::AssignStmt>(s).target;
      later_.try_emplace(n.name, n.range);
    }
    for (const ast::Stmt& s : op_.body) {
      if (const auto* let = std::get_if<ast::LetStmt>(&s))
        check_let(*let);
      else
        check_assign(std::get<ast::AssignStmt>(s));
    }
    for (const ast::Param& p : op_.outputs)
      if (const TensorInfo* t = tensor(p.name.name); t && t->role == TensorInfo::Role::Output &&
                                                     t->def.begin == p.name.range.begin && !defined_.count(p.name.name))
        diags_.error("E017", p.name.range, fmt::format("output '{}' is never defined", p.name.name))
            .hint(fmt::format("add a statement such as {} = ...;", lhs_example(p.name.name, p.dims.size())));
  }

 private:
  // ---- declarations -------------------------------------------------------------------
  void declare_params(const std::vector<ast::Param>& params, TensorInfo::Role role) {
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

  // An output's dim computed from the inputs' sizes (`T - K + 1`): integers, the sizes the
  // inputs' shapes bind, `+ - * / %` and unary `-` (E065); an input's dims bind sizes instead.
  void check_computed_dim(const ast::Param& p, const ast::Dim& d, TensorInfo::Role role) {
    std::set<std::string> bound;
    for (const ast::Param& in : op_.params)
      for (const ast::Dim& x : in.dims)
        if (!x.is_literal() && !x.computed) bound.insert(x.name);
    if (role != TensorInfo::Role::Output) {
      diags_
          .error("E065", d.range, fmt::format("input '{}' has a computed dim: an input's dims bind sizes", p.name.name))
          .hint("name a size (`T`) or write a number here; an output's dims may be computed from them");
      return;
    }
    const ast::Expr* bad = nullptr;
    std::string why;
    std::function<void(const ast::Expr&)> walk = [&](const ast::Expr& e) {
      if (bad) return;
      switch (e.kind) {
        case ast::ExprKind::Int: return;
        case ast::ExprKind::Name:
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
    if (bad)
      diags_.error("E065", bad->range, why)
          .hint(bound.empty() ? std::string("give the inputs' dims size names first")
                              : fmt::format("the sizes of {}'s inputs are: {}", op_.name.name, fmt::join(bound, ", ")));
  }

  bool add_tensor(TensorInfo t, const ast::Ident& at) {
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

  const TensorInfo* tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &out_.tensors[it->second];
  }

  // ---- statements -----------------------------------------------------------------------
  void begin_statement() {
    lhs_vars_.clear();
    lhs_ranges_.clear();
    lhs_rejected_ = false;
    free_reported_.clear();
    scopes_.clear();
    bindings_.clear();
  }

  void check_let(const ast::LetStmt& let) {
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

  void check_assign(const ast::AssignStmt& a) {
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
            .error(
                "E024", lhs_ranges_[i],
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

  void declare_lhs(const ast::AssignStmt& a, const TensorInfo* output) {
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

  void adopt_names(const ast::Expr& e) {
    if (e.kind == ast::ExprKind::Name && !dims_.count(e.text) && !tensor(e.text) &&
        std::find(lhs_vars_.begin(), lhs_vars_.end(), e.text) == lhs_vars_.end()) {
      lhs_vars_.push_back(e.text);
      lhs_ranges_.push_back(e.range);
    }
    for (const ast::Expr& a : e.args) adopt_names(a);
  }

  // ---- index variables -------------------------------------------------------------------
  bool is_index_var(const std::string& n) const {
    if (std::find(lhs_vars_.begin(), lhs_vars_.end(), n) != lhs_vars_.end()) return true;
    for (const auto& s : scopes_)
      if (s.count(n)) return true;
    return false;
  }

  void bind(const std::string& var, const Size& size, SourceRange at, std::string origin) {
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

  // ---- expressions ------------------------------------------------------------------------
  Type name(const ast::Expr& e) override {
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

  bool usable(const ast::Expr& e, const TensorInfo& t) {
    if (t.role == TensorInfo::Role::Input || defined_.count(t.name)) return true;
    auto later = later_.find(t.name);  // an output: point at its defining statement, if it has one
    bool has_def = later != later_.end() && later->second.begin > e.range.begin;
    diags_.error("E018", e.range, fmt::format("'{}' is used before it is defined", t.name))
        .note(has_def ? later->second : t.def, has_def ? "defined here" : "declared here, and never defined")
        .hint("move its definition above this statement");
    return false;
  }

  // A bare tensor name stands for the tensor indexed by its own left-hand index names.
  Type bare_tensor(const ast::Expr& e, const TensorInfo& t) {
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

  std::optional<TensorView> tensor_view(const ast::Expr& base) {
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

  Type index(const ast::Expr& e) override {
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
          .hint(base.kind == ast::ExprKind::Name ? "only tensors and vector fields take indices"
                                                 : "remove the indices");
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

  // A literal index (x[n, 3], x[-1]) must lie inside a dim whose size is known.
  void check_constant_index(const ast::Expr& ix, const Size& dim, const std::string& tensor_name) {
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

  void check_index_expr(const ast::Expr& ix) {
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

  // f(x, y) or f(x, y).out: unify the callee's dims with the arguments' sizes.
  std::optional<TensorView> op_call(const ast::Expr& call, const ast::Expr* field) {
    const ast::OpDecl& callee = *globals_.ops.at(call.text);
    out_.calls.emplace_back(callee.name.name, call.callee_range);
    types_[call.id] = Type::error();
    for (const ast::Param& p : callee.outputs)
      for (const ast::Dim& d : p.dims)
        if (d.computed) {
          diags_
              .error("E065", call.range,
                     fmt::format("op {} computes the dims of its output {}: it runs on its own, not inside another op",
                                 callee.name.name, p.name.name))
              .note(d.range, "computed here")
              .hint("call it from emmyc, the API or Python; or give its output a size its inputs bind");
          return TensorView{callee.name.name, Type::error(), {}};
        }
    if (call.args.size() != callee.params.size()) {
      diags_
          .error("E032", call.range,
                 fmt::format("op {} takes {} argument{}, got {}", callee.name.name, callee.params.size(),
                             callee.params.size() == 1 ? "" : "s", call.args.size()))
          .hint(fmt::format("pass one tensor per parameter: {}({})", callee.name.name, param_names(callee.params)));
      return TensorView{callee.name.name, Type::error(), {}};
    }
    std::map<std::string, Size> dim_map;
    bool ok = true;
    for (size_t i = 0; i < call.args.size(); ++i) {
      const ast::Expr& arg = call.args[i];
      const ast::Param& p = callee.params[i];
      const TensorInfo* t = arg.kind == ast::ExprKind::Name ? tensor(arg.text) : nullptr;
      if (!t) {
        diags_
            .error("E030", arg.range,
                   fmt::format("argument {} of op {} must be a tensor name", i + 1, callee.name.name))
            .hint("compute the argument in its own statement first");
        ok = false;
        continue;
      }
      types_[arg.id] = t->elem;
      if (!usable(arg, *t)) {
        ok = false;
        continue;
      }
      std::optional<DType> want = parse_dtype(p.dtype.name);
      if (t->elem.kind != Type::Kind::Scalar || (want && !storable(t->elem, *want)) ||
          t->shape.size() != p.dims.size()) {
        diags_
            .error("E030", arg.range,
                   fmt::format("op {} expects {}: {} but '{}' is {}{}", callee.name.name, p.name.name, declared_type(p),
                               t->name, t->elem.str(), t->shape.empty() ? "" : sizes_str(t->shape)))
            .note(p.name.range, fmt::format("parameter {} of {} is declared here", p.name.name, callee.name.name))
            .hint(t->shape.size() == p.dims.size()
                      ? fmt::format("convert it in a statement of its own, e.g. {} = {}({}), and pass {}_{}",
                                    lhs_example(t->name + "_" + p.dtype.name, p.dims.size()), p.dtype.name,
                                    lhs_example(t->name, p.dims.size()), t->name, p.dtype.name)
                      : fmt::format("pass a tensor with {} dim{}", p.dims.size(), p.dims.size() == 1 ? "" : "s"));
        ok = false;
        continue;
      }
      for (size_t k = 0; k < p.dims.size(); ++k) {
        const ast::Dim& d = p.dims[k];
        Size want_size = d.is_literal() ? Size{"", d.value} : Size{};
        if (!d.is_literal()) {
          auto [it, fresh] = dim_map.try_emplace(d.name, t->shape[k]);
          if (fresh) continue;
          want_size = it->second;
        }
        if (!(want_size == t->shape[k])) {
          diags_
              .error("E023", arg.range,
                     fmt::format("dim {} of '{}' is {} but op {} needs {}", k, t->name, t->shape[k].str(),
                                 callee.name.name, want_size.str()))
              .hint("arguments must agree on every shared dim");
          ok = false;
        }
      }
    }
    const ast::Param* out = nullptr;
    if (field) {
      for (const ast::Param& o : callee.outputs)
        if (o.name.name == field->text) out = &o;
      if (!out) {
        diags_
            .error("E036", field->callee_range, fmt::format("op {} has no output '{}'", callee.name.name, field->text))
            .hint(fmt::format("its outputs are {}", param_names(callee.outputs)));
        return TensorView{callee.name.name, Type::error(), {}};
      }
    } else if (callee.outputs.size() != 1) {
      diags_
          .error("E036", call.range,
                 fmt::format("op {} has {} outputs; pick one", callee.name.name, callee.outputs.size()))
          .hint(fmt::format("write {}(...).{}[...]", callee.name.name,
                            callee.outputs.empty() ? "out" : callee.outputs[0].name.name));
      return TensorView{callee.name.name, Type::error(), {}};
    } else {
      out = &callee.outputs[0];
    }
    TensorView view{callee.name.name, Type::scalar(parse_dtype(out->dtype.name).value_or(DType::F32)), {}};
    for (const ast::Dim& d : out->dims) {
      if (d.is_literal()) {
        view.shape.push_back({"", d.value});
      } else if (auto it = dim_map.find(d.name); it != dim_map.end()) {
        view.shape.push_back(it->second);
      } else {
        if (ok)  // else a bad argument left the dim unknown, and was reported
          diags_
              .error("E024", call.range,
                     fmt::format("output dim {} of op {} is not fixed by its arguments", d.name, callee.name.name))
              .note(d.range, fmt::format("{} appears in no input of {}", d.name, callee.name.name))
              .hint("outputs of a called op must take their dims from its inputs");
        view.shape.push_back(kUnknownSize);
        ok = false;
      }
    }
    if (!ok) view.elem = Type::error();
    return view;
  }

  Type call_other(const ast::Expr& e) override {
    if (globals_.ops.count(e.text)) {
      op_call(e, nullptr);
      diags_.error("E045", e.range, fmt::format("the result of op {} is a tensor; index it", e.text))
          .hint(fmt::format("write {}(...)[i, j]", e.text));
      return Type::error();
    }
    if (find_builtin_reduction(e.text) || globals_.monoids.count(e.text)) {
      for (const ast::Expr& a : e.args) check(a);
      diags_.error("E032", e.range, fmt::format("{} is a reduction: name the axes it reduces", e.text))
          .hint(fmt::format("write {}(j: ...)", e.text));
      return Type::error();
    }
    return ExprTyper::call_other(e);
  }

  const CheckedMonoid* monoid_of(const Type& t) const override {
    if (t.kind != Type::Kind::Record) return nullptr;
    auto it = monoids_.find(t.monoid);
    return it == monoids_.end() ? nullptr : &it->second;
  }

  Type reduce(const ast::Expr& e) override {
    const BuiltinReduction* builtin = find_builtin_reduction(e.text);
    auto user = globals_.monoids.find(e.text);
    const CheckedMonoid* monoid = nullptr;
    if (!builtin) {
      if (user == globals_.monoids.end()) {
        std::vector<std::string> names;
        for (const auto& r : builtin_reductions()) names.push_back(std::string(r.name));
        for (const auto& [k, _] : globals_.monoids) names.push_back(k);
        std::string guess = closest_name(e.text, names);
        diags_.error("E027", e.callee_range, fmt::format("unknown reduction '{}'", e.text))
            .hint(guess.empty() ? "define it as a monoid, or import std.monoids"
                                : fmt::format("did you mean '{}'?", guess));
        return Type::error();
      }
      auto it = monoids_.find(e.text);
      if (it == monoids_.end()) return Type::error();  // the monoid itself had errors
      monoid = &it->second;
    }
    std::set<std::string> scope;
    bool axes_ok = true;
    for (const ast::Ident& ax : e.axes) {
      if (std::find(lhs_vars_.begin(), lhs_vars_.end(), ax.name) != lhs_vars_.end()) {
        diags_.error("E022", ax.range, fmt::format("'{}' is on the left side and cannot also be reduced", ax.name))
            .hint(fmt::format("remove '{}' from the left side, or reduce over another index", ax.name));
        axes_ok = false;
      } else if (is_index_var(ax.name) || scope.count(ax.name)) {
        diags_.error("E028", ax.range, fmt::format("'{}' is already reduced by an enclosing reduction", ax.name))
            .hint("reduce each index once");
        axes_ok = false;
      } else if (dims_.count(ax.name) || tensor(ax.name)) {
        diags_
            .error(
                "E019", ax.range,
                fmt::format("'{}' names a {}, not an index variable", ax.name, dims_.count(ax.name) ? "dim" : "tensor"))
            .hint("reduce over a lower-case index variable, e.g. sum(j: x[i, j])");
        axes_ok = false;
      }
      scope.insert(ax.name);
    }
    if (!axes_ok) return Type::error();
    if (builtin && builtin->rule == ReduceRule::Index && e.axes.size() != 1) {
      diags_.error("E032", e.callee_range, fmt::format("{} reduces exactly one axis", e.text))
          .hint(fmt::format("write {}(j: x[i, j])", e.text));
      return Type::error();
    }
    scopes_.push_back(scope);
    for (const ast::Ident& ax : e.axes) bindings_.erase(ax.name);
    int errors_before = diags_.error_count();
    if (!e.where_.empty()) {
      Type w = check(e.where_[0]);
      if (!w.is_error() && !w.is_bool())
        diags_.error("E031", e.where_[0].range, fmt::format("a where clause must be bool, not {}", w.str()))
            .hint("write a comparison, e.g. where j <= i");
    }
    Type result = builtin ? builtin_reduce(e, *builtin) : monoid_reduce(e, *monoid);
    ReductionInfo info{e.id, e.text, builtin != nullptr, {}, {}, !e.where_.empty()};
    for (const ast::Ident& ax : e.axes) {
      info.axes.push_back(ax.name);
      auto it = bindings_.find(ax.name);
      if (it == bindings_.end()) {
        bool used = uses(e, ax.name);
        if (diags_.error_count() == errors_before)  // otherwise the body's own error explains it
          diags_
              .error(used ? "E024" : "E028", ax.range,
                     used ? fmt::format("cannot infer the size of reduction axis '{}': it indexes no tensor", ax.name)
                          : fmt::format("reduction axis '{}' is not used in the reduced expression", ax.name))
              .hint(used ? fmt::format("index a tensor with '{}' inside the reduction", ax.name)
                         : fmt::format("remove '{}' from the axes, or index a tensor with it", ax.name));
        result = Type::error();
        info.axis_sizes.push_back({});
      } else {
        info.axis_sizes.push_back(it->second.size);
        bindings_.erase(it);
      }
    }
    scopes_.pop_back();
    if (!result.is_error() && !literal_elements_fit(info.axis_sizes)) {
      diags_
          .error("E049", e.callee_range,
                 fmt::format("this reduction over {} runs more than 2^60 steps ({})", fmt::join(info.axes, ", "),
                             sizes_str(info.axis_sizes)))
          .hint(kElementsHint);
      result = Type::error();
    }
    out_.reductions.push_back(std::move(info));
    return result;
  }

  static bool uses(const ast::Expr& e, const std::string& var) {
    if (e.kind == ast::ExprKind::Name && e.text == var) return true;
    for (const ast::Expr& a : e.args)
      if (uses(a, var)) return true;
    for (const ast::Expr& w : e.where_)
      if (uses(w, var)) return true;
    return false;
  }

  Type builtin_reduce(const ast::Expr& e, const BuiltinReduction& r) {
    if (e.args.size() != 1) {
      for (const ast::Expr& a : e.args) check(a);
      diags_.error("E044", e.range, fmt::format("{} reduces one expression, got {}", e.text, e.args.size()))
          .hint(fmt::format("write {}(j: expr)", e.text));
      return Type::error();
    }
    Type t = check(e.args[0]);
    if (!require_value(e.args[0], t, fmt::format("inside {}", e.text).c_str())) return Type::error();
    if (t.kind == Type::Kind::Vector) {
      diags_.error("E030", e.args[0].range, "built-in reductions take scalars").hint("index the vector");
      return Type::error();
    }
    switch (r.rule) {
      case ReduceRule::Logical:
        if (!t.is_bool()) {
          diags_.error("E031", e.args[0].range, fmt::format("{} reduces bool values, not {}", e.text, t.str()))
              .hint("compare first, e.g. any(j: x[i, j] > 0)");
          return Type::error();
        }
        return t;
      case ReduceRule::Accumulate:
      case ReduceRule::Same:
      case ReduceRule::Index:
        if (!t.is_numeric()) {
          diags_.error("E030", e.args[0].range, fmt::format("{} needs numbers, not {}", e.text, t.str()))
              .hint(t.is_bool() ? "use any/all on bools, or select(c, 1.0, 0.0)" : "convert with f32(x)");
          return Type::error();
        }
        break;
    }
    if (r.rule == ReduceRule::Index) return Type::scalar(DType::I64);
    DType d = materialize(t);
    // Half-precision sums accumulate in f32 (docs/language.md, "Types").
    if (r.rule == ReduceRule::Accumulate && (d == DType::F16 || d == DType::BF16)) d = DType::F32;
    return Type::scalar(d);
  }

  Type monoid_reduce(const ast::Expr& e, const CheckedMonoid& m) {
    const ast::MonoidDecl& decl = *m.decl;
    const std::vector<ast::Field>& params = decl.lift_params ? *decl.lift_params : decl.fields;
    if (e.args.size() != params.size()) {
      for (const ast::Expr& a : e.args) check(a);
      diags_
          .error("E044", e.range,
                 fmt::format("monoid {} takes {} argument{} ({}), got {}", decl.name.name, params.size(),
                             params.size() == 1 ? "" : "s", decl.lift_params ? "its lift parameters" : "its fields",
                             e.args.size()))
          .hint("pass one expression per lift parameter");
      return Type::error();
    }
    Type rec;
    rec.kind = Type::Kind::Record;
    rec.monoid = decl.name.name;
    bool ok = true;
    for (size_t i = 0; i < params.size(); ++i) {
      const ast::Field& p = params[i];
      bool saved = allow_slice_;
      allow_slice_ = p.vector_dim.has_value();
      Type t = check(e.args[i]);
      allow_slice_ = saved;
      if (t.is_error()) {
        ok = false;
        continue;
      }
      std::optional<DType> want = parse_dtype(p.dtype.name);
      bool want_vector = p.vector_dim.has_value();
      if ((t.kind == Type::Kind::Vector) != want_vector || t.kind == Type::Kind::Record ||
          t.kind == Type::Kind::Tuple || (want && (*want == DType::Bool) != (t.dtype == DType::Bool))) {
        diags_
            .error("E030", e.args[i].range,
                   fmt::format("argument {} of {} must be {}: {}{}, not {}", i + 1, decl.name.name, p.name.name,
                               p.dtype.name, want_vector ? "[" + p.vector_dim->name + "]" : "", t.str()))
            .hint(want_vector ? "pass a vector slice such as v[b, h, j, :]" : "pass a scalar expression");
        ok = false;
        continue;
      }
      if (want_vector) {
        const ast::Dim& d = *p.vector_dim;
        if (d.is_literal()) {
          if (!(t.length == Size{"", d.value})) {
            diags_
                .error("E023", e.args[i].range,
                       fmt::format("{} needs a vector of length {}, got {}", decl.name.name, d.value, t.length.str()))
                .hint("slice a dim of that size");
            ok = false;
          }
        } else {
          rec.vector_dims.emplace_back(d.name, t.length);
        }
      }
    }
    return ok ? rec : Type::error();
  }

  const ast::OpDecl& op_;
  const Globals& globals_;
  const std::map<std::string, CheckedMonoid>& monoids_;
  CheckedOp& out_;
  std::map<std::string, SourceRange> dims_;
  std::map<std::string, size_t> tensor_index_;
  std::set<std::string> defined_;
  std::map<std::string, SourceRange> later_;  // every statement's name, for "used before defined"
  std::vector<std::string> lhs_vars_;
  std::vector<SourceRange> lhs_ranges_;
  bool lhs_rejected_ = false;               // an index on the left was reported (E029)
  std::set<std::string> free_reported_;     // E021 names of this statement
  std::set<std::string> duplicate_params_;  // parameters declared twice (E013)
  std::vector<std::set<std::string>> scopes_;
  std::map<std::string, Binding> bindings_;
  int index_depth_ = 0;
  bool allow_slice_ = false;
};

}  // namespace

CheckedOp check_op(const ast::OpDecl& op, const Globals& globals, const std::map<std::string, CheckedMonoid>& monoids,
                   Diagnostics& diags) {
  CheckedOp out;
  out.decl = &op;
  OpChecker(op, globals, monoids, diags, out).run();
  return out;
}

}  // namespace emmy::sema
