// Reverse mode over a flat op: the statements in reverse, each one's adjoint the sum of what its
// readers contributed; a read's contribution reaches the tensor it reads through its indices (a
// plain variable is renamed, anything else — h / G, target[n], 2 * i — becomes a predicate of a
// sum over the reader's variables: a gather's adjoint is a scatter-add); reductions no output
// depends on (grad_invariant.cpp) are left out; then the op's source text.
#include <fmt/format.h>

#include "sema/grad.hpp"
#include "sema/grad_rules.hpp"

namespace emmy::sema::grad {

using ast::Expr;
using ast::ExprKind;

std::string adjoint_name(const std::string& tensor, const std::set<std::string>& taken) {
  for (const std::string& n : {"d" + tensor, "d_" + tensor})
    if (!taken.count(n)) return n;
  for (int k = 2;; ++k)
    if (std::string n = fmt::format("d_{}{}", tensor, k); !taken.count(n)) return n;
}

namespace {

// The variable `v` was renamed from (itself where no rename gave it).
std::string original_of(const std::map<std::string, std::string>& renames, const std::string& v) {
  for (const auto& [from, to] : renames)
    if (to == v) return from;
  return v;
}

// The names of `e` in reading order, repeats included.
void names_in_order(const Expr& e, std::vector<std::string>& out) {
  if (e.kind == ExprKind::Name) out.push_back(e.text);
  for (const Expr& a : e.args) names_in_order(a, out);
}

// The value of `s` that makes `index` equal `target`, where `s` occurs once in `index` and only
// under + and - (t + k = i: t = i - k; j - 1 = i: j = i + 1); nullopt for any other form.
std::optional<Expr> solve_for(const Expr& index, const std::string& s, Expr target) {
  if (index.kind == ExprKind::Name) return index.text == s ? std::optional(std::move(target)) : std::nullopt;
  if (index.kind != ExprKind::Binary || (index.text != "+" && index.text != "-") || index.args.size() != 2)
    return std::nullopt;
  std::set<std::string> left, right;
  names_in(index.args[0], left);
  names_in(index.args[1], right);
  const bool plus = index.text == "+";
  if (left.count(s) && !right.count(s))
    return solve_for(index.args[0], s,
                     plus ? sub(std::move(target), index.args[1]) : add(std::move(target), index.args[1]));
  if (right.count(s) && !left.count(s))
    return solve_for(index.args[1], s,
                     plus ? sub(std::move(target), index.args[0]) : sub(index.args[0], std::move(target)));
  return std::nullopt;
}

class Reverse {
 public:
  Reverse(const Straight& f, const Request& r) : f_(f), request_(r), taken_(f.names) {}

  std::variant<std::string, Failure> run() {
    mark_active();
    for (const Line& l : f_.lines)
      if (active_.count(l.name) && l.value.kind == ExprKind::Reduce &&
          (l.value.text == "max" || l.value.text == "min") && outputs_shift_invariant(f_, l.name))
        dropped_.insert(l.name);
    for (const std::string& o : f_.outputs) {
      const Tensor& t = f_.tensors.at(o);
      if (!t.differentiable) continue;
      const std::string d = fresh(adjoint_name(o, taken_));
      seeds_in_.emplace_back(d, t.declared);
      if (active_.count(o)) contributions_[o].push_back({read(d, t.vars), std::nullopt});
    }
    for (size_t k = f_.lines.size(); k-- > 0;)
      if (auto failure = backward(f_.lines[k])) return *failure;
    std::vector<std::pair<std::string, std::string>> outs;
    std::vector<Line> out_lines;
    for (const std::string& x : request_.wrt) {
      const Tensor& t = f_.tensors.at(x);
      const std::string d = fresh(adjoint_name(x, taken_));
      outs.emplace_back(d, t.declared);
      out_lines.push_back({false, d, t.vars, total(x), {}});
    }
    return print(outs, out_lines);
  }

