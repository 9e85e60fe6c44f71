// The SIMT interpreter's lane values: conversions, arithmetic one tight loop a node, bytes.
#include "interp/simt_block.hpp"

namespace emmy::simt_detail {

// ---- values -------------------------------------------------------------------------------

bool is_f(ScalarType t) { return kir::is_float(t); }

Vals make_vals(ScalarType type, size_t n) {
  Vals v;
  v.type = type;
  if (is_f(type))
    v.f.resize(n);
  else
    v.i.resize(n);
  return v;
}

bool truth(const Vals& v, size_t k) { return is_f(v.type) ? v.f[k] != 0 : v.i[k] != 0; }

// `v` wrapped to the width of integer type `t` (C's conversion between integer types).
int64_t wrap_int(ScalarType t, int64_t v) {
  auto bits = static_cast<uint64_t>(v);
  switch (t) {
    case ScalarType::Pred: return v != 0 ? 1 : 0;
    case ScalarType::I32: return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case ScalarType::U32: return static_cast<uint32_t>(bits);
    default: return v;
  }
}

// A float converted to integer type `t`: truncated toward zero and saturated to the type's
// range, NaN to 0 (what cvt.rzi does on the GPU); to pred: nonzero.
int64_t float_to_int(ScalarType t, double v) {
  if (t == ScalarType::Pred) return v != 0 ? 1 : 0;
  if (std::isnan(v)) return 0;
  double lo = t == ScalarType::U32 ? 0.0 : t == ScalarType::I32 ? -0x1p31 : -0x1p63;
  double hi = t == ScalarType::U32 ? 0x1p32 : t == ScalarType::I32 ? 0x1p31 : 0x1p63;  // exclusive
  double r = std::trunc(v);
  if (r <= lo) return static_cast<int64_t>(lo);
  if (r >= hi) return t == ScalarType::U32 ? 0xffffffffLL : t == ScalarType::I32 ? 0x7fffffffLL : INT64_MAX;
  return static_cast<int64_t>(r);
}

// An integer converted to float type `t`, rounded once to nearest even.
double int_to_float(ScalarType t, int64_t v) {
  if (t == ScalarType::F32) return static_cast<double>(static_cast<float>(v));
  if (t == ScalarType::F64) return static_cast<double>(v);
  return kir::round_to(t, static_cast<double>(v));
}

// C's conversion of every lane to `to` (float rounding to nearest even, float -> integer
// truncating, integer -> integer wrapping).
Vals convert(Vals v, ScalarType to) {
  if (v.type == to) return v;
  size_t n = v.size();
  Vals out = make_vals(to, n);
  if (is_f(v.type) && is_f(to)) {
    for (size_t k = 0; k < n; ++k) out.f[k] = kir::round_to(to, v.f[k]);
  } else if (is_f(v.type)) {
    for (size_t k = 0; k < n; ++k) out.i[k] = float_to_int(to, v.f[k]);
  } else if (is_f(to)) {
    for (size_t k = 0; k < n; ++k) out.f[k] = int_to_float(to, v.i[k]);
  } else {
    for (size_t k = 0; k < n; ++k) out.i[k] = wrap_int(to, v.i[k]);
  }
  return out;
}

int int_rank(ScalarType t) {
  switch (t) {
    case ScalarType::Pred: return 0;
    case ScalarType::I32: return 1;
    case ScalarType::U32: return 2;
    default: return 3;
  }
}

// The type C's usual arithmetic conversions give two operands, as CUDA applies them; nullopt
// where CUDA has no unambiguous answer (a 16-bit float with an integer or the other format).
std::optional<ScalarType> common_type(ScalarType a, ScalarType b) {
  if (a == b) return a;
  bool fa = is_f(a), fb = is_f(b);
  if (fa && fb) {
    if (a == ScalarType::F64 || b == ScalarType::F64) return ScalarType::F64;
    if (a == ScalarType::F32 || b == ScalarType::F32) return ScalarType::F32;
    return std::nullopt;
  }
  if (fa || fb) {
    ScalarType f = fa ? a : b;
    if (f == ScalarType::F32 || f == ScalarType::F64) return f;
    return std::nullopt;
  }
  ScalarType hi = int_rank(a) >= int_rank(b) ? a : b;
  return hi == ScalarType::Pred ? ScalarType::I32 : hi;
}

bool is_shift(BinOp op) { return op == BinOp::Shl || op == BinOp::Shr; }
bool is_bitwise(BinOp op) { return op >= BinOp::Shl; }
bool is_logical(BinOp op) { return op == BinOp::And || op == BinOp::Or; }

// ---- arithmetic, one tight loop per node ----------------------------------------------------

// A float unary op computed in T (float for f32/f16/bf16, double for f64).
template <class T>
void float_unary(UnOp op, std::vector<double>& v) {
  auto each = [&v](auto f) {
    for (double& x : v) x = static_cast<double>(f(static_cast<T>(x)));
  };
  switch (op) {
    case UnOp::Neg: each([](T x) { return -x; }); break;
    case UnOp::Abs: each([](T x) { return std::abs(x); }); break;
    case UnOp::Exp: each([](T x) { return std::exp(x); }); break;
    case UnOp::Exp2: each([](T x) { return std::exp2(x); }); break;
    case UnOp::Exp2Ftz:
      each([](T x) {  // ex2.approx.ftz: subnormals in and out are zero
        T r = std::exp2(std::fpclassify(x) == FP_SUBNORMAL ? T(0) : x);
        return std::fpclassify(r) == FP_SUBNORMAL ? T(0) : r;
      });
      break;
    case UnOp::Log: each([](T x) { return std::log(x); }); break;
    case UnOp::Sqrt: each([](T x) { return std::sqrt(x); }); break;
    case UnOp::Rsqrt: each([](T x) { return T(1) / std::sqrt(x); }); break;
    case UnOp::Tanh: each([](T x) { return std::tanh(x); }); break;
    case UnOp::Erf: each([](T x) { return std::erf(x); }); break;
    case UnOp::Sigmoid: each([](T x) { return T(1) / (T(1) + std::exp(-x)); }); break;
    case UnOp::Floor: each([](T x) { return std::floor(x); }); break;
    case UnOp::Ceil: each([](T x) { return std::ceil(x); }); break;
    case UnOp::Not: break;  // a predicate: the caller's
  }
}

// A float binary arithmetic op computed in T.
template <class T>
void float_binary(BinOp op, const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& out) {
  auto each = [&](auto f) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<double>(f(static_cast<T>(a[k]), static_cast<T>(b[k])));
  };
  switch (op) {
    case BinOp::Add: each([](T x, T y) { return x + y; }); break;
    case BinOp::Sub: each([](T x, T y) { return x - y; }); break;
    case BinOp::Mul: each([](T x, T y) { return x * y; }); break;
    case BinOp::Div: each([](T x, T y) { return x / y; }); break;
    case BinOp::Rem: each([](T x, T y) { return std::fmod(x, y); }); break;
    // NaN through max and min, as the kernels' max.NaN (support/ieee_rules.hpp); max of a value held in T
    // is that value, so rounding to T and back changes nothing.
    case BinOp::Min: each([](T x, T y) { return static_cast<T>(min_nan(x, y)); }); break;
    case BinOp::Max: each([](T x, T y) { return static_cast<T>(max_nan(x, y)); }); break;
    case BinOp::Pow: each([](T x, T y) { return std::pow(x, y); }); break;
    default: break;  // comparisons, logic and bit ops: the caller's
  }
}

