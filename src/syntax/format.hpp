// `emmyc fmt`: canonical layout of .emmy source, comments kept, idempotent.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace emmy {

// Returns the canonical text, or nullopt when the text does not lex (the caller
// reports the errors through the parser first).
std::optional<std::string> format_source(std::string_view text);

}  // namespace emmy
