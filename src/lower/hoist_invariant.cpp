// Lifts each reduction that does not vary along every variable of its context (the statement's
// index variables and the enclosing reductions' axes) into an intermediate statement over the
// variables it does read, innermost first, identical reductions shared as one intermediate; the
// statements of a discovered chain stay whole, for to_loops to fold.
#include "lower/passes.hpp"
#include "lower/term_expr.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace emmy::lower {
namespace {

using tir::Expr;

// The innermost binding of each visible name, outermost first: the statement's variables,
// then the axes of the enclosing reductions (an axis that reuses a name hides the outer one).
using Context = std::vector<tir::Axis>;

Context enter(const Context& ctx, const std::vector<tir::Axis>& axes) {
  Context inner;
  for (const tir::Axis& a : ctx)
    if (std::none_of(axes.begin(), axes.end(), [&](const tir::Axis& b) { return b.name == a.name; }))
      inner.push_back(a);
  inner.insert(inner.end(), axes.begin(), axes.end());
  return inner;
}

// The index variables e reads that it does not bind itself.
void free_vars(const Expr& e, std::set<std::string>& bound, std::set<std::string>& out) {
  if (e.kind == Expr::Kind::Index && !bound.count(e.name)) out.insert(e.name);
  std::vector<std::string> added;
  if (e.kind == Expr::Kind::Reduce)
    for (const tir::Axis& a : e.axes)
      if (bound.insert(a.name).second) added.push_back(a.name);
  for (const Expr& a : e.args) free_vars(a, bound, out);
  for (const Expr& w : e.where) free_vars(w, bound, out);
  for (const std::string& a : added) bound.erase(a);
}

// Whether e can be evaluated at every point of its variables' ranges, not only where an
// enclosing predicate or select lets it run: every read and vector element indexed by plain
// index variables (bound to the dim they index, so in range), no integer division.
bool total(const Expr& e) {
  return !tir::any_node(e, [](const Expr& x) {
    auto plain = [](const Expr& i) { return i.kind == Expr::Kind::Index || i.kind == Expr::Kind::Slice; };
    if (x.kind == Expr::Kind::Read) return !std::all_of(x.args.begin(), x.args.end(), plain);
    if (x.kind == Expr::Kind::Field) return x.args.size() > 1 && !plain(x.args[1]);
    return x.kind == Expr::Kind::Binary && (x.op == "/" || x.op == "%") && is_int(x.dtype);
  });
}

// The reduction as text that two copies share: every node with its dtype, bound axes named by
// their depth and free variables by their place among the intermediate's variables.
void key_of(const Expr& e, const std::map<std::string, std::string>& names, int depth, std::string& out) {
  auto var = names.find(e.name);
  out += fmt::format("({} {} {} {} {} {}", static_cast<int>(e.kind), dtype_name(e.dtype), e.record, e.value, e.op,
                     e.kind == Expr::Kind::Index && var != names.end() ? var->second : e.name);
  std::map<std::string, std::string> inner = names;
  if (e.kind == Expr::Kind::Reduce)
    for (size_t k = 0; k < e.axes.size(); ++k) {
      std::string bound = fmt::format("%{}.{}", depth, k);
      inner[e.axes[k].name] = bound;
      out += fmt::format(" {}<{}", bound, e.axes[k].size);
    }
  for (const Expr& a : e.args) key_of(a, inner, depth + 1, out);
  out += " |";
  for (const Expr& w : e.where) key_of(w, inner, depth + 1, out);
  out += ")";
}

// An intermediate this pass wrote and its statement's place in the output.
struct Hoisted {
  std::string name;
  size_t at = 0;
};

class Hoister {
 public:
  Hoister(const tir::Program& program, const std::set<std::string>& folded) : in_(program), folded_(folded) {
    taken_.insert(program.sizes.begin(), program.sizes.end());
    for (const tir::Tensor& t : program.tensors) taken_.insert(t.name);
    for (const tir::Stmt& s : program.stmts) {
      for (const tir::Axis& v : s.vars) taken_.insert(v.name);
      tir::visit(s.value, [&](const Expr& x) {
        for (const tir::Axis& a : x.axes) taken_.insert(a.name);
      });
    }
  }

  tir::Program run() {
    out_ = in_;
    out_.stmts.clear();
    for (const tir::Stmt& s : in_.stmts) {
      stmt_ = &s;
      tir::Stmt t = s;
      if (tir::has_reduce(s.value) && !folded_.count(s.name)) t.value = rewrite(s.value, s.vars, false);
      written_[t.name] = out_.stmts.size();
      out_.stmts.push_back(std::move(t));
    }
    return std::move(out_);
  }

