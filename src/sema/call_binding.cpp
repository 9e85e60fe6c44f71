// How a called op sees its caller (call_binding.hpp).
#include "sema/call_binding.hpp"

namespace emmy {

CallBinding bind_call(const CheckedOp& caller, const ast::Expr& call, const CheckedOp& callee) {
  CallBinding out;
  for (size_t k = 0; k < call.args.size() && k < callee.decl->params.size(); ++k) {
    const std::string& arg = call.args[k].text;
    const ast::Param& p = callee.decl->params[k];
    out.args.emplace_back(p.name.name, arg);
    const TensorInfo* at = caller.find(arg);
    for (size_t d = 0; d < p.dims.size() && at && d < at->shape.size(); ++d)
      if (!p.dims[d].is_literal()) out.sizes[p.dims[d].name] = at->shape[d];
  }
  return out;
}

}  // namespace emmy
