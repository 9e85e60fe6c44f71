// Refutation: random and structured search for points where a law's sides differ, and
// points solved from the cases where the normal forms differ; every point is re-checked
// by evaluation (exact where the value is rational, else IEEE) before it is reported.
#include "algebra/refute.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "algebra/compiled_term.hpp"
#include "algebra/witness.hpp"

namespace emmy::algebra {
namespace {

using Env = std::vector<std::pair<std::string, double>>;
using ExactEnv = std::vector<std::pair<std::string, Rational>>;

constexpr int kVariantsPerCase = 6;
constexpr size_t kCasesTried = 24;
// The work one search may do, in term nodes evaluated (every field's two sides at each point):
// a combine of a few hundred terms has sides of ~10^5 nodes, so it gets fewer points instead of
// minutes of evaluation (~0.1 s a search). Sides of up to kFullSearchNodes nodes get every point
// a search draws (search_small's 4,000), whatever that costs: the stdlib's largest, argmax with
// its NaN rule, has 1,364.
constexpr size_t kSearchWork = 4'000'000;
constexpr size_t kFullSearchNodes = 4096;
constexpr size_t kFullSearchPoints = 4000;

size_t term_nodes(const Term& t) {
  size_t n = 1;
  for (const Term& a : t.args) n += term_nodes(a);
  return n;
}

// The points a search can still evaluate; `exhausted` once it wanted more.
struct PointBudget {
  size_t left = 0;
  bool exhausted = false;
  explicit PointBudget(const Sides& s) {
    size_t cost = 1;
    for (const std::vector<Term>* side : {&s.lhs, &s.rhs})
      for (const Term& t : *side) cost += term_nodes(t);
    left = std::max(kSearchWork / cost, cost <= kFullSearchNodes ? kFullSearchPoints : 0);
  }
  bool spend() {
    if (left == 0) return !(exhausted = true);
    --left;
    return true;
  }
};

std::string fmt_double(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0 && std::signbit(v)) return "-0";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.6g}", v);
}

// A rational as a short decimal where that is exact, else num/den.
std::string fmt_exact(Rational r) {
  std::string d = fmt_double(r.value());
  if (auto back = Rational::parse(d[0] == '-' ? d.substr(1) : d); back && (d[0] == '-' ? -*back : *back) == r) return d;
  return r.str();
}

// The exact value of a double that is a dyadic rational with a small denominator.
std::optional<Rational> exact_of(double v) {
  constexpr double kScale = 1 << 20;
  if (!std::isfinite(v) || std::fabs(v) > 1e12 || v * kScale != std::floor(v * kScale)) return std::nullopt;
  return Rational::of(static_cast<int64_t>(v * kScale), static_cast<int64_t>(kScale));
}

bool differs_ieee(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return false;  // undefined points prove nothing
  if (std::isinf(x) || std::isinf(y)) return x != y;
  return std::fabs(x - y) > 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
}

// One field's two sides at a point, in both arithmetics.
struct Evaluated {
  std::optional<Rational> exact_l, exact_r;
  double ieee_l = 0, ieee_r = 0;
  bool exact() const { return exact_l && exact_r; }
  // `trusted`: whether an IEEE difference (no exact value) may count at this point.
  bool differs(bool trusted) const {
    if (exact()) return !(*exact_l == *exact_r);
    return trusted && differs_ieee(ieee_l, ieee_r);
  }
  std::string lhs() const { return exact_l ? fmt_exact(*exact_l) : fmt_double(ieee_l); }
  std::string rhs() const { return exact_r ? fmt_exact(*exact_r) : fmt_double(ieee_r); }
};

Evaluated evaluate_field(const Sides& s, size_t i, const Env& env, const ExactEnv& exact) {
  Evaluated e;
  e.ieee_l = evaluate(s.lhs[i], env);
  e.ieee_r = evaluate(s.rhs[i], env);
  if (exact.size() == env.size()) {
    e.exact_l = evaluate_exact(s.lhs[i], exact);
    e.exact_r = evaluate_exact(s.rhs[i], exact);
  }
  return e;
}

ExactEnv exact_env(const Env& env) {
  ExactEnv out;
  for (const auto& [n, v] : env)
    if (auto r = exact_of(v)) out.emplace_back(n, *r);
  return out;
}

// Large finite inputs make IEEE rounding (exp(50) + 1 - exp(50)) look like a failure:
// where exact arithmetic cannot decide, a wide point counts only with moderate inputs.
constexpr double kTrustedMagnitude = 64;

