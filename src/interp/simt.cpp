// The SIMT interpreter: a block's threads advance in lockstep, every register a vector over
// them; shared memory, asynchronous copies, mbarriers, bank conflicts and races are modelled.
#include "interp/simt.hpp"
#include "support/ieee_rules.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "ir/launch_expr.hpp"
#include "ir/numeric.hpp"

namespace emmy {
namespace {

using kir::dtype_of;

using kir::BinOp;
using kir::Expr;
using kir::IntrinsicId;
using kir::ScalarType;
using kir::Stmt;
using kir::UnOp;

constexpr int kWarp = 32;
constexpr int kBanks = 32;
constexpr int kMaxBlockThreads = 1024;

// The active threads of a block, ascending.
using Lanes = std::vector<int32_t>;

// ---- values -------------------------------------------------------------------------------

// One value per active lane: doubles for the float types (holding exactly the rounded value),
// int64 for the others (pred 0/1, u32 zero-extended, i32 sign-extended).
struct Vals {
  ScalarType type = ScalarType::F32;
  std::vector<double> f;
  std::vector<int64_t> i;
  size_t size() const { return f.size() + i.size(); }
};

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

constexpr size_t kNoLane = static_cast<size_t>(-1);

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

// ---- program-level state ----------------------------------------------------------------------

// A global buffer: raw bytes of its element type.
struct Global {
  std::string name;
  ScalarType type = ScalarType::F32;
  std::vector<int64_t> shape;
  int64_t count = 0;
  std::vector<uint8_t> bytes;
};

struct SharedSlot {
  ScalarType type = ScalarType::F32;
  int64_t count = 0;
  uint32_t offset = 0;
};

struct ScalarParam {
  ScalarType type = ScalarType::I64;
  int64_t value = 0;
};

// What a block of one launch needs: the kernel, its bound parameters and shared layout.
struct Launch {
  const kir::Kernel* kernel = nullptr;
  std::vector<Global>* globals = nullptr;
  std::unordered_map<std::string, int> buffer_of;  // Buffer parameter -> globals index
  std::unordered_map<std::string, ScalarParam> scalars;
  std::unordered_map<std::string, kir::TmaMap> maps;
  std::unordered_map<std::string, SharedSlot> shared;
  uint32_t shared_bytes = 0;
  int64_t grid = 0;
  bool race_check = true;
};

enum class Pending : uint8_t { None, CpAsync, Tma };

// The shadow of one shared byte: the asynchronous copy still to land in it, and who wrote and
// read it in which barrier interval (epoch) for the race check.
struct ByteState {
  uint32_t write_epoch = 0, read_epoch = 0;
  int32_t writer = -1;       // a thread; -1: every thread may read it (a landed TMA box)
  int32_t reader_warp = -1;  // the warp that read it this epoch, or kManyWarps
  Pending pending = Pending::None;
};
constexpr int32_t kManyWarps = -2;

// Shared memory of the block being run, reused by the blocks of a launch; epochs keep
// increasing across blocks, so an older block's shadow never reads as current.
struct SharedScratch {
  std::vector<uint8_t> data;
  std::vector<ByteState> state;
  uint32_t epoch = 0;
};

struct AsyncWrite {
  uint32_t addr = 0;
  std::vector<uint8_t> bytes;
};

// The cp.async groups of one thread: committed ones, oldest first, and the open one.
// A register element a wgmma writes asynchronously: its name, which declaration of the name
// (the stack's depth), and its slot.
struct PendingReg {
  std::string name;
  size_t depth = 0;
  size_t slot = 0;
};

struct ThreadAsync {
  std::vector<std::vector<AsyncWrite>> committed;
  std::vector<AsyncWrite> open;
  // wgmma accumulators in flight: readable (but by another wgmma) only after the
  // wgmma.wait_group that retires their commit group.
  std::vector<std::vector<PendingReg>> wgmma_committed;
  std::vector<PendingReg> wgmma_open;
};

struct Mbarrier {
  int64_t count = 0;                 // arrivals per phase
  int64_t pending = 0;               // arrivals the current phase still needs
  int64_t tx = 0;                    // transaction bytes expected minus bytes issued in the current phase
  uint32_t phase = 0;                // phases completed
  std::vector<AsyncWrite> inflight;  // TMA boxes of the current phase
  std::vector<AsyncWrite> landing;   // boxes of completed phases: they land at the next wait
};

constexpr uint8_t kInFlight = 2;  // Register::init of a wgmma accumulator before its wait_group

struct Register {
  ScalarType type = ScalarType::F32;
  int count = 1;
  std::vector<double> f;  // [elem * threads + thread]
  std::vector<int64_t> i;
  std::vector<uint8_t> init;  // 0 never written, 1 written, kInFlight
};

// The registers in scope: a stack per name (inner declarations shadow outer ones).
class Registers {
 public:
  explicit Registers(int threads) : threads_(threads) {}
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() {
    for (const std::string& name : scopes_.back()) stacks_[name].pop_back();
    scopes_.pop_back();
  }
  Register& declare(const std::string& name, ScalarType type, int count) {
    Register r;
    r.type = type;
    r.count = count;
    size_t n = static_cast<size_t>(count) * static_cast<size_t>(threads_);
    if (is_f(type))
      r.f.resize(n);
    else
      r.i.resize(n);
    r.init.assign(n, 0);
    scopes_.back().push_back(name);
    return stacks_[name].emplace_back(std::move(r));
  }
  Register* find(const std::string& name) {
    auto it = stacks_.find(name);
    return it == stacks_.end() || it->second.empty() ? nullptr : &it->second.back();
  }
  // How many declarations of `name` are in scope, and the depth-th (1-based) one, if still there.
  size_t depth(const std::string& name) const {
    auto it = stacks_.find(name);
    return it == stacks_.end() ? 0 : it->second.size();
  }
  Register* at(const std::string& name, size_t depth) {
    auto it = stacks_.find(name);
    return it == stacks_.end() || it->second.size() < depth || depth == 0 ? nullptr : &it->second[depth - 1];
  }

 private:
  int threads_;
  std::unordered_map<std::string, std::vector<Register>> stacks_;
  std::vector<std::vector<std::string>> scopes_;
};

void store_lanes(Register& r, int elem, const Vals& v, const Lanes& lanes, int threads) {
  size_t base = static_cast<size_t>(elem) * static_cast<size_t>(threads);
  for (size_t k = 0; k < lanes.size(); ++k) {
    size_t at = base + static_cast<size_t>(lanes[k]);
    if (is_f(r.type))
      r.f[at] = v.f[k];
    else
      r.i[at] = v.i[k];
    r.init[at] = 1;
  }
}

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

constexpr std::array<std::string_view, 10> kExprKinds{"constant", "register", "special", "parameter", "unary",
                                                      "binary",   "select",   "cast",    "load",      "shared address"};

// ---- one block ---------------------------------------------------------------------------------

class Block;

// The memory an intrinsic touches: direct, or (cp.async, TMA) queued until its wait.
class Port final : public kir::MemoryPort {
 public:
  enum class Mode { Direct, CpAsync, Tma };
  Port(Block& block, int32_t thread, Mode mode, Mbarrier* mbarrier = nullptr)
      : block_(block), thread_(thread), mode_(mode), mbarrier_(mbarrier) {}
  void read_shared(uint32_t byte_addr, void* dst, uint32_t bytes) override;
  void write_shared(uint32_t byte_addr, const void* src, uint32_t bytes) override;
  void read_global(int buffer, uint64_t byte_offset, void* dst, uint32_t bytes) override;
  void write_global(int buffer, uint64_t byte_offset, const void* src, uint32_t bytes) override;
  int64_t bytes_written() const { return written_; }

 private:
  Block& block_;
  int32_t thread_;
  Mode mode_;
  Mbarrier* mbarrier_;
  int64_t written_ = 0;
};

class Block {
 public:
  Block(const Launch& launch, SharedScratch& smem, int64_t id, SimtReport& report)
      : launch_(launch),
        kernel_(*launch.kernel),
        smem_(smem),
        id_(id),
        threads_(kernel_.block_threads),
        report_(report),
        regs_(threads_),
        async_(static_cast<size_t>(threads_)) {}

  void run();

  // Memory, for Port.
  void shared_read(int32_t t, uint32_t addr, void* dst, uint32_t bytes);
  void shared_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes);
  AsyncWrite queue_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes, Pending kind);
  void queue_cp_async(int32_t t, AsyncWrite write) { async_[static_cast<size_t>(t)].open.push_back(std::move(write)); }
  void global_read(int32_t t, int buffer, uint64_t offset, void* dst, uint32_t bytes, bool cp_async);
  void global_write(int32_t t, int buffer, uint64_t offset, const void* src, uint32_t bytes);

