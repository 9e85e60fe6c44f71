#include "algebra/cases.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace emmy::algebra {
namespace {

// A linear constraint for Fourier–Motzkin: form > 0 (strict) or form >= 0.
struct Ineq {
  LinearForm form;
  bool strict;
};

constexpr size_t kMaxInequalities = 4000;

// Is the conjunction satisfiable over the reals? (Fourier–Motzkin elimination.)
// `work` grows by the inequalities each elimination round handles, the measure of its cost.
bool feasible(std::vector<Ineq> ineqs, std::vector<LinearForm> eqs, size_t& work) {
  work += ineqs.size() + eqs.size();
  for (size_t i = 0; i < eqs.size(); ++i) {
    auto s = solve(eqs[i]);
    if (!s) {
      if (!eqs[i].constant.is_zero()) return false;
      continue;
    }
    for (size_t j = i + 1; j < eqs.size(); ++j) eqs[j] = replace(eqs[j], s->first, s->second);
    for (Ineq& q : ineqs) q.form = replace(q.form, s->first, s->second);
  }
  for (int guard = 0; guard < 64; ++guard) {
    std::string var;
    for (const Ineq& q : ineqs)
      if (!q.form.coef.empty()) var = q.form.coef.begin()->first;
    if (var.empty()) break;
    std::vector<Ineq> pos, neg, rest;
    for (const Ineq& q : ineqs) {
      auto it = q.form.coef.find(var);
      if (it == q.form.coef.end())
        rest.push_back(q);
      else
        (it->second.sign() > 0 ? pos : neg).push_back(q);
    }
    // Too large to refute: assume satisfiable (a case kept that cannot occur costs a proof,
    // never makes a wrong one) before building the products, not after.
    if (rest.size() + pos.size() * neg.size() > kMaxInequalities) return true;
    work += ineqs.size() + pos.size() * neg.size();
    for (const Ineq& p : pos)
      for (const Ineq& n : neg) {
        Rational cp = p.form.coef.at(var), cn = -n.form.coef.at(var);
        rest.push_back({plus(scaled(p.form, cn), scaled(n.form, cp)), p.strict || n.strict});
      }
    ineqs = std::move(rest);
  }
  for (const Ineq& q : ineqs) {
    int s = q.form.constant.sign();
    if (s < 0 || (s == 0 && q.strict)) return false;
  }
  return true;
}

void spend(int& budget, int cost = kCaseCost);

// Can the case's premises and one more hold together? With a budget, the check is paid for:
// 1, plus 1 for every kFmWorkPerUnit inequalities the elimination handles.
constexpr size_t kFmWorkPerUnit = 64;
bool consistent_with(const Case& c, const Premise& extra, int* budget = nullptr) {
  std::vector<Ineq> ineqs;
  std::vector<LinearForm> eqs;
  for (const Premise& p : c.premises) {
    if (p.rel == Rel::Eq)
      eqs.push_back(p.form);
    else
      ineqs.push_back({p.form, p.rel == Rel::Gt});
  }
  if (extra.rel == Rel::Eq)
    eqs.push_back(extra.form);
  else
    ineqs.push_back({extra.form, extra.rel == Rel::Gt});
  size_t work = 0;
  const bool ok = feasible(ineqs, eqs, work);
  if (budget) spend(*budget, 1 + static_cast<int>(std::min<size_t>(work / kFmWorkPerUnit, 1 << 20)));
  return ok;
}

bool consistent(const Case& c, const LinearForm& f, int sign, int* budget = nullptr) {
  if (sign == 0) return consistent_with(c, {f, Rel::Eq}, budget);
  return consistent_with(c, {scaled(f, Rational::of(sign)), Rel::Gt}, budget);
}

// implied_sign, paid for.
int implied_sign_within(const Case& c, const LinearForm& f, int* budget);

Case with(const Case& c, const LinearForm& f, Rel rel) {
  Case out = c;
  out.premises.push_back({f, rel});
  return out;
}

// A case split costs kCaseCost of the budget, a feasibility check 1 or more: both bound the work.
void spend(int& budget, int cost) {
  budget -= cost;
  if (budget < 0)
    throw Undecided{
        "undecided (budget): the case analysis needs more work (cases and feasibility checks) than the "
        "prover's budget"};
}

// The sign of a form that mentions an infinity is that of the infinity's coefficient.
std::optional<int> infinite_sign(const LinearForm& f) {
  if (auto it = f.coef.find(kNegInf); it != f.coef.end()) return -it->second.sign();
  if (auto it = f.coef.find(kPosInf); it != f.coef.end()) return it->second.sign();
  return std::nullopt;
}

struct Truth {
  Case where;
  bool value;
};

std::vector<Truth> decide(const Term& t, const Case& within, int& budget);

// x OP y over each case of x and y: split on the sign of x - y where it is open.
std::vector<Truth> compare(const Term& t, const Case& within, int& budget) {
  std::vector<Truth> out;
  for (const Normalized& x : normalize(t.args[0], within, budget))
    for (const Normalized& y : normalize(t.args[1], x.where, budget)) {
      Fraction d = apply_equalities(y.where, sub(x.value, y.value));
      std::optional<LinearForm> form = d.as_linear();
      if (!form) throw Undecided{fmt::format("cannot decide the sign of {}", d.str())};
      auto holds = [&](int sign) {
        switch (t.op) {
          case TermOp::Lt: return sign < 0;
          case TermOp::Le: return sign <= 0;
          case TermOp::Gt: return sign > 0;
          case TermOp::Ge: return sign >= 0;
          case TermOp::Eq: return sign == 0;
          default: return sign != 0;
        }
      };
      if (auto s = infinite_sign(*form)) {
        out.push_back({y.where, holds(*s)});
        continue;
      }
      // An order comparison splits in two, not three: where it holds and where it does
      // not, each one premise (x >= y / y > x). Ties fall on one side; the leaf's
      // equality inference recovers x = y where both x >= y and y >= x hold.
      if (t.op != TermOp::Eq && t.op != TermOp::Ne) {
        bool flip = t.op == TermOp::Le || t.op == TermOp::Lt;  // compare -form instead
        LinearForm f = flip ? scaled(*form, Rational::of(-1)) : *form;
        bool strict = t.op == TermOp::Gt || t.op == TermOp::Lt;
        Premise yes{f, strict ? Rel::Gt : Rel::Ge};
        Premise no{scaled(f, Rational::of(-1)), strict ? Rel::Ge : Rel::Gt};
        bool can_yes = consistent_with(y.where, yes, &budget), can_no = consistent_with(y.where, no, &budget);
        if (can_yes != can_no) {
          out.push_back({y.where, can_yes});
          continue;
        }
        for (const auto& [p, value] : {std::pair{yes, true}, std::pair{no, false}}) {
          spend(budget);
          out.push_back({with(y.where, p.form, p.rel), value});
        }
        continue;
      }
      int known = implied_sign_within(y.where, *form, &budget);
      if (known != 2) {
        out.push_back({y.where, holds(known)});
        continue;
      }
      const std::pair<int, Rel> splits[] = {{1, Rel::Gt}, {0, Rel::Eq}, {-1, Rel::Gt}};
      for (const auto& [sign, rel] : splits) {
        if (!consistent(y.where, *form, sign, &budget)) continue;
        spend(budget);
        out.push_back({with(y.where, sign < 0 ? scaled(*form, Rational::of(-1)) : *form, rel), holds(sign)});
      }
    }
  return out;
}

std::vector<Truth> decide(const Term& t, const Case& within, int& budget) {
  switch (t.op) {
    case TermOp::Lt:
    case TermOp::Le:
    case TermOp::Gt:
    case TermOp::Ge:
    case TermOp::Eq:
    case TermOp::Ne: return compare(t, within, budget);
    case TermOp::Not: {
      std::vector<Truth> out = decide(t.args[0], within, budget);
      for (Truth& x : out) x.value = !x.value;
      return out;
    }
    case TermOp::And:
    case TermOp::Or: {
      std::vector<Truth> out;
      bool short_value = t.op == TermOp::Or;
      for (const Truth& x : decide(t.args[0], within, budget)) {
        if (x.value == short_value) {
          out.push_back(x);
          continue;
        }
        for (const Truth& y : decide(t.args[1], x.where, budget)) out.push_back(y);
      }
      return out;
    }
    case TermOp::Const: return {{within, !t.value.is_zero()}};
    case TermOp::Var: {
      // A bool variable (sema lets only bools stand as conditions) is 0 or 1.
      LinearForm is_one, is_zero;
      is_one.coef[t.name] = Rational::of(1);
      is_one.constant = Rational::of(-1);
      is_zero.coef[t.name] = Rational::of(1);
      std::vector<Truth> out;
      for (auto [form, value] : {std::pair{is_one, true}, std::pair{is_zero, false}}) {
        if (!consistent(within, form, 0, &budget)) continue;
        spend(budget);
        out.push_back({with(within, form, Rel::Eq), value});
      }
      return out;
    }
    default: throw Undecided{fmt::format("'{}' is not a condition", t.str())};
  }
}

// exp(log u) = u where u > 0 is known (a positive linear form, or a sum of exponentials
// with positive weights); elsewhere it stays opaque.
std::vector<Normalized> exp_of_log(const Term& u, const Case& within, int& budget) {
  std::vector<Normalized> out = normalize(u, within, budget);
  for (Normalized& n : out) {
    bool positive = false;
    if (auto l = n.value.as_linear())
      positive = implied_sign_within(n.where, *l, &budget) == 1;
    else if (auto d = n.value.den.as_constant(); d && d->sign() > 0) {
      positive = !n.value.num.terms.empty();
      for (const auto& [mono, c] : n.value.num.terms) positive = positive && mono.powers.empty() && c.sign() > 0;
    }
    if (!positive) n.value = exp_of(opaque("log", {n.value}));
  }
  return out;
}

// exp is a homomorphism from (R, +) onto (R>0, *): exp(x + y) = exp(x) * exp(y),
// exp(x - y) = exp(x) / exp(y), exp(-x) = 1 / exp(x), so that exp(m + log(1 + exp(d)))
// becomes exp(m) * (1 + exp(d)); exp of a linear form is a monomial.
std::vector<Normalized> normalize_exp(const Term& x, const Case& within, int& budget) {
  auto e = [](const Term& a) { return Term::make(TermOp::Exp, {a}); };
  switch (x.op) {
    case TermOp::Add: return normalize(Term::make(TermOp::Mul, {e(x.args[0]), e(x.args[1])}), within, budget);
    case TermOp::Sub: return normalize(Term::make(TermOp::Div, {e(x.args[0]), e(x.args[1])}), within, budget);
    case TermOp::Neg:
      return normalize(Term::make(TermOp::Div, {Term::constant(Rational::of(1)), e(x.args[0])}), within, budget);
    case TermOp::Log: return exp_of_log(x.args[0], within, budget);
    default: break;
  }
  std::vector<Normalized> out = normalize(x, within, budget);
  for (Normalized& n : out) n.value = exp_of(n.value);
  return out;
}

// Integer / and % are opaque atoms (no law of the field holds for them), folded only
// when both operands are integer constants.
Fraction integer_op(const Term& t, const Fraction& x, const Fraction& y) {
  auto a = x.as_linear(), b = y.as_linear();
  if (a && b && a->coef.empty() && b->coef.empty())
    if (auto v = evaluate_exact(Term::make(t.op, {Term::constant(a->constant), Term::constant(b->constant)}), {}))
      return Fraction::of(Poly::constant(*v));
  return opaque(t.op == TermOp::IDiv ? "idiv" : "mod", {x, y});
}

// A cast to an integer type truncates: an opaque atom but for a constant.
Fraction cast_of(const std::string& dtype, const Fraction& x) {
  if (auto a = x.as_linear(); a && a->coef.empty())
    if (auto v = evaluate_exact(Term::cast(dtype, Term::constant(a->constant)), {}))
      return Fraction::of(Poly::constant(*v));
  return opaque(dtype, {x});
}

}  // namespace

