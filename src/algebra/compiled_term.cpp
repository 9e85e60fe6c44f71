#include "algebra/compiled_term.hpp"

#include <algorithm>
#include <cmath>

#include "support/ieee_rules.hpp"

namespace emmy::algebra {
CompiledTerm::CompiledTerm(const Term& t, const std::vector<std::string>& vars) { compile(t, vars); }

void CompiledTerm::compile(const Term& t, const std::vector<std::string>& vars) {
  switch (t.op) {
    case TermOp::Const: code_.push_back({Code::Push, t.op, 0, t.value.value()}); return;
    case TermOp::NegInf: code_.push_back({Code::Push, t.op, 0, -INFINITY}); return;
    case TermOp::PosInf: code_.push_back({Code::Push, t.op, 0, INFINITY}); return;
    case TermOp::Var: {
      auto it = std::find(vars.begin(), vars.end(), t.name);
      if (it == vars.end())
        code_.push_back({Code::NaN, t.op, 0, 0});
      else
        code_.push_back({Code::Load, t.op, static_cast<uint32_t>(it - vars.begin()), 0});
      return;
    }
    case TermOp::Exp:  // Emmy's exp of a difference, as `evaluate` computes it
      if (t.args[0].op == TermOp::Sub) {
        compile(t.args[0].args[0], vars);
        compile(t.args[0].args[1], vars);
        code_.push_back({Code::ExpDifference, t.op, 0, 0});
        return;
      }
      break;
    case TermOp::Cast:
      compile(t.args[0], vars);
      if (integer_cast(t)) code_.push_back({t.name == "i32" ? Code::ToI32 : Code::ToI64, t.op, 0, 0});
      return;
    default: break;
  }
  for (const Term& a : t.args) compile(a, vars);
  Code apply = t.op == TermOp::Select ? Code::Select : t.args.size() == 1 ? Code::Apply1 : Code::Apply2;
  code_.push_back({apply, t.op, 0, 0});
}

double CompiledTerm::operator()(const std::vector<double>& point, std::vector<double>& stack) const {
  stack.clear();
  for (const Instr& in : code_) {
    switch (in.code) {
      case Code::Push: stack.push_back(in.value); break;
      case Code::Load: stack.push_back(point[in.slot]); break;
      case Code::NaN: stack.push_back(NAN); break;
      case Code::ToI32: stack.back() = ieee_integer(stack.back(), true); break;
      case Code::ToI64: stack.back() = ieee_integer(stack.back(), false); break;
      case Code::ExpDifference: {
        double b = stack.back();
        stack.pop_back();
        stack.back() = std::exp(exp_difference(stack.back(), b));
        break;
      }
      case Code::Apply1: stack.back() = ieee_unary(in.op, stack.back()); break;
      case Code::Apply2: {
        double b = stack.back();
        stack.pop_back();
        stack.back() = ieee_binary(in.op, stack.back(), b);
        break;
      }
      case Code::Select: {
        double y = stack.back();
        stack.pop_back();
        double x = stack.back();
        stack.pop_back();
        stack.back() = stack.back() != 0.0 ? x : y;
        break;
      }
    }
  }
  return stack.back();
}

}  // namespace emmy::algebra