// An integer binary op in the C type S (wrapping like the GPU); returns the first lane whose
// operands are illegal (division by zero, shift out of range), or kNoLane.
template <class S>
size_t int_binary(BinOp op, const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out) {
  using U = std::make_unsigned_t<S>;
  constexpr int64_t kBits = sizeof(S) * 8;
  const size_t n = out.size();
  auto each = [&](auto f) {
    for (size_t k = 0; k < n; ++k) out[k] = static_cast<int64_t>(f(static_cast<S>(a[k]), static_cast<S>(b[k])));
  };
  if (op == BinOp::Div || op == BinOp::Rem)
    for (size_t k = 0; k < n; ++k)
      if (b[k] == 0) return k;
  if (is_shift(op))
    for (size_t k = 0; k < n; ++k)
      if (b[k] < 0 || b[k] >= kBits) return k;
  switch (op) {
    case BinOp::Add: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) + static_cast<U>(y)); }); break;
    case BinOp::Sub: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) - static_cast<U>(y)); }); break;
    case BinOp::Mul: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) * static_cast<U>(y)); }); break;
    case BinOp::Div:
      each([](S x, S y) {
        if constexpr (std::is_signed_v<S>)
          if (y == -1) return static_cast<S>(U(0) - static_cast<U>(x));
        return static_cast<S>(x / y);
      });
      break;
    case BinOp::Rem:
      each([](S x, S y) {
        if constexpr (std::is_signed_v<S>)
          if (y == -1) return S(0);
        return static_cast<S>(x % y);
      });
      break;
    case BinOp::Min: each([](S x, S y) { return std::min(x, y); }); break;
    case BinOp::Max: each([](S x, S y) { return std::max(x, y); }); break;
    case BinOp::Shl: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) << y); }); break;
    case BinOp::Shr: each([](S x, S y) { return static_cast<S>(x >> y); }); break;
    case BinOp::BitAnd: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) & static_cast<U>(y)); }); break;
    case BinOp::BitOr: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) | static_cast<U>(y)); }); break;
    case BinOp::BitXor: each([](S x, S y) { return static_cast<S>(static_cast<U>(x) ^ static_cast<U>(y)); }); break;
    default: break;  // comparisons, logic, pow: the caller's
  }
  return kNoLane;
}

