// The schedule matrix shared by the unit tests (interpreter, NVRTC) and the GPU tests
// (tests/gpu/): which .emmy files, which ops of each, and which scalar-tier schedules.
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "interp/tensor_data.hpp"
#include "lower/passes.hpp"
#include "sema/sema.hpp"

namespace emmy::test {

// Every .emmy file of `root`/stdlib and `root`/examples, sorted.
inline std::vector<std::string> program_files(const std::string& root) {
  std::vector<std::string> files;
  for (const char* dir : {"/stdlib", "/examples"})
    for (const auto& e : std::filesystem::directory_iterator(root + dir))
      if (e.path().extension() == ".emmy") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The ops the main file defines (not those of its imports), in source order.
inline std::vector<const CheckedOp*> main_ops(const CheckedProgram& p) {
  std::vector<const CheckedOp*> out;
  for (const ast::Item& item : p.modules.front().ast.items)
    if (const auto* op = std::get_if<ast::OpDecl>(&item)) out.push_back(&p.ops.at(op->name.name));
  return out;
}

// The scalar-tier schedules of an op, as --knobs text: fused, all cut, each seam and chain
// cut alone, cooperative rows (COOP), and register tiles along each output's last axis (4 and 3 divide none of the
// ragged sizes the tests use).
inline std::vector<std::string> schedules(const CheckedProgram& program, const CheckedOp& op) {
  std::vector<std::string> out{"TILE=a:scalar", "TILE=a:scalar,PLACE=cut"};
  // The statements hoist-invariant adds (a row statistic of a one-statement softmax) are seams too.
  tir::Program t = lower::hoist_invariant(lower::to_tensor(program, op), algebra::discover_chains(op));
  for (const tir::Stmt& s : t.stmts) {
    const tir::Tensor* info = t.find(s.name);
    if (info->role == tir::Tensor::Role::Intermediate && info->record.empty() && tir::has_reduce(s.value))
      out.push_back(fmt::format("TILE=a:scalar,PLACE@{}=cut", s.name));
  }
  // Cooperative rows: 64 threads a row (two warps: butterflies, then shared memory) with
  // 2-element vectors (16 bytes even for i64 and f64), and 4 threads a row, cut.
  out.push_back("TILE=a:scalar,COOP=t64/v2");
  out.push_back("TILE=a:scalar,PLACE=cut,COOP=t4/v2");
  std::set<std::string> tiled;
  for (const tir::Stmt& s : t.stmts)
    if (t.find(s.name)->role == tir::Tensor::Role::Output && !s.vars.empty() &&
        tiled.insert(s.vars.back().name).second) {
      out.push_back(fmt::format("TILE=a:scalar,TILE@{}=f4", s.vars.back().name));
      out.push_back(fmt::format("TILE=a:scalar,PLACE=cut,TILE@{}=f3", s.vars.back().name));
    }
  return out;
}

// The split-reduction schedules (REDUCE) of an op with a reduction: the combining kernel (k)
// with 2 groups and with more groups than the small shapes' axes have (empty groups), cut
// and register-tiled variants, and the atomic form (a) where the split reduction has one.
inline std::vector<std::string> split_schedules(const CheckedProgram& program, const CheckedOp& op,
                                                const TargetInfo& target) {
  tir::Program t = lower::to_tensor(program, op);
  if (std::none_of(t.stmts.begin(), t.stmts.end(), [](const tir::Stmt& s) { return tir::has_reduce(s.value); }))
    return {};
  // A reduction over several axes does not split (docs/knobs.md): a schedule whose split lands on
  // one (the last kernel's, which PLACE decides) is left out.
  auto splits = [&](const std::string& knobs) {
    try {
      lower::lower_op(program, op, {nullptr, "", knobs}, target);
    } catch (const lower::LowerError& e) {
      if (std::string(e.what()).find("splits a reduction over one axis") != std::string::npos) return false;
    }
    return true;
  };
  std::vector<std::string> out;
  for (const char* knobs :
       {"TILE=a:scalar,REDUCE=g2k", "TILE=a:scalar,REDUCE=g7k", "TILE=a:scalar,PLACE=cut,REDUCE=g3k"})
    if (splits(knobs)) out.push_back(knobs);
  if (out.empty()) return {};
  for (const tir::Stmt& s : t.stmts)
    if (t.find(s.name)->role == tir::Tensor::Role::Output && !s.vars.empty()) {
      const std::string knobs = fmt::format("TILE=a:scalar,TILE@{}=f4,REDUCE=g4k", s.vars.back().name);
      if (splits(knobs)) out.push_back(knobs);
      break;
    }
  for (const char* atomic : {"TILE=a:scalar,REDUCE=g3a", "TILE=a:scalar,PLACE=cut,REDUCE=g2a"}) {
    try {
      lower::lower_op(program, op, {nullptr, "", atomic}, target);
    } catch (const lower::LowerError& e) {
      const std::string what = e.what();
      if (what.find("has no atomic form") != std::string::npos ||  // the k form only
          what.find("splits a reduction over one axis") != std::string::npos)
        continue;
    }
    out.push_back(atomic);
  }
  return out;
}

// The size symbols of the op's inputs, in the order they first appear.
inline std::vector<std::string> input_size_names(const CheckedOp& op) {
  std::vector<std::string> names;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Input)
      for (const Size& s : t.shape)
        if (!s.symbol.empty() && std::find(names.begin(), names.end(), s.symbol) == names.end())
          names.push_back(s.symbol);
  return names;
}

// The three shapes the interpreter matrices share: every size 3; distinct sizes that no tile
// divides (5, 7, 6, 9, ...); sizes of 1 and 2.
inline const std::vector<std::vector<int64_t>>& matrix_size_cycles() {
  static const std::vector<std::vector<int64_t>> cycles{{3}, {5, 7, 6, 9, 10, 11, 13, 3}, {1, 2}};
  return cycles;
}

// Every input size of `op`, in the order they first appear, bound to values[i % values.size()].
inline SizeBindings cycled_sizes(const CheckedOp& op, const std::vector<int64_t>& values) {
  std::vector<std::string> names = input_size_names(op);
  SizeBindings out;
  for (size_t i = 0; i < names.size(); ++i) out[names[i]] = values[i % values.size()];
  return out;
}

// The sizes of `op` at a shape of the matrices: cycled_sizes, but a few ops take some axes
// smaller. causal_self_attention's fused schedules recompute its three projections for every
// key, head and head-dim element inside the attention's loops: at the ragged shape (H = 9,
// D = 10) one interpreted run took 15 s and the op alone 40% of the matrices' time (hostile
// inputs, 2026-12-03). Its heads and head dim shrink; the sequence and the channels, where the
// mask and the tiles cut, stay ragged.
inline SizeBindings matrix_sizes(const CheckedOp& op, const std::vector<int64_t>& cycle) {
  static const std::map<std::string, SizeBindings> kSmaller{{"causal_self_attention", {{"H", 2}, {"D", 3}}}};
  SizeBindings sizes = cycled_sizes(op, cycle);
  if (auto it = kSmaller.find(op.decl->name.name); it != kSmaller.end())
    for (const auto& [name, most] : it->second)
      if (auto size = sizes.find(name); size != sizes.end()) size->second = std::min(size->second, most);
  return sizes;
}

// "B=1,H=2,S=37".
inline std::string shape_text(const SizeBindings& s) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : s) parts.push_back(fmt::format("{}={}", k, v));
  return fmt::format("{}", fmt::join(parts, ","));
}

// The tensor-core schedules every op is tried under (ops whose kernels do not fit the tier
// fall back to the scalar one with a warning): a fold takes w<M>x1 only, so each geometry
// comes in a fold-friendly form too; every STAGE transport and depth.
inline std::vector<std::string> tensor_core_schedules() {
  return {"TILE=a:mma_m16n8k16_f16/w2x1/f1x2/k4,STAGE=", "TILE=a:mma_m16n8k16_f16/w2x1/f2x4/k4,STAGE=d1/cp",
          "TILE=a:mma_m16n8k16_f16/w1x1/f1x2/k4,STAGE=d2/cp/ring",
          "TILE=a:mma_m16n8k16_f16/w2x2/f2x2/k2,STAGE=d3/cp/ring", "TILE=a:mma_m16n8k16_f16/w1x1/f1x2/k4,STAGE=d1/reg",
          // f2x8/k4 leaves no registers for q's fragments: q goes through a shared slab
          "TILE=a:mma_m16n8k16_f16/w2x1/f2x8/k4,STAGE=d2/cp/ring,FAST_EXP=1",
          "TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4,STAGE=d1/reg,FAST_EXP=1"};
}

}  // namespace emmy::test
