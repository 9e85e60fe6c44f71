// The TMA 2-D box copy: where each element of a box lands in shared memory (the swizzle
// modes, checked against shared/data/ptx/tma_swizzle.json) and the zero fill out of bounds.
#include <algorithm>
#include <array>
#include <vector>

#include "ir/intrinsics.hpp"

namespace emmy::kir {
namespace {

// Per swizzle mode, the bits of (address >> 7) XORed into the 16-byte chunk index
// (address bits 4..6): none, 1 bit (32B), 2 bits (64B), 3 bits (128B). The pattern repeats
// every 256, 512 and 1024 bytes respectively; a row of the box is at most that span.
constexpr std::array<uint32_t, 4> kChunkXorMask{0, 1, 3, 7};
constexpr uint32_t kChunkBytes = 16;

}  // namespace

uint32_t tma_swizzle_byte_offset(uint32_t byte_offset, Swizzle swizzle) {
  uint32_t mask = kChunkXorMask[static_cast<size_t>(swizzle)];
  return byte_offset ^ (((byte_offset >> 7) & mask) << 4);
}

// The box (map.box1 rows of map.box0 elements, dense, row after row) starting at element
// (column c0, row c1) of the tensor; elements outside the tensor read as zero. The swizzle is
// applied to the shared address itself, as the hardware does: a destination aligned to the
// pattern's period (1024 bytes covers every mode) gets the box-relative pattern.
void tma_box_copy(const TensorMap2d& map, int64_t c0, int64_t c1, uint32_t smem_byte_addr, MemoryPort& memory) {
  const uint32_t eb = map.elem_bytes;
  const uint32_t row_bytes = map.box0 * eb;
  std::vector<uint8_t> row(row_bytes);
  const auto dim0 = static_cast<int64_t>(map.dim0), dim1 = static_cast<int64_t>(map.dim1);
  const int64_t lo = std::clamp<int64_t>(c0, 0, dim0), hi = std::clamp<int64_t>(c0 + map.box0, 0, dim0);
  for (uint32_t r = 0; r < map.box1; ++r) {
    std::fill(row.begin(), row.end(), uint8_t{0});
    const int64_t gr = c1 + r;
    if (gr >= 0 && gr < dim1 && lo < hi)
      memory.read_global(map.buffer, static_cast<uint64_t>(gr) * map.row_stride_bytes + static_cast<uint64_t>(lo) * eb,
                         row.data() + (lo - c0) * eb, static_cast<uint32_t>((hi - lo) * eb));
    // Write in pieces that never cross a 16-byte chunk: the swizzle moves whole chunks.
    for (uint32_t p = 0; p < row_bytes;) {
      const uint32_t addr = smem_byte_addr + r * row_bytes + p;
      const uint32_t piece = std::min(row_bytes - p, kChunkBytes - addr % kChunkBytes);
      memory.write_shared(tma_swizzle_byte_offset(addr, map.swizzle), row.data() + p, piece);
      p += piece;
    }
  }
}

}  // namespace emmy::kir
