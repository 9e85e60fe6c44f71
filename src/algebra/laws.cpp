#include "algebra/laws.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "algebra/cases.hpp"
#include "algebra/refute.hpp"

namespace emmy::algebra {
namespace {

constexpr int kCaseBudget = 4000 * kCaseCost;  // 4000 cases, or fewer and ~64000 feasibility checks
// What all the proofs of one monoid may spend together (each at most kCaseBudget): the laws,
// the positive fields, the transports. The stdlib and the tests' monoids use at most ~40000.
constexpr int kMonoidBudget = 100000;

// A proof's budget out of what the monoid has left; `left` is charged what it used.
struct Share {
  int& left;
  int budget;
  explicit Share(int& l) : left(l), budget(std::min(kCaseBudget, std::max(l, 0))) {}
  Share(const Share&) = delete;
  ~Share() { left -= std::min(kCaseBudget, std::max(left, 0)) - std::max(budget, 0); }
};

using Carrier = std::vector<Term>;
using Env = std::vector<std::pair<std::string, double>>;
constexpr size_t kFailingKept = 64;  // failing cases kept for counterexample solving

Carrier vars(const MonoidTerms& m, const std::string& prefix) {
  Carrier c;
  for (const std::string& f : m.fields) c.push_back(Term::var(prefix + "." + f));
  return c;
}

// combine(x, y): the combine terms with a.f := x[f] and b.f := y[f].
Carrier apply(const MonoidTerms& m, const Carrier& x, const Carrier& y) {
  std::vector<std::pair<std::string, Term>> by;
  for (size_t i = 0; i < m.fields.size(); ++i) {
    by.emplace_back("a." + m.fields[i], x[i]);
    by.emplace_back("b." + m.fields[i], y[i]);
  }
  Carrier out;
  for (const Term& t : m.combine) out.push_back(substitute(t, by));
  return out;
}

std::string tuple_str(const std::vector<std::string>& fields, const std::vector<Fraction>& values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < fields.size(); ++i) parts.push_back(fmt::format("{} = {}", fields[i], values[i].str()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Normal forms of every field, in every case, threading the cases through the fields.
std::vector<std::pair<Case, std::vector<Fraction>>> normalize_all(const Carrier& c, const Case& within, int& budget) {
  std::vector<std::pair<Case, std::vector<Fraction>>> acc = {{within, {}}};
  for (const Term& t : c) {
    std::vector<std::pair<Case, std::vector<Fraction>>> next;
    for (auto& [where, vals] : acc)
      for (Normalized& n : normalize(t, where, budget)) {
        next.push_back({n.where, vals});
        next.back().second.push_back(n.value);
      }
    acc = std::move(next);
  }
  return acc;
}

size_t side_nodes(const Sides& s) {
  std::function<size_t(const Term&)> nodes = [&](const Term& t) {
    size_t n = 1;
    for (const Term& a : t.args) n += nodes(a);
    return n;
  };
  size_t n = 0;
  for (const std::vector<Term>* side : {&s.lhs, &s.rhs})
    for (const Term& t : *side) n += nodes(t);
  return n;
}

void refuted(LawReport& r, const Refutation& x) {
  r.outcome = Outcome::Refuted;
  r.counterexample = x.counterexample;
  r.witness = x.witness;
}

// Counterexamples, most readable first: a small search (shrunk toward small integers),
// then points solved from the cases where the normal forms differ, then a wide search.
std::optional<Refutation> counterexample(const MonoidTerms& m, const Sides& s, const Case& domain,
                                         const std::vector<Case>& failing) {
  if (auto x = search(m, s, domain, Search::Small)) return x;
  if (auto x = from_cases(m, s, failing)) return x;
  return search(m, s, domain, Search::Wide);
}

LawReport prove(const MonoidTerms& m, const std::string& law, const Sides& s, const Case& domain, int& work) {
  LawReport r;
  r.law = law;
  std::vector<Case> failing;
  Share share(work);
  try {
    int& budget = share.budget;
    bool all = true;
    std::string failed;
    for (auto& [where, lv] : normalize_all(s.lhs, domain, budget)) {
      for (auto& [leaf, rv] : normalize_all(s.rhs, where, budget)) {
        Equalities eqs = solve_equalities(leaf, /*forced=*/true, &budget);  // once per leaf, for every field
        bool same = true;
        std::vector<Fraction> shown;
        for (size_t i = 0; i < lv.size(); ++i) {
          Fraction l = drop_vanishing(apply_equalities(eqs, lv[i]));
          Fraction rr = drop_vanishing(apply_equalities(eqs, rv[i]));
          same = same && equal(l, rr);
          shown.push_back(l);
          if (!equal(l, rr) && failed.empty())
            failed = fmt::format("when {}: field {} is {} on the left but {} on the right", leaf.str(), m.fields[i],
                                 l.str(), rr.str());
        }
        all = all && same;
        if (same)
          r.proof.push_back(fmt::format("when {}: {}", leaf.str(), tuple_str(m.fields, shown)));
        else if (failing.size() < kFailingKept)
          failing.push_back(leaf);
      }
    }
    if (all) {
      // Belt and braces: a proof must survive evaluation at random points.
      bool exhausted = false;
      if (auto cex = search(m, s, domain, Search::NoGrid, &exhausted)) {
        refuted(r, *cex);
        r.why = "the normal forms agreed but evaluation does not (a division by zero in some case?)";
        return r;
      }
      if (exhausted) {  // a proof not checked as every proof is stays unproved
        r.why =
            "undecided (budget): the normal forms agree, but checking them at random points needs more work "
            "than the prover's budget (the sides have " +
            std::to_string(side_nodes(s)) + " terms)";
        return r;
      }
      r.outcome = Outcome::Proved;
      return r;
    }
    r.why = failed;
  } catch (const Undecided& u) {
    r.why = u.why;
  } catch (const Overflow&) {
    r.why = "a coefficient outgrew 64 bits, or a case divides by zero";
  }
  if (auto cex = counterexample(m, s, domain, failing)) refuted(r, *cex);
  return r;
}

// Fields that stay positive on every carrier built from lifts: each lift sets the field
// to a positive constant and combine keeps it positive (Welford's count n > 0). The
// laws are then proved on that domain, where a count never divides by zero.
std::vector<size_t> positive_fields(const MonoidTerms& m, int& work) {
  std::vector<size_t> candidates;
  for (size_t i = 0; i < m.lift.size() && i < m.fields.size(); ++i)
    if (m.lift[i].op == TermOp::Const && m.lift[i].value.sign() > 0) candidates.push_back(i);
  Case both;
  for (size_t i : candidates)
    for (const char* who : {"a.", "b."}) {
      LinearForm f;
      f.coef[who + m.fields[i]] = Rational::of(1);
      both.premises.push_back({f, Rel::Gt});
    }
  std::vector<size_t> kept;
  for (size_t i : candidates) {
    try {
      Share share(work);
      int& budget = share.budget;
      bool positive = true;
      for (const Normalized& n : normalize(m.combine[i], both, budget)) {
        std::optional<LinearForm> l = apply_equalities(n.where, n.value).as_linear();
        positive = positive && l && implied_sign(n.where, *l) == 1;
      }
      if (positive) kept.push_back(i);
    } catch (const Undecided&) {
    } catch (const Overflow&) {
    }
  }
  return kept;
}

Case domain_of(const MonoidTerms& m, const std::vector<size_t>& positive, const std::vector<std::string>& carriers) {
  Case c;
  for (size_t i : positive)
    for (const std::string& who : carriers) {
      LinearForm f;
      f.coef[who + "." + m.fields[i]] = Rational::of(1);
      c.premises.push_back({f, Rel::Gt});
    }
  return c;
}

// The identity in IEEE arithmetic: exact proofs cancel 0 * exp(...) that floats do not.
// combine(e, e) is online softmax's -inf - -inf; combine(e, a) NaN for finite a means
// the identity cannot even start an accumulation without a guard.
std::vector<std::string> identity_hazards(const MonoidTerms& m) {
  std::vector<std::string> out;
  Carrier both = apply(m, m.identity, m.identity);
  for (size_t i = 0; i < both.size(); ++i)
    if (std::isnan(evaluate(both[i], {}))) {
      out.push_back(fmt::format(
          "combine(identity, identity) is NaN in IEEE arithmetic (field {}): an infinite identity meets itself "
          "outside the exp of a difference (where -inf - -inf is -inf, docs/language.md \"Infinities and NaN\"); "
          "every schedule and the reference give NaN there: rewrite combine",
          m.fields[i]));
      break;
    }
  Carrier a = vars(m, "a");
  Env env;
  for (size_t i = 0; i < m.fields.size(); ++i) env.emplace_back("a." + m.fields[i], 1.0 + static_cast<double>(i));
  for (const auto& [name, side] : {std::pair{"combine(identity, a)", apply(m, m.identity, a)},
                                   std::pair{"combine(a, identity)", apply(m, a, m.identity)}})
    for (size_t i = 0; i < side.size(); ++i)
      if (std::isnan(evaluate(side[i], env))) {
        out.push_back(fmt::format(
            "{} is NaN in IEEE arithmetic for finite a (field {}): the law holds in exact arithmetic only, as "
            "0 * inf appears; rewrite combine so the identity's infinity meets exp of a negative argument",
            name, m.fields[i]));
        break;
      }
  return out;
}

// Transport of structure: a bijection psi onto a known monoid (R, base). If
// psi(combine(a, b)) = base(psi(a), psi(b)) then combine = psi^-1 . base . (psi x psi)
// inherits associativity from base, provided psi is injective on combine's values: exp
// is injective everywhere; x^2 only on x >= 0, so that rule applies only when combine is
// a sqrt. psi is applied syntactically, cancelling its inverse: exp(log u) = u (u > 0
// wherever log is defined), sqrt(u)^2 = u.
struct TransportRule {
  const char* psi;   // how --explain names it
  const char* base;  // "+" or "*"
  Term (*apply)(const Term&);
  TermOp base_op;
};

Term psi_exp(const Term& t) { return t.op == TermOp::Log ? t.args[0] : Term::make(TermOp::Exp, {t}); }
Term psi_exp_neg(const Term& t) {
  if (t.op == TermOp::Neg && t.args[0].op == TermOp::Log) return t.args[0].args[0];
  return Term::make(TermOp::Exp, {Term::make(TermOp::Neg, {t})});
}
Term psi_square(const Term& t) { return t.op == TermOp::Sqrt ? t.args[0] : Term::make(TermOp::Mul, {t, t}); }
Term psi_sqrt(const Term& t) {
  bool square = t.op == TermOp::Mul && t.args[0].str() == t.args[1].str();
  return square ? t.args[0] : Term::make(TermOp::Sqrt, {t});
}

// Each rule's psi must be injective on the values combine can take (the `applies`
// condition of transported() guards the two that are not injective everywhere).
const TransportRule kTransports[] = {
    {"exp", "+", psi_exp, TermOp::Add},          // log-sum-exp: log(exp(a) + exp(b))
    {"exp(-x)", "+", psi_exp_neg, TermOp::Add},  // soft-min: -log(exp(-a) + exp(-b))
    {"x^2", "+", psi_square, TermOp::Add},       // hypot: sqrt(a*a + b*b), on x >= 0
    {"sqrt", "+", psi_sqrt, TermOp::Add},        // (sqrt(a) + sqrt(b))^2, on x >= 0
    {"exp", "*", psi_exp, TermOp::Mul},
};

// psi(identity) is base's identity (0 for +, 1 for *), limits at the infinities taken.
bool maps_identity(const TransportRule& t, const Term& identity, int& work) {
  try {
    Share share(work);
    int& budget = share.budget;
    std::vector<Normalized> n = normalize(t.apply(identity), Case{}, budget);
    Fraction want = Fraction::of(Poly::constant(Rational::of(t.base_op == TermOp::Add ? 0 : 1)));
    return n.size() == 1 && equal(n[0].value, want);
  } catch (...) {
    return false;
  }
}

struct Transported {
  LawReport associative;
  std::optional<LawReport> identity;
};

std::optional<Transported> transported(const MonoidTerms& m, int& work) {
  if (m.fields.size() != 1) return std::nullopt;
  Term a = Term::var("a." + m.fields[0]), b = Term::var("b." + m.fields[0]);
  for (const TransportRule& t : kTransports) {
    // x^2 is injective only on x >= 0: combine must be a sqrt; sqrt only on squares.
    if (t.apply == psi_square && m.combine[0].op != TermOp::Sqrt) continue;
    if (t.apply == psi_sqrt && m.combine[0].op != TermOp::Mul) continue;
    MonoidTerms image = m;
    image.combine = {t.apply(m.combine[0])};
    Sides s{"psi(combine(a,b))",
            fmt::format("psi(a) {} psi(b)", t.base),
            image.combine,
            {Term::make(t.base_op, {t.apply(a), t.apply(b)})},
            {"a", "b"}};
    LawReport h = prove(image, "homomorphism", s, Case{}, work);
    if (h.outcome != Outcome::Proved) continue;
    Carrier x = vars(m, "a"), y = vars(m, "b"), z = vars(m, "c");
    bool exhausted = false;
    if (search(m,
               {"combine(combine(a,b),c)",
                "combine(a,combine(b,c))",
                apply(m, apply(m, x, y), z),
                apply(m, x, apply(m, y, z)),
                {"a", "b", "c"}},
               Case{}, Search::NoGrid, &exhausted) ||
        exhausted)
      continue;  // belt and braces, as for direct proofs (and not proved when the budget cut it short)
    Transported out;
    out.associative.law = "associative";
    out.associative.outcome = Outcome::Proved;
    out.associative.proof.push_back(
        fmt::format("by transport of structure: psi(x) = {} maps combine onto (R, {}):", t.psi, t.base));
    for (const std::string& line : h.proof)
      out.associative.proof.push_back(fmt::format("  psi(combine(a,b)) = psi(a) {} psi(b) {}", t.base, line));
    if (maps_identity(t, m.identity[0], work)) {
      LawReport id;
      id.law = "identity";
      id.outcome = Outcome::Proved;
      id.proof.push_back(fmt::format("by transport: psi(identity) = {}, the identity of (R, {})",
                                     t.base_op == TermOp::Add ? 0 : 1, t.base));
      out.identity = id;
    }
    return out;
  }
  return std::nullopt;
}

}  // namespace

MonoidReport check_laws(const MonoidTerms& m) {
  MonoidReport r;
  r.name = m.name;
  Carrier a = vars(m, "a"), b = vars(m, "b"), c = vars(m, "c");
  int work = kMonoidBudget;
  std::vector<size_t> pos = positive_fields(m, work);
  for (size_t i : pos) r.domain.push_back(fmt::format("{} > 0", m.fields[i]));
  r.associative = prove(m, "associative",
                        {"combine(combine(a,b),c)",
                         "combine(a,combine(b,c))",
                         apply(m, apply(m, a, b), c),
                         apply(m, a, apply(m, b, c)),
                         {"a", "b", "c"}},
                        domain_of(m, pos, {"a", "b", "c"}), work);
  // Two-sided identity: combine(e, a) = a and combine(a, e) = a.
  Carrier left = apply(m, m.identity, a), right = apply(m, a, m.identity);
  LawReport l = prove(m, "identity", {"combine(e,a)", "a", left, a, {"a"}}, domain_of(m, pos, {"a"}), work);
  LawReport rr = prove(m, "identity", {"combine(a,e)", "a", right, a, {"a"}}, domain_of(m, pos, {"a"}), work);
  for (std::string& line : l.proof) line = "combine(e,a) " + line;
  for (std::string& line : rr.proof) line = "combine(a,e) " + line;
  r.identity = l.outcome != Outcome::Proved ? l : rr;
  if (l.outcome == Outcome::Proved && rr.outcome == Outcome::Proved)
    r.identity.proof.insert(r.identity.proof.begin(), l.proof.begin(), l.proof.end());
  // Where a direct proof stops, try transport of structure.
  if (r.associative.outcome == Outcome::Unproved || r.identity.outcome == Outcome::Unproved)
    if (std::optional<Transported> t = transported(m, work)) {
      if (r.associative.outcome == Outcome::Unproved) r.associative = t->associative;
      if (r.identity.outcome == Outcome::Unproved && t->identity) r.identity = *t->identity;
    }
  r.commutative = prove(m, "commutative", {"combine(a,b)", "combine(b,a)", apply(m, a, b), apply(m, b, a), {"a", "b"}},
                        domain_of(m, pos, {"a", "b"}), work);
  for (std::string& hazard : identity_hazards(m)) r.notes.push_back(std::move(hazard));
  return r;
}

std::string explain(const MonoidReport& r) {
  auto verdict = [](const LawReport& l) {
    switch (l.outcome) {
      case Outcome::Proved: return std::string("proved");
      case Outcome::Refuted: return std::string("refuted");
      case Outcome::Unproved: return std::string("unproved");
    }
    return std::string();
  };
  std::string out = fmt::format("monoid {}: associative {}, identity {}, commutative {}\n", r.name,
                                verdict(r.associative), verdict(r.identity), verdict(r.commutative));
  for (const LawReport* l : {&r.associative, &r.identity, &r.commutative}) {
    out += fmt::format("  {}: {}\n", l->law, verdict(*l));
    for (const std::string& p : l->proof) out += fmt::format("    {}\n", p);
    if (!l->counterexample.empty()) out += fmt::format("    counterexample: {}\n", l->counterexample);
    if (!l->witness.empty()) out += fmt::format("    witness: {}\n", l->witness);
    if (l->outcome != Outcome::Proved && !l->why.empty()) out += fmt::format("    {}\n", l->why);
  }
  if (!r.domain.empty())
    out += fmt::format("  domain: {} (every lift starts it positive and combine keeps it so)\n",
                       fmt::join(r.domain, ", "));
  for (const std::string& n : r.notes) out += fmt::format("  note: {}\n", n);
  return out;
}

bool identity_unsafe(const MonoidTerms& m) {
  // Each field over its kind's points: -inf (a masked value; +inf makes NaN in any order), a
  // zero and two finite values; integers and bools over a few of their values. A NaN counts
  // when the identity causes it: combine with an ordinary finite carrier y instead has none.
  static const std::vector<double> kReals = {-INFINITY, 0.0, 1.5, -2.0}, kInts = {0, 1, 7}, kBools = {0, 1};
  const size_t n = m.fields.size();
  std::vector<const std::vector<double>*> points;
  Carrier y;
  for (const std::string& f : m.fields) {
    auto in = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), f) != v.end(); };
    const bool small = in(m.bool_fields) || in(m.int_fields);
    points.push_back(in(m.bool_fields) ? &kBools : in(m.int_fields) ? &kInts : &kReals);
    y.push_back(Term::constant(small ? Rational::of(1) : Rational::of(3, 2)));
  }
  const Carrier a = vars(m, "a");
  const Carrier sides[][2] = {{apply(m, m.identity, a), apply(m, y, a)}, {apply(m, a, m.identity), apply(m, a, y)}};
  std::vector<size_t> at(n, 0);
  for (int budget = 4096; budget > 0; --budget) {  // 4^6 points at most: carriers are small
    Env env;
    for (size_t i = 0; i < n; ++i) env.emplace_back("a." + m.fields[i], (*points[i])[at[i]]);
    for (const auto& [with_identity, with_y] : sides)
      for (size_t i = 0; i < n; ++i)
        if (std::isnan(evaluate(with_identity[i], env)) && !std::isnan(evaluate(with_y[i], env))) return true;
    size_t i = 0;
    while (i < n && ++at[i] == points[i]->size()) at[i++] = 0;
    if (i == n) break;
  }
  return false;
}

