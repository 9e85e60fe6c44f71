// The table of user-error codes: one row per code, used by docs and tests.
#pragma once

#include <string_view>
#include <vector>

namespace emmy {

struct ErrorCodeInfo {
  std::string_view code;     // "E023"
  std::string_view layer;    // "syntax", "sema", "schedule", "driver"
  std::string_view summary;  // one line
};

const std::vector<ErrorCodeInfo>& error_codes();
const ErrorCodeInfo* find_error_code(std::string_view code);

}  // namespace emmy
