// Integer division and remainder spelled so that ptxas makes no subroutine call of them (it calls
// one for every 64-bit div and rem; a call inside a wgmma loop spills the accumulators around it
// and serializes the wgmmas): by a power of two as shifts, by another constant as a multiply by
// its magic number (Hacker's Delight, ch. 10), by a 64-bit value through a 32-bit division when
// both operands fit in 31 bits (the call kept on the other, cold, path), as NVVM does.
#pragma once

#include <cstdint>
#include <optional>

#include "codegen/ptx/ptx_math.hpp"

namespace emmy::ptx {

// n / d for signed `width`-bit n (32 or 64) and a constant d outside {-1, 0, 1}:
// q = mulhi(n, multiplier) (+ n when d > 0 and the multiplier is negative, - n when d < 0 and it
// is positive), then q >> shift (arithmetic), then q + 1 when q < 0.
struct SignedMagic {
  int64_t multiplier = 0;
  int shift = 0;
};
SignedMagic signed_magic(int64_t d, int width);

// n / d for unsigned `width`-bit n and a constant d > 1 that is no power of two: without `add`,
// mulhi(n, multiplier) >> shift; with it, t = mulhi(n, multiplier), (((n - t) >> 1) + t) >> (shift - 1).
struct UnsignedMagic {
  uint64_t multiplier = 0;
  int shift = 0;
  bool add = false;
};
UnsignedMagic unsigned_magic(uint64_t d, int width);

// a / b or a % b (C's: the quotient rounds toward zero, the remainder has a's sign) of integer
// operands as above; nullopt where the division instruction itself is as good (32-bit by a
// register: ptxas inlines it) or the operation is no division.
std::optional<Val> divide(Emitter& em, kir::BinOp op, const Val& a, const Val& b);

}  // namespace emmy::ptx
