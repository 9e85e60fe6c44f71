// The tensor IR's printer and small queries.
#include "ir/tensor_ir.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace emmy::tir {

const Tensor* Program::find(const std::string& tensor_name) const {
  for (const Tensor& t : tensors)
    if (t.name == tensor_name) return &t;
  return nullptr;
}

const Stmt* Program::def(const std::string& tensor_name) const {
  for (const Stmt& s : stmts)
    if (s.name == tensor_name) return &s;
  return nullptr;
}

namespace {

std::string join_args(const std::vector<Expr>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + print_expr(args[i]);
  return out;
}

std::string axes_text(const std::vector<Axis>& axes) {
  std::string out;
  for (size_t i = 0; i < axes.size(); ++i) out += fmt::format("{}{}<{}", i ? ", " : "", axes[i].name, axes[i].size);
  return out;
}

std::string role_name(Tensor::Role role) {
  switch (role) {
    case Tensor::Role::Input: return "in";
    case Tensor::Role::Output: return "out";
    case Tensor::Role::Intermediate: return "tmp";
  }
  return "?";
}

}  // namespace

std::string print_expr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Const: return fmt::format("{}", e.value);
    case Expr::Kind::Size:
    case Expr::Kind::Index: return e.name;
    case Expr::Kind::Reg: return "%" + e.name;
    case Expr::Kind::Read: return fmt::format("{}[{}]", e.name, join_args(e.args));
    case Expr::Kind::Slice: return ":";
    case Expr::Kind::Unary: return fmt::format("({}{})", e.op, print_expr(e.args[0]));
    case Expr::Kind::Binary:
      if (e.op == "max" || e.op == "min") return fmt::format("{}({})", e.op, join_args(e.args));
      return fmt::format("({} {} {})", print_expr(e.args[0]), e.op, print_expr(e.args[1]));
    case Expr::Kind::Call: return fmt::format("{}({})", e.op, join_args(e.args));
    case Expr::Kind::Reduce:
      return fmt::format("{}({}{}: {})", e.op, axes_text(e.axes),
                         e.where.empty() ? "" : " where " + print_expr(e.where[0]), join_args(e.args));
    case Expr::Kind::Field:
      return e.args.size() > 1 ? fmt::format("{}.{}[{}]", print_expr(e.args[0]), e.name, print_expr(e.args[1]))
                               : fmt::format("{}.{}", print_expr(e.args[0]), e.name);
  }
  return "?";
}

std::string print_program(const Program& program) {
  std::string out = fmt::format("tensor_program {}  sizes({})\n", program.op, fmt::join(program.sizes, ", "));
  for (const Tensor& t : program.tensors)
    out += fmt::format("  {} {}: {}[{}]\n", role_name(t.role), t.name,
                       t.record.empty() ? std::string(dtype_name(t.dtype)) : t.record, fmt::join(t.dims, ", "));
  for (const Stmt& s : program.stmts) {
    std::string vars;
    for (size_t i = 0; i < s.vars.size(); ++i)
      vars += fmt::format("{}{}<{}", i ? ", " : "", s.vars[i].name, s.vars[i].size);
    out += fmt::format("  {}[{}] = {}\n", s.name, vars, print_expr(s.value));
  }
  return out;
}

void visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const Expr& a : e.args) visit(a, f);
  for (const Expr& w : e.where) visit(w, f);
}

bool any_node(const Expr& e, const std::function<bool(const Expr&)>& match) {
  if (match(e)) return true;
  return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return any_node(a, match); }) ||
         std::any_of(e.where.begin(), e.where.end(), [&](const Expr& w) { return any_node(w, match); });
}

bool has_reduce(const Expr& e) {
  return any_node(e, [](const Expr& x) { return x.kind == Expr::Kind::Reduce; });
}

const Expr& strip_casts(const Expr& e) {
  if (e.kind == Expr::Kind::Call && e.args.size() == 1 && parse_dtype(e.op)) return strip_casts(e.args[0]);
  return e;
}

