// What an exception that escaped a command means to the user: the kind of failure and a
// one-line message (a file system error names its path), so no command ends in an abort.
#pragma once

#include <exception>
#include <string>

namespace emmy {

enum class FailureKind {
  File,      // a file or directory could not be read or written (a symlink loop, a directory, EACCES)
  Memory,    // out of memory, or a size too large to allocate
  Resource,  // another limit of the machine: threads, processes, descriptors
  Internal,  // anything else: a bug
};

struct Failure {
  FailureKind kind = FailureKind::Internal;
  std::string message;
};

// Describes `error` (from std::current_exception()).
Failure describe_failure(std::exception_ptr error);

}  // namespace emmy
