// FNV-1a, 64 bits: the hash that names cache entries and identifies generated kernels and ops.
#pragma once

#include <cstdint>
#include <string_view>

namespace emmy {

inline uint64_t fnv1a(std::string_view text, uint64_t hash = 14695981039346656037ull) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace emmy
