// Runs one command of emmyc or the REPL on a large stack; an exception that escapes it becomes
// a one-line error and an exit status, never an abort.
#pragma once

#include <functional>
#include <ostream>
#include <string_view>

namespace emmy {

// Returns body's status, or: 2 (kUsageError) for a file that cannot be read or written, 1 for
// anything else, after printing one line to `err` that starts with `prefix` ("emmyc: ").
int run_guarded(const std::function<int()>& body, std::ostream& err, std::string_view prefix);

}  // namespace emmy
