// The last line of defence of every command: escaped exceptions become one line and exit 1 or 2
// (never an abort), and the commands run on a large stack whatever the caller's.
#include <doctest/doctest.h>

#include <pthread.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "driver/guard.hpp"
#include "support/diagnostics.hpp"
#include "support/failure.hpp"
#include "support/large_stack.hpp"

namespace emmy {
namespace {

int guarded(const std::function<int()>& body, std::string& printed) {
  std::ostringstream err;
  const int status = run_guarded(body, err, "emmyc: ");
  printed = err.str();
  return status;
}

// Touches `levels` frames of about 1 KB each: 64 MB for 64k levels, past any default stack.
int recurse(int levels) {
  volatile char frame[1000];
  frame[0] = static_cast<char>(levels);
  return levels == 0 ? frame[0] : recurse(levels - 1) + (frame[0] & 1);
}

}  // namespace

TEST_CASE("guard: an escaped exception is one line and an exit status") {
  std::string out;
  CHECK(guarded([] { return 0; }, out) == 0);
  CHECK(out.empty());
  CHECK(guarded([] { return 2; }, out) == 2);
  CHECK(guarded(
            []() -> int {
              throw std::filesystem::filesystem_error("status", "loop/a.emmy",
                                                      std::make_error_code(std::errc::too_many_symbolic_link_levels));
            },
            out) == 2);
  CHECK(out == "emmyc: error: 'loop/a.emmy': Too many levels of symbolic links\n");
  CHECK(guarded([]() -> int { throw std::bad_alloc(); }, out) == 1);
  CHECK(out == "emmyc: error: out of memory\n");
  CHECK(guarded(
            []() -> int {
              throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "thread");
            },
            out) == 1);
  CHECK(out.rfind("emmyc: error: thread: ", 0) == 0);
  CHECK(guarded([]() -> int { throw std::logic_error("a broken invariant"); }, out) == 1);
  CHECK(out == "emmyc: internal error (a compiler bug; please report it): a broken invariant\n");
  CHECK(guarded([]() -> int { throw 42; }, out) == 1);
  CHECK(out.find("internal error") != std::string::npos);
}

TEST_CASE("guard: EMMY_INTERNAL_ASSERT throws (reported as an internal error), it does not abort") {
  std::string out;
  CHECK(guarded(
            []() -> int {
              EMMY_INTERNAL_ASSERT(1 + 1 == 3, "arithmetic");
              return 0;
            },
            out) == 1);
  CHECK(out.find("internal error") != std::string::npos);
  CHECK(out.find("arithmetic") != std::string::npos);
}

TEST_CASE("failure kinds: files, memory, resources, bugs") {
  auto kind_of = [](auto thrown) { return describe_failure(std::make_exception_ptr(thrown)).kind; };
  CHECK(kind_of(std::filesystem::filesystem_error("x", std::make_error_code(std::errc::is_a_directory))) ==
        FailureKind::File);
  CHECK(kind_of(std::ios_base::failure("read")) == FailureKind::File);
  CHECK(kind_of(std::length_error("vector::_M_default_append")) == FailureKind::Memory);
  CHECK(kind_of(std::runtime_error("?")) == FailureKind::Internal);
}

TEST_CASE("large stack: a deep recursion runs from a thread with a 128 KB stack") {
  struct Job {
    int result = -1;
    bool threw = false;
  } job;
  auto body = [](void* arg) -> void* {
    auto* j = static_cast<Job*>(arg);
    try {
      run_on_large_stack([&] { j->result = recurse(64 * 1024); });  // about 64 MB of frames
    } catch (...) {
      j->threw = true;
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 128 * 1024);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, body, &job) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  CHECK_FALSE(job.threw);
  CHECK(job.result >= 0);
  // An exception comes back to the caller's thread.
  CHECK_THROWS_AS(run_on_large_stack([] { throw std::runtime_error("from the large stack"); }), std::runtime_error);
}

}  // namespace emmy
