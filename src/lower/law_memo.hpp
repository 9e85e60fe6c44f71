// The prover's verdicts on a monoid's laws, kept by its terms for lowerings that ask again: the
// auto-scheduler and the tuner lower one op under many knob lists, each asking the same question.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "algebra/laws.hpp"

namespace emmy::lower {

// Safe to share between threads. The same terms give the same report (check_laws is pure), so a
// memo changes nothing but the time.
class LawMemo {
 public:
  algebra::MonoidReport check(const algebra::MonoidTerms& terms) const;

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, algebra::MonoidReport> reports_;  // by algebra::law_memo_key
};

}  // namespace emmy::lower
