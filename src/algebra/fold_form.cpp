// Classifies each field of a monoid by comparing normal forms of its combine with the shapes of
// the classes (a max, a sum, a sum rescaled by a max), case by case.
#include "algebra/fold_form.hpp"

#include <algorithm>

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

Term both(TermOp op, const std::string& field) { return Term::make(op, {var("a", field), var("b", field)}); }

// a.f * exp(c·(a.k - M)) + b.f * exp(c·(b.k - M)), M = max(a.k, b.k).
Term rescaled_by(const std::string& field, const std::string& key, Rational c) {
  Term top = both(TermOp::Max, key);
  auto weight = [&](const char* side) {
    Term diff = Term::make(TermOp::Mul, {Term::constant(c), Term::make(TermOp::Sub, {var(side, key), top})});
    return Term::make(TermOp::Mul, {var(side, field), Term::make(TermOp::Exp, {diff})});
  };
  return Term::make(TermOp::Add, {weight("a"), weight("b")});
}

// The scales a rescale of t may use: 1, and every positive constant multiplying inside an exp.
void exp_scales(const Term& t, bool in_exp, std::vector<Rational>& out) {
  if (in_exp && t.op == TermOp::Const && t.value.sign() > 0 && std::find(out.begin(), out.end(), t.value) == out.end())
    out.push_back(t.value);
  for (const Term& a : t.args) exp_scales(a, in_exp || t.op == TermOp::Exp, out);
}

}  // namespace

bool FoldForm::rescaled_sum() const {
  if (!pivot || laws.size() < 2) return false;
  for (FieldLaw l : laws)
    if (l != FieldLaw::Pivot && l != FieldLaw::Rescaled) return false;
  return true;
}

const char* law_name(FieldLaw law) {
  switch (law) {
    case FieldLaw::Pivot: return "pivot";
    case FieldLaw::Rescaled: return "rescaled";
    case FieldLaw::Sum: return "sum";
    case FieldLaw::Max: return "max";
    case FieldLaw::Min: return "min";
    case FieldLaw::General: return "general";
  }
  return "?";
}

FoldForm fold_form(const MonoidTerms& m) {
  FoldForm form;
  const size_t n = m.fields.size();
  form.laws.assign(n, FieldLaw::General);
  if (m.combine.size() != n || m.identity.size() != n) return form;
  for (size_t f = 0; f < n; ++f) {
    const std::string& name = m.fields[f];
    if (m.identity[f].op == TermOp::NegInf && same_value(m.combine[f], both(TermOp::Max, name)))
      form.laws[f] = FieldLaw::Max;
    else if (m.identity[f].op == TermOp::PosInf && same_value(m.combine[f], both(TermOp::Min, name)))
      form.laws[f] = FieldLaw::Min;
    else if (is_const(m.identity[f], 0) && same_value(m.combine[f], both(TermOp::Add, name)))
      form.laws[f] = FieldLaw::Sum;
  }
  // The pivot: the first max that rescales another field, every such field with one scale.
  for (size_t k = 0; k < n && !form.pivot; ++k) {
    if (form.laws[k] != FieldLaw::Max) continue;
    for (size_t f = 0; f < n; ++f) {
      if (f == k || form.laws[f] != FieldLaw::General || !is_const(m.identity[f], 0)) continue;
      std::vector<Rational> scales{Rational::of(1)};
      if (form.pivot)
        scales = {form.scale};
      else
        exp_scales(m.combine[f], false, scales);
      for (Rational c : scales)
        if (same_value(m.combine[f], rescaled_by(m.fields[f], m.fields[k], c))) {
          form.laws[f] = FieldLaw::Rescaled;
          form.pivot = k;
          form.scale = c;
          break;
        }
    }
    if (form.pivot) form.laws[k] = FieldLaw::Pivot;
  }
  return form;
}

}  // namespace emmy::algebra
