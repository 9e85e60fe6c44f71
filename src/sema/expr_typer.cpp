#include "sema/expr_typer.hpp"

#include <cstdint>
#include <optional>

#include <fmt/format.h>

namespace emmy::sema {

Type ExprTyper::check(const ast::Expr& e) {
  using K = ast::ExprKind;
  Type t;
  switch (e.kind) {
    case K::Int: t = Type::scalar(DType::I64, true); break;
    case K::Float:
    case K::Inf: t = Type::scalar(DType::F32, true); break;
    case K::Bool: t = Type::scalar(DType::Bool); break;
    case K::Name: t = name(e); break;
    case K::Index: t = index(e); break;
    case K::Field: t = field(e); break;
    case K::Slice:
      diags_.error("E035", e.range, "a slice ':' may only stand for a vector argument of a monoid reduction")
          .hint("index every dim, or pass the slice to a monoid whose lift takes a vector (v: f32[E])");
      break;
    case K::Unary: t = unary(e); break;
    case K::Binary: t = binary(e); break;
    case K::Call: t = call(e); break;
    case K::Reduce: t = reduce(e); break;
    case K::Tuple: t = tuple(e); break;
  }
  if (t.is_scalar() && is_int(t.dtype)) fold_int(e);
  types_[e.id] = t;
  return t;
}

void ExprTyper::fold_int(const ast::Expr& e) {
  auto constant = [&](size_t i) -> std::optional<int64_t> {
    if (i >= e.args.size()) return std::nullopt;
    auto it = int_constants_.find(e.args[i].id);
    return it == int_constants_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  if (e.kind == ast::ExprKind::Int) {
    int_constants_[e.id] = e.int_value;
    return;
  }
  std::optional<int64_t> a = constant(0), b = constant(1);
  int64_t v = 0;
  bool overflow = false;
  if (e.kind == ast::ExprKind::Unary && e.text == "-" && a) {
    overflow = __builtin_sub_overflow(int64_t{0}, *a, &v);
  } else if (e.kind == ast::ExprKind::Binary && a && b) {
    if ((e.text == "/" || e.text == "%") && *b == 0) {
      diags_
          .error("E063", e.range,
                 fmt::format("integer {} by zero: {} {} 0", e.text == "/" ? "division" : "remainder", *a, e.text))
          .hint("divide by a nonzero constant");
      return;
    }
    if (e.text == "+")
      overflow = __builtin_add_overflow(*a, *b, &v);
    else if (e.text == "-")
      overflow = __builtin_sub_overflow(*a, *b, &v);
    else if (e.text == "*")
      overflow = __builtin_mul_overflow(*a, *b, &v);
    else if (e.text == "/" || e.text == "%") {
      overflow = *a == INT64_MIN && *b == -1;
      if (!overflow) v = e.text == "/" ? *a / *b : *a % *b;
    } else {
      return;  // a comparison
    }
  } else {
    return;
  }
  if (overflow) {
    diags_
        .error("E063", e.range,
               fmt::format(
                   "integer constant arithmetic overflows i64: {}",
                   e.kind == ast::ExprKind::Unary ? fmt::format("-({})", *a) : fmt::format("{} {} {}", *a, e.text, *b)))
        .hint("integers are 64-bit (at most 9223372036854775807); write a float literal (9.2e18) for a larger value");
    return;
  }
  int_constants_[e.id] = v;
}

bool ExprTyper::require_value(const ast::Expr& e, const Type& t, const char* where) {
  if (t.is_error() || t.kind == Type::Kind::Scalar || t.kind == Type::Kind::Vector) return !t.is_error();
  if (t.kind == Type::Kind::Tuple)
    diags_.error("E038", e.range, fmt::format("a tuple cannot be used {}", where))
        .hint("tuples only build monoid carriers: identity, lift and yield");
  else
    diags_.error("E036", e.range, fmt::format("a {} cannot be used {}", t.str(), where)).hint(fields_hint(t));
  return false;
}

std::string ExprTyper::fields_hint(const Type& record) const {
  const CheckedMonoid* m = monoid_of(record);
  if (!m) return "select one of its fields with '.'";
  std::vector<std::string> fields;
  for (const ast::Field& f : m->decl->fields) fields.push_back(f.name.name);
  return fmt::format("select one of its fields with '.': {}", fmt::join(fields, ", "));
}

Type ExprTyper::tuple(const ast::Expr& e) {
  for (const ast::Expr& a : e.args) check(a);
  diags_.error("E038", e.range, "a tuple is only allowed as a monoid's identity, lift or yield")
      .hint("compute each component in its own statement");
  return Type::error();
}

Size ExprTyper::resolve_dim(const Type& record, const ast::Dim& d) const {
  if (d.is_literal()) return {"", d.value};
  for (const auto& [name, size] : record.vector_dims)
    if (name == d.name) return size;
  return {d.name, 0};
}

Type ExprTyper::field(const ast::Expr& e) {
  Type base = check(e.args[0]);
  if (base.is_error()) return base;
  const CheckedMonoid* m = monoid_of(base);
  if (!m) {
    diags_
        .error("E036", e.callee_range,
               fmt::format("no field '{}': the value is a {}, which has no fields", e.text, base.str()))
        .hint("fields exist on monoid carriers, e.g. r.o where r = softmax_pv(j: ...)");
    return Type::error();
  }
  std::vector<std::string> names;
  for (const ast::Field& f : m->decl->fields) {
    names.push_back(f.name.name);
    if (f.name.name != e.text) continue;
    DType dt = parse_dtype(f.dtype.name).value_or(DType::F32);
    if (f.vector_dim) return Type::vector(dt, resolve_dim(base, *f.vector_dim));
    return Type::scalar(dt);
  }
  std::string guess = closest_name(e.text, names);
  diags_.error("E036", e.callee_range, fmt::format("monoid {} has no field '{}'", m->decl->name.name, e.text))
      .hint(guess.empty() ? fmt::format("its fields are: {}", fmt::join(names, ", "))
                          : fmt::format("did you mean '{}'?", guess));
  return Type::error();
}

Type ExprTyper::unary(const ast::Expr& e) {
  Type t = check(e.args[0]);
  if (!require_value(e.args[0], t, "with a unary operator")) return Type::error();
  if (e.text == "!") {
    if (!t.is_bool()) {
      diags_.error("E031", e.args[0].range, fmt::format("'!' needs a bool operand, not {}", t.str()))
          .hint("compare first, e.g. !(x > 0)");
      return Type::error();
    }
    return t;
  }
  if (!t.is_numeric()) {
    diags_.error("E030", e.args[0].range, fmt::format("cannot negate a {}", t.str())).hint("negate numbers only");
    return Type::error();
  }
  return t;
}

Type ExprTyper::binary(const ast::Expr& e) {
  Type a = check(e.args[0]);
  Type b = check(e.args[1]);
  bool ok_a = require_value(e.args[0], a, fmt::format("as an operand of '{}'", e.text).c_str());
  bool ok_b = require_value(e.args[1], b, fmt::format("as an operand of '{}'", e.text).c_str());
  if (!ok_a || !ok_b) return Type::error();
  const std::string& op = e.text;
  if (op == "&&" || op == "||") {
    for (int i = 0; i < 2; ++i) {
      const Type& t = i == 0 ? a : b;
      if (!t.is_bool()) {
        diags_.error("E031", e.args[i].range, fmt::format("'{}' needs bool operands, not {}", op, t.str()))
            .hint("compare first, e.g. (x > 0) && (y > 0)");
        return Type::error();
      }
    }
    return a;
  }
  if (a.kind == Type::Kind::Vector && b.kind == Type::Kind::Vector && !(a.length == b.length)) {
    diags_
        .error("E023", e.range, fmt::format("vectors of different lengths: {} and {}", a.length.str(), b.length.str()))
        .hint("both operands must have the same length");
    return Type::error();
  }
  bool equality = op == "==" || op == "!=";
  bool compare = equality || op == "<" || op == "<=" || op == ">" || op == ">=";
  if (!(equality && a.is_bool() && b.is_bool())) {
    for (int i = 0; i < 2; ++i) {
      const Type& t = i == 0 ? a : b;
      if (!t.is_numeric()) {
        diags_.error("E030", e.args[i].range, fmt::format("'{}' needs numbers, not {}", op, t.str()))
            .hint("convert with a cast such as f32(x), or use select(c, a, b)");
        return Type::error();
      }
    }
  }
  Type r = promote(a, b);
  if (compare) {
    if (r.kind == Type::Kind::Vector) {
      diags_.error("E030", e.range, "comparisons work on scalars, not vectors").hint("compare single elements");
      return Type::error();
    }
    return Type::scalar(DType::Bool);
  }
  if (op == "%" && !is_int(r.dtype)) {
    diags_.error("E030", e.range, fmt::format("'%' needs integer operands, not {}", r.str()))
        .hint("'%' is for integer index arithmetic, e.g. x[(j + 1) % N]");
    return Type::error();
  }
  return r;
}

Type ExprTyper::call_other(const ast::Expr& e) {
  for (const ast::Expr& a : e.args) check(a);
  std::vector<std::string> names;
  for (const BuiltinFn& f : builtin_fns()) names.push_back(std::string(f.name));
  std::string guess = closest_name(e.text, names);
  diags_.error("E027", e.callee_range, fmt::format("unknown function '{}'", e.text))
      .hint(guess.empty() ? fmt::format("the functions are {}", fmt::join(names, ", "))
                          : fmt::format("did you mean '{}'?", guess));
  return Type::error();
}

Type ExprTyper::call(const ast::Expr& e) {
  const BuiltinFn* fn = find_builtin_fn(e.text);
  if (!fn) return call_other(e);
  std::vector<Type> args;
  bool ok = true;
  for (const ast::Expr& a : e.args) {
    args.push_back(check(a));
    ok = require_value(a, args.back(), fmt::format("as an argument of {}", e.text).c_str()) && ok;
  }
  if (static_cast<int>(e.args.size()) != fn->arity) {
    diags_
        .error(
            "E032", e.range,
            fmt::format("{} takes {} argument{}, got {}", e.text, fn->arity, fn->arity == 1 ? "" : "s", e.args.size()))
        .hint(e.text == "max" || e.text == "min"
                  ? fmt::format("write {}(a, b), or {}(j: x[j]) to reduce over an axis", e.text, e.text)
                  : fmt::format("write {}({})", e.text,
                                fn->arity == 1   ? "x"
                                : fn->arity == 2 ? "a, b"
                                                 : "cond, a, b"));
    return Type::error();
  }
  if (!ok) return Type::error();
  switch (fn->rule) {
    case FnRule::FloatUnary:
      if (!args[0].is_numeric()) {
        diags_.error("E030", e.args[0].range, fmt::format("{} needs a number, not {}", e.text, args[0].str()))
            .hint("convert with f32(x)");
        return Type::error();
      }
      if (!is_float(args[0].dtype)) {
        Type t = args[0];
        t.dtype = DType::F32;
        t.weak = false;
        return t;
      }
      return args[0];
    case FnRule::SameAsArgs: {
      Type r = args[0];
      for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].is_numeric()) {
          diags_.error("E030", e.args[i].range, fmt::format("{} needs numbers, not {}", e.text, args[i].str()))
              .hint("convert with a cast such as f32(x)");
          return Type::error();
        }
        if (i > 0) r = promote(r, args[i]);
      }
      return r;
    }
    case FnRule::Select:
      if (!args[0].is_bool()) {
        diags_.error("E031", e.args[0].range, fmt::format("select's condition must be bool, not {}", args[0].str()))
            .hint("write a comparison, e.g. select(j <= i, x, -inf)");
        return Type::error();
      }
      if (args[1].is_bool() != args[2].is_bool()) {
        diags_.error("E030", e.range, fmt::format("select's branches differ: {} and {}", args[1].str(), args[2].str()))
            .hint("both branches must be numbers, or both bool");
        return Type::error();
      }
      return args[1].is_bool() ? args[1] : promote(args[1], args[2]);
    case FnRule::Cast: {
      Type t = args[0];
      t.dtype = *parse_dtype(e.text);
      t.weak = false;
      return t;
    }
  }
  return Type::error();
}

}  // namespace emmy::sema
