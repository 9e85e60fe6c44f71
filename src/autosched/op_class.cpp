// Probes an op's lowering for the tiers and knob sites its schedules may use.
#include "autosched/op_class.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "support/large_stack.hpp"

namespace emmy::autosched {

std::string mma_atom(const CheckedOp& op, std::string_view shape) {
  bool bf16 = false;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Input && t.elem.kind == Type::Kind::Scalar)
      bf16 = bf16 || t.elem.dtype == DType::BF16;
  return fmt::format("{}_{}", shape, bf16 ? "bf16" : "f16");
}

int widest_vector(const CheckedOp& op) {
  int narrowest = 8;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Input && t.elem.kind == Type::Kind::Scalar)
      narrowest = std::min(narrowest, kir::type_bytes(kir::scalar_of(t.elem.dtype)));
  return std::clamp(16 / std::max(narrowest, 1), 1, 8);
}

std::string read_axis_size(const std::string& read, const std::string& axis, const tir::Program& tensors) {
  const size_t open = read.find('[');
  const tir::Tensor* t = open == std::string::npos ? nullptr : tensors.find(read.substr(0, open));
  if (!t) return "";
  size_t at = open + 1;
  for (const std::string& dim : t->dims) {
    const size_t end = std::min(read.find_first_of(",]", at), read.size());
    if (read.substr(at, end - at) == axis) return dim;
    at = read.find_first_not_of(' ', end + 1);
    if (at == std::string::npos) break;
  }
  return "";
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

namespace {

// The op lowered under `knobs` when its kernel takes the tensor-core tier there (the tier says
// why it refuses in a warning W054 and falls back to the scalar one); nullopt otherwise.
std::optional<lower::Lowered> probe_tier(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                                         const std::string& knobs, const std::vector<algebra::DiscoveredChain>* chains,
                                         const lower::LawMemo* laws) {
  try {
    lower::PipelineOptions options;
    options.laws = laws;
    options.verify_kernel = false;  // a probe is read, never run: its plans, limits and warnings
    options.bodies = lower::KernelBodies::None;
    lower::Lowered l = lower::lower_op(program, op, {nullptr, "", knobs}, target, chains, options);
    for (const Warning& w : l.kernels.warnings)
      if (w.code == "W054") return std::nullopt;
    return l;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

bool takes_tier(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target, const std::string& knobs,
                const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* laws) {
  return probe_tier(program, op, target, knobs, chains, laws).has_value();
}

OpClass classify_op(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                    const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* laws) {
  OpClass c;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Intermediate) {
      // (A monoid carrier is never written to memory: PLACE cannot cut it, nor cut everything.)
      if (t.elem.kind == Type::Kind::Record)
        c.has_carrier = true;
      else
        c.intermediates.push_back(t.name);
    }
  c.widest_vector = widest_vector(op);
  const tir::Program tensors = lower::to_tensor(program, op);
  const std::string text = tir::print_program(tensors);
  c.has_exp = text.find("exp(") != std::string::npos;
  for (const tir::Stmt& s : tensors.stmts) {
    c.has_reduction = c.has_reduction || tir::has_reduce(s.value);
    tir::visit(s.value, [&](const tir::Expr& e) {
      if (e.kind == tir::Expr::Kind::Reduce)
        for (const tir::Axis& a : e.axes)
          if (std::find(c.reduced_sizes.begin(), c.reduced_sizes.end(), a.size) == c.reduced_sizes.end())
            c.reduced_sizes.push_back(a.size);
    });
  }
  if (!target_has(target, Feature::MmaSync)) return c;
  const std::string atom = mma_atom(op, "mma_m16n8k16");
  // The fold probe: the tier takes a one-warp grid but refuses two warps across keys; and on
  // wgmma, one warpgroup. The probes lowered at once.
  const std::vector<std::string> probes{
      fmt::format("PLACE=fuse,TILE=a:{}/w1x1/f1x2/k4", atom), fmt::format("PLACE=fuse,TILE=a:{}/w1x2/f1x2/k4", atom),
      fmt::format("TILE=a:{}/w1x2/f1x2/k4", atom),
      target.wgmma ? fmt::format("PLACE=fuse,TILE=a:{}/w4x1/k4,STAGE=d2/tma/ring", mma_atom(op, "wgmma_m64n64k16"))
                   : ""};
  std::vector<std::optional<lower::Lowered>> lowered(probes.size());
  for_each_on_large_stacks(probes.size(), static_cast<int>(probes.size()), [&](size_t i) {
    if (!probes[i].empty()) lowered[i] = probe_tier(program, op, target, probes[i], chains, laws);
  });
  if (const std::optional<lower::Lowered>& l = lowered[0]) {
    c.fold = !lowered[1].has_value();
    c.fold_limits = l->kernels.limits;
    for (const lower::KernelPlan& plan : l->plans)
      c.key_bounded = c.key_bounded || (!plan.key_bound.empty() && plan.key_bound != "none");
  }
  c.contraction = lowered[2].has_value();
  bool in_step = false;  // a fold whose weights read two contractions or feed sibling register tiles
  if (lowered[0])
    for (const lower::KernelPlan& plan : lowered[0]->plans)
      in_step = in_step || !plan.reduced2.empty() ||
                std::any_of(plan.slabs.begin(), plan.slabs.end(), lower::is_sibling_value);
  c.wgmma_fold = c.fold && !in_step && lowered[3].has_value();
  return c;
}

}  // namespace emmy::autosched
