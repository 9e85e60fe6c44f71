// Strict UTF-8 decoding facts shared by the parser's input check and the diagnostics.
#pragma once

#include <cstddef>
#include <string_view>

namespace emmy {

// Length of the well-formed UTF-8 sequence at s[i] (1..4), or 0 when the bytes there
// are not one: stray continuation bytes, overlong forms, surrogates, > U+10FFFF.
size_t utf8_sequence_length(std::string_view s, size_t i);

// Offset of the first byte that is not well-formed UTF-8, or npos.
size_t first_invalid_utf8(std::string_view s);

}  // namespace emmy
