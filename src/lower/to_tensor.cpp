// Builds the tensor IR of a checked op: lets substituted, bare names indexed, reduction
// axes sized, and called ops inlined as statements of their own.
#include "lower/passes.hpp"
#include "sema/call_binding.hpp"
#include "sema/inlined_names.hpp"

#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace emmy::lower {
namespace {

using ast::ExprKind;
using tir::Expr;

std::string size_text(const Size& s) { return s.symbol.empty() ? std::to_string(s.literal) : s.symbol; }

// How names of one op body map into the program being built (an inlined callee renames).
struct Scope {
  const CheckedOp* op = nullptr;
  std::string prefix;                          // "" for the main op, "cross_entropy1_" inlined
  std::map<std::string, std::string> tensors;  // callee parameter -> caller tensor
  std::map<std::string, std::string> sizes;    // callee size symbol -> caller size
  std::map<std::string, Expr> lets;
};

class TensorBuilder {
 public:
  TensorBuilder(const CheckedProgram& program, tir::Program& out) : program_(program), out_(out) {}

  // Converts one op's statements; returns the program names of its outputs.
  std::map<std::string, std::string> build(Scope& scope) {
    std::map<std::string, std::string> outputs;
    for (const ast::Stmt& s : scope.op->decl->body) {
      if (const auto* let = std::get_if<ast::LetStmt>(&s)) {
        Expr value = convert(let->value, scope, {});
        if (tir::node_count(value, tir::kMaxCopiedNodes) < tir::kMaxCopiedNodes) {
          scope.lets[let->name.name] = std::move(value);
          continue;
        }
        // A large let is a scalar intermediate, computed once and read where it is used: copied
        // into each use, a chain of lets grows with its expansion, exponentially.
        const TensorInfo* info = scope.op->find(let->name.name);
        tir::Stmt stmt;
        stmt.name = tensor_name(scope, let->name.name);
        stmt.value = std::move(value);
        if (!out_.find(stmt.name))
          out_.tensors.push_back(tensor_of(scope, *info, stmt.name, tir::Tensor::Role::Intermediate));
        scope.lets[let->name.name] = read_bare(let->name.name, *info, scope);
        out_.stmts.push_back(std::move(stmt));
        continue;
      }
      const auto& a = std::get<ast::AssignStmt>(s);
      const TensorInfo* info = scope.op->find(a.target.name);
      tir::Stmt stmt;
      stmt.name = tensor_name(scope, a.target.name);
      for (size_t k = 0; k < a.indices.size(); ++k)
        stmt.vars.push_back({a.indices[k].text, map_size(scope, info->shape[k])});
      std::vector<std::string> vars;
      for (const tir::Axis& v : stmt.vars) vars.push_back(v.name);
      stmt.value = convert(a.value, scope, vars);
      if (info->role == TensorInfo::Role::Output) outputs[a.target.name] = stmt.name;
      if (!out_.find(stmt.name))
        out_.tensors.push_back(tensor_of(scope, *info, stmt.name, tir::Tensor::Role::Intermediate));
      out_.stmts.push_back(std::move(stmt));
    }
    return outputs;
  }

  tir::Tensor tensor_of(const Scope& scope, const TensorInfo& info, std::string name, tir::Tensor::Role role) {
    tir::Tensor t;
    t.name = std::move(name);
    t.role = role;
    if (info.elem.kind == Type::Kind::Record)
      t.record = info.elem.monoid;
    else
      t.dtype = info.elem.dtype;
    for (const Size& s : info.shape) t.dims.push_back(map_size(scope, s));
    return t;
  }

 private:
  std::string tensor_name(const Scope& scope, const std::string& name) {
    if (auto it = scope.tensors.find(name); it != scope.tensors.end()) return it->second;
    return scope.prefix + name;
  }
  static std::string map_size(const Scope& scope, const Size& s) {
    if (!s.symbol.empty())
      if (auto it = scope.sizes.find(s.symbol); it != scope.sizes.end()) return it->second;
    return size_text(s);
  }

  void type_node(Expr& e, const Scope& scope, const ast::Expr& src) {
    auto it = scope.op->expr_types.find(src.id);
    if (it == scope.op->expr_types.end()) return;
    const Type& t = it->second;
    if (t.kind == Type::Kind::Record)
      e.record = t.monoid;
    else if (t.kind == Type::Kind::Scalar || t.kind == Type::Kind::Vector)
      e.dtype = t.weak ? materialize(t) : t.dtype;
  }