 private:
  std::string fresh(std::string base) {
    std::string n = base;
    for (int k = 2; taken_.count(n); ++k) n = fmt::format("{}{}", base, k);
    taken_.insert(n);
    return n;
  }

  // A tensor is active when it depends on an input derived for, through a float value.
  void mark_active() {
    for (const std::string& x : request_.wrt) active_.insert(x);
    for (const Line& l : f_.lines) {
      if (l.is_let) continue;
      const Tensor& t = f_.tensors.at(l.name);
      if ((t.differentiable || !t.carrier.empty()) && reads_active(l.value)) active_.insert(l.name);
    }
  }

  bool reads_active(const Expr& e) const {
    if (e.kind == ExprKind::Index && e.args[0].kind == ExprKind::Name) return active_.count(e.args[0].text) > 0;
    if (e.kind == ExprKind::Name) return active_.count(e.text) > 0;
    for (const Expr& a : e.args)
      if (reads_active(a)) return true;
    return false;
  }

  // The sum of a tensor's contributions, equal ones counted once and multiplied (x * d + x * d).
  Expr total(const std::string& tensor) {
    std::vector<std::pair<std::string, int>> order;
    std::map<std::string, Expr> by_text;
    for (Contribution& contribution : contributions_[tensor]) {
      Expr& c = contribution.value;
      std::string text = source(c);
      auto it = std::find_if(order.begin(), order.end(), [&](const auto& o) { return o.first == text; });
      if (it != order.end()) {
        ++it->second;
        continue;
      }
      order.emplace_back(text, 1);
      by_text.emplace(text, std::move(c));
    }
    Expr sum = num(0);
    for (auto& [text, count] : order) sum = add(std::move(sum), mul(num(count), std::move(by_text.at(text))));
    return sum;
  }

  // Whether `e` reads one tensor at plain variables only: used in place, it costs nothing.
  static bool plain_read(const Expr& e) {
    if (e.kind == ExprKind::Name) return true;
    if (e.kind != ExprKind::Index) return false;
    for (const Expr& a : e.args)
      if (a.kind != ExprKind::Name) return false;
    return true;
  }

  // Renames a reduction's axes in `e` to names nothing else uses, so `e` may be substituted anywhere.
  Expr freshen(const Expr& e) {
    Expr out = ast::node_of(e);
    std::map<std::string, std::string> renames;
    for (ast::Ident& a : out.axes) a.name = renames[a.name] = fresh(a.name);
    for (const Expr& a : e.args) out.args.push_back(rename(freshen(a), renames));
    for (const Expr& w : e.where_) out.where_.push_back(rename(freshen(w), renames));
    return out;
  }

  std::optional<Failure> backward(const Line& l) {
    if (l.is_let || !active_.count(l.name) || dropped_.count(l.name)) return std::nullopt;
    const Tensor& t = f_.tensors.at(l.name);
    if (!t.carrier.empty()) return through_monoid(l, t);
    if (contributions_[l.name].empty()) return std::nullopt;
    // The adjoint, materialized unless it leaves one of the statement's variables unsized (then
    // it is used in place: dl[n] is not a tensor of shape [N, C]).
    Expr adjoint = total(l.name);
    bool sized = true;
    for (const std::string& v : l.vars) sized = sized && indexes(adjoint, v);
    Expr g;
    if (sized && plain_read(adjoint)) {
      g = std::move(adjoint);  // an output's adjoint that is its seed alone: no copy
    } else if (sized) {
      const std::string d = fresh(adjoint_name(l.name, taken_));
      adjoint_lines_.push_back({false, d, l.vars, std::move(adjoint), {}});
      g = read(d, l.vars);
    } else {
      g = freshen(adjoint);
    }
    std::vector<std::string> scope = l.vars;
    std::optional<Expr> where = domain_of(l.name);
    Expr body = l.value;
    if (l.value.kind == ExprKind::Reduce) {
      const std::string& monoid = l.value.text;
      if (monoid != "sum" && monoid != "max" && monoid != "min")
        return Failure{l.value.range, fmt::format("grad: no derivative rule for a reduction by {} yet", monoid),
                       "sum, max and min reductions are derived; write this one with them"};
      for (const ast::Ident& a : l.value.axes) scope.push_back(a.name);
      if (!l.value.where_.empty()) where = where ? all_of({l.value.where_[0], std::move(*where)}) : l.value.where_[0];
      body = l.value.args.at(0);
      if (monoid != "sum") g = through_extremum(l, std::move(g));
    }
    return visit(body, g, &l, l.value.kind == ExprKind::Reduce ? nullptr : &l, scope, where);
  }

