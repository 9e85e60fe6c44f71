// Terms compiled to postfix code over numbered variables, evaluated in IEEE double exactly
// as `evaluate` does: the refutation search's inner loop, without a name lookup or an
// allocation a point.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algebra/term.hpp"

namespace emmy::algebra {

class CompiledTerm {
 public:
  // `vars[k]` is the variable read from slot k of a point; a variable not listed reads NaN,
  // as `evaluate` does with an environment that lacks it.
  CompiledTerm(const Term& t, const std::vector<std::string>& vars);

  // The term's value at `point` (one value per variable of the constructor's list);
  // `stack` is scratch space, reused across calls.
  double operator()(const std::vector<double>& point, std::vector<double>& stack) const;

 private:
  enum class Code : uint8_t { Push, Load, NaN, Apply1, Apply2, Select, ExpDifference, ToI32, ToI64 };
  struct Instr {
    Code code;
    TermOp op;      // Apply1, Apply2: the operation on the top one or two values
    uint32_t slot;  // Load
    double value;   // Push
  };
  void compile(const Term& t, const std::vector<std::string>& vars);
  std::vector<Instr> code_;
};

}  // namespace emmy::algebra