template <class V>
void compare(BinOp op, const std::vector<V>& a, const std::vector<V>& b, std::vector<int64_t>& out) {
  auto each = [&](auto f) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = f(a[k], b[k]) ? 1 : 0;
  };
  switch (op) {
    case BinOp::Lt: each([](V x, V y) { return x < y; }); break;
    case BinOp::Le: each([](V x, V y) { return x <= y; }); break;
    case BinOp::Gt: each([](V x, V y) { return x > y; }); break;
    case BinOp::Ge: each([](V x, V y) { return x >= y; }); break;
    case BinOp::Eq: each([](V x, V y) { return x == y; }); break;
    case BinOp::Ne: each([](V x, V y) { return x != y; }); break;
    default: break;
  }
}

// Rounds every lane of a 16-bit float result (computed in float) to its format.
void round_lanes(Vals& v) {
  if (v.type == ScalarType::F16 || v.type == ScalarType::BF16)
    for (double& x : v.f) x = kir::round_to(v.type, x);
}

// ---- bytes ----------------------------------------------------------------------------------

double decode_float(ScalarType t, const uint8_t* p) {
  if (t == ScalarType::F16 || t == ScalarType::BF16) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return t == ScalarType::F16 ? kir::f16_bits_to_f32(bits) : kir::bf16_bits_to_f32(bits);
  }
  if (t == ScalarType::F32) {
    float x;
    std::memcpy(&x, p, 4);
    return x;
  }
  double x;
  std::memcpy(&x, p, 8);
  return x;
}

int64_t decode_int(ScalarType t, const uint8_t* p) {
  switch (t) {
    case ScalarType::Pred: return p[0] != 0 ? 1 : 0;
    case ScalarType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case ScalarType::U32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    default: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return x;
    }
  }
}

