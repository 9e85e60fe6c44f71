// The local derivative rules of reverse mode, one table row a built-in function or operator:
// given the adjoint of a node, the adjoint each operand receives.
#include <cmath>

#include "sema/grad_rules.hpp"

namespace emmy::sema::grad {
namespace {

using ast::Expr;

Expr select(Expr c, Expr a, Expr b) { return call("select", {std::move(c), std::move(a), std::move(b)}); }

constexpr double kTwoOverSqrtPi = 1.1283791670955126;  // d erf(x) / dx = 2 / sqrt(pi) exp(-x^2)

// `node` is the node's own value: the statement's tensor where the node is a statement's whole
// value (exp(s - m) is p), else the node recomputed.
using Rule = std::vector<std::optional<Expr>> (*)(const Expr& g, const std::vector<Expr>& a, const Expr& node);

struct Row {
  std::string_view name;
  Rule rule;
};

const Row kRules[] = {
    {"exp",
     [](const Expr& g, const std::vector<Expr>&, const Expr& e) -> std::vector<std::optional<Expr>> {
       return {mul(g, e)};
     }},
    {"exp2",
     [](const Expr& g, const std::vector<Expr>&, const Expr& e) -> std::vector<std::optional<Expr>> {
       return {mul(mul(g, e), num(std::log(2.0)))};
     }},
    {"log",
     [](const Expr& g, const std::vector<Expr>& a, const Expr&) -> std::vector<std::optional<Expr>> {
       return {div(g, a[0])};
     }},
    {"log2",
     [](const Expr& g, const std::vector<Expr>& a, const Expr&) -> std::vector<std::optional<Expr>> {
       return {div(g, mul(a[0], num(std::log(2.0))))};
     }},
    {"sqrt",
     [](const Expr& g, const std::vector<Expr>&, const Expr& e) -> std::vector<std::optional<Expr>> {
       return {div(g, mul(num(2), e))};
     }},
    {"rsqrt",
     [](const Expr& g, const std::vector<Expr>& a, const Expr& e) -> std::vector<std::optional<Expr>> {
       return {neg(div(mul(g, e), mul(num(2), a[0])))};  // -x^(-3/2) / 2
     }},
    {"tanh",
     [](const Expr& g, const std::vector<Expr>&, const Expr& e) -> std::vector<std::optional<Expr>> {
       return {mul(g, sub(num(1), mul(e, e)))};
     }},
    {"sigmoid",
     [](const Expr& g, const std::vector<Expr>&, const Expr& e) -> std::vector<std::optional<Expr>> {
       return {mul(mul(g, e), sub(num(1), e))};
     }},
    {"erf",
     [](const Expr& g, const std::vector<Expr>& a, const Expr&)
         -> std::vector<
             std::optional<Expr>> { return {mul(mul(g, num(kTwoOverSqrtPi)), call("exp", {neg(mul(a[0], a[0]))}))}; }},
    {"abs",
     [](const Expr& g, const std::vector<Expr>& a, const Expr&) -> std::
                                                                    vector<std::optional<Expr>> {
                                                                      // sign(x) g, 0 at x = 0 (as torch.abs)
                                                                      return {select(compare(">", a[0], num(0)), g,
                                                                                     select(compare("<", a[0], num(0)),
                                                                                            neg(g), num(0)))};
                                                                    }},
    {"max",
     [](const Expr& g, const std::vector<Expr>& a,
        const Expr&) -> std::
                         vector<std::optional<Expr>> {
                           Expr first = compare(">=", a[0], a[1]);  // a tie goes to the first operand
                           return {select(first, g, num(0)), select(first, num(0), g)};
                         }},
    {"min",
     [](const Expr& g, const std::vector<Expr>& a,
        const Expr&) -> std::
                         vector<std::optional<Expr>> {
                           Expr first = compare("<=", a[0], a[1]);
                           return {select(first, g, num(0)), select(first, num(0), g)};
                         }},
    {"select",
     [](const Expr& g, const std::vector<Expr>& a,
        const Expr&) -> std::
                         vector<std::optional<Expr>> {
                           return {std::nullopt, select(a[0], g, num(0)), select(a[0], num(0), g)};
                         }},
    // A float cast's rounding is taken as the identity (its derivative almost everywhere is 0).
    {"f16",
     [](const Expr& g, const std::vector<Expr>&, const Expr&) -> std::vector<std::optional<Expr>> { return {g}; }},
    {"bf16",
     [](const Expr& g, const std::vector<Expr>&, const Expr&) -> std::vector<std::optional<Expr>> { return {g}; }},
    {"f32",
     [](const Expr& g, const std::vector<Expr>&, const Expr&) -> std::vector<std::optional<Expr>> { return {g}; }},
    {"f64",
     [](const Expr& g, const std::vector<Expr>&, const Expr&) -> std::vector<std::optional<Expr>> { return {g}; }},
    // Integer and bool casts, and comparisons: piecewise constant, no adjoint flows.
    {"bool",
     [](const Expr&, const std::vector<Expr>&,
        const Expr&) -> std::vector<std::optional<Expr>> { return {std::nullopt}; }},
    {"i32",
     [](const Expr&, const std::vector<Expr>&,
        const Expr&) -> std::vector<std::optional<Expr>> { return {std::nullopt}; }},
    {"i64",
     [](const Expr&, const std::vector<Expr>&,
        const Expr&) -> std::vector<std::optional<Expr>> { return {std::nullopt}; }},
    {"-",
     [](const Expr& g, const std::vector<Expr>& a, const Expr&) -> std::
                                                                    vector<std::optional<Expr>> {
                                                                      if (a.size() == 1) return {neg(g)};
                                                                      return {g, neg(g)};
                                                                    }},
    {"+",
     [](const Expr& g, const std::vector<Expr>&, const Expr&) -> std::
                                                                  vector<std::optional<Expr>> {
                                                                    return {g, g};
                                                                  }},
    {"*",
     [](const Expr& g, const std::vector<Expr>& a, const Expr&) -> std::
                                                                    vector<std::optional<Expr>> {
                                                                      return {mul(g, a[1]), mul(g, a[0])};
                                                                    }},
    {"/",
     [](const Expr& g, const std::vector<Expr>& a,
        const Expr& e) -> std::
                           vector<std::optional<Expr>> {
                             return {div(g, a[1]), neg(div(mul(g, e), a[1]))};  // d(a/b)/db = -(a/b)/b
                           }},
};

}  // namespace

std::optional<std::vector<std::optional<Expr>>> operand_adjoints(const std::string& fn, const Expr& g,
                                                                 const std::vector<Expr>& args, const Expr& node) {
  for (const Row& r : kRules)
    if (r.name == fn) return r.rule(g, args, node);
  static const char* kFlat[] = {"==", "!=", "<", "<=", ">", ">=", "&&", "||", "!"};
  for (const char* op : kFlat)
    if (fn == op) return std::vector<std::optional<Expr>>(args.size());
  return std::nullopt;
}

}  // namespace emmy::sema::grad