  static Failure through_carrier(SourceRange at, const Tensor& t, const std::string& why) {
    return Failure{at, fmt::format("grad: no derivative rule through the user monoid {} yet: {}", t.carrier, why),
                   "reduce one axis at a time (logsumexp(c: logsumexp(k: ...)) needs its own carrier), or write "
                   "the reduction with the built-in ones (sum, max, min)"};
  }

  // The variable a carrier's vector fields' elements are taken at (r.o[e]), one a carrier.
  std::string vector_var(const std::string& key) {
    auto it = vector_vars_.find(key);
    if (it != vector_vars_.end()) return it->second;
    return vector_vars_[key] = fresh("e");
  }

  static Expr read_at_field(Expr field, const std::string& var) {
    Expr e;
    e.kind = ExprKind::Index;
    e.args.push_back(std::move(field));
    e.args.push_back(name(var));
    return e;
  }

  // A reduction by a user monoid, r = x_1 + ... + x_n in its combine +: element a's adjoint is
  // reverse mode through r = combine(combine(prefix_a, x_a), suffix_a), the prefix and the suffix
  // reductions over the axis before and after a (so only associativity is used: the proved law).
  std::optional<Failure> through_monoid(const Line& l, const Tensor& t) {
    auto decl = request_.monoids.find(t.carrier);
    if (decl == request_.monoids.end()) return through_carrier(l.value.range, t, "its declaration is not in scope");
    const ast::MonoidDecl& m = *decl->second;
    if (auto why = combine_unsupported(m)) return through_carrier(l.value.range, t, *why);
    if (l.value.axes.size() != 1) return through_carrier(l.value.range, t, "it reduces several axes at once");
    // Vector fields' elements are taken at one variable (e of o: f32[E]).
    VectorVars vv;
    for (const ast::Field& f : m.fields)
      if (f.vector_dim) vv[f.name.name] = vector_var(l.name);
    // The adjoint of each field of the result, over the statement's variables (and e).
    Fields seeds;
    for (const ast::Field& f : m.fields) {
      const std::string key = l.name + "." + f.name.name;
      if (contributions_[key].empty()) continue;
      std::vector<std::string> vars = l.vars;
      if (f.vector_dim) vars.push_back(vv.at(f.name.name));
      Expr adjoint = total(key);
      bool sized = true;
      for (const std::string& v : vars) sized = sized && indexes(adjoint, v);
      if (sized && !plain_read(adjoint)) {
        const std::string d = fresh(adjoint_name(l.name + "_" + f.name.name, taken_));
        adjoint_lines_.push_back({false, d, vars, std::move(adjoint), {}});
        seeds[f.name.name] = read(d, vars);
      } else {
        seeds[f.name.name] = sized ? std::move(adjoint) : freshen(adjoint);
      }
    }
    if (seeds.empty()) return std::nullopt;
    const std::string axis = l.value.axes[0].name;
    std::optional<Expr> where;
    if (!l.value.where_.empty()) where = l.value.where_[0];
    // The prefix and suffix of element `axis`: the reduction over another variable on either side.
    auto side = [&](const char* op) {
      const std::string other = fresh(axis + "2");
      const std::map<std::string, std::string> renames{{axis, other}};
      std::vector<Expr> conditions{compare(op, name(other), name(axis))};
      if (where) conditions.push_back(rename(*where, renames));
      Expr r = reduce(l.value.text, {other}, all_of(std::move(conditions)), num(0));
      r.args.clear();  // the reduction's arguments, however many its lift takes
      for (const Expr& a : l.value.args) r.args.push_back(rename(a, renames));
      Fields out;
      for (const ast::Field& f : m.fields) {
        Expr field;
        field.kind = ExprKind::Field;
        field.text = f.name.name;
        field.args.push_back(r);
        out[f.name.name] = f.vector_dim ? read_at_field(std::move(field), vv.at(f.name.name)) : std::move(field);
      }
      return out;
    };
    const Fields prefix = side("<"), suffix = side(">");
    const Fields element = lift_at(m, l.value.args, vv);
    const Fields upto = combine_at(m, prefix, element, vv);
    auto outer = combine_adjoints(m, upto, suffix, seeds, vv);
    if (auto* failure = std::get_if<Failure>(&outer)) return *failure;
    auto inner = combine_adjoints(m, prefix, element, std::get<0>(outer).first, vv);
    if (auto* failure = std::get_if<Failure>(&inner)) return *failure;
    // Through lift, to the reads in the reduction's arguments (a vector field's at its variable).
    for (const auto& [field, adjoint] : std::get<0>(inner).second) {
      std::vector<std::string> scope = l.vars;
      scope.push_back(axis);
      if (auto v = vv.find(field); v != vv.end()) scope.push_back(v->second);
      if (auto failure = visit(element.at(field), adjoint, &l, nullptr, scope, where)) return failure;
    }
    return std::nullopt;
  }

