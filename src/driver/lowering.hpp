// The driver's lowering commands: lower one op with its schedule and print an IR level.
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


// nullopt after printing the reason to `err`.
std::optional<lower::Lowered> lower_for_driver(const CheckedProgram& program, const LowerOptions& lo, std::ostream& err,
                                               const CheckedOp** op = nullptr);
int print_level(const CheckedProgram& program, const std::string& level, const LowerOptions& lo, std::ostream& out,
                std::ostream& err);

}  // namespace emmy
