// Inlined call statements' names: <callee><k>_<name>.
#include "sema/inlined_names.hpp"

#include <fmt/format.h>

namespace emmy {

std::string inlined_prefix(std::string_view callee, int k) { return fmt::format("{}{}_", callee, k); }

std::optional<std::string_view> inlined_statement(std::string_view name, std::string_view callee) {
  if (!name.starts_with(callee)) return std::nullopt;
  const std::string_view rest = name.substr(callee.size());
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || rest[digits] != '_' || rest[0] == '0') return std::nullopt;
  return rest.substr(digits + 1);
}

}  // namespace emmy
