// Checks an op's calls of other ops (the callee's dims unified with the arguments' sizes) and
// its reductions (built-in and user monoids: axes, arguments, carriers); members of the op
// checker (op_checker.hpp), beside check_op.cpp.
#include <fmt/format.h>

#include "sema/op_checker.hpp"
#include "support/limits.hpp"

namespace emmy::sema::op_check {

std::optional<TensorView> OpChecker::op_call(const ast::Expr& call, const ast::Expr* field) {
  const ast::OpDecl& callee = *globals_.ops.at(call.text);
  out_.calls.emplace_back(callee.name.name, call.callee_range);
  types_[call.id] = Type::error();
  // A computed dim binds at a run (an output's) or is checked there (an input's: a derived op's
  // seed), which a call inlined into another op has not.
  for (const auto* params : {&callee.outputs, &callee.params})
    for (const ast::Param& p : *params)
      for (const ast::Dim& d : p.dims)
        if (d.computed) {
          const bool output = params == &callee.outputs;
          diags_
              .error("E065", call.range,
                     fmt::format("op {} computes the dims of its {} {}: it runs on its own, not inside another op",
                                 callee.name.name, output ? "output" : "input", p.name.name))
              .note(d.range, "computed here")
              .hint(output ? "call it from emmyc, the API or Python; or give its output a size its inputs bind"
                           : "call it from emmyc, the API or Python; or give that input a size name");
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
          .error("E030", arg.range, fmt::format("argument {} of op {} must be a tensor name", i + 1, callee.name.name))
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
    if (t->elem.kind != Type::Kind::Scalar || (want && !storable(t->elem, *want)) || t->shape.size() != p.dims.size()) {
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
      diags_.error("E036", field->callee_range, fmt::format("op {} has no output '{}'", callee.name.name, field->text))
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

Type OpChecker::call_other(const ast::Expr& e) {
  if (globals_.ops.count(e.text)) {
    const std::optional<TensorView> view = op_call(e, nullptr);
    if (view && view->shape.empty()) return view->elem;  // a scalar output reads bare: mean_loss(x, t)
    const size_t rank = view && !view->elem.is_error() ? view->shape.size() : 2;
    diags_.error("E045", e.range, fmt::format("the result of op {} is a tensor; index it", e.text))
        .hint(fmt::format("write {}", lhs_example(e.text + "(...)", rank)));
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

const CheckedMonoid* OpChecker::monoid_of(const Type& t) const {
  if (t.kind != Type::Kind::Record) return nullptr;
  auto it = monoids_.find(t.monoid);
  return it == monoids_.end() ? nullptr : &it->second;
}

Type OpChecker::reduce(const ast::Expr& e) {
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

bool OpChecker::uses(const ast::Expr& e, const std::string& var) {
  if (e.kind == ast::ExprKind::Name && e.text == var) return true;
  for (const ast::Expr& a : e.args)
    if (uses(a, var)) return true;
  for (const ast::Expr& w : e.where_)
    if (uses(w, var)) return true;
  return false;
}

Type OpChecker::builtin_reduce(const ast::Expr& e, const BuiltinReduction& r) {
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

Type OpChecker::monoid_reduce(const ast::Expr& e, const CheckedMonoid& m) {
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
    if ((t.kind == Type::Kind::Vector) != want_vector || t.kind == Type::Kind::Record || t.kind == Type::Kind::Tuple ||
        (want && (*want == DType::Bool) != (t.dtype == DType::Bool))) {
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

}  // namespace emmy::sema::op_check
