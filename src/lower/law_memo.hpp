// The prover's verdicts on a monoid's laws, kept by its terms for lowerings that ask again: the
// auto-scheduler and the tuner lower one op under many knob lists, each asking the same question.
#pragma once

#include <future>
#include <map>
#include <mutex>
#include <string>

#include "algebra/classify.hpp"
#include "algebra/laws.hpp"

namespace emmy::lower {

// Safe to share between threads. The same terms give the same report (check_laws is pure), so a
// memo changes nothing but the time.
class LawMemo {
 public:
  LawMemo() = default;
  // Starts with the reports the checker proved (algebra::classify's memo, by the same key).
  explicit LawMemo(const algebra::LawMemo& proved);
  algebra::MonoidReport check(const algebra::MonoidTerms& terms) const;
  // Takes a report already proved for `terms` (a discovered chain's) as the answer; a memo fills
  // as it is asked, so this is const like check.
  void seed(const algebra::MonoidTerms& terms, const algebra::MonoidReport& report) const;

 private:
  mutable std::mutex mutex_;
  // By algebra::law_memo_key: the first to ask proves, the others wait for its report.
  mutable std::map<std::string, std::shared_future<algebra::MonoidReport>> reports_;
};

}  // namespace emmy::lower
