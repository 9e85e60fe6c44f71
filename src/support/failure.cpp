// describe_failure: the standard exceptions a command may let escape, in user terms.
#include "support/failure.hpp"

#include <filesystem>
#include <ios>
#include <new>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

namespace emmy {

Failure describe_failure(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::filesystem::filesystem_error& e) {
    std::string paths = e.path1().empty() ? std::string() : fmt::format("'{}'", e.path1().string());
    if (!e.path2().empty()) paths += fmt::format(" and '{}'", e.path2().string());
    return {FailureKind::File, paths.empty() ? e.code().message() : fmt::format("{}: {}", paths, e.code().message())};
  } catch (const std::ios_base::failure& e) {
    return {FailureKind::File, fmt::format("input/output error: {}", e.what())};
  } catch (const std::bad_alloc&) {
    return {FailureKind::Memory, "out of memory"};
  } catch (const std::length_error& e) {
    return {FailureKind::Memory, fmt::format("a size too large to allocate ({})", e.what())};
  } catch (const std::system_error& e) {
    return {FailureKind::Resource, e.what()};
  } catch (const std::exception& e) {
    return {FailureKind::Internal, e.what()};
  } catch (...) {
    return {FailureKind::Internal, "an exception of an unknown type"};
  }
}

}  // namespace emmy
