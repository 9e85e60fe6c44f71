// Probes an op's lowering for the tiers and knob sites its schedules may use.
#include "autosched/op_class.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "lower/placement.hpp"
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

std::string operand_cut_knobs(const OpClass& cls) {
  std::vector<std::string> parts;
  for (const std::string& name : cls.operand_cuts) parts.push_back(fmt::format("PLACE@{}=cut", name));
  return join_knobs(parts);
}

namespace {

using Tier = lower::KernelPlan::Tier;

// The op lowered under `knobs`, its plans only (a kernel the tensor-core tier refuses says why in
// a warning W054 and falls back to the scalar one); nullopt where it does not lower.
std::optional<lower::Lowered> probe(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                                    const std::string& knobs, const std::vector<algebra::DiscoveredChain>* chains,
                                    const lower::LawMemo* laws) {
  try {
    lower::PipelineOptions options;
    options.laws = laws;
    options.verify_kernel = false;  // a probe is read, never run: its plans, limits and warnings
    options.bodies = lower::KernelBodies::None;
    return lower::lower_op(program, op, {nullptr, "", knobs}, target, chains, options);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The probe where one of its kernels takes the tensor-core tier as `tier`; nullopt otherwise.
std::optional<lower::Lowered> probe_tier(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                                         const std::string& knobs, Tier tier,
                                         const std::vector<algebra::DiscoveredChain>* chains,
                                         const lower::LawMemo* laws) {
  std::optional<lower::Lowered> l = probe(program, op, target, knobs, chains, laws);
  if (l && std::none_of(l->plans.begin(), l->plans.end(), [&](const lower::KernelPlan& p) { return p.tier == tier; }))
    return std::nullopt;
  return l;
}

// operand_cuts (op_class.hpp): the reductions a product a sum reduces reads as a factor, and the
// pointwise statements over reductions at their own point (an epilogue), directly or through a
// copy (o[b, h, i, d] = sdpa_causal1_o[b, h, i, d]: the copy stays fused, its source is cut).
std::vector<std::string> operand_cuts(const tir::Program& p) {
  auto plain = [&](const std::string& name) {
    const tir::Tensor* t = p.find(name);
    return t && p.def(name) && t->role == tir::Tensor::Role::Intermediate && t->record.empty();
  };
  // A pointwise statement whose every intermediate read is an epilogue input (c[m, n] =
  // gelu(acc[m, n])): its kernel computes them, a contraction and its epilogue.
  auto epilogue = [&](const tir::Stmt& s) {
    std::set<std::string> read;
    tir::add_reads(s.value, read);
    bool any = false;
    for (const std::string& r : read) {
      if (!p.def(r)) continue;  // an input
      if (!plain(r) || !lower::epilogue_input(p, s, *p.def(r))) return false;
      any = true;
    }
    return any;
  };
  // What a factor read of `name` cuts: the reduction or epilogue `name` is, or copies; "" where
  // it is neither.
  auto reduction = [&](const std::string& name) -> std::string {
    if (!plain(name)) return "";
    const tir::Stmt* s = p.def(name);
    const tir::Expr& v = tir::strip_casts(s->value);
    if (tir::has_reduce(v)) return name;
    if (v.kind == tir::Expr::Kind::Read && plain(v.name)) {  // a copy: its source
      const tir::Stmt* source = p.def(v.name);
      return tir::has_reduce(source->value) || epilogue(*source) ? v.name : "";
    }
    return epilogue(*s) ? name : "";
  };
  std::vector<std::string> out;
  for (const tir::Stmt& s : p.stmts)
    tir::visit(s.value, [&](const tir::Expr& e) {
      if (e.kind != tir::Expr::Kind::Reduce || e.op != "sum" || e.args.size() != 1) return;
      const tir::Expr& prod = e.args[0];
      if (prod.kind != tir::Expr::Kind::Binary || prod.op != "*") return;
      for (const tir::Expr& factor : prod.args) {
        const tir::Expr& f = tir::strip_casts(factor);
        if (f.kind != tir::Expr::Kind::Read) continue;
        const std::string cut = reduction(f.name);
        if (!cut.empty() && std::find(out.begin(), out.end(), cut) == out.end()) out.push_back(cut);
      }
    });
  return out;
}

}  // namespace

bool takes_tier(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target, const std::string& knobs,
                const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* laws) {
  const std::optional<lower::Lowered> l = probe(program, op, target, knobs, chains, laws);
  return l && std::none_of(l->kernels.warnings.begin(), l->kernels.warnings.end(),
                           [](const Warning& w) { return w.code == "W054"; });
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
  c.operand_cuts = operand_cuts(tensors);
  const std::string atom = mma_atom(op, "mma_m16n8k16"), cuts = operand_cut_knobs(c);
  // The fold probe: the tier takes a one-warp grid but refuses two warps across keys; and on
  // wgmma, one warpgroup. The probes lowered at once.
  const std::vector<std::string> probes{
      join_knobs({"PLACE=fuse", cuts, fmt::format("TILE=a:{}/w1x1/f1x2/k4", atom)}),
      join_knobs({"PLACE=fuse", cuts, fmt::format("TILE=a:{}/w1x2/f1x2/k4", atom)}),
      join_knobs({cuts, fmt::format("TILE=a:{}/w1x2/f1x2/k4", atom)}),
      target.wgmma ? join_knobs({"PLACE=fuse", cuts,
                                 fmt::format("TILE=a:{}/w4x1/k4,STAGE=d2/tma/ring", mma_atom(op, "wgmma_m64n64k16"))})
                   : ""};
  const Tier tiers[] = {Tier::MmaFold, Tier::MmaFold, Tier::MmaContraction, Tier::MmaFold};
  std::vector<std::optional<lower::Lowered>> lowered(probes.size());
  for_each_on_large_stacks(probes.size(), static_cast<int>(probes.size()), [&](size_t i) {
    if (!probes[i].empty()) lowered[i] = probe_tier(program, op, target, probes[i], tiers[i], chains, laws);
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
