#include "algebra/classify.hpp"

#include <fmt/format.h>

#include "algebra/from_ast.hpp"

namespace emmy::algebra {
namespace {

// A diagnostic quotes at most a line of the prover's reason; --explain has the rest.
std::string brief(const std::string& why) {
  constexpr size_t kMax = 240;
  return why.size() <= kMax ? why : why.substr(0, kMax) + " ... (emmyc check --explain shows it all)";
}

// The monoids `ops` and the ops they call (transitively) reduce with.
std::set<std::string> monoids_used(const CheckedProgram& program, const std::set<std::string>& ops) {
  std::set<std::string> used, seen;
  std::vector<std::string> worklist(ops.begin(), ops.end());  // ops whose reductions are not read yet
  while (!worklist.empty()) {
    const std::string name = worklist.back();
    worklist.pop_back();
    auto op = program.ops.find(name);
    if (op == program.ops.end() || !seen.insert(name).second) continue;
    for (const ReductionInfo& red : op->second.reductions) used.insert(red.monoid);
    for (const auto& call : op->second.calls) worklist.push_back(call.first);
  }
  return used;
}

// The monoids declared in the program's own modules (the main file and the sources beside it).
std::set<std::string> own_monoids(const CheckedProgram& program) {
  std::set<std::string> own;
  for (size_t m = 0; m < program.own_modules && m < program.modules.size(); ++m)
    for (const ast::Item& item : program.modules[m].ast.items)
      if (const auto* mo = std::get_if<ast::MonoidDecl>(&item)) own.insert(mo->name.name);
  return own;
}

}  // namespace

std::string law_memo_key(const MonoidTerms& m) {
  std::string key = m.name + "(" + fmt::format("{}", fmt::join(m.fields, ",")) + ")";
  for (const auto* list : {&m.identity, &m.combine, &m.lift}) {
    key += "|";
    for (const Term& t : *list) key += t.str() + ";";
  }
  return key + "|" + fmt::format("{}", fmt::join(m.bool_fields, ",")) + "|" +
         fmt::format("{}", fmt::join(m.int_fields, ","));
}

ProgramLaws classify(const CheckedProgram& program, Diagnostics& diags, LawMemo* memo,
                     const std::set<std::string>* ops) {
  ProgramLaws out;
  std::set<std::string> proved;  // with `ops`: the monoids to prove
  if (ops) {
    proved = monoids_used(program, *ops);
    proved.merge(own_monoids(program));
  }
  for (const auto& entry : program.monoids) {
    const std::string& name = entry.first;  // named, not bound: clang 14 lambdas cannot capture bindings
    const CheckedMonoid& m = entry.second;
    if (ops && !proved.count(name)) continue;
    std::string why;
    std::optional<MonoidTerms> terms = monoid_terms(*m.decl, why);
    auto unproved = [&](const std::string& reason) {
      diags
          .warning("W001", m.decl->name.range,
                   m.associative_assumed
                       ? fmt::format("monoid {} is assumed associative, not proved: {}", name, brief(reason))
                       : fmt::format("cannot prove monoid {} associative: {}", name, brief(reason)))
          .hint(m.associative_assumed ? "the assumption licenses reordering; check it by testing"
                                      : "reductions with it stay serial; write 'assume associative;' to vouch for it");
    };
    if (!terms) {
      out.untranslatable[name] = why;
      unproved(why);
      continue;
    }
    MonoidReport r;
    if (!memo) {
      r = check_laws(*terms);
    } else {
      const std::string key = law_memo_key(*terms);
      auto it = memo->find(key);
      if (it == memo->end()) it = memo->emplace(key, check_laws(*terms)).first;
      r = it->second;
    }
    const LawReport& a = r.associative;
    if (a.outcome == Outcome::Refuted)
      diags.error("E047", m.decl->name.range, fmt::format("monoid {} is not associative: {}", name, a.counterexample))
          .hint("a reduction may combine partial results in any grouping; fix combine so both groupings agree");
    else if (a.outcome == Outcome::Unproved)
      unproved(a.why);
    if (r.identity.outcome == Outcome::Refuted)
      diags
          .error("E048", m.decl->identity_range.valid() ? m.decl->identity_range : m.decl->name.range,
                 fmt::format("the identity of monoid {} is not neutral: {}", name, r.identity.counterexample))
          .hint("identity must satisfy combine(identity, x) = x = combine(x, identity)");
    out.monoids.emplace(name, std::move(r));
  }
  for (const auto& [name, op] : program.ops)
    if (op.decl_module < program.own_modules && (!ops || ops->count(name)))
      for (DiscoveredChain& c : discover_chains(op)) out.chains.push_back(std::move(c));
  return out;
}

namespace {

std::string verdict(const LawReport& l) {
  return l.outcome == Outcome::Proved ? "proved" : l.outcome == Outcome::Refuted ? "refuted" : "unproved";
}

}  // namespace

std::string explain_program(const CheckedProgram& program, const ProgramLaws& laws) {
  std::string out;
  std::vector<std::string> shown;
  for (const auto& [op_name, op] : program.ops) {
    if (op.decl_module >= program.own_modules) continue;
    for (const ReductionInfo& red : op.reductions) {
      std::string axes = fmt::format("{}", fmt::join(red.axes, ", "));
      auto it = laws.monoids.find(red.monoid);
      std::string kind = red.builtin ? "built-in" : "user";
      if (it == laws.monoids.end()) {
        out += fmt::format("op {}: {}({}: ...) — {} reduction; {}\n", op_name, red.monoid, axes, kind,
                           red.builtin ? "its reference definition is in std.monoids (import it to see the proof)"
                                       : "its laws could not be read by the prover");
        continue;
      }
      const MonoidReport& r = it->second;
      out += fmt::format("op {}: {}({}: ...) — {} monoid {}: associative {}, identity {}, commutative {}\n", op_name,
                         red.monoid, axes, kind, red.monoid, verdict(r.associative), verdict(r.identity),
                         verdict(r.commutative));
      if (std::find(shown.begin(), shown.end(), red.monoid) == shown.end()) shown.push_back(red.monoid);
    }
  }
  for (const DiscoveredChain& c : laws.chains)
    out += fmt::format("op {}: discovered: {} — associative {}, identity {}\n", c.op, c.summary,
                       verdict(c.laws.associative), verdict(c.laws.identity));
  for (size_t m = 0; m < program.own_modules; ++m)
    for (const ast::Item& item : program.modules[m].ast.items)
      if (const auto* mo = std::get_if<ast::MonoidDecl>(&item))
        if (std::find(shown.begin(), shown.end(), mo->name.name) == shown.end()) shown.push_back(mo->name.name);
  for (const DiscoveredChain& c : laws.chains) out += fmt::format("\nin op {}: {}", c.op, explain(c.laws));
  for (const std::string& name : shown) {
    if (auto it = laws.monoids.find(name); it != laws.monoids.end())
      out += fmt::format("\n{}", explain(it->second));
    else if (auto u = laws.untranslatable.find(name); u != laws.untranslatable.end())
      out += fmt::format("\nmonoid {}: unproved ({})\n", name, u->second);
  }
  return out;
}

}  // namespace emmy::algebra
