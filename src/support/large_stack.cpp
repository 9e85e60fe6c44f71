// run_on_large_stack: a joinable pthread with a chosen stack size, exceptions carried back.
#include "support/large_stack.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

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

void for_each_on_large_stacks(size_t count, int threads, const std::function<void(size_t)>& body) {
  const size_t workers = static_cast<size_t>(std::max(threads, 1));
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](size_t worker) {
    try {
      run_on_large_stack([&] {
        for (size_t i = next++; i < count; i = next++) body(i);
      });
    } catch (...) {
      errors[worker] = std::current_exception();
      next = count;
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace emmy