 private:
  [[noreturn]] void fail(int32_t thread, const std::string& what) const {
    throw SimtError(fmt::format("kernel {}: {} (block {}, thread {})", kernel_.name, what, id_, thread));
  }
  std::string describe_shared(uint32_t addr) const;

  // Statements.
  void exec_body(const std::vector<Stmt>& body, const Lanes& lanes);
  void exec(const Stmt& s, const Lanes& lanes);
  void exec_decl(const Stmt& s, const Lanes& lanes);
  void exec_assign(const Stmt& s, const Lanes& lanes);
  void exec_store(const Stmt& s, const Lanes& lanes);
  void exec_for(const Stmt& s, const Lanes& lanes);
  void exec_if(const Stmt& s, const Lanes& lanes);
  void exec_barrier(const Lanes& lanes);
  void exec_intrinsic(const Stmt& s, const Lanes& lanes);
  void exec_vector(const Stmt& s, const Lanes& lanes);
  void exec_shared_vector(const Stmt& s, const Vals& idx, Register& r, const Lanes& lanes);
  void unpack_lane(const Stmt& s, Register& r, int32_t t, const uint8_t* at);
  void pack_lane(const Stmt& s, const Register& r, int32_t t, uint8_t* at);

  // Expressions.
  Vals eval(const Expr& e, const Lanes& lanes);
  Vals eval_node(const Expr& e, const Lanes& lanes);
  Vals eval_const(const Expr& e, size_t n) const;
  Vals eval_var(const Expr& e, const Lanes& lanes);
  Vals eval_special(const Expr& e, const Lanes& lanes) const;
  Vals eval_param(const Expr& e, const Lanes& lanes) const;
  Vals eval_unary(const Expr& e, const Lanes& lanes);
  Vals eval_binary(const Expr& e, const Lanes& lanes);
  Vals eval_logical(const Expr& e, const Lanes& lanes);
  Vals eval_select(const Expr& e, const Lanes& lanes);
  Vals eval_load(const Expr& e, const Lanes& lanes);
  Vals eval_shared_addr(const Expr& e, const Lanes& lanes);
  Vals eval_index(const Expr& e, const Lanes& lanes);

  // Registers and memory.
  Register& reg(const kir::Reg& r, int32_t thread, int* elem);
  int buffer_index(const std::string& name, int32_t thread) const;
  const SharedSlot& slot(const std::string& name, int32_t thread) const;
  std::vector<uint32_t> shared_addrs(const SharedSlot& s, const std::string& name, const Vals& idx, const Lanes& lanes);
  void count_shared(const Lanes& lanes, const std::vector<uint32_t>& addrs, int bytes);
  void check_read(int32_t t, uint32_t addr, uint32_t bytes);
  void check_write(int32_t t, uint32_t addr, uint32_t bytes, bool async);
  void check_window(int32_t t, uint32_t addr, uint32_t bytes) const;
  void land(const AsyncWrite& w, int32_t writer);
  void drop_pending();
  void store_global(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes);
  void store_shared(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes);

  // Intrinsics.
  const kir::IntrinsicInfo& intrinsic(const Stmt& s, int32_t thread) const;
  std::vector<uint32_t> operand_words(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes);
  void write_outs(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& out);
  void call(const kir::IntrinsicInfo& info, kir::IntrinsicCall& c, int32_t thread);
  void run_warps(const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in,
                 std::vector<uint32_t>& out, std::span<const int64_t> imm, int group);
  void issue_async(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in);
  bool ordering(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in);
  void mark_in_flight(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes);
  void check_not_in_flight(const Register& r, int elem, const kir::Reg& name, const Lanes& lanes);
  void wgmma_groups(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes);
  Mbarrier& mbarrier(int32_t t, uint32_t addr);
  void try_complete(Mbarrier& m);
  void wait_mbarrier(int32_t t, uint32_t addr, uint32_t parity);

  const Launch& launch_;
  const kir::Kernel& kernel_;
  SharedScratch& smem_;
  int64_t id_;
  int threads_;
  SimtReport& report_;
  Registers regs_;
  std::vector<ThreadAsync> async_;
  bool wgmma_operands_ = false;  // a wgmma's operands are being read (its chain's accumulator may be in flight)
  std::unordered_map<uint32_t, Mbarrier> mbarriers_;
};

void Port::read_shared(uint32_t byte_addr, void* dst, uint32_t bytes) {
  block_.shared_read(thread_, byte_addr, dst, bytes);
}

void Port::write_shared(uint32_t byte_addr, const void* src, uint32_t bytes) {
  written_ += bytes;
  if (mode_ == Mode::Direct) return block_.shared_write(thread_, byte_addr, src, bytes);
  AsyncWrite w =
      block_.queue_write(thread_, byte_addr, src, bytes, mode_ == Mode::CpAsync ? Pending::CpAsync : Pending::Tma);
  if (mode_ == Mode::CpAsync)
    block_.queue_cp_async(thread_, std::move(w));
  else
    mbarrier_->inflight.push_back(std::move(w));
}

void Port::read_global(int buffer, uint64_t byte_offset, void* dst, uint32_t bytes) {
  block_.global_read(thread_, buffer, byte_offset, dst, bytes, mode_ == Mode::CpAsync);
}

void Port::write_global(int buffer, uint64_t byte_offset, const void* src, uint32_t bytes) {
  block_.global_write(thread_, buffer, byte_offset, src, bytes);
}

void Block::run() {
  Lanes all(static_cast<size_t>(threads_));
  std::iota(all.begin(), all.end(), 0);
  ++smem_.epoch;
  std::fill(smem_.data.begin(), smem_.data.end(), uint8_t{0xff});
  exec_body(kernel_.body, all);
  drop_pending();
}

// Asynchronous copies never waited for are dropped with the block; their bytes stop pending.
void Block::drop_pending() {
  auto clear = [this](const std::vector<AsyncWrite>& writes) {
    for (const AsyncWrite& w : writes)
      for (size_t b = 0; b < w.bytes.size(); ++b) smem_.state[w.addr + b].pending = Pending::None;
  };
  for (const ThreadAsync& a : async_) {
    clear(a.open);
    for (const auto& group : a.committed) clear(group);
  }
  for (const auto& [addr, m] : mbarriers_) {
    clear(m.inflight);
    clear(m.landing);
  }
}

std::string Block::describe_shared(uint32_t addr) const {
  for (const auto& [name, s] : launch_.shared) {
    auto bytes = static_cast<uint32_t>(kir::type_bytes(s.type));
    if (addr >= s.offset && addr < s.offset + s.count * bytes)
      return fmt::format("shared {}[{}]", name, (addr - s.offset) / bytes);
  }
  return fmt::format("shared byte {}", addr);
}

// ---- statements ----------------------------------------------------------------------------------

void Block::exec_body(const std::vector<Stmt>& body, const Lanes& lanes) {
  regs_.push_scope();
  for (const Stmt& s : body) exec(s, lanes);
  regs_.pop_scope();
}

void Block::exec(const Stmt& s, const Lanes& lanes) {
  switch (s.kind) {
    case Stmt::Kind::Decl: return exec_decl(s, lanes);
    case Stmt::Kind::Assign: return exec_assign(s, lanes);
    case Stmt::Kind::Store: return exec_store(s, lanes);
    case Stmt::Kind::For: return exec_for(s, lanes);
    case Stmt::Kind::If: return exec_if(s, lanes);
    case Stmt::Kind::Barrier: return exec_barrier(lanes);
    case Stmt::Kind::Intrinsic: return exec_intrinsic(s, lanes);
    case Stmt::Kind::Comment: return;
    case Stmt::Kind::VecLoad:
    case Stmt::Kind::VecStore: return exec_vector(s, lanes);
  }
}

void Block::exec_decl(const Stmt& s, const Lanes& lanes) {
  if (s.count < 1) fail(lanes[0], fmt::format("register {} declared with {} elements", s.reg.name, s.count));
  std::optional<Vals> init;
  if (!s.args.empty()) init = convert(eval(s.args[0], lanes), s.type);
  Register& r = regs_.declare(s.reg.name, s.type, s.count);
  if (init)
    for (int e = 0; e < s.count; ++e) store_lanes(r, e, *init, lanes, threads_);
}

void Block::exec_assign(const Stmt& s, const Lanes& lanes) {
  Vals v = eval(s.args[0], lanes);
  int elem = 0;
  Register& r = reg(s.reg, lanes[0], &elem);
  check_not_in_flight(r, elem, s.reg, lanes);
  store_lanes(r, elem, convert(std::move(v), r.type), lanes, threads_);
}

// A write to an accumulator a wgmma still writes races with it (the wgmma's result may land after).
void Block::check_not_in_flight(const Register& r, int elem, const kir::Reg& name, const Lanes& lanes) {
  const size_t base = static_cast<size_t>(elem) * static_cast<size_t>(threads_);
  for (int32_t t : lanes)
    if (r.init[base + static_cast<size_t>(t)] == kInFlight)
      fail(t, fmt::format("write of {}{} before wgmma.wait_group: it is the accumulator of a wgmma still in flight",
                          name.name, name.elem < 0 ? std::string() : fmt::format("[{}]", name.elem)));
}

