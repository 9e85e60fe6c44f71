// The driver's lowering commands: print an IR level of one op, or run it on the
// interpreter and compare with the reference evaluator.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "lower/passes.hpp"

namespace emmy {

struct LowerOptions {
  std::string op;        // --op; may be empty when the file defines one op
  std::string schedule;  // --schedule NAME
  std::string target = "sm_90";
  std::string env_knobs, cli_knobs;
  const std::vector<algebra::DiscoveredChain>* chains = nullptr;  // proved by the checker already
};

struct RunOptions {
  std::string shape;     // "B=1,H=2,S=64,D=16"
  uint64_t seed = 1;
  bool interp = false;
  bool shuffle_blocks = false;
};

// nullopt after printing the reason to `err`.
std::optional<lower::Lowered> lower_for_driver(const CheckedProgram& program, const LowerOptions& lo, std::ostream& err,
                                               const CheckedOp** op = nullptr);
int print_level(const CheckedProgram& program, const std::string& level, const LowerOptions& lo, std::ostream& out,
                std::ostream& err);
int run_on_interpreter(const CheckedProgram& program, const LowerOptions& lo, const RunOptions& ro, std::ostream& out,
                       std::ostream& err);

}  // namespace emmy
