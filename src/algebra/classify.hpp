// The algebra pass: proves the laws of every monoid of a checked program, reports
// refuted laws as errors (with the counterexample) and unproved ones as warnings.
#pragma once

#include <map>
#include <set>
#include <string>

#include "algebra/discover.hpp"
#include "algebra/laws.hpp"
#include "sema/sema.hpp"

namespace emmy::algebra {

struct ProgramLaws {
  std::map<std::string, MonoidReport> monoids;        // by monoid name
  std::map<std::string, std::string> untranslatable;  // monoid -> why the prover cannot read it
  std::vector<DiscoveredChain> chains;                // secretly associative chains, the own modules' ops
};

// Reports already proved, by the monoid's terms (law_memo_key): a caller checking many programs
// that share monoids (the REPL, at each definition, with its imports) proves each once.
using LawMemo = std::map<std::string, MonoidReport>;
std::string law_memo_key(const MonoidTerms& m);

// With `ops` (the ops a command lowers), an imported module's monoid is proved only when one of
// them, or an op they call, reduces with it: its verdicts are then diagnostics of the module that
// declares it, and lowering proves again whatever it regroups (lower/regroup_laws). The own
// modules' monoids are always proved. Chains are discovered in the own modules' ops (with `ops`,
// in those of them; lowering takes an op's own chains).
ProgramLaws classify(const CheckedProgram& program, Diagnostics& diags, LawMemo* memo = nullptr,
                     const std::set<std::string>* ops = nullptr);

// `emmyc check --explain`: every reduction of the own modules' ops (the main file's, and the
// REPL's sources beside it), then every monoid defined there, with the verdict and the proof
// outline or counterexample.
std::string explain_program(const CheckedProgram& program, const ProgramLaws& laws);

}  // namespace emmy::algebra
