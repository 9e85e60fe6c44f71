// The tensor-core tier's fixed facts: the mma.sync atom's shape, fragment coordinates as affine
// functions of a lane, the lanes sharing a row of C, the C -> A repack, and the small value
// types the tier's files share. All derived from (and checked against) the intrinsic table.
#pragma once

#include <string_view>
#include <vector>

#include "ir/intrinsics.hpp"
#include "lower/kernel/builder.hpp"

namespace emmy::lower::detail {

inline constexpr int kWarp = 32;
inline constexpr int kAtomM = 16, kAtomN = 8, kAtomK = 16;
inline constexpr ScalarType I64 = ScalarType::I64, F32 = ScalarType::F32, U32 = ScalarType::U32;
inline constexpr std::string_view kContracted = "<mma>";  // the register a contraction's value is bound to
// The register of a kernel's contraction of rank `i` (a fold's weight may hold two).
inline std::string_view contracted_reg(size_t i) { return i == 0 ? kContracted : "<mma2>"; }
using CoordFn = kir::FragmentCoord (*)(int, int);

// A fragment element's matrix coordinate as an affine function of the lane's group
// (lane >> 2) and thread in group (lane & 3), derived from — and checked against — the
// intrinsic table's lane map at every lane.
struct LaneAffine {
  int row0 = 0, row_g = 0, row_t = 0, col0 = 0, col_g = 0, col_t = 0;
};

LaneAffine lane_affine(CoordFn fn, int elem);

// The lane-mask bits whose butterfly partners hold the same rows of C: the row reductions'
// shuffles (for m16n8k16: 1 and 2, the four lanes of a quad).
std::vector<int> row_sharing_masks();

// The C -> A repack: A element x of k-step t is C element `elem` of n-atom 2t + `atom`, in the
// same lane — for every lane, or the layouts do not match and there is no register repack.
struct RepackSource {
  int atom = 0, elem = 0;
};
std::vector<RepackSource> c_to_a_map();

// The contraction's operands: `row` reads the output's row axis and the reduced axis, `col`
// the column axis and the reduced axis; `around` is the expression with the contraction
// replaced by the register kContracted. `outer`: the sum's other axes (sum(h, d: o[b, h, i, d] *
// wo[h, d, c]) reduces d in chunks and h outside it), each a bare subscript of the operands.
struct Contraction {
  Expr row, col;
  tir::Axis axis;
  Expr around;
  std::vector<tir::Axis> outer;
};

// The row-major index math of an element: binds an axis to base + offset, clamped into the
// axis (loads stay in bounds) or zero past its end (a contraction's padding).
struct AxisAt {
  std::string name;
  K base;
  K size;
  bool zero_past_end = false;
};

// A streamed operand's tile in shared memory: rows along `outer`, the read's contiguous axis
// `inner` along a row padded by 16 bytes (ldmatrix's eight rows then hit distinct banks).
// With `swizzled` (wgmma's operands), rows are 128 bytes in panels of 64 columns, each 16-byte
// chunk at its index XORed with the row's index mod 8 (the 128-byte swizzle: eight rows of a
// column of chunks hit distinct banks, and wgmma's descriptors read the layout as it is).
struct Slab {
  std::string array;
  Expr read;
  AxisAt outer, inner;
  int rows = 0, cols = 0, pitch = 0;
  std::string stream;    // the axis the loop streams tiles of; the other axis's base is fixed
  bool strided = false;  // the read's element index is first + row * stride + col
  bool swizzled = false;
  std::string map;  // the TensorMap parameter its tiles come through (empty: cp.async)
  int buffers = 1;  // its buffers: the stage's depth, or the slab's own (a row tile's one)
  int64_t elems() const { return int64_t{rows} * pitch; }
  K buffer_start(const K& buf) const;  // buffer `buf`'s first element in the array (I32)
  // The element offset of (row, col) within a buffer (I32; col a multiple of 8 plus at most 7).
  K offset(const K& r, const K& c) const;
};

}  // namespace emmy::lower::detail