  // max and min pass their adjoint to the positions that attain the result, split evenly among ties.
  Expr through_extremum(const Line& l, Expr g) {
    const Expr& body = l.value.args.at(0);
    const Expr hit = compare("==", body, read(l.name, l.vars));
    std::vector<std::string> axes;
    for (const ast::Ident& a : l.value.axes) axes.push_back(a.name);
    std::optional<Expr> where;
    if (!l.value.where_.empty()) where = l.value.where_[0];
    const std::string ties = fresh(l.name + "_ties");
    adjoint_lines_.push_back(
        {false, ties, l.vars, reduce("sum", axes, where, call("select", {hit, real(1), real(0)})), {}});
    return call("select", {hit, div(std::move(g), read(ties, l.vars)), num(0)});
  }

  // Passes adjoint `g` of `e` down to the reads in it. `self`: the statement whose whole value `e` is.
  std::optional<Failure> visit(const Expr& e, const Expr& g, const Line* line, const Line* self,
                               const std::vector<std::string>& scope, const std::optional<Expr>& where) {
    if (!reads_active(e)) return std::nullopt;
    switch (e.kind) {
      case ExprKind::Index:
        if (e.args[0].kind == ExprKind::Name) {
          std::vector<Expr> indices(e.args.begin() + 1, e.args.end());
          return contribute(e.args[0].text, indices, g, *line, scope, where);
        }
        if (e.args[0].kind == ExprKind::Field)  // a carrier's vector field: r.o[e]
          if (const Expr& read = e.args[0].args[0]; read.kind == ExprKind::Name || read.kind == ExprKind::Index) {
            const Expr& base = read.kind == ExprKind::Index ? read.args[0] : read;
            if (base.kind == ExprKind::Name && f_.tensors.count(base.text)) {
              std::vector<Expr> indices;
              if (read.kind == ExprKind::Index) indices.assign(read.args.begin() + 1, read.args.end());
              indices.push_back(e.args.at(1));
              return contribute(base.text, indices, g, *line, scope, where, e.args[0].text);
            }
          }
        break;
      case ExprKind::Name: return contribute(e.text, {}, g, *line, scope, where);
      case ExprKind::Field: {  // a carrier's field: r.m
        const Expr& read = e.args[0];
        const Expr& base = read.kind == ExprKind::Index ? read.args[0] : read;
        if (base.kind != ExprKind::Name || !f_.tensors.count(base.text)) break;
        std::vector<Expr> indices;
        if (read.kind == ExprKind::Index) indices.assign(read.args.begin() + 1, read.args.end());
        return contribute(base.text, indices, g, *line, scope, where, e.text);
      }
      case ExprKind::Unary:
      case ExprKind::Binary:
      case ExprKind::Call: {
        const Expr node = self ? read(self->name, self->vars) : e;
        auto adjoints = operand_adjoints(e.text, g, e.args, node);
        if (!adjoints)
          return Failure{e.range, fmt::format("grad: no derivative rule for '{}'", e.text),
                         "compute it from operations with derivatives (docs/language.md, \"Derived ops\")"};
        for (size_t k = 0; k < e.args.size(); ++k)
          if ((*adjoints)[k])
            if (auto failure = visit(e.args[k], *(*adjoints)[k], line, nullptr, scope, where)) return failure;
        return std::nullopt;
      }
      case ExprKind::Reduce: return through_nested(e, g, line, scope, where);
      default: break;
    }
    return Failure{e.range, "grad: no derivative rule for this expression",
                   "compute it from operations with derivatives (docs/language.md, \"Derived ops\")"};
  }

