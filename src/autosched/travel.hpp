// A library op's schedule travelling with its call: an op that calls one op (once), which has a
// default schedule block for the target, is scheduled as that block says, its sites renamed to
// the statements the call inlined (softmax's PLACE@m becomes PLACE@softmax1_m).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/targets.hpp"
#include "sema/sema.hpp"

namespace emmy::autosched {

struct Travel {
  std::vector<std::string> entries;  // the callee block's knobs, renamed: KNOB[@site]=value each
  std::string from;                  // "the block of softmax for sm_90 (stdlib/nn.emmy:514)"
};

// The callee's block when `op` makes exactly one call and no reduction of its own, to an op that
// makes none and has an unguarded default block for `target` (or its base) that does not say
// `auto;`; else nullopt.
std::optional<Travel> travelling_schedule(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target);

}  // namespace emmy::autosched
