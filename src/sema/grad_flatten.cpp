// Flattens a checked op into the straight-line form derivatives are taken over: lets renamed,
// bare names indexed, called ops inlined (their tensors prefixed `callee1_`), and every reduction
// that is not the whole value of its statement hoisted into a statement of its own.
#include <cctype>

#include <fmt/format.h>

#include "sema/call_binding.hpp"
#include "sema/grad.hpp"

namespace emmy::sema::grad {
namespace {

using ast::Expr;
using ast::ExprKind;

// How the names of one op body map into the flat program (an inlined callee renames).
struct Scope {
  const CheckedOp* op = nullptr;
  std::string prefix;                          // "" for the forward op, "cross_entropy1_" inlined
  std::map<std::string, std::string> tensors;  // callee parameter -> caller tensor
  std::map<std::string, Expr> sizes;           // callee size symbol -> caller size (a name or a literal)
  std::map<std::string, Expr> lets;            // a let -> its name in the flat program, or its value
};

// The index variables in scope in a statement, with their sizes (as source text).
using Vars = std::vector<std::pair<std::string, std::string>>;

bool has_var(const Vars& vars, const std::string& v) {
  for (const auto& [name, _] : vars)
    if (name == v) return true;
  return false;
}

class Flattener {
 public:
  explicit Flattener(const CheckedLookup& callees) : callees_(callees) {}

  Straight run(const CheckedOp& op) {
    Scope top;
    top.op = &op;
    // A computed dim's size (y: f32[B, T - K + 1] names it y_dim1) as its expression, in
    // parentheses: the derived op declares the seed dy with the expression and has no y_dim1.
    for (const auto* params : {&op.decl->params, &op.decl->outputs})
      for (const ast::Param& p : *params)
        for (const ast::Dim& d : p.dims)
          if (d.computed) top.sizes[d.name] = name(fmt::format("({})", source(*d.computed)));
    for (const ast::Param& p : op.decl->params) {
      const TensorInfo* t = op.find(p.name.name);
      Tensor in{p.name.name, t && t->elem.is_numeric() && is_float(t->elem.dtype), "", p.dims.size(), {}, declared(p)};
      out_.tensors[in.name] = in;
      out_.inputs.push_back(in.name);
      for (const ast::Dim& d : p.dims) dims_[in.name].push_back(d.is_literal() ? "" : d.name);
    }
    for (const ast::Param& p : op.decl->outputs) {
      out_.outputs.push_back(p.name.name);
      declared_[p.name.name] = declared(p);
    }
    for (const TensorInfo& t : op.tensors)
      for (const Size& s : t.shape)
        if (!s.symbol.empty()) out_.names.insert(s.symbol);
    body(top);
    for (const std::string& o : out_.outputs) out_.tensors.at(o).declared = declared_.at(o);
    choose_input_vars();
    for (const auto& [n, _] : out_.tensors) out_.names.insert(n);
    for (const Line& l : out_.lines) {
      out_.names.insert(l.name);
      for (const std::string& v : l.vars) out_.names.insert(v);
      names_in(l.value, out_.names);
    }
    return std::move(out_);
  }

 private:
  static std::string declared(const ast::Param& p) {
    std::vector<std::string> dims;
    for (const ast::Dim& d : p.dims)  // a computed dim as written: the seed of y[B, T - K + 1] is checked by it
      dims.push_back(d.is_literal() ? std::to_string(d.value) : d.computed ? source(*d.computed) : d.name);
    return dims.empty() ? p.dtype.name : fmt::format("{}[{}]", p.dtype.name, fmt::join(dims, ", "));
  }

  static std::string size_text(const Scope& scope, const Size& s) {
    if (s.symbol.empty()) return std::to_string(s.literal);
    if (auto it = scope.sizes.find(s.symbol); it != scope.sizes.end()) return source(it->second);
    return s.symbol;
  }

  std::string tensor_name(const Scope& scope, const std::string& n) const {
    if (auto it = scope.tensors.find(n); it != scope.tensors.end()) return it->second;
    return scope.prefix + n;
  }

  // The statements of one op body, appended to the flat program; returns its outputs' names there.
  std::map<std::string, std::string> body(Scope& scope) {
    std::map<std::string, std::string> outputs;
    for (const ast::Stmt& s : scope.op->decl->body) {
      if (const auto* let = std::get_if<ast::LetStmt>(&s)) {
        Expr value = convert(let->value, scope, {});
        const std::string n = scope.prefix + let->name.name;
        if (reads_tensor(value)) {
          // A let over tensors is a scalar statement of the flat program.
          const TensorInfo* info = scope.op->find(let->name.name);
          add_line(n, {}, std::move(value), info ? info->elem : Type::scalar(DType::F32));
          scope.lets[let->name.name] = name(n);
        } else {
          out_.lines.push_back({true, n, {}, std::move(value), {}});
          scope.lets[let->name.name] = name(n);
        }
        continue;
      }
      const auto& a = std::get<ast::AssignStmt>(s);
      const TensorInfo* info = scope.op->find(a.target.name);
      Vars vars;
      for (size_t k = 0; k < a.indices.size(); ++k)
        vars.emplace_back(a.indices[k].text, size_text(scope, info->shape[k]));
      const std::string n = tensor_name(scope, a.target.name);
      Expr value = hoist(convert(a.value, scope, vars), vars, n, true);
      add_line(n, vars, std::move(value), info->elem);
      if (info->role == TensorInfo::Role::Output) outputs[a.target.name] = n;
    }
    return outputs;
  }

