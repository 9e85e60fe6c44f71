// The SIMT interpreter's fibers: the sides of a branch between warps that may block, each on a
// thread of its own that runs only while it holds the baton, so that one runs at a time.
#include "interp/simt_block.hpp"

#include <fmt/ranges.h>

namespace emmy::simt_detail {

Fibers::Fibers(std::function<std::string(const std::string&)> format) : format_(std::move(format)) {
  fibers_.emplace_back();
}

Fibers::~Fibers() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
  join(1, fibers_.size());
}

void Fibers::join(size_t first, size_t last) {
  for (size_t i = first; i < last; ++i)
    if (fibers_[i].thread.joinable()) fibers_[i].thread.join();
}

bool Fibers::runnable(size_t id) const {
  const Fiber& f = fibers_[id];
  return !f.done && (!f.ready || f.ready());
}

// The next fiber after `id`, in order and wrapping around to `id` itself, that can go on.
std::optional<size_t> Fibers::next_after(size_t id) const {
  for (size_t k = 1; k <= fibers_.size(); ++k) {
    size_t i = (id + k) % fibers_.size();
    if (runnable(i)) return i;
  }
  return std::nullopt;
}

// What the blocked fibers wait on, `first`'s first: one, or a deadlock of several.
std::string Fibers::deadlock(size_t first) const {
  std::vector<std::string> waits;
  auto text = [&](size_t i) {
    const Fiber& f = fibers_[i];
    return f.label.empty() ? f.what() : fmt::format("{}: {}", f.label, f.what());
  };
  if (fibers_[first].what) waits.push_back(text(first));
  for (size_t i = 0; i < fibers_.size(); ++i)
    if (i != first && !fibers_[i].done && fibers_[i].what) waits.push_back(text(i));
  if (waits.size() == 1) return fibers_[first].what ? fibers_[first].what() : waits[0];
  return fmt::format("deadlock, no warp can go on: {}", fmt::join(waits, "; "));
}

void Fibers::cancel(std::exception_ptr error) {
  if (!error_) error_ = std::move(error);
  cancelled_ = true;
  cv_.notify_all();
}

std::optional<std::string> Fibers::wait(const std::function<bool()>& ready, const std::function<std::string()>& what) {
  std::unique_lock lock(mu_);
  if (cancelled_) throw Cancelled{};
  const size_t me = running_;
  Fiber& self = fibers_[me];
  self.ready = ready;
  self.what = what;
  for (;;) {
    std::optional<size_t> next = next_after(me);
    if (!next) {
      std::string dead = deadlock(me);
      self.ready = {};
      self.what = {};
      return dead;
    }
    if (*next == me) break;
    running_ = *next;
    cv_.notify_all();
    cv_.wait(lock, [&] { return running_ == me || cancelled_; });
    if (cancelled_) throw Cancelled{};
    if (ready()) break;
  }
  self.ready = {};
  self.what = {};
  return std::nullopt;
}

void Fibers::entry(size_t id, const std::function<void()>& part) {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return running_ == id || cancelled_; });
    if (cancelled_) {
      fibers_[id].done = true;
      cv_.notify_all();
      return;
    }
  }
  std::exception_ptr error;
  try {
    part();
  } catch (const Cancelled&) {
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard lock(mu_);
  fibers_[id].done = true;
  if (error) return cancel(error);
  if (cancelled_) return cv_.notify_all();
  // Hand the baton on; with nobody able to go on, the block deadlocked.
  std::optional<size_t> next = next_after(id);
  if (!next) return cancel(std::make_exception_ptr(SimtError(format_(deadlock(id)))));
  running_ = *next;
  cv_.notify_all();
}

void Fibers::run(std::vector<std::function<void()>> parts, std::vector<std::string> labels) {
  size_t first = 0, last = 0;
  {
    std::lock_guard lock(mu_);
    if (cancelled_) throw Cancelled{};
    first = fibers_.size();
    for (size_t i = 0; i < parts.size(); ++i) fibers_.emplace_back().label = i < labels.size() ? labels[i] : "";
    last = fibers_.size();
  }
  for (size_t i = first; i < last; ++i)
    fibers_[i].thread = std::thread([this, i, part = std::move(parts[i - first])] { entry(i, part); });
  std::optional<std::string> dead;
  try {
    dead = wait(
        [this, first, last] {
          for (size_t i = first; i < last; ++i)
            if (!fibers_[i].done) return false;
          return true;
        },
        {});
  } catch (const Cancelled&) {
  }
  std::exception_ptr error;
  {
    std::lock_guard lock(mu_);
    if (dead && !error_) cancel(std::make_exception_ptr(SimtError(format_(*dead))));
    error = error_;
  }
  join(first, last);
  if (error) std::rethrow_exception(error);
}

}  // namespace emmy::simt_detail
