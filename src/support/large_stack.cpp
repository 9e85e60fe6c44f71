// run_on_large_stack: a joinable pthread with a chosen stack size, exceptions carried back.
#include "support/large_stack.hpp"

#include <pthread.h>

#include <exception>

namespace emmy {
namespace {

struct Job {
  const std::function<void()>* body;
  std::exception_ptr error;
};

void* run_job(void* arg) {
  Job* job = static_cast<Job*>(arg);
  try {
    (*job->body)();
  } catch (...) {
    job->error = std::current_exception();
  }
  return nullptr;
}

}  // namespace

void run_on_large_stack(const std::function<void()>& body, size_t bytes) {
  Job job{&body, nullptr};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) {
    body();
    return;
  }
  pthread_t thread;
  const bool started =
      pthread_attr_setstacksize(&attr, bytes) == 0 && pthread_create(&thread, &attr, run_job, &job) == 0;
  pthread_attr_destroy(&attr);
  if (!started) {
    body();
    return;
  }
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace emmy
