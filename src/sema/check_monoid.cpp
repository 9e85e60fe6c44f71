// Checks one monoid's shape: fields, identity, lift and combine type-check and agree in
// arity. Its laws (associativity, identity) are the algebra layer's job.
#include <set>

#include <fmt/format.h>

#include "sema/expr_typer.hpp"
#include "sema/passes.hpp"

namespace emmy::sema {
namespace {

const std::set<std::string> kAssumptions = {"associative", "commutative"};

class MonoidChecker : public ExprTyper {
 public:
  MonoidChecker(const ast::MonoidDecl& m, Diagnostics& diags, CheckedMonoid& out,
                std::unordered_map<uint32_t, Type>& types)
      : ExprTyper(diags, types), m_(m), out_(out) {}

  void run(bool in_std_monoids) {
    if (find_builtin_reduction(m_.name.name) && !in_std_monoids)
      diags_
          .error("E011", m_.name.range,
                 fmt::format("'{}' is a built-in reduction and cannot be redefined", m_.name.name))
          .hint("give the monoid another name");
    check_fields(m_.fields, "field");
    check_identity();
    check_lift();
    check_combine();
    for (const ast::Ident& a : m_.assumes) {
      if (!kAssumptions.count(a.name)) {
        std::string guess = closest_name(a.name, std::vector<std::string>(kAssumptions.begin(), kAssumptions.end()));
        diags_.error("E043", a.range, fmt::format("unknown assumption '{}'", a.name))
            .hint(guess.empty() ? std::string("the assumptions are 'assume associative;' and 'assume commutative;'")
                                : fmt::format("did you mean 'assume {};'?", guess));
        continue;
      }
      (a.name == "associative" ? out_.associative_assumed : out_.commutative_assumed) = true;
    }
  }

 private:
  void check_fields(const std::vector<ast::Field>& fields, const char* what) {
    std::map<std::string, SourceRange> seen;
    for (const ast::Field& f : fields) {
      if (auto [it, fresh] = seen.emplace(f.name.name, f.name.range); !fresh)
        diags_.error("E013", f.name.range, fmt::format("{} '{}' is declared twice", what, f.name.name))
            .note(it->second, "first declared here")
            .hint("give each a distinct name");
      if (!parse_dtype(f.dtype.name))
        diags_.error("E014", f.dtype.range, fmt::format("unknown dtype '{}'", f.dtype.name))
            .hint(dtype_hint(f.dtype.name));
      if (f.vector_dim) {
        if (f.vector_dim->is_literal() && f.vector_dim->value <= 0)
          diags_
              .error("E037", f.vector_dim->range, fmt::format("vector length {} must be positive", f.vector_dim->value))
              .hint("use a length >= 1");
        if (!f.vector_dim->is_literal() &&
            std::find(out_.dims.begin(), out_.dims.end(), f.vector_dim->name) == out_.dims.end())
          out_.dims.push_back(f.vector_dim->name);
      }
    }
  }

  Type field_type(const ast::Field& f) const {
    DType d = parse_dtype(f.dtype.name).value_or(DType::F32);
    if (!f.vector_dim) return Type::scalar(d);
    return Type::vector(d, f.vector_dim->is_literal() ? Size{"", f.vector_dim->value} : Size{f.vector_dim->name, 0});
  }

  // identity / lift / yield: one component per field, each fitting its field.
  void check_carrier(const ast::Expr& e, const char* member) {
    allow_tuple_ = true;
    Type t = check(e);
    allow_tuple_ = false;
    if (t.is_error()) return;
    std::vector<const ast::Expr*> parts;
    std::vector<Type> types;
    if (e.kind == ast::ExprKind::Tuple) {
      for (size_t i = 0; i < e.args.size(); ++i) {
        parts.push_back(&e.args[i]);
        types.push_back(t.elems[i]);
      }
    } else {
      parts.push_back(&e);
      types.push_back(t);
    }
    if (parts.size() != m_.fields.size()) {
      diags_
          .error("E041", e.range,
                 fmt::format("{} has {} component{} but monoid {} has {} field{}", member, parts.size(),
                             parts.size() == 1 ? "" : "s", m_.name.name, m_.fields.size(),
                             m_.fields.size() == 1 ? "" : "s"))
          .hint(fmt::format("write one component per field: ({})", field_names()));
      return;
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      const Type& got = types[i];
      if (got.is_error()) continue;
      Type want = field_type(m_.fields[i]);
      bool shape_ok = got.kind == Type::Kind::Scalar ||
                      (want.kind == Type::Kind::Vector && got.kind == Type::Kind::Vector && got.length == want.length);
      bool kind_ok = got.is_bool() == (want.dtype == DType::Bool) &&
                     (got.kind == Type::Kind::Scalar || got.kind == Type::Kind::Vector);
      if (!shape_ok || !kind_ok)
        diags_
            .error("E030", parts[i]->range,
                   fmt::format("component {} of {} is a {} but field '{}' is {}", i + 1, member, got.str(),
                               m_.fields[i].name.name, want.str()))
            .hint("a scalar fills a vector field; a vector must have the field's length");
    }
  }

  std::string field_names() const {
    std::string s;
    for (const ast::Field& f : m_.fields) s += (s.empty() ? "" : ", ") + f.name.name;
    return s;
  }

  void check_identity() {
    if (!m_.identity) {
      std::vector<std::string> zeros(m_.fields.size(), "0");
      std::string example = zeros.size() == 1 ? "0" : fmt::format("({})", fmt::join(zeros, ", "));
      diags_.error("E040", m_.name.range, fmt::format("monoid {} has no identity", m_.name.name))
          .hint(fmt::format("add e.g. 'identity = {};': the value e with combine(e, x) = x for every x", example));
      return;
    }
    scope_ = Scope::Identity;
    check_carrier(*m_.identity, "identity");
  }