  // A reduction left inside its statement (flatten keeps one whose variables only its `where` or
  // index arithmetic mention: a statement of its own could not size them): its body receives `g`
  // under the reduction's axes and `where`; a max or min's, at the positions attaining it.
  std::optional<Failure> through_nested(const Expr& e, const Expr& g, const Line* line,
                                        const std::vector<std::string>& scope, const std::optional<Expr>& where) {
    if ((e.text != "sum" && e.text != "max" && e.text != "min") || e.args.size() != 1)
      return Failure{e.range, fmt::format("grad: no derivative rule for a reduction by {} yet", e.text),
                     "sum, max and min reductions are derived; write this one with them"};
    std::vector<std::string> inner = scope;
    std::vector<std::string> axes;
    for (const ast::Ident& a : e.axes) inner.push_back(a.name), axes.push_back(a.name);
    std::optional<Expr> w = where;
    if (!e.where_.empty()) w = w ? all_of({*w, e.where_[0]}) : e.where_[0];
    Expr seed = g;
    if (e.text != "sum") {  // the reduction and its tie count recomputed, their axes renamed apart
      const Expr hit = compare("==", e.args[0], freshen(e));
      std::optional<Expr> own;
      if (!e.where_.empty()) own = e.where_[0];
      const Expr ties = freshen(reduce("sum", axes, own, call("select", {hit, real(1), real(0)})));
      seed = call("select", {hit, div(g, ties), num(0)});
    }
    return visit(e.args[0], seed, line, nullptr, inner, w);
  }

