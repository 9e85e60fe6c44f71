// Classifies a monoid as a max-rescaled sum by comparing normal forms of its combine with
// the class's shape, case by case.
#include "algebra/rescaled_sum.hpp"

#include "algebra/cases.hpp"
#include "algebra/normal_form.hpp"

namespace emmy::algebra {
namespace {

constexpr int kBudget = 64 * kCaseCost;

Term var(const std::string& side, const std::string& field) { return Term::var(side + "." + field); }

// x == y in every case of their difference's normal form.
bool same_value(const Term& x, const Term& y) {
  try {
    int budget = kBudget;
    for (const Normalized& n : normalize(Term::make(TermOp::Sub, {x, y}), Case{}, budget))
      if (!drop_vanishing(apply_equalities(n.where, n.value)).num.is_zero()) return false;
    return true;
  } catch (const Undecided&) {
    return false;
  } catch (const Overflow&) {
    return false;
  }
}

bool is_const(const Term& t, int64_t v) { return t.op == TermOp::Const && t.value.num == v && t.value.den == 1; }

}  // namespace

std::optional<RescaledSum> as_rescaled_sum(const MonoidTerms& m) {
  if (m.fields.size() < 2 || m.combine.size() != m.fields.size() || m.identity.size() != m.fields.size())
    return std::nullopt;
  for (size_t k = 0; k < m.fields.size(); ++k) {
    if (m.identity[k].op != TermOp::NegInf) continue;
    const std::string& key = m.fields[k];
    Term top = Term::make(TermOp::Max, {var("a", key), var("b", key)});
    if (!same_value(m.combine[k], top)) continue;
    RescaledSum r;
    r.key = k;
    bool all = true;
    for (size_t f = 0; f < m.fields.size() && all; ++f) {
      if (f == k) continue;
      auto weight = [&](const char* side) {
        return Term::make(TermOp::Mul, {var(side, m.fields[f]),
                                        Term::make(TermOp::Exp, {Term::make(TermOp::Sub, {var(side, key), top})})});
      };
      all = is_const(m.identity[f], 0) && same_value(m.combine[f], Term::make(TermOp::Add, {weight("a"), weight("b")}));
      r.weighted.push_back(f);
    }
    if (all) return r;
  }
  return std::nullopt;
}

}  // namespace emmy::algebra
