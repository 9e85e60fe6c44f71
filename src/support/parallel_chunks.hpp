// Runs fn(chunk, begin, end) over [0, n) cut into fixed chunks, on up to every core: large
// host loops (decoding and comparing a 512 MB output) that would otherwise take seconds. The
// chunks depend only on n, so a caller that merges per-chunk results in chunk order gets the
// same answer on any machine.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace emmy {

constexpr size_t kParallelChunk = size_t{1} << 20;  // elements a chunk; smaller loops run inline

inline size_t chunk_count(size_t n) { return n == 0 ? 0 : (n + kParallelChunk - 1) / kParallelChunk; }

template <class Fn>
void parallel_chunks(size_t n, Fn&& fn) {
  const size_t chunks = chunk_count(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t c = next++; c < chunks; c = next++) fn(c, c * kParallelChunk, std::min(n, (c + 1) * kParallelChunk));
  };
  const size_t threads = std::min<size_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace emmy
