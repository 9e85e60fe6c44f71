// Measures candidates on the GPU in a worker process (`emmyc tune-worker`), one request at a
// time over pipes, so that a kernel that hangs or crashes costs its own measurement only: past
// the timeout the worker is killed, the candidate fails with why, and a fresh worker goes on.
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tune/search.hpp"

namespace emmy::tune {

class WorkerMeasurer : public Measurer {
 public:
  // `command`: the worker's argv (argv[0] a path). `log_path`: where the worker's stderr goes.
  WorkerMeasurer(std::vector<std::string> command, double timeout_s, std::string log_path);
  ~WorkerMeasurer() override;
  WorkerMeasurer(const WorkerMeasurer&) = delete;
  WorkerMeasurer& operator=(const WorkerMeasurer&) = delete;

  // Starts the worker and waits for it to be ready (inputs uploaded, reference computed);
  // throws std::runtime_error with the worker's last words when it cannot start.
  void start();
  Measurement measure(const Candidate& candidate, int reps, double cutoff_us) override;
  std::string device() const override { return device_; }
  std::string reference() const { return reference_; }
  int restarts() const { return restarts_; }

 private:
  void stop();
  std::optional<std::string> read_line(double timeout_s);  // nullopt: timeout, or end of stream (closed_)
  std::string last_words() const;                          // the tail of the worker's log

  std::vector<std::string> command_;
  double timeout_s_;
  std::string log_path_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  std::string pending_;  // read past the last line
  bool closed_ = false;  // the last read_line met the end of the worker's output
  std::string device_, reference_;
  double ready_timeout_s_ = 600;
  // With a cut-off, the worker says when its kernels start; from then on, the answer is awaited
  // longer than the cut-off itself by this, or by what the last start of a worker took if that
  // is more (waiting no longer than a restart costs is at most twice the better of the two
  // choices); past it, the worker is killed and the candidate counts as cut off (a scalar
  // attention kernel can run for minutes).
  double cutoff_grace_s_ = 1.0;
  double last_start_s_ = 0;
  int restarts_ = 0;
  std::set<std::string> checked_;  // candidates whose outputs matched the reference
};

}  // namespace emmy::tune
