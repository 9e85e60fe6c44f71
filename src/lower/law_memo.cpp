// A thread-safe memo of the prover's monoid reports.
#include "lower/law_memo.hpp"

#include "algebra/classify.hpp"

namespace emmy::lower {

namespace {

// A report already proved, as the memo keeps one being proved.
std::shared_future<algebra::MonoidReport> ready(const algebra::MonoidReport& report) {
  std::promise<algebra::MonoidReport> known;
  known.set_value(report);
  return known.get_future().share();
}

}  // namespace

LawMemo::LawMemo(const algebra::LawMemo& proved) {
  for (const auto& [key, report] : proved) reports_.emplace(key, ready(report));
}

algebra::MonoidReport LawMemo::check(const algebra::MonoidTerms& terms) const {
  const std::string key = algebra::law_memo_key(terms);
  std::promise<algebra::MonoidReport> proving;
  std::shared_future<algebra::MonoidReport> report;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, first] = reports_.try_emplace(key);
    if (!first) {
      report = it->second;
    } else {
      it->second = proving.get_future().share();
    }
  }
  if (report.valid()) return report.get();  // proved (or being proved) by another lowering: its report
  // Proved outside the lock, once: the lowerings of the other candidates wait for it rather
  // than prove the same laws on the same cores.
  try {
    algebra::MonoidReport proved = algebra::check_laws(terms);
    proving.set_value(proved);
    return proved;
  } catch (...) {
    proving.set_exception(std::current_exception());
    throw;
  }
}

void LawMemo::seed(const algebra::MonoidTerms& terms, const algebra::MonoidReport& report) const {
  std::shared_future<algebra::MonoidReport> known = ready(report);
  std::lock_guard<std::mutex> lock(mutex_);
  reports_.try_emplace(algebra::law_memo_key(terms), std::move(known));
}

}  // namespace emmy::lower