  // A read u[indices] in statement `l` received `g`: its share of u's adjoint, over u's variables.
  // `field`: the read is of a carrier's field (r.m): its share goes to that field's adjoint.
  std::optional<Failure> contribute(const std::string& u, const std::vector<Expr>& indices, const Expr& g,
                                    const Line& l, const std::vector<std::string>& scope,
                                    const std::optional<Expr>& where, const std::string& field = "") {
    if (!active_.count(u) || dropped_.count(u)) return std::nullopt;
    // A vector field's element r.o[e]: its adjoint has the carrier's variables and one more.
    std::vector<std::string> vars = f_.tensors.at(u).vars;
    if (indices.size() > vars.size()) vars.push_back(vector_var(u));
    std::map<std::string, std::string> renames;
    std::set<std::string> bound;
    std::vector<Expr> conditions;
    for (size_t k = 0; k < indices.size(); ++k) {
      const Expr& i = indices[k];
      const bool plain = i.kind == ExprKind::Name && std::find(scope.begin(), scope.end(), i.text) != scope.end() &&
                         !bound.count(i.text);
      if (plain) {
        renames[i.text] = vars[k];
        bound.insert(i.text);
      } else {
        conditions.push_back(compare("==", i, name(vars[k])));
      }
    }
    std::vector<std::string> free;
    const std::set<std::string> target(vars.begin(), vars.end());
    for (const std::string& v : scope) {
      if (bound.count(v)) continue;
      const std::string n = target.count(v) ? fresh(v) : v;
      renames[v] = n;
      free.push_back(n);
    }
    // Reductions inside the share (a factor recomputed: min(l: ...)) get axes of their own first, so
    // that no summed or target variable is captured by one.
    Expr share = rename(freshen(g), renames);
    for (Expr& c : conditions) c = rename(freshen(c), renames);
    const std::vector<std::pair<std::string, Expr>> solved = solve_indices(l, renames, free, conditions, share);
    if (where) {
      Expr w = rename(freshen(*where), renames);
      for (const auto& [s, value] : solved) w = substitute(w, s, value);
      conditions.push_back(std::move(w));
    }
    // A summed variable nothing in the share sizes: the share is the same at each of its values.
    std::vector<std::string> summed;
    for (const std::string& v : free) {
      if (indexes(share, v)) {
        summed.push_back(v);
        continue;
      }
      std::set<std::string> in_conditions;
      for (const Expr& c : conditions) names_in(c, in_conditions);
      const std::string original = original_of(renames, v);
      if (in_conditions.count(v) || !l.sizes.count(original))
        return Failure{
            l.value.range,
            fmt::format("grad: the adjoint of {} sums over '{}', which nothing it reads is indexed by", u, v),
            "index a tensor by it in the forward op's statement"};
      share = mul(std::move(share), name(l.sizes.at(original)));
    }
    split_by_conditions(u, vars, summed, conditions, share);
    // The conditions over u's variables alone bound where the share can be non-zero (its domain).
    std::vector<Expr> domain;
    const std::set<std::string> summed_set(summed.begin(), summed.end());
    for (const Expr& c : conditions) {
      std::set<std::string> in;
      names_in(c, in);
      if (std::none_of(in.begin(), in.end(), [&](const std::string& n) { return summed_set.count(n) > 0; }))
        domain.push_back(c);
    }
    std::optional<Expr> condition;
    if (!conditions.empty()) condition = all_of(std::move(conditions));
    if (!summed.empty())
      share = reduce("sum", summed, std::move(condition), std::move(share));
    else if (condition)
      share = call("select", {std::move(*condition), std::move(share), num(0)});
    contributions_[field.empty() ? u : u + "." + field].push_back(
        {std::move(share), domain.empty() ? std::nullopt : std::optional(all_of(domain))});
    return std::nullopt;
  }

  // An index that is a summed variable plus or minus others (x[t + k]) determines that variable:
  // it takes the solved value, bounded by its axis, instead of being summed under the filter
  // `t + k == i` (dx[i] sums over k where 0 <= i - k < T, O(K) an element, not over t and k, O(T K)).
  // Exact: of the values the summed variable ranges over, the filter keeps the one solved for.
  // The derived op reads at the solved value clamped into the axis (min(max(i - k, 0), T - 1)), so
  // that no read leaves its tensor where the bounds fail.
  // Returns the variables solved for and their values, in order.
  std::vector<std::pair<std::string, Expr>> solve_indices(const Line& l,
                                                          const std::map<std::string, std::string>& renames,
                                                          std::vector<std::string>& free, std::vector<Expr>& conditions,
                                                          Expr& share) {
    std::vector<std::pair<std::string, Expr>> solved;
    std::vector<Expr> bounds;
    for (size_t c = 0; c < conditions.size(); ++c) {
      const Expr& equal = conditions[c];  // index == u's variable, each condition here
      if (equal.kind != ExprKind::Binary || equal.text != "==" || equal.args.size() != 2) continue;
      std::vector<std::string> order;
      names_in_order(equal.args[0], order);
      for (const std::string& s : order) {
        if (std::count(order.begin(), order.end(), s) != 1 || std::find(free.begin(), free.end(), s) == free.end())
          continue;
        auto size = l.sizes.find(original_of(renames, s));
        if (size == l.sizes.end()) continue;
        std::optional<Expr> value = solve_for(equal.args[0], s, equal.args[1]);
        if (!value) continue;
        // The share reads at the value clamped into the axis: where the bounds fail its contribution
        // is dropped, but a reduction the lowering computes ahead of the guard still reads in range.
        const Expr size_name = name(size->second);
        share = substitute(share, s, call("min", {call("max", {*value, num(0)}), sub(size_name, num(1))}));
        conditions.erase(conditions.begin() + static_cast<std::ptrdiff_t>(c));
        for (Expr& other : conditions) other = substitute(other, s, *value);
        for (Expr& other : bounds) other = substitute(other, s, *value);
        bounds.push_back(compare(">=", *value, num(0)));
        bounds.push_back(compare("<", *value, size_name));
        free.erase(std::find(free.begin(), free.end(), s));
        for (auto& earlier : solved) earlier.second = substitute(earlier.second, s, *value);
        solved.emplace_back(s, std::move(*value));
        --c;
        break;
      }
    }
    conditions.insert(conditions.end(), bounds.begin(), bounds.end());
    return solved;
  }