void Block::exec_store(const Stmt& s, const Lanes& lanes) {
  Vals idx = eval_index(s.args[0], lanes);
  Vals val = eval(s.args[1], lanes);
  if (s.space == kir::Space::Global)
    store_global(s, idx, std::move(val), lanes);
  else
    store_shared(s, idx, std::move(val), lanes);
}

void Block::exec_for(const Stmt& s, const Lanes& lanes) {
  if (is_f(s.type) || s.type == ScalarType::Pred)
    fail(lanes[0], fmt::format("loop variable {} must be i32, i64 or u32", s.reg.name));
  if (s.step <= 0) fail(lanes[0], fmt::format("loop over {} has step {} (must be positive)", s.reg.name, s.step));
  regs_.push_scope();
  Vals lo = convert(eval(s.args[0], lanes), s.type);
  store_lanes(regs_.declare(s.reg.name, s.type, 1), 0, lo, lanes, threads_);
  Expr cond = kir::binary(BinOp::Lt, kir::var(kir::Reg{s.reg.name, -1}, s.type), s.args[1]);
  Lanes live = lanes;
  while (true) {
    Vals c = eval(cond, live);
    Lanes next;
    for (size_t k = 0; k < live.size(); ++k)
      if (c.i[k] != 0) next.push_back(live[k]);
    if (next.empty()) break;
    live = std::move(next);
    exec_body(s.body, live);
    Register* r = regs_.find(s.reg.name);
    for (int32_t t : live) r->i[static_cast<size_t>(t)] = wrap_int(s.type, r->i[static_cast<size_t>(t)] + s.step);
  }
  regs_.pop_scope();
}

void Block::exec_if(const Stmt& s, const Lanes& lanes) {
  Vals c = eval(s.args[0], lanes);
  Lanes yes, no;
  for (size_t k = 0; k < lanes.size(); ++k) (truth(c, k) ? yes : no).push_back(lanes[k]);
  if (!yes.empty()) exec_body(s.body, yes);
  if (!no.empty() && !s.orelse.empty()) exec_body(s.orelse, no);
}

void Block::exec_barrier(const Lanes& lanes) {
  if (static_cast<int>(lanes.size()) != threads_) {
    int32_t missing = 0;
    while (missing < threads_ && std::binary_search(lanes.begin(), lanes.end(), missing)) ++missing;
    fail(lanes[0], fmt::format("barrier divergence: {} of {} threads reach the barrier (thread {} does not)",
                               lanes.size(), threads_, missing));
  }
  ++smem_.epoch;
}

// A vector access: `count` elements of a global buffer or shared array to or from a register
// array, one access per thread that the GPU faults on unless its byte address is a multiple of
// its size.
void Block::exec_vector(const Stmt& s, const Lanes& lanes) {
  bool load = s.kind == Stmt::Kind::VecLoad;
  Vals idx = eval_index(s.args[0], lanes);
  Register* r = regs_.find(s.reg.name);
  if (r == nullptr) fail(lanes[0], fmt::format("register {} is not declared", s.reg.name));
  if (r->count != s.count || r->type != s.type)
    fail(lanes[0], fmt::format("vector access of {} {} through register array {} of {} {}", s.count,
                               kir::type_name(s.type), s.reg.name, r->count, kir::type_name(r->type)));
  if (s.space == kir::Space::Shared) return exec_shared_vector(s, idx, *r, lanes);
  Global& g = (*launch_.globals)[static_cast<size_t>(buffer_index(s.name, lanes[0]))];
  if (g.type != s.type)
    fail(lanes[0], fmt::format("vector {} of {} {} buffer {} of {}", load ? "load" : "store", s.count,
                               kir::type_name(s.type), g.name, kir::type_name(g.type)));
  if (!load)
    if (const kir::Param* p = kernel_.find_param(s.name); p != nullptr && p->is_const)
      fail(lanes[0], fmt::format("vector store to buffer {}, a const parameter", s.name));
  auto bytes = static_cast<size_t>(kir::type_bytes(g.type));
  size_t width = bytes * static_cast<size_t>(s.count);
  for (size_t k = 0; k < lanes.size(); ++k) {
    int64_t first = idx.i[k];
    if (first < 0 || first + s.count > g.count)
      fail(lanes[k], fmt::format("global vector {} out of bounds: buffer {} elements [{}, {}) ({} elements)",
                                 load ? "load" : "store", g.name, first, first + s.count, g.count));
    if ((static_cast<size_t>(first) * bytes) % width != 0)
      fail(lanes[k],
           fmt::format("misaligned vector {}: {} bytes of buffer {} at byte {} (element {}), not a "
                       "multiple of {}; the GPU faults on it",
                       load ? "load" : "store", width, g.name, static_cast<size_t>(first) * bytes, first, width));
    uint8_t* at = g.bytes.data() + static_cast<size_t>(first) * bytes;
    if (load)
      unpack_lane(s, *r, lanes[k], at);
    else
      pack_lane(s, *r, lanes[k], at);
  }
}

void Block::exec_shared_vector(const Stmt& s, const Vals& idx, Register& r, const Lanes& lanes) {
  bool load = s.kind == Stmt::Kind::VecLoad;
  const SharedSlot& sl = slot(s.name, lanes[0]);
  if (sl.type != s.type)
    fail(lanes[0], fmt::format("vector {} of {} {} shared {} of {}", load ? "load" : "store", s.count,
                               kir::type_name(s.type), s.name, kir::type_name(sl.type)));
  const uint32_t width = static_cast<uint32_t>(kir::type_bytes(s.type)) * static_cast<uint32_t>(s.count);
  Vals last = idx;  // the last element of each lane's access, bounds-checked with the first
  for (int64_t& i : last.i) i += s.count - 1;
  std::vector<uint32_t> addrs = shared_addrs(sl, s.name, idx, lanes);
  shared_addrs(sl, s.name, last, lanes);
  count_shared(lanes, addrs, static_cast<int>(width));
  std::vector<uint8_t> word(width);
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (addrs[k] % width != 0)
      fail(lanes[k], fmt::format("misaligned shared vector {}: {} bytes at {}, not a multiple of {}",
                                 load ? "load" : "store", width, describe_shared(addrs[k]), width));
    if (load) {
      shared_read(lanes[k], addrs[k], word.data(), width);
      unpack_lane(s, r, lanes[k], word.data());
    } else {
      pack_lane(s, r, lanes[k], word.data());
      shared_write(lanes[k], addrs[k], word.data(), width);
    }
  }
}

// Lane t's register array (s.count elements of s.type) from or into consecutive bytes at `at`.
void Block::unpack_lane(const Stmt& s, Register& r, int32_t t, const uint8_t* at) {
  const auto bytes = static_cast<size_t>(kir::type_bytes(s.type));
  for (int e = 0; e < s.count; ++e) {
    size_t slot = static_cast<size_t>(e) * static_cast<size_t>(threads_) + static_cast<size_t>(t);
    const uint8_t* p = at + static_cast<size_t>(e) * bytes;
    if (is_f(s.type))
      r.f[slot] = decode_float(s.type, p);
    else
      r.i[slot] = decode_int(s.type, p);
    r.init[slot] = 1;
  }
}

void Block::pack_lane(const Stmt& s, const Register& r, int32_t t, uint8_t* at) {
  const auto bytes = static_cast<size_t>(kir::type_bytes(s.type));
  for (int e = 0; e < s.count; ++e) {
    size_t slot = static_cast<size_t>(e) * static_cast<size_t>(threads_) + static_cast<size_t>(t);
    if (!r.init[slot]) fail(t, fmt::format("vector store of uninitialized register {}[{}]", s.reg.name, e));
    uint8_t* p = at + static_cast<size_t>(e) * bytes;
    if (is_f(s.type))
      encode_float(s.type, r.f[slot], p);
    else
      encode_int(s.type, r.i[slot], p);
  }
}

// ---- expressions ---------------------------------------------------------------------------------

Vals Block::eval(const Expr& e, const Lanes& lanes) {
  Vals v = eval_node(e, lanes);
  if (v.type != e.type)
    fail(lanes.empty() ? -1 : lanes[0],
         fmt::format("IR type mismatch: a {} typed {} computes {}", kExprKinds[static_cast<size_t>(e.kind)],
                     kir::type_name(e.type), kir::type_name(v.type)));
  return v;
}

