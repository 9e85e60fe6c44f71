// The driver's lowering commands: lower one op with its schedule and print an IR level.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <variant>

#include "lower/passes.hpp"
#include "support/phase_times.hpp"

namespace emmy {

struct LowerOptions {
  std::string op;        // --op; may be empty when the file defines one op
  std::string schedule;  // --schedule NAME
  std::string target = "sm_90";
  std::string env_knobs, cli_knobs;
  // false (--knobs): EMMY_KNOBS and --knobs, when either is given, are the whole schedule (the
  // op's block is not used; the knobs left out take their defaults). true (--knobs-merge): they
  // go over the op's block (the target's, or --schedule NAME's) entry by entry.
  bool knobs_merge = false;
  const std::vector<algebra::DiscoveredChain>* chains = nullptr;  // proved by the checker already
  lower::PipelineOptions pipeline;  // --print-after (its out set by print_level), --verify-each
  // A run's sizes (--shape), when known: the default block is the first whose guard holds there
  // and whose kernels serve them (docs/language.md, "Schedules"); unknown, the unguarded one.
  const std::map<std::string, int64_t>* sizes = nullptr;
  bool explain_schedule = false;    // --explain-schedule: each block considered and why, on stderr
  bool note_auto_schedule = false;  // a note on stderr with the auto-schedule's knobs (print_level's)
  bool specialize = false;          // kernel, cuda, ptx: the kernels specialized to `sizes`' class (a note says which)
  bool emmy_ptx = false;            // ptx: printed by Emmy's PTX printer (codegen/ptx), NVRTC where it cannot
};

// The op `name` of the main file (the only one when `name` is empty); null after printing why.
const CheckedOp* pick_op(const CheckedProgram& program, const std::string& name, std::ostream& err);

// The op's schedule block that `lo` keeps: `block` itself, or null when EMMY_KNOBS or --knobs
// replace it; an error when --schedule names a block that the knobs would replace.
std::variant<const CheckedSchedule*, std::string> block_in_force(const CheckedSchedule* block, const LowerOptions& lo);

// nullopt after printing the reason to `err`.
std::optional<lower::Lowered> lower_for_driver(const CheckedProgram& program, const LowerOptions& lo, std::ostream& err,
                                               const CheckedOp** op = nullptr);
// Lowers the op and prints `level` to `out`; with `times`, marks lower, print and NVRTC (with
// NVRTC's own phases) in it.
int print_level(const CheckedProgram& program, const std::string& level, const LowerOptions& lo, std::ostream& out,
                std::ostream& err, PhaseTimes* times = nullptr);

}  // namespace emmy
