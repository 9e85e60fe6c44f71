// Integer expressions over an op's sizes: guards and computed dims, at a run's sizes.
#include "sema/size_expr.hpp"

#include <functional>
#include <limits>
#include <set>

#include <fmt/format.h>

namespace emmy {

std::optional<int64_t> eval_size_expr(const ast::Expr& e, const std::map<std::string, int64_t>& sizes) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Int:
    case K::Bool: return e.int_value;
    case K::Name: {
      auto it = sizes.find(e.text);
      if (it == sizes.end()) return std::nullopt;
      return it->second;
    }
    case K::Unary: {
      std::optional<int64_t> a = eval_size_expr(e.args[0], sizes);
      if (!a) return std::nullopt;
      if (e.text == "!") return int64_t{*a == 0};
      if (*a == std::numeric_limits<int64_t>::min()) return std::nullopt;
      return -*a;
    }
    case K::Binary: {
      std::optional<int64_t> a = eval_size_expr(e.args[0], sizes);
      if (e.text == "&&" && a == 0) return 0;  // short-circuit: the other side may not evaluate
      if (e.text == "||" && a && *a != 0) return 1;
      std::optional<int64_t> b = eval_size_expr(e.args[1], sizes);
      if (!a || !b) return std::nullopt;
      int64_t r = 0;
      const std::string& op = e.text;
      if (op == "+") return __builtin_add_overflow(*a, *b, &r) ? std::nullopt : std::optional(r);
      if (op == "-") return __builtin_sub_overflow(*a, *b, &r) ? std::nullopt : std::optional(r);
      if (op == "*") return __builtin_mul_overflow(*a, *b, &r) ? std::nullopt : std::optional(r);
      if (op == "/" || op == "%") {
        if (*b == 0 || (*a == std::numeric_limits<int64_t>::min() && *b == -1)) return std::nullopt;
        return op == "/" ? *a / *b : *a % *b;
      }
      if (op == "&&" || op == "||") return int64_t{*b != 0};
      if (op == "==") return int64_t{*a == *b};
      if (op == "!=") return int64_t{*a != *b};
      if (op == "<") return int64_t{*a < *b};
      if (op == "<=") return int64_t{*a <= *b};
      if (op == ">") return int64_t{*a > *b};
      if (op == ">=") return int64_t{*a >= *b};
      return std::nullopt;
    }
    default: return std::nullopt;  // sema refuses the rest (E064)
  }
}

std::optional<std::string> bind_computed_sizes(const ast::OpDecl& op, std::map<std::string, int64_t>& sizes) {
  // The inputs' first: a computed input dim checks the tensor passed, which bound its name.
  for (const auto* params : {&op.params, &op.outputs})
    for (const ast::Param& p : *params)
      for (const ast::Dim& c : p.dims) {
        if (!c.computed) continue;
        std::set<std::string> read;  // the sizes the expression reads, for the message
        std::function<void(const ast::Expr&)> walk = [&](const ast::Expr& e) {
          if (e.kind == ast::ExprKind::Name) read.insert(e.text);
          for (const ast::Expr& a : e.args) walk(a);
        };
        walk(*c.computed);
        std::vector<std::string> at;
        for (const std::string& name : read)
          if (auto it = sizes.find(name); it != sizes.end()) at.push_back(fmt::format("{}={}", name, it->second));
        const std::optional<int64_t> v = eval_size_expr(*c.computed, sizes);
        if (!v || *v <= 0)
          return fmt::format(
              "{}'s dim {} = {} is {} at {}: the inputs' sizes must make it positive", op.name.name, c.name, c.text,
              v ? std::to_string(*v) : std::string("not a number (overflow or division by 0)"), fmt::join(at, ","));
        if (auto it = sizes.find(c.name); it != sizes.end() && it->second != *v)
          return fmt::format("{}'s dim {} = {} is {} at {}, and the {} {} passed has {}", op.name.name, c.name, c.text,
                             *v, fmt::join(at, ","), params == &op.params ? "input" : "output", p.name.name,
                             it->second);
        sizes[c.name] = *v;
      }
  return std::nullopt;
}

}  // namespace emmy
