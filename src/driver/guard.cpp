// run_guarded: the large stack and the last line of defence of every command.
#include "driver/guard.hpp"

#include <fmt/format.h>

#include "driver/commands.hpp"
#include "support/failure.hpp"
#include "support/large_stack.hpp"

namespace emmy {

int run_guarded(const std::function<int()>& body, std::ostream& err, std::string_view prefix) {
  int status = kOk;
  std::exception_ptr escaped;
  try {
    run_on_large_stack([&] {
      try {
        status = body();
      } catch (...) {
        escaped = std::current_exception();
      }
    });
  } catch (...) {
    escaped = std::current_exception();
  }
  if (!escaped) return status;
  const Failure f = describe_failure(escaped);
  switch (f.kind) {
    case FailureKind::File: err << fmt::format("{}error: {}\n", prefix, f.message); return kUsageError;
    case FailureKind::Memory:
    case FailureKind::Resource: err << fmt::format("{}error: {}\n", prefix, f.message); return kUserError;
    case FailureKind::Internal: break;
  }
  err << fmt::format("{}internal error (a compiler bug; please report it): {}\n", prefix, f.message);
  return kUserError;
}

}  // namespace emmy