std::string Premise::str() const {
  const char* r = rel == Rel::Gt ? " > 0" : rel == Rel::Ge ? " >= 0" : " == 0";
  return form.str() + r;
}

std::string Case::str() const {
  if (premises.empty()) return "always";
  std::vector<std::string> parts;
  for (const Premise& p : premises) parts.push_back(p.str());
  return fmt::format("{}", fmt::join(parts, ", "));
}

namespace {
int implied_sign_within(const Case& c, const LinearForm& f, int* budget) {
  if (auto s = infinite_sign(f)) return *s;
  if (f.coef.empty()) return f.constant.sign();
  bool pos = consistent(c, f, 1, budget), zero = consistent(c, f, 0, budget), neg = consistent(c, f, -1, budget);
  if (pos + zero + neg != 1) return 2;
  return pos ? 1 : zero ? 0 : -1;
}
}  // namespace

int implied_sign(const Case& c, const LinearForm& f) { return implied_sign_within(c, f, nullptr); }

Equalities solve_equalities(const Case& c, bool forced_too, int* budget) {
  std::vector<LinearForm> eqs;
  for (const Premise& p : c.premises) {
    // f >= 0 where f > 0 is impossible means f == 0 (x >= y and y >= x).
    bool forced =
        forced_too && p.rel == Rel::Ge && !infinite_sign(p.form) && !consistent_with(c, {p.form, Rel::Gt}, budget);
    if (p.rel == Rel::Eq || forced) eqs.push_back(p.form);
  }
  Equalities out;
  for (size_t i = 0; i < eqs.size(); ++i) {
    auto s = solve(eqs[i]);
    if (!s) continue;
    for (size_t j = i + 1; j < eqs.size(); ++j) eqs[j] = replace(eqs[j], s->first, s->second);
    out.push_back(std::move(*s));
  }
  return out;
}