Vals Block::eval_node(const Expr& e, const Lanes& lanes) {
  switch (e.kind) {
    case Expr::Kind::Const: return eval_const(e, lanes.size());
    case Expr::Kind::Var: return eval_var(e, lanes);
    case Expr::Kind::Special: return eval_special(e, lanes);
    case Expr::Kind::Param: return eval_param(e, lanes);
    case Expr::Kind::Unary: return eval_unary(e, lanes);
    case Expr::Kind::Binary: return is_logical(e.bin) ? eval_logical(e, lanes) : eval_binary(e, lanes);
    case Expr::Kind::Select: return eval_select(e, lanes);
    case Expr::Kind::Cast: return convert(eval(e.args[0], lanes), e.type);
    case Expr::Kind::Load: return eval_load(e, lanes);
    case Expr::Kind::SharedAddr: return eval_shared_addr(e, lanes);
  }
  return {};
}

Vals Block::eval_const(const Expr& e, size_t n) const {
  Vals v = make_vals(e.type, n);
  if (is_f(e.type))
    std::fill(v.f.begin(), v.f.end(), kir::round_to(e.type, e.fval));
  else
    std::fill(v.i.begin(), v.i.end(), wrap_int(e.type, e.ival));
  return v;
}

Register& Block::reg(const kir::Reg& r, int32_t thread, int* elem) {
  Register* found = regs_.find(r.name);
  if (found == nullptr) fail(thread, fmt::format("register {} is not declared", r.name));
  if (r.elem < 0 && found->count != 1)
    fail(thread, fmt::format("register array {}[{}] used without an element", r.name, found->count));
  if (r.elem >= found->count)
    fail(thread, fmt::format("register element {}[{}] out of bounds (array of {})", r.name, r.elem, found->count));
  *elem = std::max(r.elem, 0);
  return *found;
}

Vals Block::eval_var(const Expr& e, const Lanes& lanes) {
  int elem = 0;
  Register& r = reg(e.reg, lanes[0], &elem);
  size_t base = static_cast<size_t>(elem) * static_cast<size_t>(threads_);
  size_t n = lanes.size();
  for (size_t k = 0; k < n; ++k) {
    const uint8_t state = r.init[base + static_cast<size_t>(lanes[k])];
    if (!state)
      fail(lanes[k], fmt::format("read of uninitialized register {}{}", e.reg.name,
                                 e.reg.elem < 0 ? std::string() : fmt::format("[{}]", e.reg.elem)));
    if (state == kInFlight && !wgmma_operands_)
      fail(lanes[k], fmt::format("read of {}{} before wgmma.wait_group: it is the accumulator of a wgmma still in "
                                 "flight (commit its group and wait for it first)",
                                 e.reg.name, e.reg.elem < 0 ? std::string() : fmt::format("[{}]", e.reg.elem)));
  }
  Vals v = make_vals(r.type, n);
  if (is_f(r.type))
    for (size_t k = 0; k < n; ++k) v.f[k] = r.f[base + static_cast<size_t>(lanes[k])];
  else
    for (size_t k = 0; k < n; ++k) v.i[k] = r.i[base + static_cast<size_t>(lanes[k])];
  return v;
}

Vals Block::eval_special(const Expr& e, const Lanes& lanes) const {
  Vals v = make_vals(ScalarType::I32, lanes.size());
  for (size_t k = 0; k < lanes.size(); ++k) {
    int32_t t = lanes[k];
    switch (e.special) {
      case kir::Special::ThreadIdx: v.i[k] = t; break;
      case kir::Special::BlockIdx: v.i[k] = id_; break;
      case kir::Special::BlockDim: v.i[k] = threads_; break;
      case kir::Special::GridDim: v.i[k] = launch_.grid; break;
      case kir::Special::LaneId: v.i[k] = t & (kWarp - 1); break;
      case kir::Special::WarpId: v.i[k] = t >> 5; break;
    }
  }
  return v;
}

Vals Block::eval_param(const Expr& e, const Lanes& lanes) const {
  auto it = launch_.scalars.find(e.name);
  if (it == launch_.scalars.end()) fail(lanes[0], fmt::format("{} is not a scalar parameter of the kernel", e.name));
  Vals v = make_vals(it->second.type, lanes.size());
  if (is_f(v.type))
    std::fill(v.f.begin(), v.f.end(), int_to_float(v.type, it->second.value));
  else
    std::fill(v.i.begin(), v.i.end(), it->second.value);
  return v;
}

Vals Block::eval_unary(const Expr& e, const Lanes& lanes) {
  Vals v = eval(e.args[0], lanes);
  if (e.un == UnOp::Not) {
    Vals out = make_vals(ScalarType::Pred, lanes.size());
    for (size_t k = 0; k < lanes.size(); ++k) out.i[k] = truth(v, k) ? 0 : 1;
    return out;
  }
  if (v.type == ScalarType::F64) {
    float_unary<double>(e.un, v.f);
  } else if (is_f(v.type)) {
    float_unary<float>(e.un, v.f);
    round_lanes(v);
  } else if (v.type != ScalarType::Pred && (e.un == UnOp::Neg || e.un == UnOp::Abs)) {
    for (int64_t& x : v.i)
      x = wrap_int(v.type, (e.un == UnOp::Abs && x >= 0) ? x : static_cast<int64_t>(0ULL - static_cast<uint64_t>(x)));
  } else {
    fail(lanes[0], fmt::format("{} of a {} value", kir::unop_name(e.un), kir::type_name(v.type)));
  }
  return v;
}

Vals Block::eval_binary(const Expr& e, const Lanes& lanes) {
  Vals a = eval(e.args[0], lanes), b = eval(e.args[1], lanes);
  int32_t t0 = lanes[0];
  std::optional<ScalarType> common = is_shift(e.bin) ? a.type : common_type(a.type, b.type);
  if (!common)
    fail(t0, fmt::format("'{}' of {} and {}: CUDA has no common type (cast one operand)", kir::binop_name(e.bin),
                         kir::type_name(a.type), kir::type_name(b.type)));
  bool cmp = kir::is_comparison(e.bin);
  if (!cmp && *common != e.type)
    fail(t0,
         fmt::format("'{}' of {} and {} is {} in CUDA, the IR says {}", kir::binop_name(e.bin), kir::type_name(a.type),
                     kir::type_name(b.type), kir::type_name(*common), kir::type_name(e.type)));
  a = convert(std::move(a), *common);
  if (!is_shift(e.bin)) b = convert(std::move(b), *common);
  size_t n = lanes.size();
  Vals out = make_vals(cmp ? ScalarType::Pred : *common, n);
  if (cmp) {
    if (is_f(*common))
      compare(e.bin, a.f, b.f, out.i);
    else
      compare(e.bin, a.i, b.i, out.i);
    return out;
  }
  if (is_f(*common)) {
    if (is_bitwise(e.bin)) fail(t0, fmt::format("'{}' of {} values", kir::binop_name(e.bin), kir::type_name(*common)));
    if (*common == ScalarType::F64)
      float_binary<double>(e.bin, a.f, b.f, out.f);
    else
      float_binary<float>(e.bin, a.f, b.f, out.f);
    round_lanes(out);
    return out;
  }
  if (is_f(b.type)) fail(t0, fmt::format("shift by a {} amount", kir::type_name(b.type)));
  bool pred_ok = e.bin == BinOp::Min || e.bin == BinOp::Max || e.bin >= BinOp::BitAnd;
  if (e.bin == BinOp::Pow || (*common == ScalarType::Pred && !pred_ok))
    fail(t0, fmt::format("'{}' of {} values", kir::binop_name(e.bin), kir::type_name(*common)));
  size_t bad = *common == ScalarType::I64   ? int_binary<int64_t>(e.bin, a.i, b.i, out.i)
               : *common == ScalarType::U32 ? int_binary<uint32_t>(e.bin, a.i, b.i, out.i)
                                            : int_binary<int32_t>(e.bin, a.i, b.i, out.i);
  if (bad != kNoLane)
    fail(lanes[bad], is_shift(e.bin) ? fmt::format("shift by {} of a {} value", b.i[bad], kir::type_name(*common))
                                     : fmt::format("integer division by zero ('{}')", kir::binop_name(e.bin)));
  return out;
}

// && and ||, short-circuit: the right operand runs only on the lanes that need it.
Vals Block::eval_logical(const Expr& e, const Lanes& lanes) {
  Vals a = eval(e.args[0], lanes);
  bool is_and = e.bin == BinOp::And;
  Lanes rest;
  for (size_t k = 0; k < lanes.size(); ++k)
    if (truth(a, k) == is_and) rest.push_back(lanes[k]);
  Vals b = rest.empty() ? Vals{} : eval(e.args[1], rest);
  Vals out = make_vals(ScalarType::Pred, lanes.size());
  for (size_t k = 0, j = 0; k < lanes.size(); ++k) {
    if (truth(a, k) != is_and) {
      out.i[k] = is_and ? 0 : 1;
    } else {
      out.i[k] = truth(b, j++) ? 1 : 0;
    }
  }
  return out;
}