  Expr node(Expr::Kind kind, const Scope& scope, const ast::Expr& src) {
    Expr e;
    e.kind = kind;
    type_node(e, scope, src);
    return e;
  }

  static bool contains(const std::vector<std::string>& v, const std::string& x) {
    for (const std::string& s : v)
      if (s == x) return true;
    return false;
  }

  Expr read_bare(const std::string& tensor, const TensorInfo& info, const Scope& scope) {
    Expr r;
    r.kind = Expr::Kind::Read;
    r.name = tensor_name(scope, tensor);
    if (info.elem.kind == Type::Kind::Record)
      r.record = info.elem.monoid;
    else
      r.dtype = info.elem.dtype;
    for (const std::string& v : info.index_vars) {
      Expr i;
      i.kind = Expr::Kind::Index;
      i.dtype = DType::I64;
      i.name = v;
      r.args.push_back(i);
    }
    return r;
  }

  Expr convert(const ast::Expr& e, Scope& scope, const std::vector<std::string>& vars) {
    switch (e.kind) {
      case ExprKind::Int:
      case ExprKind::Bool: {
        Expr c = node(Expr::Kind::Const, scope, e);
        c.value = static_cast<double>(e.int_value);
        return c;
      }
      case ExprKind::Float: {
        Expr c = node(Expr::Kind::Const, scope, e);
        c.value = e.float_value;
        return c;
      }
      case ExprKind::Inf: {
        Expr c = node(Expr::Kind::Const, scope, e);
        c.value = std::numeric_limits<double>::infinity();
        return c;
      }
      case ExprKind::Name: return name(e, scope, vars);
      case ExprKind::Index: return index(e, scope, vars);
      case ExprKind::Field: {
        Expr f = node(Expr::Kind::Field, scope, e);
        f.name = e.text;
        f.args.push_back(convert(e.args[0], scope, vars));
        return f;
      }
      case ExprKind::Slice: return node(Expr::Kind::Slice, scope, e);
      case ExprKind::Unary:
      case ExprKind::Binary: {
        Expr u = node(e.kind == ExprKind::Unary ? Expr::Kind::Unary : Expr::Kind::Binary, scope, e);
        u.op = e.text;
        for (const ast::Expr& a : e.args) u.args.push_back(convert(a, scope, vars));
        return u;
      }
      case ExprKind::Call: {
        if (program_.ops.count(e.text)) return read_call_output(e, nullptr, {}, scope, vars);
        Expr c = node(Expr::Kind::Call, scope, e);
        c.op = e.text;
        for (const ast::Expr& a : e.args) c.args.push_back(convert(a, scope, vars));
        return c;
      }
      case ExprKind::Reduce: {
        Expr r = node(Expr::Kind::Reduce, scope, e);
        r.op = e.text;
        const ReductionInfo* info = nullptr;
        for (const ReductionInfo& ri : scope.op->reductions)
          if (ri.expr_id == e.id) info = &ri;
        std::vector<std::string> inner = vars;
        for (size_t k = 0; k < e.axes.size(); ++k) {
          r.axes.push_back({e.axes[k].name, info ? map_size(scope, info->axis_sizes[k]) : "?"});
          inner.push_back(e.axes[k].name);
        }
        for (const ast::Expr& w : e.where_) r.where.push_back(convert(w, scope, inner));
        for (const ast::Expr& a : e.args) r.args.push_back(convert(a, scope, inner));
        return r;
      }
      case ExprKind::Tuple: break;
    }
    throw LowerError(fmt::format("tuples are not values in an op body (op {})", out_.op));
  }

  Expr name(const ast::Expr& e, Scope& scope, const std::vector<std::string>& vars) {
    const std::string& n = e.text;
    if (contains(vars, n)) {
      Expr i = node(Expr::Kind::Index, scope, e);
      i.dtype = DType::I64;
      i.name = n;
      return i;
    }
    if (auto it = scope.lets.find(n); it != scope.lets.end()) return it->second;
    if (const TensorInfo* t = scope.op->find(n)) return read_bare(n, *t, scope);
    Expr s = node(Expr::Kind::Size, scope, e);
    s.dtype = DType::I64;
    s.name = scope.sizes.count(n) ? scope.sizes.at(n) : n;
    return s;
  }