bool identity_exact(const MonoidTerms& m) {
  if (m.fields.size() != 1) return false;
  static const std::vector<double> kReals = {-INFINITY, INFINITY, NAN, -0.0, 0.0, 1.5, -2.0, 3.0},
                                   kInts = {0, 1, 7, -3}, kBools = {0, 1};
  auto in = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), m.fields[0]) != v.end(); };
  const std::vector<double>& elements = in(m.bool_fields) ? kBools : in(m.int_fields) ? kInts : kReals;
  auto combine = [&](double x, double y) {
    return evaluate(m.combine[0], {{"a." + m.fields[0], x}, {"b." + m.fields[0], y}});
  };
  auto same = [](double x, double y) {
    return std::isnan(x) ? std::isnan(y) : x == y && std::signbit(x) == std::signbit(y);
  };
  const double identity = evaluate(m.identity[0], {});
  auto exact_at = [&](double v) { return same(combine(identity, v), v) && same(combine(v, identity), v); };
  if (!exact_at(identity)) return false;
  std::vector<double> reached = {identity};
  for (int round = 0; round < 2; ++round) {
    std::vector<double> next;
    for (double v : reached)
      for (double e : elements) {
        double r = combine(v, e);
        if (!exact_at(r)) return false;
        if (std::none_of(next.begin(), next.end(), [&](double w) { return same(w, r); })) next.push_back(r);
      }
    reached = std::move(next);
  }
  return true;
}