// p ? a : b evaluates each side only on the lanes that take it (a guarded load stays legal).
Vals Block::eval_select(const Expr& e, const Lanes& lanes) {
  std::optional<ScalarType> type = common_type(e.args[1].type, e.args[2].type);
  if (!type || *type != e.type)
    fail(lanes[0], fmt::format("select of {} and {} typed {}", kir::type_name(e.args[1].type),
                               kir::type_name(e.args[2].type), kir::type_name(e.type)));
  Vals c = eval(e.args[0], lanes);
  Lanes yes, no;
  for (size_t k = 0; k < lanes.size(); ++k) (truth(c, k) ? yes : no).push_back(lanes[k]);
  Vals a = yes.empty() ? make_vals(*type, 0) : convert(eval(e.args[1], yes), *type);
  Vals b = no.empty() ? make_vals(*type, 0) : convert(eval(e.args[2], no), *type);
  Vals out = make_vals(*type, lanes.size());
  for (size_t k = 0, y = 0, z = 0; k < lanes.size(); ++k) {
    bool take = truth(c, k);
    if (is_f(*type))
      out.f[k] = take ? a.f[y++] : b.f[z++];
    else
      out.i[k] = take ? a.i[y++] : b.i[z++];
  }
  return out;
}

Vals Block::eval_index(const Expr& e, const Lanes& lanes) {
  Vals idx = eval(e, lanes);
  if (is_f(idx.type)) fail(lanes[0], fmt::format("memory index of type {}", kir::type_name(idx.type)));
  return idx;
}

int Block::buffer_index(const std::string& name, int32_t thread) const {
  auto it = launch_.buffer_of.find(name);
  if (it == launch_.buffer_of.end()) fail(thread, fmt::format("{} is not a buffer parameter of the kernel", name));
  return it->second;
}

const SharedSlot& Block::slot(const std::string& name, int32_t thread) const {
  auto it = launch_.shared.find(name);
  if (it == launch_.shared.end()) fail(thread, fmt::format("{} is not a shared array of the kernel", name));
  return it->second;
}

std::vector<uint32_t> Block::shared_addrs(const SharedSlot& s, const std::string& name, const Vals& idx,
                                          const Lanes& lanes) {
  std::vector<uint32_t> addrs(lanes.size());
  auto bytes = static_cast<uint32_t>(kir::type_bytes(s.type));
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (idx.i[k] < 0 || idx.i[k] >= s.count)
      fail(lanes[k], fmt::format("shared access out of bounds: {}[{}] (array of {})", name, idx.i[k], s.count));
    addrs[k] = s.offset + static_cast<uint32_t>(idx.i[k]) * bytes;
  }
  return addrs;
}

// Accesses wider than a word are served a phase of 128 bytes at a time (8 lanes of 16 bytes,
// 16 of 8): conflicts count within each phase, so a dense 16-byte warp access counts none.
void Block::count_shared(const Lanes& lanes, const std::vector<uint32_t>& addrs, int bytes) {
  const size_t phase = static_cast<size_t>(bytes > 4 ? 128 / bytes : kWarp);
  for (size_t p = 0; p < lanes.size();) {
    size_t q = p;
    while (q < lanes.size() && warp_of(lanes[q]) == warp_of(lanes[p])) ++q;
    ++report_.shared_accesses;
    for (size_t f = p; f < q; f += phase)
      report_.bank_conflicts += warp_bank_conflicts(std::span(addrs).subspan(f, std::min(phase, q - f)), bytes);
    p = q;
  }
}

Vals Block::eval_load(const Expr& e, const Lanes& lanes) {
  Vals idx = eval_index(e.args[0], lanes);
  size_t n = lanes.size();
  Vals v = make_vals(e.type, n);
  if (e.space == kir::Space::Global) {
    const Global& g = (*launch_.globals)[static_cast<size_t>(buffer_index(e.name, lanes[0]))];
    if (g.type != e.type)
      fail(lanes[0],
           fmt::format("load of {} from buffer {} of {}", kir::type_name(e.type), g.name, kir::type_name(g.type)));
    auto bytes = static_cast<size_t>(kir::type_bytes(g.type));
    for (size_t k = 0; k < n; ++k) {
      if (idx.i[k] < 0 || idx.i[k] >= g.count)
        fail(lanes[k],
             fmt::format("global load out of bounds: buffer {} index {} ({} elements)", g.name, idx.i[k], g.count));
      const uint8_t* p = g.bytes.data() + static_cast<size_t>(idx.i[k]) * bytes;
      if (is_f(g.type))
        v.f[k] = decode_float(g.type, p);
      else
        v.i[k] = decode_int(g.type, p);
    }
    return v;
  }
  const SharedSlot& s = slot(e.name, lanes[0]);
  if (s.type != e.type)
    fail(lanes[0],
         fmt::format("load of {} from shared {} of {}", kir::type_name(e.type), e.name, kir::type_name(s.type)));
  std::vector<uint32_t> addrs = shared_addrs(s, e.name, idx, lanes);
  int bytes = kir::type_bytes(s.type);
  count_shared(lanes, addrs, bytes);
  for (size_t k = 0; k < n; ++k) {
    check_read(lanes[k], addrs[k], static_cast<uint32_t>(bytes));
    const uint8_t* p = smem_.data.data() + addrs[k];
    if (is_f(s.type))
      v.f[k] = decode_float(s.type, p);
    else
      v.i[k] = decode_int(s.type, p);
  }
  return v;
}

Vals Block::eval_shared_addr(const Expr& e, const Lanes& lanes) {
  Vals idx = eval_index(e.args[0], lanes);
  std::vector<uint32_t> addrs = shared_addrs(slot(e.name, lanes[0]), e.name, idx, lanes);
  Vals v = make_vals(ScalarType::U32, lanes.size());
  for (size_t k = 0; k < lanes.size(); ++k) v.i[k] = addrs[k];
  return v;
}

// ---- memory ----------------------------------------------------------------------------------

void Block::store_global(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes) {
  int buffer = buffer_index(s.name, lanes[0]);
  const kir::Param* p = kernel_.find_param(s.name);
  if (p != nullptr && p->is_const) fail(lanes[0], fmt::format("store to buffer {}, a const parameter", s.name));
  Global& g = (*launch_.globals)[static_cast<size_t>(buffer)];
  val = convert(std::move(val), g.type);
  auto bytes = static_cast<size_t>(kir::type_bytes(g.type));
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (idx.i[k] < 0 || idx.i[k] >= g.count)
      fail(lanes[k],
           fmt::format("global store out of bounds: buffer {} index {} ({} elements)", g.name, idx.i[k], g.count));
    uint8_t* at = g.bytes.data() + static_cast<size_t>(idx.i[k]) * bytes;
    if (is_f(g.type))
      encode_float(g.type, val.f[k], at);
    else
      encode_int(g.type, val.i[k], at);
  }
}

void Block::store_shared(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes) {
  const SharedSlot& sl = slot(s.name, lanes[0]);
  val = convert(std::move(val), sl.type);
  std::vector<uint32_t> addrs = shared_addrs(sl, s.name, idx, lanes);
  int bytes = kir::type_bytes(sl.type);
  count_shared(lanes, addrs, bytes);
  for (size_t k = 0; k < lanes.size(); ++k) {
    check_write(lanes[k], addrs[k], static_cast<uint32_t>(bytes), false);
    uint8_t* at = smem_.data.data() + addrs[k];
    if (is_f(sl.type))
      encode_float(sl.type, val.f[k], at);
    else
      encode_int(sl.type, val.i[k], at);
  }
}

void Block::check_window(int32_t t, uint32_t addr, uint32_t bytes) const {
  if (static_cast<uint64_t>(addr) + bytes > launch_.shared_bytes)
    fail(t, fmt::format("shared access of {} bytes at byte {} outside the {}-byte shared window", bytes, addr,
                        launch_.shared_bytes));
}

// A read of shared bytes by thread t: not before its asynchronous copy landed, and (race
// check) not of bytes another warp wrote since the last barrier.
void Block::check_read(int32_t t, uint32_t addr, uint32_t bytes) {
  for (uint32_t b = addr; b < addr + bytes; ++b) {
    ByteState& s = smem_.state[b];
    if (s.pending == Pending::CpAsync)
      fail(t, fmt::format("read before cp.async.wait_group: {} is the destination of a cp.async still in flight",
                          describe_shared(b)));
    if (s.pending == Pending::Tma)
      fail(t, fmt::format("read before the mbarrier wait: {} is the destination of a TMA copy still in flight",
                          describe_shared(b)));
    if (!launch_.race_check) continue;
    if (s.write_epoch == smem_.epoch && s.writer >= 0 && warp_of(s.writer) != warp_of(t))
      fail(t, fmt::format("shared-memory race: {} was written by thread {} with no barrier before this read",
                          describe_shared(b), s.writer));
    if (s.read_epoch != smem_.epoch) {
      s.read_epoch = smem_.epoch;
      s.reader_warp = warp_of(t);
    } else if (s.reader_warp != warp_of(t)) {
      s.reader_warp = kManyWarps;
    }
  }
}

