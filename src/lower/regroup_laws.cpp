// Licenses a regrouping of a reduction by the monoid's proved (or assumed) laws.
#include "lower/regroup_laws.hpp"

#include <fmt/format.h>

#include "algebra/from_ast.hpp"

namespace emmy::lower {
namespace {

using algebra::Outcome;
using algebra::TermOp;

// The atomic a one-field combine is: a.x + b.x, max(a.x, b.x) or min(a.x, b.x), either order.
std::optional<std::string> atomic_form(const algebra::MonoidTerms& m) {
  if (m.fields.size() != 1 || m.combine.size() != 1) return std::nullopt;
  const algebra::Term& c = m.combine[0];
  struct Row {
    TermOp op;
    const char* atomic;
  };
  static constexpr Row kRows[] = {{TermOp::Add, "sum"}, {TermOp::Max, "max"}, {TermOp::Min, "min"}};
  if (c.args.size() != 2 || c.args[0].op != TermOp::Var || c.args[1].op != TermOp::Var) return std::nullopt;
  const std::string a = "a." + m.fields[0], b = "b." + m.fields[0];
  bool operands = (c.args[0].name == a && c.args[1].name == b) || (c.args[0].name == b && c.args[1].name == a);
  for (const Row& r : kRows)
    if (operands && c.op == r.op) return std::string(r.atomic);
  return std::nullopt;
}

struct Need {
  const char* law;  // as the messages say it
  bool (*has)(const MonoidLaws&);
  bool (*assumed)(const MonoidLaws&);
};

bool holds(Outcome o, bool assumed) { return o == Outcome::Proved || (assumed && o != Outcome::Refuted); }

const Need kAssociative{"associative", [](const MonoidLaws& l) { return holds(l.associative, l.assumed_associative); },
                        [](const MonoidLaws& l) { return l.associative != Outcome::Proved && l.assumed_associative; }};
const Need kCommutative{"commutative", [](const MonoidLaws& l) { return holds(l.commutative, l.assumed_commutative); },
                        [](const MonoidLaws& l) { return l.commutative != Outcome::Proved && l.assumed_commutative; }};
const Need kAtomic{"combined by an atomic", [](const MonoidLaws& l) { return l.atomic.has_value(); },
                   [](const MonoidLaws&) { return false; }};

std::vector<const Need*> needs(Regroup how) {
  switch (how) {
    case Regroup::Tree: return {&kAssociative};
    case Regroup::Reorder: return {&kAssociative, &kCommutative};
    case Regroup::Atomic: return {&kAssociative, &kCommutative, &kAtomic};
  }
  return {};
}

std::string why_not(const MonoidLaws& laws, const Need& n) {
  const bool assoc = &n == &kAssociative;
  Outcome o = assoc ? laws.associative : laws.commutative;
  const std::string& why = assoc ? laws.why_associative : laws.why_commutative;
  if (&n == &kAtomic)
    return "it has no atomic form (an atomic combines one field with a + b, max or min; its carrier has " +
           std::to_string(laws.fields) + (laws.fields == 1 ? " field)" : " fields)");
  if (o == Outcome::Refuted) return fmt::format("it is not ({})", why);
  return why.empty() ? "the prover could not decide it" : fmt::format("the prover could not decide it ({})", why);
}

}  // namespace

MonoidLaws monoid_laws(const algebra::MonoidTerms& terms, const CheckedProgram& checked, const LawMemo* memo) {
  auto user = checked.monoids.find(terms.name);
  std::string why;
  std::optional<algebra::MonoidTerms> declared;
  if (user != checked.monoids.end()) declared = algebra::monoid_terms(*user->second.decl, why);
  const algebra::MonoidTerms& proved = declared ? *declared : terms;
  MonoidLaws out = monoid_laws(memo ? memo->check(proved) : algebra::check_laws(proved));
  out.monoid = terms.name;
  out.atomic = atomic_form(terms);
  out.fields = terms.fields.size();
  if (user != checked.monoids.end()) {
    out.user = true;
    out.assumed_associative = user->second.associative_assumed;
    out.assumed_commutative = user->second.commutative_assumed;
  }
  return out;
}

MonoidLaws monoid_laws(const algebra::MonoidReport& r) {
  MonoidLaws out;
  out.monoid = r.name;
  out.associative = r.associative.outcome;
  out.commutative = r.commutative.outcome;
  out.why_associative = r.associative.outcome == Outcome::Refuted ? r.associative.counterexample : r.associative.why;
  out.why_commutative = r.commutative.outcome == Outcome::Refuted ? r.commutative.counterexample : r.commutative.why;
  return out;
}

std::vector<std::string> missing_laws(const MonoidLaws& laws, Regroup how) {
  std::vector<std::string> out;
  for (const Need* n : needs(how))
    if (!n->has(laws)) out.push_back(n->law);
  return out;
}

std::vector<std::string> assumed_laws(const MonoidLaws& laws, Regroup how) {
  std::vector<std::string> out;
  for (const Need* n : needs(how))
    if (n->assumed(laws)) out.push_back(n->law);
  return out;
}

void require_laws(const MonoidLaws& laws, Regroup how, const KnobUse& knob, const std::string& what,
                  std::vector<Warning>& warnings) {
  const std::string entry = print_knob(knob.setting);
  for (const Need* n : needs(how)) {
    if (n->has(laws)) continue;
    bool can_assume = n != &kAtomic && laws.user;
    std::string help =
        n == &kAtomic
            ? fmt::format("combine the partials through the monoid instead (REDUCE=g<N>k), or remove {}", entry)
            : fmt::format(
                  "remove {} (without it the reduction runs serially, in order){}; `emmyc check --explain` shows "
                  "where the proof stops",
                  entry,
                  can_assume ? fmt::format(", or write 'assume {};' in monoid {} to vouch for it", n->law, laws.monoid)
                             : "");
    throw LowerError(knob_error(
        knob.origin, knob.setting,
        fmt::format("{} {}, which needs monoid {} to be {}: {}", entry, what, laws.monoid, n->law, why_not(laws, *n)),
        help, "E062"));
  }
  for (const std::string& law : assumed_laws(laws, how))
    warnings.push_back({"W053", fmt::format("{} {}: monoid {} is assumed {}, not proved; the result relies on the "
                                            "assumption",
                                            entry, what, laws.monoid, law)});
}

}  // namespace emmy::lower
