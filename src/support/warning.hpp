// A warning of the schedule and lowering stages: a code of the table (support/error_codes.hpp,
// documented in docs/errors.md) and what it says. Tests check the code, not the text.
#pragma once

#include <string>
#include <utility>

namespace emmy {

struct Warning {
  Warning() = default;
  Warning(std::string code, std::string text, std::string where = {}, std::string snippet = {})
      : code(std::move(code)), text(std::move(text)), where(std::move(where)), snippet(std::move(snippet)) {}
  std::string code;  // "W054"
  std::string text;  // one line, no "warning:" prefix
  // Where the setting it is about was written ("--knobs:1:1"), and that source line with a
  // caret under the setting; both empty when the warning has no one place.
  std::string where, snippet;
  bool operator==(const Warning&) const = default;
};

// "warning[W054]: text"; located, "--knobs:1:1: warning[W054]: text" and the snippet's lines.
std::string render_warning(const Warning& w);
// As emmyc prints it: an unlocated warning after "emmyc: ".
std::string driver_warning(const Warning& w);

}  // namespace emmy