size_t node_count(const Expr& e, size_t cap) {
  size_t n = 1;
  for (const std::vector<Expr>* list : {&e.args, &e.where})
    for (const Expr& a : *list) {
      if (n >= cap) return cap;
      n += node_count(a, cap - n);
    }
  return std::min(n, cap);
}

void add_reads(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& x) {
    if (x.kind == Expr::Kind::Read) out.insert(x.name);
  });
}

bool reads(const Expr& e, const std::string& tensor) {
  return any_node(e, [&](const Expr& x) { return x.kind == Expr::Kind::Read && x.name == tensor; });
}

bool uses_index(const Expr& e, const std::string& index) {
  return any_node(e, [&](const Expr& x) { return x.kind == Expr::Kind::Index && x.name == index; });
}

namespace {

// Whether `name` appears in e as an index or as a reduction's axis.
bool mentions_name(const Expr& e, const std::string& name) {
  return any_node(e, [&](const Expr& x) {
    return (x.kind == Expr::Kind::Index && x.name == name) ||
           (x.kind == Expr::Kind::Reduce &&
            std::any_of(x.axes.begin(), x.axes.end(), [&](const Axis& a) { return a.name == name; }));
  });
}

}  // namespace

Expr substitute(const Expr& e, const std::vector<std::pair<std::string, Expr>>& by) {
  if (e.kind == Expr::Kind::Index)
    for (const auto& [name, value] : by)
      if (name == e.name) return value;
  if (e.kind != Expr::Kind::Reduce || e.axes.empty())
    return map_children(e, [&](const Expr& x) { return substitute(x, by); });
  // A reduction binds its axes: they shadow a substitution of the same name, and an axis a
  // substituted value reads is renamed first (sum(k: x[m, k] * w[k, n]) with n -> k must not
  // read w[k, k]).
  std::vector<std::pair<std::string, Expr>> inner;
  for (const std::pair<std::string, Expr>& b : by)
    if (std::none_of(e.axes.begin(), e.axes.end(), [&](const Axis& a) { return a.name == b.first; }))
      inner.push_back(b);
  if (inner.empty()) return e;
  Expr r = e;
  for (size_t k = 0; k < r.axes.size(); ++k) {
    const std::string name = r.axes[k].name;
    if (std::none_of(inner.begin(), inner.end(), [&](const auto& b) { return uses_index(b.second, name); })) continue;
    std::string fresh;
    for (int n = 1;; ++n) {
      fresh = name + "_" + std::to_string(n);
      if (!mentions_name(e, fresh) &&
          std::none_of(inner.begin(), inner.end(), [&](const auto& b) { return mentions_name(b.second, fresh); }))
        break;
    }
    Expr index;
    index.kind = Expr::Kind::Index;
    index.dtype = DType::I64;
    index.name = fresh;
    r = map_children(r, [&](const Expr& x) { return substitute(x, {{name, index}}); });
    r.axes[k].name = fresh;
  }
  return map_children(r, [&](const Expr& x) { return substitute(x, inner); });
}

Expr node_of(const Expr& e) {
  Expr out;
  out.kind = e.kind;
  out.dtype = e.dtype;
  out.record = e.record;
  out.value = e.value;
  out.name = e.name;
  out.op = e.op;
  out.axes = e.axes;
  return out;
}

Expr map_children(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  Expr out = node_of(e);
  out.args.reserve(e.args.size());
  for (const Expr& a : e.args) out.args.push_back(f(a));
  out.where.reserve(e.where.size());
  for (const Expr& w : e.where) out.where.push_back(f(w));
  return out;
}

Expr map_args(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  Expr out = node_of(e);
  out.args.reserve(e.args.size());
  for (const Expr& a : e.args) out.args.push_back(f(a));
  out.where = e.where;
  return out;
}

}  // namespace emmy::tir
