#include "support/error_codes.hpp"

#include <algorithm>

namespace emmy {

const std::vector<ErrorCodeInfo>& error_codes() {
  static const std::vector<ErrorCodeInfo> table = {
      {"E001", "syntax", "unexpected character, unclosed block comment, or invalid UTF-8"},
      {"E002", "syntax", "syntax error: unexpected token"},
      {"E003", "syntax", "numeric literal out of range"},
      {"E004", "syntax", "expression nested too deeply"},
      {"E005", "syntax", "name longer than 255 characters"},
      {"E006", "syntax", "source file too large"},
      {"E010", "sema", "unknown import module"},
      {"E011", "sema", "duplicate definition of an op or monoid"},
      {"E012", "sema", "unknown name"},
      {"E013", "sema", "duplicate parameter, output or field name"},
      {"E014", "sema", "unknown dtype"},
      {"E015", "sema", "tensor or let defined twice in one op"},
      {"E016", "sema", "assignment to an input parameter"},
      {"E017", "sema", "output never defined"},
      {"E018", "sema", "tensor used before it is defined"},
      {"E019", "sema", "name clash between a tensor, a dim or an index variable"},
      {"E020", "sema", "wrong number of indices for a tensor"},
      {"E021", "sema", "index variable on the right is neither on the left nor reduced"},
      {"E022", "sema", "reduction axis also appears on the left"},
      {"E023", "sema", "index variable bound to two different sizes"},
      {"E024", "sema", "size of an index variable cannot be inferred"},
      {"E025", "sema", "index variable repeated on the left"},
      {"E026", "sema", "defined shape differs from the declared output shape"},
      {"E027", "sema", "unknown reduction or function"},
      {"E028", "sema", "reduction axis not used in its body, or reduced twice"},
      {"E029", "sema", "left-hand index is not a plain index variable"},
      {"E030", "sema", "operand types do not fit the operator"},
      {"E031", "sema", "condition is not bool (where, select, &&, ||, !)"},
      {"E032", "sema", "wrong number of arguments"},
      {"E033", "sema", "value cannot be stored implicitly (narrowing to an integer or bool)"},
      {"E034", "sema", "index expression is not an integer"},
      {"E035", "sema", "slice ':' outside a vector argument of a monoid lift"},
      {"E036", "sema", "unknown field, or field access on a value without fields"},
      {"E037", "sema", "dim literal must be positive"},
      {"E038", "sema", "tuple used where a single value is expected"},
      {"E039", "sema", "op calls itself (directly or through other ops)"},
      {"E040", "sema", "monoid member missing or defined twice"},
      {"E041", "sema", "monoid tuple has the wrong number of components"},
      {"E042", "sema", "monoid combine must take exactly the parameters (a, b)"},
      {"E043", "sema", "unknown assumption in a monoid"},
      {"E044", "sema", "monoid reduction given the wrong number of arguments"},
      {"E045", "sema", "value has no shape in this context (bare name of a tensor whose indices are not in scope)"},
      {"E046", "sema", "constant index out of range"},
      {"E049", "sema", "tensor or reduction with more than 2^60 elements"},
      {"E047", "algebra", "monoid is not associative (counterexample given)"},
      {"E048", "algebra", "monoid identity is not neutral (counterexample given)"},
      {"W001", "algebra", "monoid associativity unproved (reductions stay serial) or only assumed"},
      {"E050", "schedule", "unknown knob"},
      {"E051", "schedule", "malformed knob value or unknown field"},
      {"E052", "schedule", "knob fields out of order"},
      {"E053", "schedule", "knob field repeated"},
      {"E054", "schedule", "number in a knob out of range"},
      {"E055", "schedule", "knob value illegal on the target"},
      {"E056", "schedule", "malformed knob entry or knob given twice"},
      {"E057", "schedule", "knob set twice in one schedule block"},
      {"E058", "schedule", "unknown knob site (not a statement or an index variable of the op)"},
      {"E059", "schedule", "unknown target"},
      {"E060", "schedule", "schedule for an unknown op"},
      {"E061", "schedule", "two schedules of one op and target with the same name"},
      {"E062", "lower", "a knob regroups a reduction whose monoid lacks the law it needs (unproved, not assumed)"},
      {"E063", "sema", "integer constant arithmetic overflows i64 or divides by zero"},
      {"E064", "schedule", "a schedule guard that is not a condition on the op's sizes"},
      {"E065", "sema",
       "a computed dim that is not integer arithmetic on the inputs' sizes, on a monoid field, or called"},
      {"E066", "sema", "grad of an op that does not exist, or with respect to what is not a float input of it"},
      {"E067", "sema", "a derivative Emmy has no rule for"},
      {"E068", "run", "a read outside its tensor at a run's sizes (the reference evaluator)"},
      {"W050", "schedule", "a knob has no effect where it is given (ignored)"},
      {"W051", "schedule",
       "a schedule block's tensor-core atom needs a feature the target lacks: the scalar tier runs"},
      {"W052", "schedule", "a STAGE ring with one buffer: no prefetch"},
      {"W053", "lower", "a regrouping relies on a law the monoid only assumes"},
      {"W054", "lower", "a kernel the schedule puts on tensor cores runs on the scalar tier (the reason given)"},
      {"W055", "lower", "STAGE with tma: a tile the box copy cannot move is copied with cp.async"},
      {"W056", "schedule",
       "a schedule block cannot serve the sizes of a run: the next block (or no block) runs instead"},
      {"W070", "driver", "the compile cache is not used (an unusable directory, a failed write); the compile ran"},
  };
  return table;
}

const ErrorCodeInfo* find_error_code(std::string_view code) {
  const auto& t = error_codes();
  auto it = std::find_if(t.begin(), t.end(), [&](const ErrorCodeInfo& e) { return e.code == code; });
  return it == t.end() ? nullptr : &*it;
}

}  // namespace emmy
