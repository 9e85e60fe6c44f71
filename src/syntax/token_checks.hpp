// Checks of the token stream before parsing: what ANTLR's recursion or the later passes cannot
// take is refused up front with a located error.
#pragma once

#include <cstdint>

#include "antlr4-runtime.h"
#include "support/diagnostics.hpp"
#include "syntax/offset_map.hpp"

namespace emmy {

// Brackets and unary operators nested more than 200 deep: E004.
bool nesting_ok(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags);
// Names longer than 255 characters: E005, one a name.
bool names_ok(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags);

}  // namespace emmy
