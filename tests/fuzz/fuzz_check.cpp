// libFuzzer target over the front end: parse + sema + the law prover must never crash or
// hang, and on input that parses, the formatter must be idempotent and keep the
// program's meaning.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "algebra/classify.hpp"
#include "codegen/cuda/print_cuda.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "sema/print_checked.hpp"
#include "sema/sema.hpp"
#include "syntax/format.hpp"
#include "syntax/parse.hpp"

namespace {

// Every op of a clean program lowers (or refuses with a LowerError) to kernel IR that
// verifies and prints, fused and cut.
void lower_every_op(const emmy::CheckedProgram& program, const emmy::algebra::ProgramLaws& laws) {
  const emmy::TargetInfo& target = *emmy::find_target("sm_90");
  for (const emmy::ast::Item& item : program.modules.front().ast.items) {  // the input's ops, not the imports'
    const auto* decl = std::get_if<emmy::ast::OpDecl>(&item);
    if (!decl) continue;
    for (const char* knobs : {"TILE=a:scalar", "TILE=a:scalar,PLACE=cut"}) {
      try {
        emmy::lower::Lowered l =
            emmy::lower::lower_op(program, program.ops.at(decl->name.name), {nullptr, "", knobs}, target, &laws.chains);
        if (!emmy::verify_program(l.kernels).empty()) __builtin_trap();  // a lowering bug
        (void)emmy::print_cuda(l.kernels);
      } catch (const emmy::lower::LowerError&) {
      }
    }
  }
}

// The prover's verdicts by monoid (its terms are the key): the stdlib's monoids, which most
// inputs import, are proved once a run; a monoid the input changes is a new key.
emmy::algebra::LawMemo& law_memo() {
  static emmy::algebra::LawMemo memo;
  return memo;
}

// The checked AST of `text`, or "" when it has errors; with `lower`, the prover runs and
// every op lowers too (the reformatted text's check only compares the AST).
std::string checked_ast(const std::string& text, bool& had_syntax_errors, bool lower) {
  emmy::SourceManager sources;
  emmy::Diagnostics diags(sources);
  uint32_t id = sources.add("fuzz.emmy", text);
  emmy::parse_module(sources, id, diags);
  had_syntax_errors = diags.has_errors();
  if (had_syntax_errors) return "";
  emmy::Diagnostics sema_diags(sources);
  auto program = emmy::check_program(sources, id, emmy::SemaOptions{{EMMY_FUZZ_STDLIB}, std::nullopt, {}}, sema_diags);
  emmy::algebra::ProgramLaws laws;
  if (lower && !sema_diags.has_errors()) laws = emmy::algebra::classify(*program, sema_diags, &law_memo());
  for (const emmy::Diagnostic& d : sema_diags.all()) (void)sema_diags.render_one(d);
  if (sema_diags.has_errors()) return "";
  if (lower) lower_every_op(*program, laws);
  return emmy::print_checked(*program);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  bool syntax_errors = false;
  std::string ast = checked_ast(text, syntax_errors, true);
  if (syntax_errors) return 0;
  std::optional<std::string> once = emmy::format_source(text);
  if (!once) return 0;
  std::optional<std::string> twice = emmy::format_source(*once);
  if (!twice || *twice != *once) __builtin_trap();  // fmt must be idempotent
  bool reformatted_errors = false;
  std::string ast_after = checked_ast(*once, reformatted_errors, false);
  if (reformatted_errors) __builtin_trap();  // fmt must not break the syntax
  // The module name line carries the file name: compare what follows it.
  if (!ast.empty() && ast != ast_after) __builtin_trap();  // fmt must keep the meaning
  return 0;
}