  void add_line(const std::string& n, const Vars& vars, Expr value, const Type& type) {
    Line line{false, n, {}, std::move(value), {}};
    for (const auto& [v, size] : vars) {
      line.vars.push_back(v);
      line.sizes[v] = size;
    }
    if (line.value.kind == ExprKind::Reduce)
      for (const ast::Ident& a : line.value.axes) line.sizes[a.name] = axis_sizes_.at({line.value.id, a.name});
    Tensor t{n, type.is_numeric() && is_float(type.dtype), "", vars.size(), line.vars, ""};
    if (type.kind == Type::Kind::Record) t.carrier = type.monoid;
    if (type.kind == Type::Kind::Scalar) {
      std::vector<std::string> dims;
      for (const std::string& v : line.vars) dims.push_back(line.sizes.at(v));
      const std::string dtype(dtype_name(type.weak ? materialize(type) : type.dtype));
      t.declared = dims.empty() ? dtype : fmt::format("{}[{}]", dtype, fmt::join(dims, ", "));
    }
    out_.tensors[n] = t;
    out_.lines.push_back(std::move(line));
  }

  bool reads_tensor(const Expr& e) const {
    if (e.kind == ExprKind::Index && e.args[0].kind == ExprKind::Name && out_.tensors.count(e.args[0].text))
      return true;
    if (e.kind == ExprKind::Name && out_.tensors.count(e.text)) return true;
    for (const Expr& a : e.args)
      if (reads_tensor(a)) return true;
    for (const Expr& w : e.where_)
      if (reads_tensor(w)) return true;
    return false;
  }

  Expr convert(const Expr& e, Scope& scope, const Vars& vars) {
    switch (e.kind) {
      case ExprKind::Name: {
        const std::string& n = e.text;
        if (has_var(vars, n)) return name(n);
        if (auto it = scope.lets.find(n); it != scope.lets.end()) return it->second;
        if (const TensorInfo* t = scope.op->find(n)) return read(tensor_name(scope, n), t->index_vars);
        if (auto it = scope.sizes.find(n); it != scope.sizes.end()) return it->second;
        return name(n);
      }
      case ExprKind::Index: {
        const Expr& base = e.args[0];
        std::vector<Expr> indices;
        for (size_t k = 1; k < e.args.size(); ++k) indices.push_back(convert(e.args[k], scope, vars));
        if (base.kind == ExprKind::Name && scope.op->find(base.text))
          return read_at(tensor_name(scope, base.text), std::move(indices));
        if (base.kind == ExprKind::Call && callees_(base.text))
          return read_at(call_output(base, "", scope), std::move(indices));
        if (base.kind == ExprKind::Field && base.args[0].kind == ExprKind::Call && callees_(base.args[0].text))
          return read_at(call_output(base.args[0], base.text, scope), std::move(indices));
        Expr out = ast::node_of(e);  // a vector field of a carrier: r.o[e]
        out.args.push_back(convert(base, scope, vars));
        for (Expr& i : indices) out.args.push_back(std::move(i));
        return out;
      }
      case ExprKind::Call:
        if (callees_(e.text)) return name(call_output(e, "", scope));
        break;
      default: break;
    }
    Expr out = ast::node_of(e);
    Vars inner = vars;
    if (e.kind == ExprKind::Reduce) {
      const ReductionInfo* info = nullptr;
      for (const ReductionInfo& r : scope.op->reductions)
        if (r.expr_id == e.id) info = &r;
      for (size_t k = 0; k < e.axes.size(); ++k)
        inner.emplace_back(e.axes[k].name, info ? size_text(scope, info->axis_sizes[k]) : "?");
    }
    for (const Expr& a : e.args) out.args.push_back(convert(a, scope, inner));
    for (const Expr& w : e.where_) out.where_.push_back(convert(w, scope, inner));
    if (e.kind == ExprKind::Reduce) {
      out.id = ++reduce_ids_;  // the flat program's own numbering: callees' ids collide
      const auto t = scope.op->expr_types.find(e.id);
      reduce_types_[out.id] = t != scope.op->expr_types.end() ? t->second : Type::scalar(DType::F32);
      for (size_t k = vars.size(); k < inner.size(); ++k) axis_sizes_[{out.id, inner[k].first}] = inner[k].second;
    }
    return out;
  }