// A write of shared bytes by thread t (async: the issue of a copy that lands later).
void Block::check_write(int32_t t, uint32_t addr, uint32_t bytes, bool async) {
  for (uint32_t b = addr; b < addr + bytes; ++b) {
    ByteState& s = smem_.state[b];
    if (s.pending != Pending::None)
      fail(t, fmt::format("{} into {} while an asynchronous copy into it is still in flight",
                          async ? "asynchronous copy" : "store", describe_shared(b)));
    if (!launch_.race_check) continue;
    if (s.write_epoch == smem_.epoch && s.writer >= 0 && warp_of(s.writer) != warp_of(t))
      fail(t, fmt::format(
                  "shared-memory race: {} was written by thread {} and again by this thread with no barrier between",
                  describe_shared(b), s.writer));
    if (s.read_epoch == smem_.epoch && s.reader_warp != warp_of(t))
      fail(t, fmt::format(
                  "shared-memory race: {} is overwritten after {} read it, with no barrier between", describe_shared(b),
                  s.reader_warp == kManyWarps ? std::string("several warps") : fmt::format("warp {}", s.reader_warp)));
    if (!async) {
      s.writer = t;
      s.write_epoch = smem_.epoch;
    }
  }
}

void Block::shared_read(int32_t t, uint32_t addr, void* dst, uint32_t bytes) {
  check_window(t, addr, bytes);
  check_read(t, addr, bytes);
  std::memcpy(dst, smem_.data.data() + addr, bytes);
}

void Block::shared_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes) {
  check_window(t, addr, bytes);
  check_write(t, addr, bytes, false);
  std::memcpy(smem_.data.data() + addr, src, bytes);
}