namespace {

// t with the operands of each two-operand commutative operation in the order of their text.
Term commuted_canonical(const Term& t) {
  Term c = t;
  for (Term& a : c.args) a = commuted_canonical(a);
  static const TermOp kCommutative[] = {TermOp::Add, TermOp::Mul, TermOp::Max, TermOp::Min,
                                        TermOp::Eq,  TermOp::Ne,  TermOp::And, TermOp::Or};
  if (c.args.size() == 2 &&
      std::find(std::begin(kCommutative), std::end(kCommutative), c.op) != std::end(kCommutative) &&
      c.args[1].str() < c.args[0].str())
    std::swap(c.args[0], c.args[1]);
  return c;
}

}  // namespace

bool combine_symmetric(const MonoidTerms& m) {
  const Carrier a = vars(m, "a"), b = vars(m, "b");
  const Carrier ab = apply(m, a, b), ba = apply(m, b, a);
  for (size_t i = 0; i < ab.size(); ++i)
    if (commuted_canonical(ab[i]).str() != commuted_canonical(ba[i]).str()) return false;
  // The re-check: every pair of carriers over the fields' points (at most 4096 pairs).
  static const std::vector<double> kReals = {-INFINITY, INFINITY, NAN, -0.0, 0.0, 1.5, -2.0}, kInts = {0, 1, 7, -3},
                                   kBools = {0, 1};
  std::vector<const std::vector<double>*> points;
  for (const std::string& f : m.fields) {
    auto in = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), f) != v.end(); };
    points.push_back(in(m.bool_fields) ? &kBools : in(m.int_fields) ? &kInts : &kReals);
  }
  auto same = [](double x, double y) {
    return std::isnan(x) ? std::isnan(y) : x == y && std::signbit(x) == std::signbit(y);
  };
  const size_t n = m.fields.size();
  std::vector<size_t> at(2 * n, 0);
  for (int budget = 4096; budget > 0; --budget) {
    Env env;
    for (size_t i = 0; i < n; ++i) {
      env.emplace_back("a." + m.fields[i], (*points[i])[at[i]]);
      env.emplace_back("b." + m.fields[i], (*points[i])[at[n + i]]);
    }
    for (size_t i = 0; i < n; ++i)
      if (!same(evaluate(ab[i], env), evaluate(ba[i], env))) return false;
    size_t j = 0;
    while (j < 2 * n && ++at[j] == points[j % n]->size()) at[j++] = 0;
    if (j == 2 * n) break;
  }
  return true;
}

}  // namespace emmy::algebra
