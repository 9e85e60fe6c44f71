// How a called op sees its caller: the inliners of the tensor IR (lower/to_tensor.cpp) and of
// derived ops (sema/grad_flatten.cpp) share it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sema/sema.hpp"

namespace emmy {

struct CallBinding {
  std::vector<std::pair<std::string, std::string>> args;  // callee parameter -> the caller's tensor or let
  std::map<std::string, Size> sizes;                      // callee size symbol -> its size in the caller
};

// The binding of `call` (f(x, y): arguments are names) of `callee` in `caller`: each parameter's
// argument, and each size symbol of the parameters' dims at the argument's shape.
CallBinding bind_call(const CheckedOp& caller, const ast::Expr& call, const CheckedOp& callee);

}  // namespace emmy
