// The tensor of the recorded TMA vectors (shared/data/ptx/tma_swizzle.json): 128 rows of 256
// u16, gmem[r][c] = r * 256 + c, as buffer 0; its map for a box, and the swizzle by its name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ir/intrinsics.hpp"

namespace emmy::test {

constexpr uint32_t kTmaRows = 128, kTmaCols = 256;

inline kir::Swizzle swizzle_named(const std::string& name) {
  if (name == "none") return kir::Swizzle::None;
  if (name == "32B") return kir::Swizzle::B32;
  if (name == "64B") return kir::Swizzle::B64;
  if (name == "128B") return kir::Swizzle::B128;
  throw std::invalid_argument("swizzle " + name);
}

// The map of the recorded tensor with a box of `box_cols` x `box_rows`.
inline kir::TmaMap tma_map(uint32_t box_cols, uint32_t box_rows, kir::Swizzle swizzle) {
  kir::TmaMap m;
  m.buffer = 0;
  m.dims = {kTmaCols, kTmaRows};
  m.strides = {2, uint64_t{kTmaCols} * 2};
  m.box = {box_cols, box_rows};
  m.swizzle = swizzle;
  return m;
}

}  // namespace emmy::test
