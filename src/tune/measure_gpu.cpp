// The worker process behind the GPU measurer: spawn, line-delimited JSON requests, timeouts,
// restarts (measure_gpu.hpp).
#include "tune/measure_gpu.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace emmy::tune {
namespace {

std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "stopped";
}

}  // namespace

WorkerMeasurer::WorkerMeasurer(std::vector<std::string> command, double timeout_s, std::string log_path)
    : command_(std::move(command)), timeout_s_(timeout_s), log_path_(std::move(log_path)) {}

WorkerMeasurer::~WorkerMeasurer() { stop(); }

void WorkerMeasurer::start() {
  // A worker that dies between two requests must fail the next write, not kill this process.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("cannot create pipes for the tune worker");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("cannot fork the tune worker");
  if (pid_ == 0) {  // the worker: stdin from the parent, stdout to it, stderr to the log
    dup2(in[0], 0);
    dup2(out[1], 1);
    int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) dup2(log, 2);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    std::vector<char*> argv;
    for (std::string& a : command_) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto started = std::chrono::steady_clock::now();
  close(in[0]);
  close(out[1]);
  to_worker_ = in[1];
  from_worker_ = out[0];
  pending_.clear();
  std::optional<std::string> ready = read_line(ready_timeout_s_);
  nlohmann::json j = ready ? nlohmann::json::parse(*ready, nullptr, false) : nlohmann::json();
  if (!j.is_object() || !j.value("ready", false)) {
    std::string words = last_words();
    stop();
    throw std::runtime_error(fmt::format("the tune worker did not start{}{}", words.empty() ? "" : ":\n", words));
  }
  last_start_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  device_ = j.value("device", "");
  reference_ = j.value("reference", "");
}

void WorkerMeasurer::stop() {
  if (to_worker_ >= 0) close(to_worker_);
  if (from_worker_ >= 0) close(from_worker_);
  to_worker_ = from_worker_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

std::optional<std::string> WorkerMeasurer::read_line(double timeout_s) {
  closed_ = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd p{from_worker_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char buf[4096];
    ssize_t n = read(from_worker_, buf, sizeof buf);
    if (n <= 0) {  // the worker is gone (or going: its pipe closes before its exit status is ready)
      closed_ = true;
      return std::nullopt;
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
}

std::string WorkerMeasurer::last_words() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > 1500) text = "..." + text.substr(text.size() - 1500);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

Measurement WorkerMeasurer::measure(const Candidate& candidate, int reps, double cutoff_us) {
  Measurement m;
  if (pid_ < 0) {
    ++restarts_;
    try {
      start();
    } catch (const std::runtime_error& e) {
      m.error = e.what();
      return m;
    }
  }
  // Outputs are compared with the reference the first time a candidate runs; kernels are
  // deterministic, so its later rungs only time it.
  const bool check = !checked_.count(candidate.knobs);
  const std::string request =
      nlohmann::json({{"knobs", candidate.knobs}, {"reps", reps}, {"check", check}, {"cutoff_us", cutoff_us}}).dump() +
      "\n";
  if (write(to_worker_, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    m.error = "the tune worker stopped reading";
    stop();
    return m;
  }
  // The answer within the timeout. With a cut-off, the worker brackets its first launch with
  // "launching" and "launched" lines; between the two, the wait is the cut-off and a grace.
  const auto asked = std::chrono::steady_clock::now();
  bool cutting = false;  // waiting for a launched kernel under the cut-off, not the timeout
  double wait_s = 0;
  std::optional<std::string> line;
  nlohmann::json j;  // the answer
  for (;;) {
    const double left = timeout_s_ - std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    line = read_line(std::max(cutting ? std::min(wait_s, left) : left, 0.0));
    j = line ? nlohmann::json::parse(*line, nullptr, false) : nlohmann::json();
    if (!j.is_object() || !(j.contains("launching") || j.contains("launched"))) break;
    wait_s = cutoff_us * 1e-6 + std::max(cutoff_grace_s_, last_start_s_);
    cutting = j.contains("launching") && cutoff_us > 0 && wait_s < left;
  }
  if (!line) {
    int status = 0;
    // A closed pipe: the worker is dying; its status follows shortly. Else the time ran out.
    bool died = false;
    for (int waited_ms = 0; closed_ && pid_ > 0 && !died && waited_ms < 5000; waited_ms += 10) {
      died = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!died) usleep(10000);
    }
    m.error = died ? fmt::format("the worker died ({})", describe_exit(status))
                   : fmt::format("no answer within {:.0f} s (a hang?): the worker was killed", timeout_s_);
    if (!died && cutting) {
      m.cut_off = true;
      m.time_us = wait_s * 1e6;  // at least
      m.error = fmt::format("cut off: no answer within {:.1f} s (the cut-off is {:.1f} us): the worker was killed",
                            wait_s, cutoff_us);
    }
    if (died) pid_ = -1;
    stop();
    return m;
  }
  if (!j.is_object()) {
    m.error = "the worker answered something that is not JSON: " + line->substr(0, 200);
    return m;
  }
  m.ok = j.value("ok", false);
  if (m.ok && check) checked_.insert(candidate.knobs);
  m.time_us = j.value("time_us", 0.0);
  m.occupancy = j.value("occupancy", 0.0);
  m.error = j.value("error", "");
  m.cut_off = j.value("cut_off", false);
  // A launch error leaves the worker's CUDA context unusable: start a fresh one next time.
  if (j.value("restart", false)) stop();
  return m;
}

}  // namespace emmy::tune