  void check_lift() {
    if (!m_.lift_value) return;
    check_fields(*m_.lift_params, "lift parameter");
    scope_ = Scope::Lift;
    check_carrier(*m_.lift_value, "lift");
  }

  void check_combine() {
    if (!m_.has_combine) {
      diags_.error("E040", m_.name.range, fmt::format("monoid {} has no combine", m_.name.name))
          .hint("add 'combine(a, b) { yield (...); }'");
      return;
    }
    if (m_.combine_lhs.name == m_.combine_rhs.name)
      diags_
          .error("E042", m_.combine_rhs.range,
                 fmt::format("combine's parameters must differ, both are '{}'", m_.combine_lhs.name))
          .hint("write combine(a, b)");
    scope_ = Scope::Combine;
    for (const ast::LetStmt& let : m_.combine_lets) {
      Type t = check(let.value);
      if (!t.is_error() && !require_value(let.value, t, "in a let")) t = Type::error();
      if (let.name.name == m_.combine_lhs.name || let.name.name == m_.combine_rhs.name || lets_.count(let.name.name)) {
        bool param = let.name.name == m_.combine_lhs.name || let.name.name == m_.combine_rhs.name;
        diags_
            .error("E015", let.name.range,
                   param ? fmt::format("'{}' is already a parameter of combine", let.name.name)
                         : fmt::format("'{}' is already defined in combine", let.name.name))
            .hint("use a new name");
        continue;
      }
      lets_[let.name.name] = t;
    }
    check_carrier(*m_.combine_yield, "yield");
  }

  Type record() const {
    Type r;
    r.kind = Type::Kind::Record;
    r.monoid = m_.name.name;
    for (const std::string& d : out_.dims) r.vector_dims.emplace_back(d, Size{d, 0});
    return r;
  }

  Type name(const ast::Expr& e) override {
    if (scope_ == Scope::Combine) {
      if (e.text == m_.combine_lhs.name || e.text == m_.combine_rhs.name) return record();
      if (auto it = lets_.find(e.text); it != lets_.end()) return it->second;
    }
    if (scope_ == Scope::Lift)
      for (const ast::Field& p : *m_.lift_params)
        if (p.name.name == e.text) return field_type(p);
    std::vector<std::string> names;
    if (scope_ == Scope::Combine) {
      names = {m_.combine_lhs.name, m_.combine_rhs.name};
      for (const auto& [k, _] : lets_) names.push_back(k);
    }
    if (scope_ == Scope::Lift)
      for (const ast::Field& p : *m_.lift_params) names.push_back(p.name.name);
    std::string guess = closest_name(e.text, names);
    const char* where = scope_ == Scope::Identity ? "an identity holds constants only"
                        : scope_ == Scope::Lift   ? "a lift sees only its parameters"
                                                  : "combine sees its two parameters and its lets";
    diags_.error("E012", e.range, fmt::format("unknown name '{}' in monoid {}", e.text, m_.name.name))
        .hint(guess.empty() ? std::string(where) : fmt::format("did you mean '{}'?", guess));
    return Type::error();
  }

  Type index(const ast::Expr& e) override {
    Type base = check(e.args[0]);
    if (base.is_error()) return base;
    if (base.kind != Type::Kind::Vector || e.args.size() != 2) {
      diags_.error("E020", e.range, fmt::format("a {} cannot be indexed here", base.str()))
          .hint("monoid operations act on whole fields: a.o * x scales every element");
      return Type::error();
    }
    Type ix = check(e.args[1]);
    if (!ix.is_error() && !(ix.is_scalar() && is_int(ix.dtype)))
      diags_.error("E034", e.args[1].range, fmt::format("an index must be an integer, not {}", ix.str()))
          .hint("use an integer constant, e.g. a.v[0]");
    return Type::scalar(base.dtype);
  }

  Type reduce(const ast::Expr& e) override {
    diags_.error("E027", e.range, "a monoid cannot contain a reduction")
        .hint("combine works on two carriers at a time");
    return Type::error();
  }

  Type tuple(const ast::Expr& e) override {
    if (!allow_tuple_) return ExprTyper::tuple(e);
    allow_tuple_ = false;
    Type t;
    t.kind = Type::Kind::Tuple;
    for (const ast::Expr& a : e.args) {
      Type c = check(a);
      if (!c.is_error()) require_value(a, c, "inside a tuple");
      t.elems.push_back(c);
    }
    return t;
  }

  const CheckedMonoid* monoid_of(const Type& t) const override {
    return t.kind == Type::Kind::Record && t.monoid == m_.name.name ? &out_ : nullptr;
  }

  enum class Scope { Identity, Lift, Combine };
  const ast::MonoidDecl& m_;
  CheckedMonoid& out_;
  Scope scope_ = Scope::Identity;
  bool allow_tuple_ = false;
  std::map<std::string, Type> lets_;
};

}  // namespace

CheckedMonoid check_monoid(const ast::MonoidDecl& monoid, bool in_std_monoids, Diagnostics& diags) {
  CheckedMonoid out;
  out.decl = &monoid;
  out.reference_of_builtin = find_builtin_reduction(monoid.name.name) != nullptr && in_std_monoids;
  std::unordered_map<uint32_t, Type> types;
  MonoidChecker(monoid, diags, out, types).run(in_std_monoids);
  return out;
}

}  // namespace emmy::sema