  Expr index(const ast::Expr& e, Scope& scope, const std::vector<std::string>& vars) {
    const ast::Expr& base = e.args[0];
    std::vector<Expr> indices;
    for (size_t k = 1; k < e.args.size(); ++k) indices.push_back(convert(e.args[k], scope, vars));
    if (base.kind == ExprKind::Name) {
      Expr r = node(Expr::Kind::Read, scope, e);
      r.name = tensor_name(scope, base.text);
      r.args = std::move(indices);
      return r;
    }
    if (base.kind == ExprKind::Call) return read_call_output(base, nullptr, std::move(indices), scope, vars);
    if (base.kind == ExprKind::Field && base.args[0].kind == ExprKind::Call && program_.ops.count(base.args[0].text))
      return read_call_output(base.args[0], &base, std::move(indices), scope, vars);
    // A vector field of a carrier: r.o[e].
    Expr f = convert(base, scope, vars);
    type_node(f, scope, e);
    f.args.push_back(indices.at(0));
    return f;
  }

  // f(x, y)[i] or f(x, y).out[i]: inlines the callee once per distinct call (the same op on
  // the same tensors), however many of its outputs are read.
  Expr read_call_output(const ast::Expr& call, const ast::Expr* field, std::vector<Expr> indices, Scope& scope,
                        const std::vector<std::string>&) {
    const CheckedOp& callee = program_.ops.at(call.text);
    std::vector<std::string> args{call.text};
    for (const ast::Expr& a : call.args) args.push_back(argument_key(scope, a.text));
    std::string key = fmt::format("{}", fmt::join(args, ","));
    auto done = inlined_.find(key);
    if (done == inlined_.end()) done = inlined_.emplace(key, inline_call(call, callee, scope)).first;
    std::string out_name = field ? field->text : callee.decl->outputs.at(0).name.name;
    Expr r;
    r.kind = Expr::Kind::Read;
    r.name = done->second.at(out_name);
    const tir::Tensor* t = out_.find(r.name);
    r.dtype = t->dtype;
    r.record = t->record;
    r.args = std::move(indices);
    return r;
  }

  // What identifies one call argument: the tensor it names, or a let's value.
  std::string argument_key(const Scope& scope, const std::string& arg) {
    if (auto let = scope.lets.find(arg); let != scope.lets.end()) return "let " + tir::print_expr(let->second);
    return tensor_name(scope, arg);
  }

  std::map<std::string, std::string> inline_call(const ast::Expr& call, const CheckedOp& callee, Scope& scope) {
    Scope inner;
    inner.op = &callee;
    inner.prefix = inlined_prefix(call.text, ++calls_);
    out_.inlined.emplace_back(call.text, inner.prefix);
    const CallBinding binding = bind_call(*scope.op, call, callee);
    for (const auto& [param, arg] : binding.args)
      // A let passed to a scalar parameter is its value there (a small let has no tensor).
      if (auto let = scope.lets.find(arg); let != scope.lets.end())
        inner.lets[param] = let->second;
      else
        inner.tensors[param] = tensor_name(scope, arg);
    for (const auto& [symbol, s] : binding.sizes) inner.sizes[symbol] = map_size(scope, s);
    return build(inner);
  }

  const CheckedProgram& program_;
  tir::Program& out_;
  int calls_ = 0;
  std::map<std::string, std::map<std::string, std::string>> inlined_;  // call key -> output names
};

}  // namespace

tir::Program to_tensor(const CheckedProgram& program, const CheckedOp& op) {
  tir::Program out;
  out.op = op.decl->name.name;
  TensorBuilder builder(program, out);
  Scope scope;
  scope.op = &op;
  for (const TensorInfo& t : op.tensors) {
    if (t.role != TensorInfo::Role::Input && t.role != TensorInfo::Role::Output) continue;
    out.tensors.push_back(builder.tensor_of(
        scope, t, t.name, t.role == TensorInfo::Role::Input ? tir::Tensor::Role::Input : tir::Tensor::Role::Output));
    // Every named dim of the signature is a size, an output's too: `p: f32[M]` with M bound by
    // no input is given at the call (--shape), and the kernels take it as a parameter.
    for (const Size& s : t.shape)
      if (!s.symbol.empty() && std::find(out.sizes.begin(), out.sizes.end(), s.symbol) == out.sizes.end())
        out.sizes.push_back(s.symbol);
  }
  builder.build(scope);
  return out;
}

}  // namespace emmy::lower
