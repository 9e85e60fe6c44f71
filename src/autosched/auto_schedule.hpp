// The auto-scheduler: a schedule for an op that has no block for the target, derived from the
// op's structure (the tiers its kernel takes, OpClass) and the sizes of a run, ranked by the cost
// model. docs/auto_schedule.md says what it tries and how it ranks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autosched/cost_model.hpp"

namespace emmy::autosched {

// A candidate that lowered as asked, with its predicted time.
struct Ranked {
  std::string knobs;
  double us = 0;
  std::string bound;      // the slowest kernel's bound
  double compute_us = 0;  // its kernels' compute times: a tie in `us` goes to the least
};

struct AutoSchedule {
  std::string knobs;                  // the choice: a knob list for KnobSources::base ("" : the knobs' defaults)
  double predicted_us = 0;            // its estimate
  std::vector<Ranked> ranked;         // every candidate that lowered as asked, fastest first
  std::vector<std::string> refused;   // "KNOBS: why" for the candidates that did not
  std::vector<std::string> pruned;    // candidates not lowered: their cost floor was above what the search needed
  std::map<std::string, int64_t> at;  // the sizes it ranked at (the run's, or nominal ones)
  bool nominal = false;               // no run sizes: every size taken as kNominalSize
  double seconds = 0;                 // the time the decision took
  std::string travelled;              // where the choice came from when a callee's block travelled (travel.hpp)
};

constexpr int64_t kNominalSize = 1024;

// Decides the op's schedule at `sizes` (null: nominal sizes, and the kernels' size limits are
// not checked). `chains`: the program's proved chains (lower_op's), or null; `laws`: the
// reports proved so far (the checker's), or null.
AutoSchedule auto_schedule(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                           const std::map<std::string, int64_t>* sizes,
                           const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* laws = nullptr);

// "auto-schedule: KNOBS (predicted 12.3 us at B=1,...; 14 candidates ranked in 31 ms)" and the
// top `top` of its ranking, one a line; for --explain-schedule and --ir plan.
std::string explain(const AutoSchedule& choice, int top = 5);

}  // namespace emmy::autosched
