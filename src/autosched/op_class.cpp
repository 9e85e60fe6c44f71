// Probes an op's lowering for the tiers and knob sites its schedules may use.
#include "autosched/op_class.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ir/dtypes.hpp"

namespace emmy::autosched {

std::string mma_atom(const CheckedOp& op, std::string_view shape) {
  bool bf16 = false;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Input && t.elem.kind == Type::Kind::Scalar)
      bf16 = bf16 || t.elem.dtype == DType::BF16;
  return fmt::format("{}_{}", shape, bf16 ? "bf16" : "f16");
}

std::string join_knobs(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += ',';
    out += p;
  }
  return out;
}

bool takes_tier(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target, const std::string& knobs,
                const std::vector<algebra::DiscoveredChain>* chains) {
  try {
    lower::Lowered l = lower::lower_op(program, op, {nullptr, "", knobs}, target, chains);
    for (const Warning& w : l.kernels.warnings)
      if (w.code == "W054") return false;  // the tensor-core tier refused: the scalar tier runs
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

OpClass classify_op(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                    const std::vector<algebra::DiscoveredChain>* chains) {
  OpClass c;
  int narrowest = 8;
  for (const TensorInfo& t : op.tensors) {
    if (t.role == TensorInfo::Role::Output && !t.index_vars.empty()) c.output_columns.push_back(t.index_vars.back());
    if (t.role == TensorInfo::Role::Intermediate) c.intermediates.push_back(t.name);
    if (t.role == TensorInfo::Role::Input && t.elem.kind == Type::Kind::Scalar)
      narrowest = std::min(narrowest, kir::type_bytes(kir::scalar_of(t.elem.dtype)));
  }
  c.widest_vector = std::clamp(16 / std::max(narrowest, 1), 1, 8);
  const tir::Program tensors = lower::to_tensor(program, op);
  const std::string text = tir::print_program(tensors);
  c.has_exp = text.find("exp(") != std::string::npos;
  for (const tir::Stmt& s : tensors.stmts) c.has_reduction = c.has_reduction || tir::has_reduce(s.value);
  if (!target_has(target, Feature::MmaSync)) return c;
  const std::string atom = mma_atom(op, "mma_m16n8k16");
  // The fold probe: the tier takes a one-warp grid but refuses two warps across keys.
  try {
    lower::Lowered l = lower::lower_op(
        program, op, {nullptr, "", fmt::format("PLACE=fuse,TILE=a:{}/w1x1/f1x2/k4", atom)}, target, chains);
    c.fold = std::none_of(l.kernels.warnings.begin(), l.kernels.warnings.end(),
                          [](const Warning& w) { return w.code == "W054"; });
    c.fold_limits = l.kernels.limits;
  } catch (const std::exception&) {
    c.fold = false;
  }
  c.fold = c.fold && !takes_tier(program, op, target, fmt::format("PLACE=fuse,TILE=a:{}/w1x2/f1x2/k4", atom), chains);
  c.contraction = takes_tier(program, op, target, fmt::format("TILE=a:{}/w1x2/f1x2/k4", atom), chains);
  return c;
}

}  // namespace emmy::autosched