AsyncWrite Block::queue_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes, Pending kind) {
  check_window(t, addr, bytes);
  if (kind == Pending::CpAsync && addr % 16 != 0)
    fail(t, fmt::format("cp.async destination {} is not 16-byte aligned", describe_shared(addr)));
  check_write(t, addr, bytes, true);
  for (uint32_t b = addr; b < addr + bytes; ++b) smem_.state[b].pending = kind;
  AsyncWrite w;
  w.addr = addr;
  w.bytes.assign(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
  return w;
}

// The copy lands: its bytes stop pending and count as written by `writer` (-1: every thread).
void Block::land(const AsyncWrite& w, int32_t writer) {
  std::memcpy(smem_.data.data() + w.addr, w.bytes.data(), w.bytes.size());
  for (size_t b = 0; b < w.bytes.size(); ++b) {
    ByteState& s = smem_.state[w.addr + b];
    s.pending = Pending::None;
    s.writer = writer;
    s.write_epoch = smem_.epoch;
  }
}

void Block::global_read(int32_t t, int buffer, uint64_t offset, void* dst, uint32_t bytes, bool cp_async) {
  if (buffer < 0 || static_cast<size_t>(buffer) >= launch_.globals->size())
    fail(t, fmt::format("asynchronous copy from global buffer #{}, which does not exist", buffer));
  const Global& g = (*launch_.globals)[static_cast<size_t>(buffer)];
  if (offset + bytes > g.bytes.size())
    fail(t, fmt::format("global read out of bounds: buffer {} bytes [{}, {}) ({} bytes)", g.name, offset,
                        offset + bytes, g.bytes.size()));
  if (cp_async && offset % 16 != 0)
    fail(t, fmt::format("cp.async source (buffer {} byte {}) is not 16-byte aligned", g.name, offset));
  std::memcpy(dst, g.bytes.data() + offset, bytes);
}

// An atomic's write: in bounds, into a buffer the kernel may write.
void Block::global_write(int32_t t, int buffer, uint64_t offset, const void* src, uint32_t bytes) {
  if (buffer < 0 || static_cast<size_t>(buffer) >= launch_.globals->size())
    fail(t, fmt::format("atomic on global buffer #{}, which does not exist", buffer));
  Global& g = (*launch_.globals)[static_cast<size_t>(buffer)];
  const kir::Param* p = kernel_.find_param(g.name);
  if (p != nullptr && p->is_const) fail(t, fmt::format("atomic on buffer {}, a const parameter", g.name));
  if (offset + bytes > g.bytes.size())
    fail(t, fmt::format("global atomic out of bounds: buffer {} bytes [{}, {}) ({} bytes)", g.name, offset,
                        offset + bytes, g.bytes.size()));
  std::memcpy(g.bytes.data() + offset, src, bytes);
}

// ---- intrinsics --------------------------------------------------------------------------------

const kir::IntrinsicInfo& Block::intrinsic(const Stmt& s, int32_t thread) const {
  if (s.intrinsic < 0 || s.intrinsic >= static_cast<int>(IntrinsicId::Count))
    fail(thread, fmt::format("unknown intrinsic #{}", s.intrinsic));
  const kir::IntrinsicInfo& info = kir::intrinsic_info(static_cast<IntrinsicId>(s.intrinsic));
  if (s.args.size() != info.ins.size() || s.outs.size() != info.outs.size() ||
      s.imm.size() != static_cast<size_t>(info.imms))
    fail(thread,
         fmt::format("{} takes {} inputs, {} outputs and {} immediates; the statement has {}, {} and {}", info.name,
                     info.ins.size(), info.outs.size(), info.imms, s.args.size(), s.outs.size(), s.imm.size()));
  return info;
}

// The operands as raw words, lane-major within each word: in[w * lanes + k].
std::vector<uint32_t> Block::operand_words(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes) {
  size_t n = lanes.size();
  std::vector<uint32_t> in(static_cast<size_t>(total_words(info.ins)) * n);
  size_t row = 0;
  for (size_t o = 0; o < info.ins.size(); ++o) {
    Vals v = convert(eval(s.args[o], lanes), info.ins[o]);
    bool wide = type_words(info.ins[o]) == 2;
    for (size_t k = 0; k < n; ++k) {
      auto [lo, hi] = to_words(v, k);
      in[row * n + k] = lo;
      if (wide) in[(row + 1) * n + k] = hi;
    }
    row += wide ? 2 : 1;
  }
  return in;
}

void Block::write_outs(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                       const std::vector<uint32_t>& out) {
  size_t n = lanes.size(), row = 0;
  for (size_t o = 0; o < info.outs.size(); ++o) {
    ScalarType t = info.outs[o];
    bool wide = type_words(t) == 2;
    Vals v = make_vals(t, n);
    for (size_t k = 0; k < n; ++k) from_words(v, k, out[row * n + k], wide ? out[(row + 1) * n + k] : 0);
    row += wide ? 2 : 1;
    int elem = 0;
    Register& r = reg(s.outs[o], lanes[0], &elem);
    if (r.type != t)
      fail(lanes[0], fmt::format("output {} of {} is {}, register {} is {}", o, info.name, kir::type_name(t),
                                 s.outs[o].name, kir::type_name(r.type)));
    if (kir::wgmma_n(info.id) == 0) check_not_in_flight(r, elem, s.outs[o], lanes);
    store_lanes(r, elem, v, lanes, threads_);
  }
}

void Block::call(const kir::IntrinsicInfo& info, kir::IntrinsicCall& c, int32_t thread) {
  if (info.semantics == nullptr) fail(thread, fmt::format("intrinsic {} has no CPU semantics", info.name));
  try {
    info.semantics(c);
  } catch (const SimtError&) {
    throw;
  } catch (const std::exception& e) {
    fail(thread, fmt::format("{}: {}", info.name, e.what()));
  }
}

// A collective runs once per group of `group` lanes (a warp, or a warpgroup of four), all active.
void Block::run_warps(const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in,
                      std::vector<uint32_t>& out, std::span<const int64_t> imm, int group) {
  size_t n = lanes.size(), in_rows = in.size() / n, out_rows = out.size() / n, g = static_cast<size_t>(group);
  for (size_t p = 0; p < n; p += g) {
    int32_t first = lanes[p];
    if (first % group != 0 || p + g > n || lanes[p + g - 1] != first + group - 1)
      fail(first, fmt::format("{0}-collective {1} in divergent code: {0} {2} has inactive lanes",
                              group == kWarp ? "warp" : "warpgroup", info.name, first / group));
    std::vector<uint32_t> win(in_rows * g), wout(out_rows * g);
    for (size_t r = 0; r < in_rows; ++r)
      std::copy_n(in.begin() + static_cast<ptrdiff_t>(r * n + p), g, win.begin() + static_cast<ptrdiff_t>(r * g));
    Port port(*this, first, Port::Mode::Direct);
    kir::IntrinsicCall c = make_call(win, wout, group, imm, &port);
    call(info, c, first);
    for (size_t r = 0; r < out_rows; ++r)
      std::copy_n(wout.begin() + static_cast<ptrdiff_t>(r * g), g, out.begin() + static_cast<ptrdiff_t>(r * n + p));
  }
}

// cp.async and TMA: each thread's copy is computed now and queued; its bytes pend until the
// thread's wait_group (cp.async) or the wait on the mbarrier phase that counts it (TMA).
void Block::issue_async(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                        const std::vector<uint32_t>& in) {
  size_t n = lanes.size(), rows = in.size() / n;
  bool tma = kir::tma_rank(info.id) > 0;
  const kir::TmaMap* map = nullptr;
  int buffer = -1;
  if (tma) {
    auto it = launch_.maps.find(s.name);
    if (it == launch_.maps.end()) fail(lanes[0], fmt::format("{} is not a tensor-map parameter of the kernel", s.name));
    if (it->second.buffer < 0)
      fail(lanes[0], fmt::format("a TMA copy through tensor map {}, which the sizes do not allow", s.name));
    if (kir::tma_rank(info.id) != it->second.rank)
      fail(lanes[0], fmt::format("a TMA copy of {} coordinates through tensor map {} of rank {}",
                                 kir::tma_rank(info.id), s.name, it->second.rank));
    map = &it->second;
  } else {
    buffer = buffer_index(s.name, lanes[0]);
  }
  for (size_t k = 0; k < n; ++k) {
    std::vector<uint32_t> one(rows);
    for (size_t r = 0; r < rows; ++r) one[r] = in[r * n + k];
    Mbarrier* m = tma ? &mbarrier(lanes[k], one[1]) : nullptr;
    Port port(*this, lanes[k], tma ? Port::Mode::Tma : Port::Mode::CpAsync, m);
    kir::IntrinsicCall c = make_call(one, {}, 1, s.imm, &port);
    c.buffer = buffer;
    if (!tma)
      c.elem_bytes = static_cast<uint32_t>(kir::type_bytes((*launch_.globals)[static_cast<size_t>(buffer)].type));
    c.tensor_map = map;
    call(info, c, lanes[k]);
    if (m != nullptr) {
      ++report_.tma_copies;
      m->tx -= port.bytes_written();
      try_complete(*m);
    }
  }
}

Mbarrier& Block::mbarrier(int32_t t, uint32_t addr) {
  auto it = mbarriers_.find(addr);
  if (it == mbarriers_.end()) fail(t, fmt::format("mbarrier at {} used before mbarrier.init", describe_shared(addr)));
  return it->second;
}

// The phase completes once every arrival came and the issued bytes match the expected ones;
// its TMA boxes then land at the next wait.
void Block::try_complete(Mbarrier& m) {
  if (m.pending != 0 || m.tx != 0) return;
  ++m.phase;
  m.pending = m.count;
  for (AsyncWrite& w : m.inflight) m.landing.push_back(std::move(w));
  m.inflight.clear();
}

void Block::wait_mbarrier(int32_t t, uint32_t addr, uint32_t parity) {
  Mbarrier& m = mbarrier(t, addr);
  if ((m.phase & 1) == (parity & 1))
    fail(t, fmt::format("mbarrier wait never returns: phase {} of the mbarrier at {} still needs {} arrival(s) and "
                        "{} transaction byte(s) (negative: more bytes issued than expected)",
                        m.phase, describe_shared(addr), m.pending, m.tx));
  for (const AsyncWrite& w : m.landing) land(w, -1);
  m.landing.clear();
  // A phase every thread of the block arrives at orders the waiter after all their accesses
  // before the arrivals, as a barrier would (a producer refilling a buffer its consumers
  // released): for the race check, a new barrier interval.
  if (m.count == threads_) ++smem_.epoch;
}

// commit/wait_group and the mbarrier operations, which order copies and compute nothing:
// the interpreter gives them their meaning here. Returns false for any other intrinsic.
bool Block::ordering(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                     const std::vector<uint32_t>& in) {
  size_t n = lanes.size();
  for (size_t k = 0; k < n; ++k) {
    int32_t t = lanes[k];
    ThreadAsync& a = async_[static_cast<size_t>(t)];
    uint32_t addr = in.size() >= n ? in[k] : 0, word1 = in.size() >= 2 * n ? in[n + k] : 0;
    switch (info.id) {
      case IntrinsicId::CpAsyncCommit:
        a.committed.push_back(std::move(a.open));
        a.open.clear();
        break;
      case IntrinsicId::CpAsyncWait:
        while (static_cast<int64_t>(a.committed.size()) > s.imm[0]) {
          for (const AsyncWrite& w : a.committed.front()) land(w, t);
          a.committed.erase(a.committed.begin());
        }
        break;
      case IntrinsicId::MbarrierInit: {
        check_window(t, addr, 8);
        auto it = mbarriers_.find(addr);
        if (it != mbarriers_.end() && (!it->second.inflight.empty() || !it->second.landing.empty()))
          fail(t, fmt::format("mbarrier.init of the mbarrier at {} while its TMA copies are in flight",
                              describe_shared(addr)));
        if (s.imm[0] < 1) fail(t, fmt::format("mbarrier.init with arrival count {}", s.imm[0]));
        Mbarrier& m = mbarriers_[addr];
        m = Mbarrier{};
        m.count = m.pending = s.imm[0];
        break;
      }
      case IntrinsicId::MbarrierExpectTx: {
        Mbarrier& m = mbarrier(t, addr);
        m.tx += word1;
        --m.pending;
        try_complete(m);
        break;
      }
      case IntrinsicId::MbarrierTryWait: wait_mbarrier(t, addr, word1); break;
      case IntrinsicId::MbarrierArrive: {
        Mbarrier& m = mbarrier(t, addr);
        --m.pending;
        try_complete(m);
        break;
      }
      default: return false;
    }
  }
  if (!info.outs.empty())
    write_outs(s, info, lanes, std::vector<uint32_t>(static_cast<size_t>(total_words(info.outs)) * n, 1));
  return true;
}

void Block::exec_intrinsic(const Stmt& s, const Lanes& lanes) {
  const kir::IntrinsicInfo& info = intrinsic(s, lanes[0]);
  const bool wgmma = kir::wgmma_n(info.id) > 0;
  wgmma_operands_ = wgmma;  // a wgmma reads the accumulator an earlier one of its chain writes
  std::vector<uint32_t> in = operand_words(s, info, lanes);
  wgmma_operands_ = false;
  if (info.id == IntrinsicId::WgmmaCommit || info.id == IntrinsicId::WgmmaWait) wgmma_groups(s, info, lanes);
  if (info.id == IntrinsicId::CpAsync16 || kir::tma_rank(info.id) > 0) return issue_async(s, info, lanes, in);
  if (ordering(s, info, lanes, in)) return;
  size_t n = lanes.size();
  std::vector<uint32_t> out(static_cast<size_t>(total_words(info.outs)) * n);
  if (info.scope == kir::Scope::Warp || info.scope == kir::Scope::Warpgroup) {
    run_warps(info, lanes, in, out, s.imm, info.scope == kir::Scope::Warp ? kWarp : 4 * kWarp);
  } else if (info.scope == kir::Scope::Thread) {
    Port port(*this, lanes[0], Port::Mode::Direct);
    kir::IntrinsicCall c = make_call(in, out, static_cast<int>(n), s.imm, &port);
    if (!s.name.empty()) {  // an atomic's buffer: its index operand counts elements
      c.buffer = buffer_index(s.name, lanes[0]);
      c.elem_bytes = static_cast<uint32_t>(kir::type_bytes((*launch_.globals)[static_cast<size_t>(c.buffer)].type));
    }
    call(info, c, lanes[0]);
  } else {
    fail(lanes[0], fmt::format("block-scope intrinsic {} is not supported", info.name));
  }
  write_outs(s, info, lanes, out);
  if (wgmma) mark_in_flight(s, info, lanes);
}

// The accumulator registers of a wgmma are in flight until the wait_group that retires its group.
void Block::mark_in_flight(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes) {
  for (size_t o = 0; o < info.outs.size(); ++o) {
    int elem = 0;
    Register& r = reg(s.outs[o], lanes[0], &elem);
    const size_t depth = regs_.depth(s.outs[o].name);
    for (int32_t t : lanes) {
      const size_t slot = static_cast<size_t>(elem) * static_cast<size_t>(threads_) + static_cast<size_t>(t);
      r.init[slot] = kInFlight;
      async_[static_cast<size_t>(t)].wgmma_open.push_back({s.outs[o].name, depth, slot});
    }
  }
}

// wgmma.commit_group closes each thread's open group; wait_group N retires all but the newest N.
void Block::wgmma_groups(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes) {
  for (int32_t t : lanes) {
    ThreadAsync& a = async_[static_cast<size_t>(t)];
    if (info.id == IntrinsicId::WgmmaCommit) {
      a.wgmma_committed.push_back(std::move(a.wgmma_open));
      a.wgmma_open.clear();
      continue;
    }
    while (static_cast<int64_t>(a.wgmma_committed.size()) > s.imm[0]) {
      for (const PendingReg& p : a.wgmma_committed.front())
        if (Register* r = regs_.at(p.name, p.depth); r != nullptr && r->init[p.slot] == kInFlight) r->init[p.slot] = 1;
      a.wgmma_committed.erase(a.wgmma_committed.begin());
    }
  }
}

// ---- the program -------------------------------------------------------------------------------

int64_t dim_value(const std::string& dim, const SizeBindings& sizes, const std::string& buffer) {
  bool literal = !dim.empty() && std::all_of(dim.begin(), dim.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (literal && dim.size() <= 18) return std::stoll(dim);
  auto it = sizes.find(dim);
  if (literal || it == sizes.end()) throw SimtError(fmt::format("buffer {}: dimension '{}' is not bound", buffer, dim));
  return it->second;
}

Global make_global(const kir::Buffer& b, const SizeBindings& sizes, const TensorMap& buffers) {
  Global g;
  g.name = b.name;
  g.type = b.type;
  g.count = 1;
  for (const std::string& dim : b.dims) {
    g.shape.push_back(dim_value(dim, sizes, b.name));
    if (g.shape.back() < 0) throw SimtError(fmt::format("buffer {}: dimension {} is negative", b.name, dim));
    g.count *= g.shape.back();
  }
  auto bytes = static_cast<size_t>(kir::type_bytes(b.type));
  g.bytes.assign(static_cast<size_t>(g.count) * bytes, uint8_t{0xff});  // NaN / -1 poison
  if (b.role != kir::Buffer::Role::Input) return g;
  auto it = buffers.find(b.name);
  if (it == buffers.end()) throw SimtError(fmt::format("input buffer {} is not given", b.name));
  const HostTensor& t = it->second;
  if (t.shape != g.shape || static_cast<int64_t>(t.data.size()) != g.count)
    throw SimtError(fmt::format("input buffer {}: the tensor's shape does not match the buffer's dims", b.name));
  bool int_ok = !is_f(b.type) && !is_float(t.dtype);
  if (t.dtype != dtype_of(b.type) && !(b.type == ScalarType::U32 && int_ok))
    throw SimtError(
        fmt::format("input buffer {} is {}, the tensor is {}", b.name, kir::type_name(b.type), dtype_name(t.dtype)));
  for (size_t k = 0; k < t.data.size(); ++k) {
    uint8_t* at = g.bytes.data() + k * bytes;
    if (is_f(b.type))
      encode_float(b.type, kir::round_to(b.type, t.data[k]), at);
    else
      encode_int(b.type, wrap_int(b.type, static_cast<int64_t>(t.data[k])), at);
  }
  return g;
}

HostTensor to_host(const Global& g) {
  HostTensor t;
  t.dtype = dtype_of(g.type);
  t.shape = g.shape;
  // As the GPU's outputs are read back: a bool byte other than 0 or 1 (the 0xff poison of an
  // element never written) reads as NaN, so that the check reports it.
  t.data = kir::decode_values(g.type, g.bytes.data(), static_cast<size_t>(g.count));
  return t;
}

// grid_x, with the scalar parameters bound for this launch.
int64_t eval_launch_expr(const Expr& e, const Launch& launch) {
  std::map<std::string, int64_t> scalars;
  for (const auto& [name, p] : launch.scalars) scalars[name] = p.value;
  auto v = kir::evaluate_launch_expr(e, scalars);
  if (const auto* what = std::get_if<std::string>(&v))
    throw SimtError(fmt::format("kernel {}: grid_x {}", launch.kernel->name, *what));
  return std::get<int64_t>(v);
}

Launch make_launch(const kir::Kernel& k, std::vector<Global>& globals, const SizeBindings& sizes,
                   const SimtOptions& options) {
  Launch l;
  l.kernel = &k;
  l.globals = &globals;
  l.race_check = options.race_check;
  if (k.block_threads < 1 || k.block_threads > kMaxBlockThreads)
    throw SimtError(fmt::format("kernel {}: {} threads per block", k.name, k.block_threads));
  for (const kir::Param& p : k.params) {
    if (p.kind == kir::Param::Kind::Buffer) {
      auto it = std::find_if(globals.begin(), globals.end(), [&](const Global& g) { return g.name == p.name; });
      if (it == globals.end())
        throw SimtError(fmt::format("kernel {}: parameter {} names no program buffer", k.name, p.name));
      if (it->type != p.type)
        throw SimtError(fmt::format("kernel {}: parameter {} is {}, the buffer is {}", k.name, p.name,
                                    kir::type_name(p.type), kir::type_name(it->type)));
      l.buffer_of[p.name] = static_cast<int>(it - globals.begin());
    } else if (p.kind == kir::Param::Kind::Scalar) {
      auto it = sizes.find(p.name);
      if (it == sizes.end())
        throw SimtError(fmt::format("kernel {}: scalar parameter {} is not bound", k.name, p.name));
      l.scalars[p.name] = {p.type, is_f(p.type) ? it->second : wrap_int(p.type, it->second)};
    } else {
      // A map the test gave, else the one the host would encode from the parameter; a map the
      // sizes do not allow is kept with buffer -1 (the kernel must not copy through it).
      if (auto it = options.tensor_maps.find(p.name); it != options.tensor_maps.end()) {
        if (it->second.buffer < 0 || static_cast<size_t>(it->second.buffer) >= globals.size())
          throw SimtError(fmt::format("kernel {}: tensor map {} names buffer #{}", k.name, p.name, it->second.buffer));
        l.maps[p.name] = it->second;
        continue;
      }
      auto g = std::find_if(globals.begin(), globals.end(), [&](const Global& x) { return x.name == p.map_of; });
      if (g == globals.end())
        throw SimtError(
            fmt::format("kernel {}: tensor map {} is over {}, not a buffer of the program", k.name, p.name, p.map_of));
      auto map = kir::tma_map_of(p, g->type, g->shape, static_cast<int>(g - globals.begin()));
      l.maps[p.name] = std::holds_alternative<kir::TmaMap>(map) ? std::get<kir::TmaMap>(map) : kir::TmaMap{};
    }
  }
  uint64_t offset = 0;
  for (const kir::SharedArray& a : k.shared) {
    uint64_t align = static_cast<uint64_t>(std::max(a.align, kir::type_bytes(a.type)));
    offset = (offset + align - 1) / align * align;
    l.shared[a.name] = {a.type, a.count, static_cast<uint32_t>(offset)};
    offset += static_cast<uint64_t>(a.count) * static_cast<uint64_t>(kir::type_bytes(a.type));
    if (offset > (uint64_t{1} << 31))
      throw SimtError(fmt::format("kernel {}: shared array {} is too large", k.name, a.name));
  }
  l.shared_bytes = static_cast<uint32_t>(offset);
  l.grid = eval_launch_expr(k.grid_x, l);
  if (l.grid < 0) throw SimtError(fmt::format("kernel {}: grid_x is {}", k.name, l.grid));
  return l;
}

std::vector<int64_t> block_order(int64_t grid, const SimtOptions& options, size_t kernel_index) {
  std::vector<int64_t> order(static_cast<size_t>(grid));
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle_blocks) {
    std::mt19937_64 rng(options.seed + kernel_index);
    std::shuffle(order.begin(), order.end(), rng);
  }
  return order;
}

}  // namespace

SimtReport run_simt(const kir::Program& program, const SizeBindings& sizes, TensorMap& buffers,
                    const SimtOptions& options) {
  if (auto broken = kir::check_limits(program, sizes)) throw std::runtime_error(*broken);
  std::vector<Global> globals;
  for (const kir::Buffer& b : program.buffers) globals.push_back(make_global(b, sizes, buffers));
  SimtReport report;
  for (size_t ki = 0; ki < program.kernels.size(); ++ki) {
    const kir::Kernel& k = program.kernels[ki];
    Launch launch = make_launch(k, globals, sizes, options);
    SharedScratch smem;
    smem.data.resize(launch.shared_bytes);
    smem.state.resize(launch.shared_bytes);
    for (int64_t b : block_order(launch.grid, options, ki)) {
      Block(launch, smem, b, report).run();
      ++report.blocks;
      report.threads += k.block_threads;
    }
  }
  for (size_t i = 0; i < program.buffers.size(); ++i)
    if (program.buffers[i].role == kir::Buffer::Role::Output) buffers[program.buffers[i].name] = to_host(globals[i]);
  return report;
}

}  // namespace emmy
