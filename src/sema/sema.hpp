// The semantic layer's entry: loads imports, resolves names, infers dtypes and shapes,
// validates schedules, and returns the checked program.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "schedule/knobs.hpp"
#include "schedule/targets.hpp"
#include "sema/types.hpp"
#include "support/diagnostics.hpp"
#include "support/paths.hpp"
#include "syntax/ast.hpp"

namespace emmy {

// A tensor of an op: parameter, output, intermediate, or a scalar `let`.
struct TensorInfo {
  enum class Role { Input, Output, Intermediate, Let };
  std::string name;
  Role role = Role::Input;
  Type elem;  // Scalar, or Record for a monoid carrier
  std::vector<Size> shape;
  std::vector<std::string> index_vars;  // intermediates/outputs: the left-hand index names
  SourceRange def;
};

struct ReductionInfo {
  uint32_t expr_id = 0;
  std::string monoid;
  bool builtin = false;
  std::vector<std::string> axes;
  std::vector<Size> axis_sizes;
  bool has_where = false;
};

struct CheckedOp {
  const ast::OpDecl* decl = nullptr;
  size_t decl_module = 0;           // index into CheckedProgram::modules
  std::vector<TensorInfo> tensors;  // params, outputs, then definitions in order
  std::vector<ReductionInfo> reductions;
  std::unordered_map<uint32_t, Type> expr_types;           // by ast::Expr::id
  std::vector<std::pair<std::string, SourceRange>> calls;  // ops this op calls (inlined later)
  const TensorInfo* find(std::string_view name) const;
};

struct CheckedMonoid {
  const ast::MonoidDecl* decl = nullptr;
  std::vector<std::string> dims;  // symbolic vector lengths (E of o: f32[E])
  bool commutative_assumed = false;
  bool associative_assumed = false;
  bool reference_of_builtin = false;  // std.monoids' definitions of sum, max...
};

// Where a knob entry of a schedule block was written, as a later pass's error shows it.
struct KnobPlace {
  std::string path;       // the file
  std::string line_text;  // its source line
  int line = 0;           // 1-based
  size_t column = 0;      // the entry's byte offset in the line
  size_t length = 1;      // the entry's bytes on that line
};

struct CheckedSchedule {
  const ast::ScheduleDecl* decl = nullptr;
  const TargetInfo* target = nullptr;
  std::vector<KnobSetting> knobs;
  std::vector<KnobPlace> places;  // places[i]: where knobs[i] was written
  KnobPlace place;                // the block's header, `schedule ... where ...`
};

struct LoadedModule {
  std::string name;  // "std.nn", or the path for a file given on the command line
  ast::Module ast;
  // The ops its `op NAME = grad(...)` declarations derive, each parsed from its own source text
  // (named "PATH#NAME"), expression ids numbered on from the module's.
  std::deque<ast::Module> derived;
};

struct CheckedProgram {
  std::deque<LoadedModule> modules;  // [0] = the main file, then imports
  // modules [0, own_modules): the main file and the sources beside it (SemaOptions::beside),
  // the code `check --explain` reports on; the rest are imports.
  size_t own_modules = 1;
  std::map<std::string, CheckedOp> ops;
  std::map<std::string, CheckedMonoid> monoids;
  std::vector<CheckedSchedule> schedules;
};

struct ParsedFile {
  uint32_t source = 0;  // its id in the SourceManager
  FileId file;          // as it was when read
  const ast::Module* module = nullptr;
};

struct SemaOptions {
  std::vector<std::string> stdlib_dirs;  // where `import std.X` looks for X.emmy
  // emmyc --dtype: the 16-bit float tensors (f16, bf16) of every op's signature are read as
  // this dtype, so one source runs in f16, bf16 or f32 (casts in op bodies are kept); f64 widens
  // every float of the program, f32 tensors, casts and monoid fields too (gradient checks in
  // double precision).
  std::optional<DType> half_dtype;
  // Sources (ids in the SourceManager) loaded as modules after the main file, as if it imported
  // them: the REPL checks a new input against its earlier definitions this way.
  std::vector<uint32_t> beside;
  // Files already parsed into the SourceManager (its source id and AST), by identity: an import
  // of one of them, unchanged on disk since (size and mtime), is not read or parsed again. The
  // REPL keeps its imports so, parsed once for every definition.
  const std::map<FileId, ParsedFile>* parsed = nullptr;
};

// Parses and checks `file` and everything it imports. Errors go to `diags`; the
// result is meaningful only when diags has no errors.
std::unique_ptr<CheckedProgram> check_program(SourceManager& sources, uint32_t file, const SemaOptions& options,
                                              Diagnostics& diags);

// Statement names and index variables of an op (reduction axes included), sorted: the sites a
// knob may be scoped to (KNOB@site).
std::vector<std::string> knob_sites(const ast::OpDecl& op);

}  // namespace emmy