bool moderate(const Env& env) {
  return std::all_of(env.begin(), env.end(),
                     [](const auto& p) { return std::isinf(p.second) || std::fabs(p.second) <= kTrustedMagnitude; });
}

// The first field whose sides differ at the point (the re-check of every report): exact
// arithmetic decides where the values are rational, else IEEE does (`wide`: only at
// moderate inputs, and with both sides finite unless an input is infinite). Searches pass
// no exact values: an IEEE difference is then confirmed exactly (cheap: differences are
// rare) and an IEEE agreement stands.
std::optional<size_t> mismatch(const Sides& s, const Env& env, const ExactEnv* exact, bool wide = false) {
  bool trusted = !wide || moderate(env);
  bool infinite_input = std::any_of(env.begin(), env.end(), [](const auto& p) { return std::isinf(p.second); });
  std::optional<ExactEnv> confirm;
  for (size_t i = 0; i < s.lhs.size(); ++i) {
    if (!exact && !differs_ieee(evaluate(s.lhs[i], env), evaluate(s.rhs[i], env))) continue;
    if (!exact && !confirm) confirm = exact_env(env);
    Evaluated e = evaluate_field(s, i, env, exact ? *exact : *confirm);
    bool finite = std::isfinite(e.ieee_l) && std::isfinite(e.ieee_r);
    if (e.differs(trusted && (!wide || finite || infinite_input))) return i;
  }
  return std::nullopt;
}
std::optional<size_t> mismatch(const Sides& s, const Env& env) { return mismatch(s, env, nullptr); }

// The sides compiled over a search's variables: the cheap IEEE filter a search runs at each
// point before `mismatch` re-checks the few points that pass it (the same IEEE values, so the
// verdicts are the same as evaluating every point by name).
class CompiledSides {
 public:
  CompiledSides(const Sides& s, const std::vector<std::string>& names) : names_(names) {
    for (size_t i = 0; i < s.lhs.size(); ++i) {
      lhs_.emplace_back(s.lhs[i], names);
      rhs_.emplace_back(s.rhs[i], names);
    }
  }
  // Whether some field's two sides differ in IEEE arithmetic at `point`.
  bool may_differ(const std::vector<double>& point) {
    for (size_t i = 0; i < lhs_.size(); ++i)
      if (differs_ieee(lhs_[i](point, stack_), rhs_[i](point, stack_))) return true;
    return false;
  }
  // The point, named, where the sides differ there and `mismatch` confirms it.
  std::optional<Env> failing(const Sides& s, const std::vector<double>& point, bool wide) {
    if (!may_differ(point)) return std::nullopt;
    Env env;
    for (size_t i = 0; i < names_.size(); ++i) env.emplace_back(names_[i], point[i]);
    if (!mismatch(s, env, nullptr, wide)) return std::nullopt;
    return env;
  }

 private:
  std::vector<std::string> names_;
  std::vector<CompiledTerm> lhs_, rhs_;
  std::vector<double> stack_;
};

bool listed(const std::vector<std::string>& fields, const std::string& var) {
  std::string field = var.substr(var.find('.') + 1);
  return std::find(fields.begin(), fields.end(), field) != fields.end();
}

bool positive(const Case& domain, const std::string& var) {
  for (const Premise& p : domain.premises)
    if (p.rel == Rel::Gt && p.form.coef.size() == 1 && p.form.coef.begin()->first == var) return true;
  return false;
}

// What a variable may hold: bool fields 0 or 1, integer fields integers, counts positive.
struct Kind {
  bool boolean = false, integer = false, positive = false;
};
Kind kind_of(const MonoidTerms& m, const Case& domain, const std::string& var) {
  return {listed(m.bool_fields, var), listed(m.int_fields, var), positive(domain, var)};
}
std::vector<Kind> kinds_of(const MonoidTerms& m, const Case& domain, const std::vector<std::string>& vars) {
  std::vector<Kind> out;
  for (const std::string& v : vars) out.push_back(kind_of(m, domain, v));
  return out;
}

// Moves a drawn value into the variable's kind.
double fit(const Kind& k, double v) {
  if (k.boolean) return std::fabs(v) >= 1 || std::isinf(v) ? 1 : 0;
  if (k.integer) v = std::isfinite(v) ? std::trunc(v) + 0.0 : std::copysign(1e6, v);
  if (k.positive) v = std::isfinite(v) ? std::fabs(v) + (k.integer || std::fabs(v) < 1 ? 1 : 0) : 1e6;
  return v;
}

