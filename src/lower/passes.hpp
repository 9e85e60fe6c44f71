// The lowering pipeline from a checked op to kernel IR, one pass per file:
//   resolve_knobs    schedule block + EMMY_KNOBS + --knobs + defaults -> the knobs in force
//   to_tensor        checked op -> tensor IR (lets, bare names, op calls inlined)
//   inline_pointwise tensor IR -> tensor IR without elementwise intermediates (unless cut)
//   to_loops         tensor IR + knobs -> loop IR (PLACE: fuse/cut per seam, folds, kernels)
//   to_kernel        loop IR + knobs -> kernel IR (scalar tier: threads, loops, carriers)
// pipeline.cpp runs them in order and can keep the IR after each.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "algebra/discover.hpp"
#include "ir/kernel.hpp"
#include "ir/loop_ir.hpp"
#include "ir/tensor_ir.hpp"
#include "schedule/knobs.hpp"
#include "sema/sema.hpp"

namespace emmy::lower {

// A schedule the lowering cannot honour, or an op construct it does not lower yet: a
// user-facing one-line message (the driver prints it as an error).
struct LowerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The knobs in force for one op, every default filled in.
struct Knobs {
  bool place_fuse = true;                       // PLACE for the whole op
  std::map<std::string, bool> place_at;         // PLACE@site: statement name -> fuse?
  std::string atom = "scalar";                  // TILE a:<atom>
  std::map<std::string, int> scalar_tile;       // TILE@axis=f<N>: register tile along an axis
  std::vector<KnobSetting> settings;            // as resolved, for printing and hashing
  std::vector<std::string> warnings;            // knobs that have no effect here, and why
  int block_threads = 128;
  int carrier_tile = 32;                        // TILE@axis default for per-element carriers (the target's)
  int coop_threads = 1;                         // COOP=t<N>: threads per point of a kernel's thread space
  int coop_vec = 1;                             // COOP=.../v<V>: elements per vector load/store
  bool fuses(const std::string& site) const;
};

struct KnobSources {
  const CheckedSchedule* block = nullptr;  // the op's schedule block for the target, if any
  std::string env;                         // EMMY_KNOBS
  std::string cli;                         // --knobs
};

// Merges the sources entry by entry (later wins: block, env, cli) and checks what the
// scalar tier can lower. Knob text errors carry the knob codec's message.
Knobs resolve_knobs(const KnobSources& sources, const TargetInfo& target);

tir::Program to_tensor(const CheckedProgram& program, const CheckedOp& op);
tir::Program inline_pointwise(const tir::Program& program, const Knobs& knobs);
// `chains`: the discovered chains of `op` with their proofs; only proved ones are folded.
lir::Program to_loops(const tir::Program& program, const CheckedProgram& checked, const CheckedOp& op,
                      const Knobs& knobs, const std::vector<algebra::DiscoveredChain>& chains);
kir::Program to_kernel(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs);

// The ops the main file of `program` defines, in order.
std::vector<std::string> main_ops(const CheckedProgram& program);
// The op's schedule block for `target`: the one labelled `label`, else (label empty) the
// unlabelled one or null; a one-line message when `label` names no block.
std::variant<const CheckedSchedule*, std::string> select_schedule(const CheckedProgram& program, const std::string& op,
                                                                 const TargetInfo& target, const std::string& label);

// The whole pipeline; the IR of each level is kept for printing.
struct Lowered {
  Knobs knobs;
  tir::Program tensor;
  lir::Program loops;
  kir::Program kernels;
};
// `chains`: the algebra layer's discovered chains (algebra::classify proves them once for
// the program); when null they are discovered and proved here.
Lowered lower_op(const CheckedProgram& program, const CheckedOp& op, const KnobSources& sources,
                 const TargetInfo& target, const std::vector<algebra::DiscoveredChain>* chains = nullptr);

}  // namespace emmy::lower
