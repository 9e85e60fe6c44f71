// Runs a function on a thread with a large stack: the passes recurse on expression trees, and
// the caller's stack (a Python thread's, a small `ulimit -s`) may be far smaller than the 8 MB
// the expression-depth limit (E004) is measured against.
#pragma once

#include <cstddef>
#include <functional>

namespace emmy {

// Reserved, not committed: only the pages a deep recursion touches are ever backed.
inline constexpr size_t kLargeStackBytes = size_t{256} << 20;

// Runs `body` to completion on a fresh thread whose stack holds `bytes` and rethrows what it
// throws; runs it on the calling thread when no such thread can be started (a process limit).
void run_on_large_stack(const std::function<void()>& body, size_t bytes = kLargeStackBytes);

// Runs body(i) for every i in [0, count) on `threads` workers (at least one), each on a large
// stack, items handed out in order; the first exception a worker throws stops the handing out
// and is rethrown here once every worker has joined.
void for_each_on_large_stacks(size_t count, int threads, const std::function<void(size_t)>& body);

}  // namespace emmy