Fraction apply_equalities(const Equalities& eqs, const Fraction& f) {
  Fraction out = f;
  for (const auto& [var, by] : eqs) {
    out.num = substitute(out.num, var, by);
    out.den = substitute(out.den, var, by);
  }
  return out;
}

std::vector<Normalized> normalize(const Term& t, const Case& within, int& budget) {
  auto binary = [&](auto&& op) {
    std::vector<Normalized> out;
    for (const Normalized& x : normalize(t.args[0], within, budget))
      for (const Normalized& y : normalize(t.args[1], x.where, budget)) out.push_back({y.where, op(x.value, y.value)});
    return out;
  };
  auto unary = [&](auto&& op) {
    std::vector<Normalized> out = normalize(t.args[0], within, budget);
    for (Normalized& x : out) x.value = op(x.value);
    return out;
  };
  switch (t.op) {
    case TermOp::Const: return {{within, Fraction::of(Poly::constant(t.value))}};
    case TermOp::Var: return {{within, Fraction::of(Poly::var(t.name))}};
    case TermOp::NegInf: return {{within, Fraction::of(Poly::var(kNegInf))}};
    case TermOp::PosInf: return {{within, Fraction::of(Poly::var(kPosInf))}};
    case TermOp::Add: return binary(add);
    case TermOp::Sub: return binary(sub);
    case TermOp::Mul: return binary(mul);
    case TermOp::Div: return binary(div);
    case TermOp::Neg:
      return unary([](const Fraction& x) { return sub(Fraction::of(Poly::constant(Rational::of(0))), x); });
    case TermOp::Exp: return normalize_exp(t.args[0], within, budget);
    case TermOp::IDiv:
    case TermOp::Mod: return binary([&](const Fraction& x, const Fraction& y) { return integer_op(t, x, y); });
    case TermOp::Cast:
      if (!integer_cast(t)) return normalize(t.args[0], within, budget);  // a float cast: the identity
      return unary([&](const Fraction& x) { return cast_of(t.name, x); });
    case TermOp::Log:
      return unary([](const Fraction& x) {
        // log(exp(L)) = L: the one closed form this fragment needs.
        bool plain_exp = x.den == Poly::constant(Rational::of(1)) && x.num.terms.size() == 1 &&
                         x.num.terms.begin()->first.powers.empty() && x.num.terms.begin()->second == Rational::of(1);
        if (!plain_exp) return opaque("log", {x});
        const LinearForm& l = x.num.terms.begin()->first.exp_arg;
        Poly p = Poly::constant(l.constant);
        for (const auto& [v, c] : l.coef) p = p + Poly::var(v) * Poly::constant(c);
        return Fraction::of(p);
      });
    case TermOp::Sqrt:
      return unary([](const Fraction& x) {
        // sqrt of a constant that is an exact square (0, 1/4, 9) is a constant.
        auto exact_root = [](int64_t v) -> std::optional<int64_t> {
          if (v < 0) return std::nullopt;
          auto r = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(v))));
          for (int64_t c = std::max<int64_t>(0, r - 1); c <= r + 1; ++c)
            if (c * c == v) return c;
          return std::nullopt;
        };
        if (auto c = x.num.as_constant(); c && x.den == Poly::constant(Rational::of(1)))
          if (auto n = exact_root(c->num), d = exact_root(c->den); n && d)
            return Fraction::of(Poly::constant(Rational::of(*n, *d)));
        return opaque("sqrt", {x});
      });
    case TermOp::Max:
    case TermOp::Min: {
      // max(x, y) = select(x >= y, x, y); min(x, y) = select(x <= y, x, y).
      Term cond = Term::make(t.op == TermOp::Max ? TermOp::Ge : TermOp::Le, {t.args[0], t.args[1]});
      return normalize(Term::make(TermOp::Select, {cond, t.args[0], t.args[1]}), within, budget);
    }
    case TermOp::Select: {
      std::vector<Normalized> out;
      for (const Truth& c : decide(t.args[0], within, budget))
        for (Normalized& n : normalize(t.args[c.value ? 1 : 2], c.where, budget)) out.push_back(std::move(n));
      return out;
    }
    default: break;
  }
  // A condition used as a number: 1 where it holds, 0 elsewhere.
  std::vector<Normalized> out;
  for (const Truth& c : decide(t, within, budget))
    out.push_back({c.where, Fraction::of(Poly::constant(Rational::of(c.value ? 1 : 0)))});
  return out;
}

}  // namespace emmy::algebra