 private:
  // `guarded`: e runs only where a predicate lets it (an enclosing reduction's where, a select's
  // condition, the left operand of && or ||); its intermediate would run everywhere.
  Expr rewrite(const Expr& e, const Context& ctx, bool guarded) {
    if (e.kind != Expr::Kind::Reduce) {
      Expr out = tir::node_of(e);
      for (size_t k = 0; k < e.args.size(); ++k) {
        bool branch = (e.kind == Expr::Kind::Call && e.op == "select" && k > 0) ||
                      (e.kind == Expr::Kind::Binary && (e.op == "&&" || e.op == "||") && k > 0);
        out.args.push_back(rewrite(e.args[k], ctx, guarded || branch));
      }
      for (const Expr& w : e.where) out.where.push_back(rewrite(w, ctx, guarded));
      return out;
    }
    const Context inner = enter(ctx, e.axes);
    Expr r = tir::node_of(e);
    for (const Expr& w : e.where) r.where.push_back(rewrite(w, inner, guarded));
    for (const Expr& a : e.args) r.args.push_back(rewrite(a, inner, guarded || !e.where.empty()));
    // A monoid carrier stays where it is read: to_loops folds it at its reader.
    if (!r.record.empty() || (guarded && !total(r))) return r;
    std::set<std::string> bound, used;
    free_vars(r, bound, used);
    Context vars;
    for (const tir::Axis& a : ctx)
      if (used.count(a.name)) vars.push_back(a);
    if (vars.size() == ctx.size()) return r;  // it varies along every variable of its context
    // A reduction inside r that binds the name of one of them would make a variable of the new
    // statement a reduction axis in its own value, which no statement a user writes has (E022).
    auto is_var = [&](const tir::Axis& a) {
      return std::any_of(vars.begin(), vars.end(), [&](const tir::Axis& v) { return v.name == a.name; });
    };
    if (tir::any_node(r, [&](const Expr& x) { return std::any_of(x.axes.begin(), x.axes.end(), is_var); })) return r;
    Expr read;
    read.kind = Expr::Kind::Read;
    read.dtype = r.dtype;
    read.name = intermediate(r, vars);
    for (const tir::Axis& v : vars) read.args.push_back(index_expr(v.name));
    return read;
  }

  // The intermediate holding r over `vars`: one written earlier with the same key, if what it
  // reads has not been written since, else a new statement before the current one.
  std::string intermediate(const Expr& r, const Context& vars) {
    std::map<std::string, std::string> names;
    std::string key;
    for (size_t k = 0; k < vars.size(); ++k) {
      names[vars[k].name] = fmt::format("${}", k);
      key += fmt::format("${}<{} ", k, vars[k].size);
    }
    key_of(r, names, 0, key);
    std::set<std::string> reads;
    tir::add_reads(r, reads);
    if (auto it = shared_.find(key); it != shared_.end()) {
      const Hoisted& h = it->second;
      if (std::all_of(reads.begin(), reads.end(), [&](const std::string& t) {
            auto w = written_.find(t);
            return w == written_.end() || w->second < h.at;
          }))
        return h.name;
    }
    tir::Stmt s;
    s.name = fresh(fmt::format("{}_{}", stmt_->name, r.op));
    s.vars = vars;
    s.value = r;
    tir::Tensor t;
    t.name = s.name;
    t.role = tir::Tensor::Role::Intermediate;
    t.dtype = r.dtype;
    for (const tir::Axis& v : vars) t.dims.push_back(v.size);
    out_.tensors.push_back(std::move(t));
    shared_[key] = Hoisted{s.name, out_.stmts.size()};
    written_[s.name] = out_.stmts.size();
    out_.stmts.push_back(std::move(s));
    return shared_[key].name;
  }

  // `base`, or base_2, base_3...: a name no tensor, size or index of the op has.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; taken_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    taken_.insert(name);
    return name;
  }

  const tir::Program& in_;
  const std::set<std::string>& folded_;  // statements a discovered chain folds: to_loops reads their sums
  tir::Program out_;
  const tir::Stmt* stmt_ = nullptr;
  std::set<std::string> taken_;
  std::map<std::string, Hoisted> shared_;  // key -> the intermediate
  std::map<std::string, size_t> written_;  // tensor -> the last statement writing it, in out_
};

}  // namespace

tir::Program hoist_invariant(const tir::Program& program, const std::vector<algebra::DiscoveredChain>& chains) {
  // A chain's statement stays whole where one of its sums varies along all of its variables
  // (o[b, h, i, e] = sum(j: p v[.., e]) / sum(j: p)): the fold carries its invariant sums beside
  // it. Elsewhere (p[.., j] = e / sum(j2: e)) the sum leaves, and the chain runs as passes.
  std::set<std::string> folded;
  for (const algebra::DiscoveredChain& c : chains) {
    std::vector<std::string> names = c.sum_stmts;
    names.push_back(c.max_stmt);
    for (const std::string& n : names) {
      const tir::Stmt* s = program.def(n);
      if (!s) continue;
      bool wide_sum = tir::any_node(s->value, [&](const Expr& x) {
        if (x.kind != Expr::Kind::Reduce) return false;
        std::set<std::string> bound, used;
        free_vars(x, bound, used);
        return std::all_of(s->vars.begin(), s->vars.end(), [&](const tir::Axis& v) { return used.count(v.name); });
      });
      if (wide_sum) folded.insert(n);
    }
  }
  return Hoister(program, folded).run();
}

}  // namespace emmy::lower