// Stores a value already rounded to `t`.
void encode_float(ScalarType t, double v, uint8_t* p) {
  if (t == ScalarType::F16 || t == ScalarType::BF16) {
    auto f = static_cast<float>(v);
    uint16_t bits = t == ScalarType::F16 ? kir::f32_to_f16_bits(f) : kir::f32_to_bf16_bits(f);
    std::memcpy(p, &bits, 2);
  } else if (t == ScalarType::F32) {
    auto f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

void encode_int(ScalarType t, int64_t v, uint8_t* p) {
  if (t == ScalarType::Pred) {
    p[0] = v != 0 ? 1 : 0;
  } else if (t == ScalarType::I32 || t == ScalarType::U32) {
    auto x = static_cast<uint32_t>(static_cast<uint64_t>(v));
    std::memcpy(p, &x, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

// Lane k of `v` as the raw words an intrinsic takes (low, high; high only for 8-byte types).
std::pair<uint32_t, uint32_t> to_words(const Vals& v, size_t k) {
  switch (v.type) {
    case ScalarType::F16: return {kir::f32_to_f16_bits(static_cast<float>(v.f[k])), 0};
    case ScalarType::BF16: return {kir::f32_to_bf16_bits(static_cast<float>(v.f[k])), 0};
    case ScalarType::F32: return {kir::f32_bits(static_cast<float>(v.f[k])), 0};
    case ScalarType::F64: {
      auto bits = std::bit_cast<uint64_t>(v.f[k]);
      return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
    }
    default: {
      auto bits = static_cast<uint64_t>(v.i[k]);
      return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
    }
  }
}

// Writes lane k of `v` (of an intrinsic's output type) from raw words.
void from_words(Vals& v, size_t k, uint32_t lo, uint32_t hi) {
  uint64_t wide = lo | static_cast<uint64_t>(hi) << 32;
  switch (v.type) {
    case ScalarType::F16: v.f[k] = kir::f16_bits_to_f32(static_cast<uint16_t>(lo)); break;
    case ScalarType::BF16: v.f[k] = kir::bf16_bits_to_f32(static_cast<uint16_t>(lo)); break;
    case ScalarType::F32: v.f[k] = kir::bits_f32(lo); break;
    case ScalarType::F64: v.f[k] = std::bit_cast<double>(wide); break;
    case ScalarType::Pred: v.i[k] = lo != 0 ? 1 : 0; break;
    case ScalarType::I32: v.i[k] = static_cast<int32_t>(lo); break;
    case ScalarType::U32: v.i[k] = lo; break;
    case ScalarType::I64: v.i[k] = static_cast<int64_t>(wide); break;
  }
}

int type_words(ScalarType t) { return kir::type_bytes(t) == 8 ? 2 : 1; }

int total_words(const std::vector<ScalarType>& types) {
  int words = 0;
  for (ScalarType t : types) words += type_words(t);
  return words;
}

// Extra wavefronts of one warp's shared access of `bytes`-byte elements at `addrs`: for each
// of the 32 four-byte banks, the distinct words it serves; the most of any bank, minus one.
int64_t warp_bank_conflicts(std::span<const uint32_t> addrs, int bytes) {
  std::vector<uint32_t> words;
  for (uint32_t a : addrs)
    for (uint32_t w = a / 4; w <= (a + bytes - 1) / 4; ++w) words.push_back(w);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  std::array<int, kBanks> per_bank{};
  int most = 0;
  for (uint32_t w : words) most = std::max(most, ++per_bank[w % kBanks]);
  return most > 0 ? most - 1 : 0;
}

template void float_unary<float>(UnOp, std::vector<double>&);
template void float_unary<double>(UnOp, std::vector<double>&);
template void float_binary<float>(BinOp, const std::vector<double>&, const std::vector<double>&, std::vector<double>&);
template void float_binary<double>(BinOp, const std::vector<double>&, const std::vector<double>&, std::vector<double>&);
template size_t int_binary<int64_t>(BinOp, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                    std::vector<int64_t>&);
template size_t int_binary<uint32_t>(BinOp, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                     std::vector<int64_t>&);
template size_t int_binary<int32_t>(BinOp, const std::vector<int64_t>&, const std::vector<int64_t>&,
                                    std::vector<int64_t>&);
template void compare<double>(BinOp, const std::vector<double>&, const std::vector<double>&, std::vector<int64_t>&);
template void compare<int64_t>(BinOp, const std::vector<int64_t>&, const std::vector<int64_t>&, std::vector<int64_t>&);

int32_t warp_of(int32_t thread) { return thread / kWarp; }

kir::IntrinsicCall make_call(std::span<const uint32_t> in, std::span<uint32_t> out, int lanes,
                             std::span<const int64_t> imm, kir::MemoryPort* memory) {
  kir::IntrinsicCall c;
  c.in = in;
  c.out = out;
  c.lanes = lanes;
  c.imm = imm;
  c.memory = memory;
  return c;
}

}  // namespace emmy::simt_detail
