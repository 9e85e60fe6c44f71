// Expression builders for derived ops, simplifying 0, 1 and double negation as they build, and
// the printer that turns an expression back into .emmy source.
#include <cmath>

#include <fmt/format.h>

#include "sema/grad.hpp"

namespace emmy::sema::grad {

using ast::Expr;
using ast::ExprKind;

namespace {

Expr node(ExprKind kind, std::string text, std::vector<Expr> args) {
  Expr e;
  e.kind = kind;
  e.text = std::move(text);
  e.args = std::move(args);
  return e;
}

// Binding strength of an operator as the grammar nests them (higher binds tighter).
int precedence(const Expr& e) {
  if (e.kind == ExprKind::Unary) return 6;
  if (e.kind != ExprKind::Binary) return 7;
  const std::string& op = e.text;
  if (op == "||") return 1;
  if (op == "&&") return 2;
  if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") return 3;
  if (op == "+" || op == "-") return 4;
  return 5;  // * / %
}

std::string operand(const Expr& e, int at_least) {
  std::string s = source(e);
  return precedence(e) < at_least ? "(" + s + ")" : s;
}

std::string joined(const std::vector<Expr>& args, size_t from) {
  std::string out;
  for (size_t k = from; k < args.size(); ++k) out += (k > from ? ", " : "") + source(args[k]);
  return out;
}

}  // namespace

Expr num(double v) {
  Expr e;
  if (std::isinf(v)) return v > 0 ? node(ExprKind::Inf, "inf", {}) : neg(node(ExprKind::Inf, "inf", {}));
  if (v < 0) return neg(num(-v));
  if (v == std::floor(v) && v < 1e15) {
    e.kind = ExprKind::Int;
    e.int_value = static_cast<int64_t>(v);
    e.text = std::to_string(e.int_value);
  } else {
    e.kind = ExprKind::Float;
    e.float_value = v;
    e.text = fmt::format("{}", v);
    if (e.text.find_first_of(".e") == std::string::npos) e.text += ".0";
  }
  return e;
}

Expr real(double v) {
  Expr e = num(v);
  if (e.kind != ExprKind::Int) return e;
  e.kind = ExprKind::Float;
  e.float_value = v;
  e.text += ".0";
  return e;
}

Expr name(std::string n) { return node(ExprKind::Name, std::move(n), {}); }

Expr read(const std::string& tensor, const std::vector<std::string>& vars) {
  std::vector<Expr> indices;
  for (const std::string& v : vars) indices.push_back(name(v));
  return read_at(tensor, std::move(indices));
}

Expr read_at(const std::string& tensor, std::vector<Expr> indices) {
  if (indices.empty()) return name(tensor);
  indices.insert(indices.begin(), name(tensor));
  return node(ExprKind::Index, "", std::move(indices));
}

Expr call(std::string fn, std::vector<Expr> args) { return node(ExprKind::Call, std::move(fn), std::move(args)); }

Expr compare(std::string op, Expr a, Expr b) {
  return node(ExprKind::Binary, std::move(op), {std::move(a), std::move(b)});
}

Expr all_of(std::vector<Expr> conditions) {
  if (conditions.empty()) {
    Expr t;
    t.kind = ExprKind::Bool;
    t.int_value = 1;
    t.text = "true";
    return t;
  }
  Expr out = std::move(conditions[0]);
  for (size_t k = 1; k < conditions.size(); ++k) out = compare("&&", std::move(out), std::move(conditions[k]));
  return out;
}

Expr reduce(std::string monoid, std::vector<std::string> axes, std::optional<Expr> where, Expr body) {
  Expr r = node(ExprKind::Reduce, std::move(monoid), {std::move(body)});
  for (std::string& a : axes) r.axes.push_back({std::move(a), {}});
  if (where) r.where_.push_back(std::move(*where));
  return r;
}

bool is_number(const Expr& e, double v) {
  if (e.kind == ExprKind::Int) return static_cast<double>(e.int_value) == v;
  if (e.kind == ExprKind::Float) return e.float_value == v;
  if (e.kind == ExprKind::Unary && e.text == "-") return is_number(e.args[0], -v);
  return false;
}

Expr neg(Expr a) {
  if (is_number(a, 0)) return a;
  if (a.kind == ExprKind::Unary && a.text == "-") return std::move(a.args[0]);
  return node(ExprKind::Unary, "-", {std::move(a)});
}

Expr add(Expr a, Expr b) {
  if (is_number(a, 0)) return b;
  if (is_number(b, 0)) return a;
  if (b.kind == ExprKind::Unary && b.text == "-") return sub(std::move(a), std::move(b.args[0]));
  return node(ExprKind::Binary, "+", {std::move(a), std::move(b)});
}

Expr sub(Expr a, Expr b) {
  if (is_number(b, 0)) return a;
  if (is_number(a, 0)) return neg(std::move(b));
  if (b.kind == ExprKind::Unary && b.text == "-") return add(std::move(a), std::move(b.args[0]));
  return node(ExprKind::Binary, "-", {std::move(a), std::move(b)});
}

Expr mul(Expr a, Expr b) {
  if (is_number(a, 0) || is_number(b, 0)) return num(0);
  if (is_number(a, 1)) return b;
  if (is_number(b, 1)) return a;
  if (is_number(a, -1)) return neg(std::move(b));
  if (is_number(b, -1)) return neg(std::move(a));
  // Signs outside: -(a * b) reads as the rules write it.
  const bool na = a.kind == ExprKind::Unary && a.text == "-", nb = b.kind == ExprKind::Unary && b.text == "-";
  if (na || nb) {
    Expr inner = mul(na ? std::move(a.args[0]) : std::move(a), nb ? std::move(b.args[0]) : std::move(b));
    return na != nb ? neg(std::move(inner)) : inner;
  }
  return node(ExprKind::Binary, "*", {std::move(a), std::move(b)});
}

Expr div(Expr a, Expr b) {
  if (is_number(a, 0)) return num(0);
  if (is_number(b, 1)) return a;
  if (a.kind == ExprKind::Unary && a.text == "-") return neg(div(std::move(a.args[0]), std::move(b)));
  return node(ExprKind::Binary, "/", {std::move(a), std::move(b)});
}

Expr rename(const Expr& e, const std::map<std::string, std::string>& renames) {
  Expr out = ast::node_of(e);
  if (e.kind == ExprKind::Name)
    if (auto it = renames.find(e.text); it != renames.end()) out.text = it->second;
  for (ast::Ident& a : out.axes)
    if (auto it = renames.find(a.name); it != renames.end()) a.name = it->second;
  for (size_t k = 0; k < e.args.size(); ++k)
    out.args.push_back(k == 0 && e.kind == ExprKind::Index && e.args[0].kind == ExprKind::Name
                           ? e.args[0]
                           : rename(e.args[k], renames));
  for (const Expr& w : e.where_) out.where_.push_back(rename(w, renames));
  return out;
}

Expr rewrite(const Expr& e, const std::function<std::optional<Expr>(const Expr&)>& f) {
  if (std::optional<Expr> r = f(e)) return *r;
  Expr out = ast::node_of(e);
  for (const Expr& a : e.args) out.args.push_back(rewrite(a, f));
  for (const Expr& w : e.where_) out.where_.push_back(rewrite(w, f));
  return out;
}

Expr substitute(const Expr& e, const std::string& var, const Expr& value) {
  return rewrite(e, [&](const Expr& n) {
    return n.kind == ExprKind::Name && n.text == var ? std::optional(value) : std::nullopt;
  });
}

bool indexes(const Expr& e, const std::string& v) {
  if (e.kind == ExprKind::Index)
    for (size_t k = 1; k < e.args.size(); ++k)
      if (e.args[k].kind == ExprKind::Name && e.args[k].text == v) return true;
  for (const Expr& a : e.args)
    if (indexes(a, v)) return true;
  return false;
}

void names_in(const Expr& e, std::set<std::string>& out) {
  if (e.kind == ExprKind::Name) out.insert(e.text);
  for (const ast::Ident& a : e.axes) out.insert(a.name);
  for (const Expr& a : e.args) names_in(a, out);
  for (const Expr& w : e.where_) names_in(w, out);
}

std::string source(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::Name: return e.text;
    case ExprKind::Bool: return e.int_value ? "true" : "false";
    case ExprKind::Inf: return "inf";
    case ExprKind::Slice: return ":";
    case ExprKind::Index: return fmt::format("{}[{}]", operand(e.args[0], 7), joined(e.args, 1));
    case ExprKind::Field: return fmt::format("{}.{}", operand(e.args[0], 7), e.text);
    case ExprKind::Unary: return e.text + operand(e.args[0], 6);
    case ExprKind::Binary: {
      const int p = precedence(e);
      // Left-associative: the right operand of an operator of the same level keeps its parentheses;
      // comparisons do not chain, so neither of theirs may be one.
      return fmt::format("{} {} {}", operand(e.args[0], p == 3 ? 4 : p), e.text, operand(e.args[1], p + 1));
    }
    case ExprKind::Call: return fmt::format("{}({})", e.text, joined(e.args, 0));
    case ExprKind::Tuple: return fmt::format("({})", joined(e.args, 0));
    case ExprKind::Reduce: {
      std::string axes;
      for (const ast::Ident& a : e.axes) axes += (axes.empty() ? "" : ", ") + a.name;
      std::string where = e.where_.empty() ? "" : " where " + source(e.where_[0]);
      return fmt::format("{}({}{}: {})", e.text, axes, where, joined(e.args, 0));
    }
  }
  return "?";
}

}  // namespace emmy::sema::grad