  // f(x, y)[i] or f(x, y).out[i]: inlines the callee once per distinct call.
  std::string call_output(const Expr& call, const std::string& field, Scope& scope) {
    const CheckedOp& callee = *callees_(call.text);
    std::string key = call.text;
    for (const Expr& a : call.args) key.append(",").append(tensor_name(scope, a.text));
    auto done = inlined_.find(key);
    if (done == inlined_.end()) {
      Scope inner;
      inner.op = &callee;
      inner.prefix = fmt::format("{}{}_", call.text, ++calls_);
      const CallBinding binding = bind_call(*scope.op, call, callee);
      for (const auto& [param, arg] : binding.args)
        if (auto let = scope.lets.find(arg); let != scope.lets.end())
          inner.lets[param] = let->second;
        else
          inner.tensors[param] = tensor_name(scope, arg);
      for (const auto& [symbol, s] : binding.sizes)
        inner.sizes[symbol] = s.symbol.empty()              ? num(static_cast<double>(s.literal))
                              : scope.sizes.count(s.symbol) ? scope.sizes.at(s.symbol)
                                                            : name(s.symbol);
      done = inlined_.emplace(key, body(inner)).first;
    }
    return done->second.at(field.empty() ? callee.decl->outputs.at(0).name.name : field);
  }

  // Every reduction below the top of `e` becomes a statement of its own, innermost first.
  Expr hoist(Expr e, const Vars& vars, const std::string& stmt, bool top) {
    Vars inner = vars;
    if (e.kind == ExprKind::Reduce)
      for (const ast::Ident& a : e.axes) inner.emplace_back(a.name, axis_sizes_.at({e.id, a.name}));
    for (Expr& a : e.args) a = hoist(std::move(a), inner, stmt, false);
    for (Expr& w : e.where_) w = hoist(std::move(w), inner, stmt, false);
    if (e.kind != ExprKind::Reduce || top) return e;
    std::set<std::string> used;
    names_in(e, used);
    Vars free;
    for (const auto& [v, size] : vars)
      if (used.count(v)) free.emplace_back(v, size);
    // A variable only its `where` or index arithmetic mentions (sum(j where j <= i: x[j]),
    // max(l: x[k - 1, l])) could not be sized in a statement of its own: the reduction stays.
    for (const auto& [v, _] : free)
      if (!indexes(e, v)) return e;
    std::string n = fmt::format("{}_{}", stmt, e.text);
    for (int k = 2; out_.tensors.count(n) || taken_hoisted_.count(n); ++k) n = fmt::format("{}_{}{}", stmt, e.text, k);
    taken_hoisted_.insert(n);
    const Type type = reduce_types_.at(e.id);
    std::vector<std::string> names;
    for (const auto& [v, _] : free) names.push_back(v);
    add_line(n, free, std::move(e), type);
    return read(n, names);
  }

  // An input's index variables: at each position, the plain variable its first read has there,
  // else its dim's name in lower case (kh for KH), else i<position>.
  void choose_input_vars() {
    std::set<std::string> taken = out_.names;
    for (const auto& [n, _] : out_.tensors) taken.insert(n);
    for (const Line& l : out_.lines) names_in(l.value, taken);
    for (const std::string& in : out_.inputs) {
      Tensor& t = out_.tensors.at(in);
      const Expr* first = nullptr;
      for (const Line& l : out_.lines)
        if (!first) first = first_read(l.value, in);
      std::set<std::string> used;
      for (size_t k = 0; k < t.rank; ++k) {
        std::string v;
        if (first && first->args[k + 1].kind == ExprKind::Name && !used.count(first->args[k + 1].text))
          v = first->args[k + 1].text;
        if (v.empty()) {
          std::string lower = dims_.at(in)[k];
          for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          v = !lower.empty() && std::isalpha(static_cast<unsigned char>(lower[0])) && !taken.count(lower) &&
                      !used.count(lower)
                  ? lower
                  : fmt::format("i{}", k);
        }
        used.insert(v);
        t.vars.push_back(v);
      }
    }
  }

  static const Expr* first_read(const Expr& e, const std::string& tensor) {
    if (e.kind == ExprKind::Index && e.args[0].kind == ExprKind::Name && e.args[0].text == tensor) return &e;
    for (const Expr& a : e.args)
      if (const Expr* r = first_read(a, tensor)) return r;
    for (const Expr& w : e.where_)
      if (const Expr* r = first_read(w, tensor)) return r;
    return nullptr;
  }

  const CheckedLookup& callees_;
  Straight out_;
  std::map<std::string, std::string> declared_;
  std::map<std::string, std::vector<std::string>> dims_;  // an input's dims' names ("" for a literal)
  std::map<std::string, std::map<std::string, std::string>> inlined_;
  std::map<uint32_t, Type> reduce_types_;                               // by the flat reduction's id
  std::map<std::pair<uint32_t, std::string>, std::string> axis_sizes_;  // (reduction id, axis) -> size
  std::set<std::string> taken_hoisted_;
  uint32_t reduce_ids_ = 0;
  int calls_ = 0;
};

}  // namespace

Straight flatten(const CheckedOp& op, const CheckedLookup& callees) {
  Flattener f(callees);
  return f.run(op);
}

}  // namespace emmy::sema::grad
