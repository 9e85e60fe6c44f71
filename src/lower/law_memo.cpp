// A thread-safe memo of the prover's monoid reports.
#include "lower/law_memo.hpp"

#include "algebra/classify.hpp"

namespace emmy::lower {

algebra::MonoidReport LawMemo::check(const algebra::MonoidTerms& terms) const {
  const std::string key = algebra::law_memo_key(terms);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = reports_.find(key); it != reports_.end()) return it->second;
  }
  // Proved outside the lock: two threads asking at once both prove, and agree.
  algebra::MonoidReport report = algebra::check_laws(terms);
  std::lock_guard<std::mutex> lock(mutex_);
  return reports_.emplace(key, std::move(report)).first->second;
}

}  // namespace emmy::lower
