// The TMA box copy: where each element of a box lands in shared memory (the swizzle modes,
// checked against shared/data/ptx/tma_swizzle.json), the zero fill out of bounds, and the map a
// TensorMap parameter describes over its buffer.
#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "ir/intrinsics.hpp"

namespace emmy::kir {
namespace {

// Per swizzle mode, the bits of (address >> 7) XORed into the 16-byte chunk index
// (address bits 4..6): none, 1 bit (32B), 2 bits (64B), 3 bits (128B). The pattern repeats
// every 256, 512 and 1024 bytes respectively; a row of the box is at most that span.
constexpr std::array<uint32_t, 4> kChunkXorMask{0, 1, 3, 7};
constexpr uint32_t kChunkBytes = 16;
// The largest row a box may have under each swizzle mode (bytes; none: the box limit).
constexpr std::array<uint32_t, 4> kSwizzleSpan{256 * 16, 32, 64, 128};

constexpr IntrinsicId kTmaLoads[] = {IntrinsicId::TmaLoad2d, IntrinsicId::TmaLoad3d, IntrinsicId::TmaLoad4d,
                                     IntrinsicId::TmaLoad5d};

}  // namespace

uint32_t tma_swizzle_byte_offset(uint32_t byte_offset, Swizzle swizzle) {
  uint32_t mask = kChunkXorMask[static_cast<size_t>(swizzle)];
  return byte_offset ^ (((byte_offset >> 7) & mask) << 4);
}

int tma_rank(IntrinsicId id) {
  const auto* it = std::find(std::begin(kTmaLoads), std::end(kTmaLoads), id);
  return it == std::end(kTmaLoads) ? 0 : static_cast<int>(it - std::begin(kTmaLoads)) + 2;
}

IntrinsicId tma_load_of_rank(int rank) {
  if (rank < 2 || rank > kTmaMaxRank) throw std::invalid_argument(fmt::format("TMA: no copy of rank {}", rank));
  return kTmaLoads[rank - 2];
}

// The box's rows (every dimension but the innermost, dimension 1 fastest) land one after
// another, each box[0] elements; the swizzle is applied to the shared address itself, as the
// hardware does: a destination aligned to the pattern's period (1024 bytes covers every mode)
// gets the box-relative pattern.
void tma_box_copy(const TmaMap& map, std::span<const int64_t> at, uint32_t smem_byte_addr, MemoryPort& memory) {
  if (static_cast<int>(at.size()) != map.rank) throw std::invalid_argument("TMA: one coordinate per dimension");
  const uint32_t eb = map.elem_bytes;
  const uint32_t row_bytes = map.box[0] * eb;
  std::vector<uint8_t> row(row_bytes);
  const auto dim0 = static_cast<int64_t>(map.dims[0]);
  const int64_t lo = std::clamp<int64_t>(at[0], 0, dim0), hi = std::clamp<int64_t>(at[0] + map.box[0], 0, dim0);
  uint64_t rows = 1;
  for (int d = 1; d < map.rank; ++d) rows *= map.box[static_cast<size_t>(d)];
  for (uint64_t r = 0; r < rows; ++r) {
    std::fill(row.begin(), row.end(), uint8_t{0});
    bool inside = lo < hi;
    uint64_t offset = static_cast<uint64_t>(lo) * eb, rest = r;
    for (int d = 1; d < map.rank; ++d) {
      const auto ud = static_cast<size_t>(d);
      const int64_t g = at[ud] + static_cast<int64_t>(rest % map.box[ud]);
      rest /= map.box[ud];
      inside = inside && g >= 0 && g < static_cast<int64_t>(map.dims[ud]);
      offset += static_cast<uint64_t>(g) * map.strides[ud];
    }
    if (inside)
      memory.read_global(map.buffer, offset, row.data() + (lo - at[0]) * eb, static_cast<uint32_t>((hi - lo) * eb));
    // Write in pieces that never cross a 16-byte chunk: the swizzle moves whole chunks.
    for (uint32_t p = 0; p < row_bytes;) {
      const auto addr = static_cast<uint32_t>(smem_byte_addr + r * row_bytes + p);
      const uint32_t piece = std::min(row_bytes - p, kChunkBytes - addr % kChunkBytes);
      memory.write_shared(tma_swizzle_byte_offset(addr, map.swizzle), row.data() + p, piece);
      p += piece;
    }
  }
}

uint64_t tma_staged_rows(const TmaMap& map) {
  uint64_t rows = 1;
  for (int d = 1; d < map.rank; ++d) rows *= map.dims[static_cast<size_t>(d)];
  return rows;
}

uint64_t tma_row_bytes(const TmaMap& map) { return map.dims[0] * map.elem_bytes; }

// The hardware's rules (cuTensorMapEncodeTiled): a 16-byte aligned base (the runtime checks the
// address), strides multiples of 16 bytes below 2^40 (rows that are not go through a staged copy), dimensions in [1,
// 2^32], boxes in [1, 256] with rows a multiple of 16 bytes and, swizzled, no longer than the swizzle's span.
std::variant<TmaMap, std::string> tma_map_of(const Param& p, ScalarType elem, std::span<const int64_t> shape,
                                             int buffer) {
  const int rank = static_cast<int>(shape.size());
  if (rank < 2 || rank > kTmaMaxRank)
    return fmt::format("tensor map {}: {} has {} dimensions (TMA takes 2 to {})", p.name, p.map_of, rank, kTmaMaxRank);
  if (static_cast<int>(p.box.size()) != rank)
    return fmt::format("tensor map {}: a box of {} dimensions over {} of {}", p.name, p.box.size(), p.map_of, rank);
  TmaMap m;
  m.buffer = buffer;
  m.rank = rank;
  m.elem_bytes = static_cast<uint32_t>(type_bytes(elem));
  m.swizzle = p.swizzle;
  uint64_t stride = m.elem_bytes;
  for (int d = 0; d < rank; ++d) {
    const auto ud = static_cast<size_t>(d);
    const int64_t extent = shape[static_cast<size_t>(rank - 1 - d)];
    if (extent < 1 || extent > (int64_t{1} << 32))
      return fmt::format("tensor map {}: dimension {} of {} is {} (TMA takes 1 to 2^32)", p.name, rank - 1 - d,
                         p.map_of, extent);
    if (d == 1 && stride % 16 != 0) stride = m.staged_pitch = (stride + 15) / 16 * 16;  // rows through a copy
    if (d > 0 && stride >= (uint64_t{1} << 40))
      return fmt::format("tensor map {}: {}'s rows are {} bytes apart (TMA takes less than 2^40)", p.name, p.map_of,
                         stride);
    m.dims[ud] = static_cast<uint64_t>(extent);
    m.strides[ud] = stride;
    m.box[ud] = static_cast<uint32_t>(p.box[ud]);
    if (p.box[ud] < 1 || p.box[ud] > 256)
      return fmt::format("tensor map {}: box extent {} in dimension {} (TMA takes 1 to 256)", p.name, p.box[ud], d);
    stride *= static_cast<uint64_t>(extent);
  }
  const uint32_t row = m.box[0] * m.elem_bytes;
  if (row % 16 != 0 || row > kSwizzleSpan[static_cast<size_t>(p.swizzle)])
    return fmt::format("tensor map {}: box rows of {} bytes (a multiple of 16, at most {} with this swizzle)", p.name,
                       row, kSwizzleSpan[static_cast<size_t>(p.swizzle)]);
  return m;
}

}  // namespace emmy::kir
