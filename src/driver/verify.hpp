// `emmyc check --verify`: compares the diagnostics of a run with the expectations
// written in the source, MLIR-style: `// expected-error@+1:13 {{E023: index 'i'}}`.
#pragma once

#include <iosfwd>

#include "support/diagnostics.hpp"

namespace emmy {

// Returns true when every error/warning of `diags` in `file` is expected there and
// every expectation is met; otherwise explains each mismatch on `out`.
bool verify_diagnostics(const Diagnostics& diags, uint32_t file, std::ostream& out);

}  // namespace emmy
