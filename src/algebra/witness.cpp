// Solves a case's premises for a concrete rational point: equalities are substituted
// away, inequalities eliminated variable by variable, and the bounds each elimination
// recorded are replayed in reverse to pick every variable's value.
#include "algebra/witness.hpp"

#include <algorithm>

namespace emmy::algebra {
namespace {

constexpr size_t kMaxIneqs = 2000;

struct Ineq {
  LinearForm form;  // form > 0 (strict) or form >= 0
  bool strict;
};

// One elimination: var > lower[i] (or >=) and var < upper[j] (or <=), over later variables.
struct Bound {
  LinearForm form;
  bool strict;
};
struct Step {
  std::string var;
  std::vector<Bound> lower, upper;
};

bool mentions_infinity(const LinearForm& f) { return f.coef.count(kNegInf) || f.coef.count(kPosInf); }

Rational value_at(const LinearForm& f, const Point& p) {
  Rational v = f.constant;
  for (const auto& [var, c] : f.coef) v = v + c * p.at(var);
  return v;
}

Rational ceil_of(Rational r) { return Rational::of(-floor_of(-r)); }

// The interval a variable may take, each end open (strict) or closed; nullopt = unbounded.
struct Interval {
  std::optional<std::pair<Rational, bool>> lo, hi;
};

Interval interval_at(const Step& s, const Point& p) {
  Interval out;
  for (const Bound& b : s.lower) {
    Rational v = value_at(b.form, p);
    if (!out.lo || v > out.lo->first || (v == out.lo->first && b.strict)) out.lo = {v, b.strict};
  }
  for (const Bound& b : s.upper) {
    Rational v = value_at(b.form, p);
    if (!out.hi || v < out.hi->first || (v == out.hi->first && b.strict)) out.hi = {v, b.strict};
  }
  return out;
}

// The variant-th integer of the interval counting outward from the one nearest 0, else a
// rational point inside it (the midpoint, then points nearer the upper end).
std::optional<Rational> pick(const Interval& in, int variant) {
  auto [lo, hi] = in;
  if (lo && hi && (lo->first > hi->first || (lo->first == hi->first && (lo->second || hi->second))))
    return std::nullopt;
  if (lo && hi && lo->first == hi->first) return lo->first;
  std::optional<Rational> kmin, kmax;
  if (lo) kmin = lo->second ? Rational::of(floor_of(lo->first) + 1) : ceil_of(lo->first);
  if (hi) kmax = hi->second ? Rational::of(-floor_of(-hi->first) - 1) : Rational::of(floor_of(hi->first));
  if (!kmin || !kmax || *kmin <= *kmax) {
    Rational z = Rational::of(0);
    if (kmin && z < *kmin) z = *kmin;
    if (kmax && *kmax < z) z = *kmax;
    int seen = 0;
    for (int step = 0; step <= 2 * variant + 1; ++step) {
      Rational k = z + Rational::of(step % 2 == 0 ? step / 2 : -(step + 1) / 2);
      if ((kmin && k < *kmin) || (kmax && *kmax < k)) continue;
      if (seen++ == variant) return k;
    }
  }
  if (lo && hi) return lo->first + (hi->first - lo->first) * Rational::of(variant + 1, variant + 2);
  return lo ? lo->first + Rational::of(1) : hi ? hi->first - Rational::of(1) : Rational::of(variant);
}

// Eliminates `var`: its bounds go into a step, the pairs of bounds into the rest.
Step eliminate(const std::string& var, std::vector<Ineq>& ineqs) {
  Step s{var, {}, {}};
  std::vector<Ineq> pos, neg, rest;
  for (const Ineq& q : ineqs) {
    auto it = q.form.coef.find(var);
    if (it == q.form.coef.end()) {
      rest.push_back(q);
      continue;
    }
    Rational c = it->second;
    LinearForm others = q.form;
    others.coef.erase(var);
    // c*var + others > 0: var > -others/c (c > 0) or var < -others/c (c < 0).
    Bound b{scaled(others, Rational::of(-1) / c), q.strict};
    (c.sign() > 0 ? s.lower : s.upper).push_back(b);
    (c.sign() > 0 ? pos : neg).push_back(q);
  }
  for (const Ineq& p : pos)
    for (const Ineq& n : neg) {
      Rational cp = p.form.coef.at(var), cn = -n.form.coef.at(var);
      rest.push_back({plus(scaled(p.form, cn), scaled(n.form, cp)), p.strict || n.strict});
    }
  ineqs = std::move(rest);
  return s;
}

std::optional<Point> solve_case(const Case& c, int variant, const std::vector<std::string>& also) {
  std::vector<Ineq> ineqs;
  std::vector<LinearForm> eqs;
  Point p;
  auto note_vars = [&](const LinearForm& f) {
    for (const auto& [v, coef] : f.coef) p.emplace(v, Rational::of(0));
  };
  for (const Premise& q : c.premises) {
    if (mentions_infinity(q.form)) continue;
    note_vars(q.form);
    if (q.rel == Rel::Eq)
      eqs.push_back(q.form);
    else
      ineqs.push_back({q.form, q.rel == Rel::Gt});
  }
  std::vector<std::pair<std::string, LinearForm>> solved;
  for (size_t i = 0; i < eqs.size(); ++i) {
    auto s = solve(eqs[i]);
    if (!s) {
      if (!eqs[i].constant.is_zero()) return std::nullopt;
      continue;
    }
    for (size_t j = i + 1; j < eqs.size(); ++j) eqs[j] = replace(eqs[j], s->first, s->second);
    for (Ineq& q : ineqs) q.form = replace(q.form, s->first, s->second);
    solved.push_back(std::move(*s));
  }
  std::vector<Step> steps;
  for (;;) {
    auto open = std::find_if(ineqs.begin(), ineqs.end(), [](const Ineq& q) { return !q.form.coef.empty(); });
    if (open == ineqs.end()) break;
    steps.push_back(eliminate(open->form.coef.begin()->first, ineqs));
    if (ineqs.size() > kMaxIneqs) return std::nullopt;
  }
  for (const Ineq& q : ineqs)
    if (q.form.constant.sign() < 0 || (q.form.constant.is_zero() && q.strict)) return std::nullopt;
  // Variables that no inequality bounds (after the equalities) are free: pick them first.
  for (const std::string& v : also) p.emplace(v, Rational::of(0));
  std::vector<std::string> bound;
  for (const Step& s : steps) bound.push_back(s.var);
  for (const auto& [v, e] : solved) bound.push_back(v);
  for (auto& [v, value] : p)
    if (std::find(bound.begin(), bound.end(), v) == bound.end()) value = *pick({}, variant);
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    std::optional<Rational> v = pick(interval_at(*s, p), variant);
    if (!v) return std::nullopt;
    p[s->var] = *v;
  }
  for (auto e = solved.rbegin(); e != solved.rend(); ++e) p[e->first] = value_at(e->second, p);
  return p;
}

}  // namespace

std::optional<Point> witness(const Case& c, int variant, const std::vector<std::string>& also) {
  try {
    return solve_case(c, variant, also);
  } catch (const Overflow&) {
    return std::nullopt;
  }
}

}  // namespace emmy::algebra