std::vector<std::string> variable_names(const MonoidTerms& m, const Sides& s) {
  std::vector<std::string> names;
  for (const std::string& c : s.carriers)
    for (const std::string& f : m.fields) names.push_back(c + "." + f);
  return names;
}

std::string point_str(const MonoidTerms& m, const Sides& s, const std::vector<std::string>& values) {
  std::vector<std::string> at;
  size_t k = 0;
  for (const std::string& c : s.carriers) {
    std::vector<std::string> parts;
    for (const std::string& f : m.fields) {
      const std::string& v = values[k++];
      parts.push_back(m.fields.size() == 1 ? v : fmt::format("{}={}", f, v));
    }
    std::string value = fmt::format("{}", fmt::join(parts, ", "));
    at.push_back(fmt::format("{} = {}", c, m.fields.size() == 1 ? value : fmt::format("({})", value)));
  }
  return fmt::format("{}", fmt::join(at, ", "));
}

// The report of a re-checked point; `origin` says where it came from.
Refutation report(const MonoidTerms& m, const Sides& s, const Env& env, const ExactEnv& exact, size_t field,
                  const std::vector<std::string>& values, const std::string& origin) {
  Evaluated e = evaluate_field(s, field, env, exact);
  std::string which = m.fields.size() == 1 ? "" : fmt::format(" (field {})", m.fields[field]);
  Refutation r;
  r.counterexample = fmt::format("{}{} = {} but {} = {} at {}", s.lhs_name, which, e.lhs(), s.rhs_name, e.rhs(),
                                 point_str(m, s, values));
  std::vector<std::string> vars;
  for (size_t i = 0; i < env.size(); ++i) vars.push_back(fmt::format("{} = {}", env[i].first, values[i]));
  std::string exact_part = e.exact() ? fmt::format("exact {} vs {}", e.lhs(), e.rhs()) : "exact: not rational here";
  r.witness = fmt::format("{} ({}); re-checked: {}, IEEE {} vs {}", fmt::join(vars, ", "), origin, exact_part,
                          fmt_double(e.ieee_l), fmt_double(e.ieee_r));
  return r;
}

Refutation report_search(const MonoidTerms& m, const Sides& s, const Env& env, size_t field) {
  std::vector<std::string> values;
  for (const auto& [n, v] : env) values.push_back(fmt_double(v));
  return report(m, s, env, exact_env(env), field, values, "found by search");
}

// Small search: small integers first, then reals in [-4, 4]; then every point of a small
// integer grid when the variables are few (ties and orderings random draws rarely hit).
std::optional<Env> search_small(const MonoidTerms& m, const Sides& s, const Case& domain, bool grid,
                                PointBudget& budget) {
  std::vector<std::string> names = variable_names(m, s);
  std::vector<Kind> kinds = kinds_of(m, domain, names);
  CompiledSides fast(s, names);
  std::vector<double> point(names.size());
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 4000 && budget.spend(); ++trial) {
    for (size_t i = 0; i < names.size(); ++i) {
      double v = trial < 2000 ? static_cast<double>(static_cast<int>(rng() % 9) - 4)
                              : std::uniform_real_distribution<double>(-4, 4)(rng);
      const Kind& k = kinds[i];
      if (k.positive) v = std::fabs(v) + 1;
      if (k.integer) v = std::trunc(v) + 0.0;  // + 0.0: no -0 from trunc(-0.5)
      if (k.boolean) v = static_cast<double>(rng() % 2);
      point[i] = v;
    }
    if (std::optional<Env> env = fast.failing(s, point, false)) return env;
  }
  constexpr double kGrid[] = {-1, 0, 1, 2};
  if (!grid || names.size() > 7) return std::nullopt;
  size_t points = 1;
  for (size_t k = 0; k < names.size(); ++k) points *= 4;
  for (size_t p = 0; p < points && budget.spend(); ++p) {
    size_t code = p;
    for (size_t i = 0; i < names.size(); ++i) {
      double v = kGrid[code % 4];
      code /= 4;
      const Kind& k = kinds[i];
      if (k.positive && v <= 0) v = 1 - v;
      if (k.boolean) v = v > 0 ? 1 : 0;
      point[i] = v;
    }
    if (std::optional<Env> env = fast.failing(s, point, false)) return env;
  }
  return std::nullopt;
}

