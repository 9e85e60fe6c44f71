// What an op's structure offers a schedule, found by probing the lowering: whether its kernel
// takes the tensor cores as a fold or as a contraction, its dtype's atoms, its output columns
// and widest vector access. Shared by the auto-scheduler and the tuner's space.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lower/passes.hpp"

namespace emmy::autosched {

struct OpClass {
  bool fold = false;         // the tensor-core fold tier takes its kernel (online softmax and kin)
  bool contraction = false;  // the tensor-core contraction tier takes it
  bool has_exp = false;      // an exp in its tensor IR: FAST_EXP applies
  bool has_reduction = false;
  std::vector<std::string> reduced_sizes;   // the size symbols (or literals) its reductions run over
  std::vector<std::string> intermediates;   // its intermediates PLACE can cut (PLACE@name)
  bool has_carrier = false;                 // an intermediate monoid carrier: PLACE=cut is refused
  int widest_vector = 1;                    // COOP /v<V>: elements of its narrowest input in 16 bytes
  std::vector<kir::SizeLimit> fold_limits;  // the fold probe's size limits (its K chunk of 4: k4)
  bool key_bounded = false;                 // the fold's keys bounded by its row (causal: j <= i)
  // On a target with wgmma: whether the fold tier takes the op's kernels on wgmma atoms too, and
  // the auto-scheduler may try them: not where a fold's blocks complete in step (a weight of two
  // contractions, sibling register tiles: attention's backward), whose wgmma form has not been
  // measured against mma.sync (it spills at the wider tiles ptxas builds).
  bool wgmma_fold = false;
  // PLACE@x=cut for each reduction x a sum of products reads as a factor, or pointwise statement
  // over reductions at its own point (an epilogue: gelu(acc[m, n])), directly or through a copy (a
  // library call's result): the tensor-core tiers read their operands from memory (a projection
  // feeding attention, a call's result feeding a product, an MLP's hidden layer).
  std::vector<std::string> operand_cuts;
};

// The atom of the op's operands' dtype: `shape` + "_bf16" when an input is bf16, else "_f16".
std::string mma_atom(const CheckedOp& op, std::string_view shape);
// Does the op's kernel take the tensor-core tier under `knobs`? (One lowering: the tier says why
// it refuses in a warning W054 and falls back to the scalar one.)
bool takes_tier(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target, const std::string& knobs,
                const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* laws = nullptr);
// COOP's widest vector /v<V>: elements of the op's narrowest input in one 16-byte access (1 to 8).
int widest_vector(const CheckedOp& op);
// The size symbol of `axis` in a slab's read ("v[b, h, j, e]"): its tensor's dimension there
// ("" when the read names no tensor of `tensors` or not the axis).
std::string read_axis_size(const std::string& read, const std::string& axis, const tir::Program& tensors);
// Knob list entries joined with ',', empty ones left out.
std::string join_knobs(const std::vector<std::string>& parts);
// The operand cuts as knobs: PLACE@x=cut each, joined.
std::string operand_cut_knobs(const OpClass& cls);

// Three probe lowerings, four on a target with wgmma (none when the target has no tensor cores),
// each with the operand cuts; a probe takes the tier where one of its kernels is the tier's kind
// (a tensor-core fold, a contraction), whatever the op's other kernels take.
OpClass classify_op(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                    const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* laws = nullptr);

}  // namespace emmy::autosched
