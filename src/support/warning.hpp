// A warning of the schedule and lowering stages: a code of the table (support/error_codes.hpp,
// documented in docs/errors.md) and what it says. Tests check the code, not the text.
#pragma once

#include <string>

namespace emmy {

struct Warning {
  std::string code;  // "W054"
  std::string text;  // one line, no "warning:" prefix
  bool operator==(const Warning&) const = default;
};

// "warning[W054]: text", as the driver prints it after "emmyc: ".
std::string render_warning(const Warning& w);

}  // namespace emmy