// The failing point shrunk toward small integers, so it is easy to check by hand.
Env shrink(const MonoidTerms& m, const Sides& s, const Case& domain, Env env) {
  for (auto& [n, v] : env)
    for (double candidate : {0.0, 1.0, -1.0, 2.0, -2.0, 3.0, 4.0}) {
      Kind k = kind_of(m, domain, n);
      if ((k.positive && candidate <= 0) || (k.boolean && candidate != 0 && candidate != 1)) continue;
      double saved = v;
      v = candidate;
      if (mismatch(s, env)) break;
      v = saved;
    }
  return env;
}

// Values worth trying beyond small numbers, per variable: the identity's own value first.
// An infinity is tried only where it is the field's identity (-inf of max): elsewhere an
// infinite input meets IEEE artifacts such as 1/inf + 1/-inf = +0 that are no failure of
// the law over the reals.
std::vector<double> pool_for(const MonoidTerms& m, const std::string& var) {
  std::vector<double> pool = {0.0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, 100, -100, 1e6, -1e6};
  for (int k = -3; k <= 20; ++k) pool.push_back(std::ldexp(1.0, k));
  std::string field = var.substr(var.find('.') + 1);
  for (size_t i = 0; i < m.fields.size() && i < m.identity.size(); ++i)
    if (m.fields[i] == field) pool.insert(pool.begin(), evaluate(m.identity[i], {}));
  return pool;
}

std::optional<Env> search_wide(const MonoidTerms& m, const Sides& s, const Case& domain, PointBudget& budget) {
  std::vector<std::string> names = variable_names(m, s);
  std::vector<Kind> kinds = kinds_of(m, domain, names);
  std::vector<std::vector<double>> pools;
  for (const std::string& n : names) pools.push_back(pool_for(m, n));
  CompiledSides fast(s, names);
  std::vector<double> point(names.size());
  std::mt19937_64 rng(67890);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 3000 && budget.spend(); ++trial) {
    for (size_t i = 0; i < names.size(); ++i) {
      double r = unit(rng), v;
      if (r < 0.5)
        v = pools[i][rng() % pools[i].size()];
      else if (r < 0.75)
        v = static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000);
      else
        v = std::copysign(std::pow(10.0, unit(rng) * 12 - 6), unit(rng) - 0.5);
      point[i] = fit(kinds[i], v);
    }
    if (std::optional<Env> env = fast.failing(s, point, /*wide=*/true)) return env;
  }
  return std::nullopt;
}

// A witness point fits the carriers: integer fields integral, bool fields 0 or 1.
bool fits(const MonoidTerms& m, const std::string& var, Rational v) {
  if (listed(m.bool_fields, var)) return v == Rational::of(0) || v == Rational::of(1);
  return !listed(m.int_fields, var) || v.den == 1;
}

}  // namespace

std::optional<Refutation> search(const MonoidTerms& m, const Sides& s, const Case& domain, Search how,
                                 bool* exhausted) {
  PointBudget budget(s);
  struct Report {
    const PointBudget& budget;
    bool* out;
    ~Report() {
      if (out) *out = budget.exhausted;
    }
  } report_exhausted{budget, exhausted};
  if (how == Search::Wide) {
    std::optional<Env> env = search_wide(m, s, domain, budget);
    if (!env) return std::nullopt;
    return report_search(m, s, *env, *mismatch(s, *env, nullptr, true));
  }
  std::optional<Env> found = search_small(m, s, domain, how == Search::Small, budget);
  if (!found) return std::nullopt;
  Env env = shrink(m, s, domain, *found);
  return report_search(m, s, env, *mismatch(s, env));
}

std::optional<Refutation> from_cases(const MonoidTerms& m, const Sides& s, const std::vector<Case>& failing) {
  std::vector<std::string> names = variable_names(m, s);
  for (size_t c = 0; c < failing.size() && c < kCasesTried; ++c)
    for (int variant = 0; variant < kVariantsPerCase; ++variant) {
      std::optional<Point> p = witness(failing[c], variant, names);
      if (!p) break;  // infeasible: no variant helps
      Env env;
      ExactEnv exact;
      std::vector<std::string> values;
      bool ok = true;
      for (const std::string& n : names) {
        Rational v = p->at(n);
        ok = ok && fits(m, n, v);
        env.emplace_back(n, v.value());
        exact.emplace_back(n, v);
        values.push_back(fmt_exact(v));
      }
      if (!ok) continue;
      if (std::optional<size_t> field = mismatch(s, env, &exact))
        return report(m, s, env, exact, *field, values, fmt::format("a point of the case {}", failing[c].str()));
    }
  return std::nullopt;
}

}  // namespace emmy::algebra
