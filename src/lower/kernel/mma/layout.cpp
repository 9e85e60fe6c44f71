#include "lower/kernel/mma/layout.hpp"

#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

LaneAffine lane_affine(CoordFn fn, int elem) {
  kir::FragmentCoord o = fn(0, elem), g = fn(4, elem), t = fn(1, elem);
  LaneAffine a{o.row, g.row - o.row, t.row - o.row, o.col, g.col - o.col, t.col - o.col};
  for (int lane = 0; lane < kWarp; ++lane) {
    kir::FragmentCoord c = fn(lane, elem);
    int gi = lane >> 2, ti = lane & 3;
    EMMY_INTERNAL_ASSERT(c.row == a.row0 + a.row_g * gi + a.row_t * ti && c.col == a.col0 + a.col_g * gi + a.col_t * ti,
                         "an mma fragment lane map is not affine in (group, thread in group)");
  }
  return a;
}

std::vector<int> row_sharing_masks() {
  std::vector<int> masks;
  for (int bit = 1; bit < kWarp; bit <<= 1) {
    bool same = true;
    for (int lane = 0; lane < kWarp && same; ++lane)
      for (int e = 0; e < 4 && same; ++e) same = kir::mma_c_coord(lane, e).row == kir::mma_c_coord(lane ^ bit, e).row;
    if (same) masks.push_back(bit);
  }
  return masks;
}

std::vector<RepackSource> c_to_a_map() {
  std::vector<RepackSource> map;
  for (int x = 0; x < 8; ++x) {
    std::optional<RepackSource> found;
    for (int atom = 0; atom < 2 && !found; ++atom)
      for (int y = 0; y < 4 && !found; ++y) {
        bool all = true;
        for (int lane = 0; lane < kWarp && all; ++lane) {
          kir::FragmentCoord a = kir::mma_a_coord(lane, x), c = kir::mma_c_coord(lane, y);
          all = a.row == c.row && a.col == c.col + kAtomN * atom;
        }
        if (all) found = RepackSource{atom, y};
      }
    EMMY_INTERNAL_ASSERT(found, "the mma C and A fragment layouts do not match element for element");
    map.push_back(*found);
  }
  return map;
}

K Slab::buffer_start(const K& buf) const {
  return kir::binary(kir::BinOp::Mul, as(buf, ScalarType::I32), kir::ci(elems(), ScalarType::I32));
}

K Slab::offset(const K& r, const K& c) const {
  using kir::BinOp;
  auto op = [](BinOp o, K a, K b) { return kir::binary(o, std::move(a), std::move(b)); };
  auto c32 = [](int64_t v) { return kir::ci(v, ScalarType::I32); };
  if (!swizzled) return op(BinOp::Add, op(BinOp::Mul, r, c32(pitch)), c);
  K panel = op(BinOp::Mul, op(BinOp::Div, c, c32(64)), c32(int64_t{rows} * 64));
  K chunk = op(BinOp::BitXor, op(BinOp::Div, op(BinOp::Rem, c, c32(64)), c32(8)), op(BinOp::Rem, r, c32(8)));
  return op(BinOp::Add, op(BinOp::Add, panel, op(BinOp::Mul, r, c32(64))),
            op(BinOp::Add, op(BinOp::Mul, chunk, c32(8)), op(BinOp::Rem, c, c32(8))));
}

}  // namespace emmy::lower::detail