  // A share summed over variables that conditions tie to u's (h in h / G == kh) and over others
  // that no such condition mentions (i): the sum over the others first, as a tensor of its own
  // over u's variables with the tied ones in place of those they determine
  // (dk_part[b, h, j, d] = sum(i: ...)), then the masked sum over the tied ones reads it. Exact:
  // a sum over a product of ranges is the iterated sum (sum is associative and commutative).
  // The partial is a reduction over one axis, which the lowering can fold on the tensor cores;
  // what is left is a small masked sum over the group (GQA's query heads of a key head).
  void split_by_conditions(const std::string& u, const std::vector<std::string>& vars, std::vector<std::string>& summed,
                           std::vector<Expr>& conditions, Expr& share) {
    auto mentions = [](const Expr& e, const std::vector<std::string>& names) {
      std::set<std::string> in;
      names_in(e, in);
      return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return in.count(n) > 0; });
    };
    std::vector<std::string> tied, inner;
    for (const std::string& v : summed)
      (std::any_of(conditions.begin(), conditions.end(), [&](const Expr& c) { return mentions(c, {v}); }) ? tied
                                                                                                          : inner)
          .push_back(v);
    if (tied.empty() || inner.empty()) return;
    std::vector<Expr> outer, within;
    for (const Expr& c : conditions) {
      const bool t = mentions(c, tied), i = mentions(c, inner);
      if (t && i) return;  // a condition across both: one sum
      (t ? outer : within).push_back(c);
    }
    // The partial's variables: u's, in order, each one the share does not use replaced by the tied
    // variables an outer condition relates to it (kh by h); tied ones left over after them.
    std::vector<std::string> part_vars;
    std::set<std::string> placed;
    auto used = [&](const std::string& v) {
      return mentions(share, {v}) ||
             std::any_of(within.begin(), within.end(), [&](const Expr& c) { return mentions(c, {v}); });
    };
    for (const std::string& v : vars) {
      if (used(v)) {
        part_vars.push_back(v);
        continue;
      }
      for (const Expr& c : outer)
        if (mentions(c, {v}))
          for (const std::string& t : tied)
            if (mentions(c, {t}) && placed.insert(t).second) part_vars.push_back(t);
    }
    for (const std::string& t : tied)
      if (placed.insert(t).second) part_vars.push_back(t);
    for (const std::string& v : part_vars)
      if (!indexes(share, v)) return;  // the partial's variables must be sized by what it reads
    // The partial is evaluated at every value of its variables: the outer conditions it can read
    // (the reader's own predicate, k >= 1 before x[k - 1]) guard it too.
    std::vector<std::string> absent;
    for (const std::string& v : vars)
      if (std::find(part_vars.begin(), part_vars.end(), v) == part_vars.end()) absent.push_back(v);
    for (const Expr& c : outer)
      if (!mentions(c, absent)) within.push_back(c);
    const std::string part = fresh(adjoint_name(u, taken_) + "_part");
    adjoint_lines_.push_back(
        {false,
         part,
         part_vars,
         reduce("sum", inner, within.empty() ? std::nullopt : std::optional(all_of(std::move(within))), share),
         {}});
    share = read(part, part_vars);
    summed = tied;
    conditions = outer;
  }

