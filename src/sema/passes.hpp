// Internal interface between sema's passes (not part of the layer's public entry).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "sema/sema.hpp"

namespace emmy::sema {

// Every op and monoid visible to the program, by name.
struct Globals {
  std::map<std::string, const ast::OpDecl*> ops;
  std::map<std::string, const ast::MonoidDecl*> monoids;
  std::map<std::string, size_t> op_module;             // the module of each op in force
  std::set<std::string> clashed_ops, clashed_monoids;  // names defined twice (E011 said so)
};

// modules.cpp: parses the main file and, transitively, every module it imports.
void load_modules(SourceManager& sources, uint32_t main_file, const SemaOptions& options, CheckedProgram& program,
                  Diagnostics& diags);

// check_monoid.cpp: fields, identity, lift, combine and assumptions of one monoid.
CheckedMonoid check_monoid(const ast::MonoidDecl& monoid, bool in_std_monoids, Diagnostics& diags);

// check_op.cpp: names, dtypes, index variables and shapes of one op.
CheckedOp check_op(const ast::OpDecl& op, const Globals& globals, const std::map<std::string, CheckedMonoid>& monoids,
                   Diagnostics& diags);

// derive_grads.cpp: the op of every `op NAME = grad(OF, ...)` declaration, derived from OF (checked
// first: an OF with errors derives nothing), parsed into its module's `derived` and added to the
// globals, to be checked as any op.
void derive_grads(SourceManager& sources, CheckedProgram& program, Globals& globals,
                  const std::map<std::string, CheckedMonoid>& monoids, Diagnostics& diags);

// check_schedule.cpp: a schedule block against its op, its target and the knob codec.
std::optional<CheckedSchedule> check_schedule(const ast::ScheduleDecl& schedule, const CheckedProgram& program,
                                              Diagnostics& diags);

}  // namespace emmy::sema