  // Where every contribution to `tensor` is bounded by the same condition, its adjoint is zero
  // outside it: the statement's own derivative is then taken there only (not 0 * inf outside, as
  // a causal mask's exp(s - m) can be where the forward never read it).
  std::optional<Expr> domain_of(const std::string& tensor) const {
    const std::vector<Contribution>& cs = contributions_.at(tensor);
    if (cs.empty() || !cs[0].domain) return std::nullopt;
    const std::string text = source(*cs[0].domain);
    for (const Contribution& c : cs)
      if (!c.domain || source(*c.domain) != text) return std::nullopt;
    return cs[0].domain;
  }

  std::string print(const std::vector<std::pair<std::string, std::string>>& outs, const std::vector<Line>& out_lines) {
    // The forward statements the adjoints read, recomputed.
    std::set<std::string> needed;
    for (const Line& l : adjoint_lines_) names_in(l.value, needed);
    for (const Line& l : out_lines) names_in(l.value, needed);
    const std::set<std::string> saved(request_.saved.begin(), request_.saved.end());
    std::vector<bool> keep(f_.lines.size());
    for (size_t k = f_.lines.size(); k-- > 0;)
      if (needed.count(f_.lines[k].name) && !saved.count(f_.lines[k].name)) {
        keep[k] = true;
        names_in(f_.lines[k].value, needed);
      }
    std::vector<std::string> params;
    for (const std::string& in : f_.inputs) params.push_back(fmt::format("{}: {}", in, f_.tensors.at(in).declared));
    for (const std::string& s : request_.saved) params.push_back(fmt::format("{}: {}", s, f_.tensors.at(s).declared));
    for (const auto& [d, type] : seeds_in_) params.push_back(fmt::format("{}: {}", d, type));
    std::vector<std::string> results;
    for (const auto& [d, type] : outs) results.push_back(fmt::format("{}: {}", d, type));
    std::string text = fmt::format("/// The derivative of {} with respect to {}{}: derived by `grad`.\n", request_.of,
                                   fmt::join(request_.wrt, ", "),
                                   saved.empty() ? "" : fmt::format(", given {}", fmt::join(request_.saved, ", ")));
    for (const std::string& m : dropped_)
      text += fmt::format(
          "/// No adjoint through {}: the outputs are unchanged when it shifts ({} -> {} + c, traced and proved).\n", m,
          m, m);
    text += fmt::format("op {}({}) -> ({}) {{\n", request_.name, fmt::join(params, ", "), fmt::join(results, ", "));
    auto statement = [&](const Line& l) {
      if (l.is_let) return fmt::format("  let {} = {};\n", l.name, source(l.value));
      if (l.vars.empty()) return fmt::format("  {} = {};\n", l.name, source(l.value));
      return fmt::format("  {}[{}] = {};\n", l.name, fmt::join(l.vars, ", "), source(l.value));
    };
    for (size_t k = 0; k < f_.lines.size(); ++k)
      if (keep[k]) text += statement(f_.lines[k]);
    for (const Line& l : adjoint_lines_) text += statement(l);
    for (const Line& l : out_lines) text += statement(l);
    return text + "}\n";
  }

  const Straight& f_;
  const Request& request_;
  std::set<std::string> taken_;
  std::set<std::string> active_, dropped_;
  struct Contribution {
    Expr value;                  // over the tensor's variables
    std::optional<Expr> domain;  // outside it, the value is zero
  };
  std::map<std::string, std::vector<Contribution>> contributions_;
  std::vector<std::pair<std::string, std::string>> seeds_in_;  // d<output>: its declared type
  std::vector<Line> adjoint_lines_;
  std::map<std::string, std::string> vector_vars_;  // a carrier -> the variable of its vector fields' elements
};

}  // namespace

std::variant<std::string, Failure> derive(const Straight& f, const Request& request) {
  return Reverse(f, request).run();
}

}  // namespace emmy::sema::grad
