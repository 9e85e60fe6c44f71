// Prints kernel IR as CUDA C++ for NVRTC: explicit conversions, one helper per used intrinsic,
// readable statements in the style of the seed's listings.
#include "codegen/cuda/print_cuda.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <set>

#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"
#include "ir/print_kernel.hpp"

namespace emmy {
namespace {
using namespace kir;
using ST = ScalarType;

using TypeSet = uint16_t;
constexpr TypeSet bit(ST t) { return static_cast<TypeSet>(1u << static_cast<unsigned>(t)); }
constexpr TypeSet kPred = bit(ST::Pred), kF32 = bit(ST::F32), kF64 = bit(ST::F64);
constexpr TypeSet kHalf = bit(ST::F16) | bit(ST::BF16);
constexpr TypeSet kSigned = bit(ST::I32) | bit(ST::I64);
constexpr TypeSet kInts = kSigned | bit(ST::U32);
constexpr TypeSet kAll = kInts | kPred | kF32 | kF64 | kHalf;

// A spelling with one hole `$`; the operand is parenthesized below precedence `hole`.
struct Tpl {
  std::string_view text;
  int hole = kPrecNone;
  int prec = kPrecPrimary;
};
constexpr Tpl fn(std::string_view text) { return {text, kPrecNone, kPrecPrimary}; }
constexpr Tpl pre(std::string_view text) { return {text, kPrecUnary, kPrecUnary}; }

// exp2 as one MUFU.EX2: nvcc's exp2f adds a subnormal-range fix-up around it unless -ftz.
constexpr std::string_view kEx2Ftz = R"(__device__ __forceinline__ float emmy_ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
)";

// `helper`: the device function the spelling calls, printed once before the kernels that use it.
struct UnRow {
  UnOp op;
  TypeSet types;
  Tpl tpl;
  std::string_view helper = {};
};
constexpr std::array kUnary{
    UnRow{UnOp::Neg, kSigned | kF32 | kF64, pre("-$")},
    UnRow{UnOp::Neg, kHalf, fn("__hneg($)")},
    UnRow{UnOp::Not, kPred, pre("!$")},
    UnRow{UnOp::Abs, bit(ST::I32), fn("abs($)")},
    UnRow{UnOp::Abs, bit(ST::I64), fn("llabs($)")},
    UnRow{UnOp::Abs, kF32, fn("fabsf($)")},
    UnRow{UnOp::Abs, kF64, fn("fabs($)")},
    UnRow{UnOp::Abs, kHalf, fn("__habs($)")},
    UnRow{UnOp::Exp, kF32, fn("expf($)")},
    UnRow{UnOp::Exp, kF64, fn("exp($)")},
    UnRow{UnOp::Exp2, kF32, fn("exp2f($)")},
    UnRow{UnOp::Exp2, kF64, fn("exp2($)")},
    UnRow{UnOp::Exp2Ftz, kF32, fn("emmy_ex2_ftz($)"), kEx2Ftz},
    UnRow{UnOp::Log, kF32, fn("logf($)")},
    UnRow{UnOp::Log, kF64, fn("log($)")},
    UnRow{UnOp::Sqrt, kF32, fn("sqrtf($)")},
    UnRow{UnOp::Sqrt, kF64, fn("sqrt($)")},
    UnRow{UnOp::Rsqrt, kF32, fn("rsqrtf($)")},
    UnRow{UnOp::Rsqrt, kF64, fn("rsqrt($)")},
    UnRow{UnOp::Tanh, kF32, fn("tanhf($)")},
    UnRow{UnOp::Tanh, kF64, fn("tanh($)")},
    UnRow{UnOp::Erf, kF32, fn("erff($)")},
    UnRow{UnOp::Erf, kF64, fn("erf($)")},
    UnRow{UnOp::Floor, kF32, fn("floorf($)")},
    UnRow{UnOp::Floor, kF64, fn("floor($)")},
    UnRow{UnOp::Ceil, kF32, fn("ceilf($)")},
    UnRow{UnOp::Ceil, kF64, fn("ceil($)")},
    UnRow{UnOp::Sigmoid, kF32, {"1.0f / (1.0f + expf(-$))", kPrecUnary, kPrecMultiplicative}},
    UnRow{UnOp::Sigmoid, kF64, {"1.0 / (1.0 + exp(-$))", kPrecUnary, kPrecMultiplicative}},
};

// max and min propagate NaN (ir/ieee_rules.hpp; fmaxf and fminf drop it): f32 as one
// max.NaN / min.NaN (sm_80 and later), f64 by a compare, f16 and bf16 as __hmax_nan/__hmin_nan.
// Guarded: the printed programs of several ops may share one translation unit.
constexpr std::string_view kMinMaxNaN = R"(#ifndef EMMY_MINMAX_NAN
#define EMMY_MINMAX_NAN
__device__ __forceinline__ float emmy_fmaxf(float a, float b) {
  float y;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ float emmy_fminf(float a, float b) {
  float y;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ double emmy_fmax(double a, double b) { return a != a || a > b ? a : b; }
__device__ __forceinline__ double emmy_fmin(double a, double b) { return a != a || a < b ? a : b; }
#endif
)";

// Binary operators: infix (C operator) or a call `name(a, b)`; `helper` as for UnRow.
struct BinRow {
  BinOp op;
  TypeSet types;
  std::string_view text;
  bool call = false;
  std::string_view helper = {};
};
constexpr TypeSet kArith = kInts | kF32 | kF64 | kHalf;
constexpr std::array kBinary{
    BinRow{BinOp::Add, kArith, "+"},
    BinRow{BinOp::Sub, kArith, "-"},
    BinRow{BinOp::Mul, kArith, "*"},
    BinRow{BinOp::Div, kArith, "/"},
    BinRow{BinOp::Rem, kInts, "%"},
    BinRow{BinOp::Rem, kF32, "fmodf", true},
    BinRow{BinOp::Rem, kF64, "fmod", true},
    BinRow{BinOp::Min, kInts, "min", true},
    BinRow{BinOp::Min, kF32, "emmy_fminf", true, kMinMaxNaN},
    BinRow{BinOp::Min, kF64, "emmy_fmin", true, kMinMaxNaN},
    BinRow{BinOp::Min, kHalf, "__hmin_nan", true},
    BinRow{BinOp::Max, kInts, "max", true},
    BinRow{BinOp::Max, kF32, "emmy_fmaxf", true, kMinMaxNaN},
    BinRow{BinOp::Max, kF64, "emmy_fmax", true, kMinMaxNaN},
    BinRow{BinOp::Max, kHalf, "__hmax_nan", true},
    BinRow{BinOp::Pow, kF32, "powf", true},
    BinRow{BinOp::Pow, kF64, "pow", true},
    BinRow{BinOp::Lt, kAll, "<"},
    BinRow{BinOp::Le, kAll, "<="},
    BinRow{BinOp::Gt, kAll, ">"},
    BinRow{BinOp::Ge, kAll, ">="},
    BinRow{BinOp::Eq, kAll, "=="},
    BinRow{BinOp::Ne, kAll, "!="},
    BinRow{BinOp::And, kPred, "&&"},
    BinRow{BinOp::Or, kPred, "||"},
    BinRow{BinOp::Shl, kInts, "<<"},
    BinRow{BinOp::Shr, kInts, ">>"},
    BinRow{BinOp::BitAnd, kInts, "&"},
    BinRow{BinOp::BitOr, kInts, "|"},
    BinRow{BinOp::BitXor, kInts, "^"},
};

// Conversions that are not a plain C cast `(T)x`: round-to-nearest-even float to integer,
// the 16-bit formats, and tests against zero for pred.
struct CastRow {
  TypeSet from, to;
  Tpl tpl;
};
constexpr Tpl kNonZero{"($ != 0)", kPrecEquality, kPrecPrimary};
constexpr std::array kCasts{
    CastRow{kF32, bit(ST::F16), fn("__float2half_rn($)")},
    CastRow{kF32, bit(ST::BF16), fn("__float2bfloat16_rn($)")},
    CastRow{kF32, bit(ST::I32), fn("__float2int_rz($)")},
    CastRow{kF32, bit(ST::I64), fn("__float2ll_rz($)")},
    CastRow{kF32, bit(ST::U32), fn("__float2uint_rz($)")},
    CastRow{kF32, kPred, {"($ != 0.0f)", kPrecEquality, kPrecPrimary}},
    CastRow{kF64, bit(ST::F16), fn("__double2half($)")},
    CastRow{kF64, bit(ST::BF16), fn("__double2bfloat16($)")},
    CastRow{kF64, bit(ST::I32), fn("__double2int_rz($)")},
    CastRow{kF64, bit(ST::I64), fn("__double2ll_rz($)")},
    CastRow{kF64, bit(ST::U32), fn("__double2uint_rz($)")},
    CastRow{kF64, kPred, {"($ != 0.0)", kPrecEquality, kPrecPrimary}},
    CastRow{bit(ST::F16), kF32, fn("__half2float($)")},
    CastRow{bit(ST::F16), kF64, {"(double)__half2float($)", kPrecNone, kPrecUnary}},
    CastRow{bit(ST::F16), bit(ST::BF16), fn("__float2bfloat16_rn(__half2float($))")},
    CastRow{bit(ST::F16), bit(ST::I32), fn("__half2int_rz($)")},
    CastRow{bit(ST::F16), bit(ST::I64), fn("__half2ll_rz($)")},
    CastRow{bit(ST::F16), bit(ST::U32), fn("__half2uint_rz($)")},
    CastRow{bit(ST::F16), kPred, fn("(__half2float($) != 0.0f)")},
    CastRow{bit(ST::BF16), kF32, fn("__bfloat162float($)")},
    CastRow{bit(ST::BF16), kF64, {"(double)__bfloat162float($)", kPrecNone, kPrecUnary}},
    CastRow{bit(ST::BF16), bit(ST::F16), fn("__float2half_rn(__bfloat162float($))")},
    CastRow{bit(ST::BF16), bit(ST::I32), fn("__bfloat162int_rz($)")},
    CastRow{bit(ST::BF16), bit(ST::I64), fn("__bfloat162ll_rz($)")},
    CastRow{bit(ST::BF16), bit(ST::U32), fn("__bfloat162uint_rz($)")},
    CastRow{bit(ST::BF16), kPred, fn("(__bfloat162float($) != 0.0f)")},
    CastRow{bit(ST::I32), bit(ST::F16), fn("__int2half_rn($)")},
    CastRow{bit(ST::I64), bit(ST::F16), fn("__ll2half_rn($)")},
    CastRow{bit(ST::U32), bit(ST::F16), fn("__uint2half_rn($)")},
    CastRow{bit(ST::I32), bit(ST::BF16), fn("__int2bfloat16_rn($)")},
    CastRow{bit(ST::I64), bit(ST::BF16), fn("__ll2bfloat16_rn($)")},
    CastRow{bit(ST::U32), bit(ST::BF16), fn("__uint2bfloat16_rn($)")},
    CastRow{kPred, bit(ST::F16), fn("__float2half_rn((float)$)")},
    CastRow{kPred, bit(ST::BF16), fn("__float2bfloat16_rn((float)$)")},
    CastRow{kInts, kPred, kNonZero},
};

// The raw (unsigned) launch values; as i32 values they are printed `(int)raw`.
constexpr std::array<std::string_view, 6> kSpecial{"threadIdx.x", "blockIdx.x",         "blockDim.x",
                                                   "gridDim.x",   "(threadIdx.x & 31)", "(threadIdx.x >> 5)"};

template <class E>
size_t idx(E e) {
  return static_cast<size_t>(e);
}

Infix apply(const Tpl& t, const Infix& arg) {
  std::string a = operand_text(arg, t.hole), out;
  for (char c : t.text) {
    if (c != '$') {
      out += c;
      continue;
    }
    bool glue = !out.empty() && out.back() == '-' && a[0] == '-';  // never `--x`
    out += glue ? "(" + a + ")" : a;
  }
  return {out, t.prec};
}

Tpl cast_tpl(ST from, ST to) {
  for (const CastRow& r : kCasts)
    if ((r.from & bit(from)) && (r.to & bit(to))) return r.tpl;
  return {};  // a C cast, built by the caller
}

Infix convert(const Infix& arg, ST from, ST to) {
  if (from == to) return arg;
  Tpl t = cast_tpl(from, to);
  if (!t.text.empty()) return apply(t, arg);
  return {fmt::format("({}){}", cuda_type(to), operand_text(arg, kPrecUnary)), kPrecUnary};
}

// ---- literals ----

std::string f32_literal(double value) {
  float v = static_cast<float>(round_to(ST::F32, value));
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(v)) return v < 0 ? "-__int_as_float(0x7f800000)" : "__int_as_float(0x7f800000)";
  return shortest_float(v, true) + "f";
}

std::string f64_literal(double v) {
  if (std::isnan(v)) return "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v))
    return v < 0 ? "-__longlong_as_double(0x7ff0000000000000LL)" : "__longlong_as_double(0x7ff0000000000000LL)";
  return shortest_float(v, false);
}

std::string int_literal(const Expr& e) {
  switch (e.type) {
    case ST::Pred: return e.ival ? "true" : "false";
    case ST::I32: return e.ival == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(static_cast<int32_t>(e.ival));
    case ST::U32: return std::to_string(static_cast<uint32_t>(e.ival)) + "u";
    default: return e.ival == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(e.ival) + "LL";
  }
}

// f16 and bf16 constants hold values their format represents exactly, so the f32 literal inside is exact.
std::string float_literal(const Expr& e) {
  switch (e.type) {
    case ST::F64: return f64_literal(e.fval);
    case ST::F16: return fmt::format("__float2half_rn({})", f32_literal(round_to(ST::F16, e.fval)));
    case ST::BF16: return fmt::format("__float2bfloat16_rn({})", f32_literal(round_to(ST::BF16, e.fval)));
    default: return f32_literal(e.fval);
  }
}

Infix literal(const Expr& e) {
  std::string text = is_float(e.type) ? float_literal(e) : int_literal(e);
  return {text, text[0] == '-' ? kPrecUnary : kPrecPrimary};
}

// ---- expressions ----

Infix expr(const Expr& e);

Infix unary(const Expr& e) {
  ST t = e.args[0].type;
  Infix a = expr(e.args[0]);
  for (const UnRow& r : kUnary)
    if (r.op == e.un && (r.types & bit(t))) return apply(r.tpl, a);
  for (const UnRow& r : kUnary)  // f16/bf16 math: through f32, rounded back
    if (r.op == e.un && (r.types & kF32) && (bit(t) & kHalf))
      return convert(apply(r.tpl, convert(a, t, ST::F32)), ST::F32, t);
  return {fmt::format("{}({})", unop_name(e.un), a.text)};
}

Infix binary_with(const BinRow& r, const Infix& a, const Infix& b) {
  if (r.call) return {fmt::format("{}({}, {})", r.text, a.text, b.text)};
  int prec = binop_precedence(r.op);
  return {fmt::format("{} {} {}", operand_text(a, prec), r.text, operand_text(b, prec, true)), prec};
}

Infix binary(const Expr& e) {
  ST t = e.args[0].type;
  Infix a = expr(e.args[0]), b = expr(e.args[1]);
  for (const BinRow& r : kBinary)
    if (r.op == e.bin && (r.types & bit(t))) return binary_with(r, a, b);
  for (const BinRow& r : kBinary)  // f16/bf16 remainder and power: through f32
    if (r.op == e.bin && (r.types & kF32) && (bit(t) & kHalf))
      return convert(binary_with(r, convert(a, t, ST::F32), convert(b, t, ST::F32)), ST::F32, e.type);
  return binary_with({e.bin, 0, binop_name(e.bin)}, a, b);
}

Infix select(const Expr& e) {
  return {fmt::format("{} ? {} : {}", operand_text(expr(e.args[0]), kPrecConditional, true),
                      operand_text(expr(e.args[1]), kPrecConditional, true),
                      operand_text(expr(e.args[2]), kPrecConditional, true)),
          kPrecConditional};
}

// A name as CUDA spells it: an Emmy name that is a C++ keyword or one of CUDA's built-in
// variables (a derived op's seed `do`, a tensor `int`) gets the suffix `_v`.
std::string cuda_id(const std::string& name) {
  static const std::set<std::string> kReserved{
      "alignas",     "alignof",   "and",        "and_eq",    "asm",       "auto",         "bitand",
      "bitor",       "bool",      "break",      "case",      "catch",     "char",         "char16_t",
      "char32_t",    "char8_t",   "class",      "co_await",  "co_return", "co_yield",     "compl",
      "concept",     "const",     "const_cast", "consteval", "constexpr", "constinit",    "continue",
      "decltype",    "default",   "delete",     "do",        "double",    "dynamic_cast", "else",
      "enum",        "explicit",  "export",     "extern",    "false",     "float",        "for",
      "friend",      "goto",      "if",         "inline",    "int",       "long",         "mutable",
      "namespace",   "new",       "noexcept",   "not",       "not_eq",    "nullptr",      "operator",
      "or",          "or_eq",     "private",    "protected", "public",    "register",     "reinterpret_cast",
      "requires",    "return",    "short",      "signed",    "sizeof",    "static",       "static_assert",
      "static_cast", "struct",    "switch",     "template",  "this",      "thread_local", "throw",
      "true",        "try",       "typedef",    "typeid",    "typename",  "union",        "unsigned",
      "using",       "virtual",   "void",       "volatile",  "wchar_t",   "while",        "xor",
      "xor_eq",      "threadIdx", "blockIdx",   "blockDim",  "gridDim",   "warpSize",     "half",
      "uint2",       "uint4",     "float2",     "float4"};
  return kReserved.count(name) ? name + "_v" : name;
}

Infix cast(const Expr& e) {
  const Expr& a = e.args[0];
  if (a.kind == Expr::Kind::Special) return convert({std::string(kSpecial[idx(a.special)])}, ST::U32, e.type);
  return convert(expr(a), a.type, e.type);
}

Infix expr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Const: return literal(e);
    case Expr::Kind::Var:
      return {e.reg.elem < 0 ? cuda_id(e.reg.name) : fmt::format("{}[{}]", cuda_id(e.reg.name), e.reg.elem)};
    case Expr::Kind::Special: return {fmt::format("(int){}", kSpecial[idx(e.special)]), kPrecUnary};
    case Expr::Kind::Param: return {cuda_id(e.name)};
    case Expr::Kind::Unary: return unary(e);
    case Expr::Kind::Binary: return binary(e);
    case Expr::Kind::Select: return select(e);
    case Expr::Kind::Cast: return cast(e);
    case Expr::Kind::Load: return {fmt::format("{}[{}]", cuda_id(e.name), expr(e.args[0]).text)};
    case Expr::Kind::SharedAddr:
      return {fmt::format("(unsigned)__cvta_generic_to_shared(&{}[{}])", cuda_id(e.name), expr(e.args[0]).text),
              kPrecUnary};
  }
  return {"?"};
}

// ---- statements ----

std::string reg_text(const Reg& r) {
  return r.elem < 0 ? cuda_id(r.name) : fmt::format("{}[{}]", cuda_id(r.name), r.elem);
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// helper(outs..., [&tensor_map,] ins with `&buffer[index]`..., imms...);
std::string intrinsic_call(const Stmt& s) {
  if (s.intrinsic < 0 || s.intrinsic >= static_cast<int>(IntrinsicId::Count))
    return fmt::format("emmy_no_intrinsic_{}();  // not in the intrinsic table", s.intrinsic);
  const IntrinsicInfo& info = intrinsic_info(static_cast<IntrinsicId>(s.intrinsic));
  std::vector<std::string> args;
  for (const Reg& r : s.outs) args.push_back(reg_text(r));
  int buffer_input = s.name.empty() ? -2 : intrinsic_buffer_input(s);
  if (buffer_input == -1) args.push_back("&" + cuda_id(s.name));
  for (size_t i = 0; i < s.args.size(); ++i) {
    std::string arg = expr(s.args[i]).text;
    args.push_back(static_cast<int>(i) == buffer_input ? fmt::format("&{}[{}]", cuda_id(s.name), arg) : arg);
  }
  for (int64_t v : s.imm) args.push_back(std::to_string(v) + (v == static_cast<int32_t>(v) ? "" : "LL"));
  return fmt::format("{}({});", info.helper, join(args));
}

// The unsigned type one aligned access of `bytes` moves (ld/st.global.v4.b32 for 16 bytes).
std::string_view vector_word(int bytes) {
  switch (bytes) {
    case 2: return "unsigned short";
    case 4: return "unsigned";
    case 8: return "uint2";
    default: return "uint4";
  }
}

// One aligned access moving the register array through a vector word, unpacked element by
// element through a union (register renaming once unrolled: no local memory).
std::string vector_access(const Stmt& s) {
  int bytes = s.count * type_bytes(s.type);
  std::string_view word = vector_word(bytes);
  std::string at = fmt::format("&{}[{}]", cuda_id(s.name), expr(s.args[0]).text);
  std::string out = fmt::format("{{ union {{ {} w; {} e[{}]; }} vec_; ", word, cuda_type(s.type), s.count);
  if (s.kind == Stmt::Kind::VecLoad) {
    out += fmt::format("vec_.w = *reinterpret_cast<const {}*>({});", word, at);
    for (int e = 0; e < s.count; ++e) out += fmt::format(" {}[{}] = vec_.e[{}];", cuda_id(s.reg.name), e, e);
    return out + " }";
  }
  for (int e = 0; e < s.count; ++e) out += fmt::format("vec_.e[{}] = {}[{}]; ", e, cuda_id(s.reg.name), e);
  // 16 bytes to global memory as one st.global.v4 (a uint4 assignment compiles to four 4-byte
  // stores once its words come from a union of halves).
  if (bytes == 16 && s.space == Space::Global)
    return out + fmt::format(
                     "asm volatile(\"st.global.v4.b32 [%0], {{%1, %2, %3, %4}};\\n\" :: \"l\"({}), \"r\"(vec_.w.x), "
                     "\"r\"(vec_.w.y), \"r\"(vec_.w.z), \"r\"(vec_.w.w) : \"memory\"); }}",
                     at);
  return out + fmt::format("*reinterpret_cast<{}*>({}) = vec_.w; }}", word, at);
}

class Printer {
 public:
  std::string out;

  void block(const std::vector<Stmt>& body, int depth) {
    for (size_t i = 0; i < body.size(); ++i) stmt(body[i], depth, i == 0);
  }

 private:
  void line(int depth, std::string_view text) { out += std::string(4 * depth, ' ') + std::string(text) + "\n"; }

  void comment(const std::string& text, int depth, bool first) {
    if (!first) out += "\n";
    size_t start = 0;
    do {
      size_t end = text.find('\n', start);
      line(depth, fmt::format("// {}", text.substr(start, end - start)));
      start = end == std::string::npos ? end : end + 1;
    } while (start != std::string::npos);
  }

  void decl(const Stmt& s, int depth) {
    std::string type(cuda_type(s.type));
    if (s.count == 1) {
      std::string init = s.args.empty() ? "" : fmt::format(" = {}", expr(s.args[0]).text);
      return line(depth, fmt::format("{} {}{};", type, cuda_id(s.reg.name), init));
    }
    line(depth, fmt::format("{} {}[{}];", type, cuda_id(s.reg.name), s.count));
    if (s.args.empty()) return;
    line(depth, "#pragma unroll");
    line(depth, fmt::format("for (int _e = 0; _e < {}; ++_e) {}[_e] = {};", s.count, cuda_id(s.reg.name),
                            expr(s.args[0]).text));
  }

  // A constant bound converts implicitly to the loop variable's type: `j < 64`, not `j < 64LL`.
  static Infix bound(const Expr& b, ST type) {
    bool bare =
        b.kind == Expr::Kind::Const && b.type == type && !is_float(type) && b.ival == static_cast<int32_t>(b.ival);
    return bare ? Infix{std::to_string(b.ival), b.ival < 0 ? kPrecUnary : kPrecPrimary} : expr(b);
  }

  void for_loop(const Stmt& s, int depth) {
    if (s.unroll != kir::Unroll::Compiler)
      line(depth, s.unroll == kir::Unroll::Full ? "#pragma unroll" : "#pragma unroll 1");
    const std::string v = cuda_id(s.reg.name);
    line(depth,
         fmt::format("for ({} {} = {}; {} < {}; {} += {}) {{", cuda_type(s.type), v, bound(s.args[0], s.type).text, v,
                     operand_text(bound(s.args[1], s.type), kPrecRelational, true), v, s.step));
    block(s.body, depth + 1);
    line(depth, "}");
  }

  void if_then(const Stmt& s, int depth) {
    line(depth, fmt::format("if ({}) {{", expr(s.args[0]).text));
    block(s.body, depth + 1);
    if (!s.orelse.empty()) {
      line(depth, "} else {");
      block(s.orelse, depth + 1);
    }
    line(depth, "}");
  }

  void stmt(const Stmt& s, int depth, bool first) {
    switch (s.kind) {
      case Stmt::Kind::Decl: return decl(s, depth);
      case Stmt::Kind::Assign: return line(depth, fmt::format("{} = {};", reg_text(s.reg), expr(s.args[0]).text));
      case Stmt::Kind::Store:
        return line(depth, fmt::format("{}[{}] = {};", cuda_id(s.name), expr(s.args[0]).text, expr(s.args[1]).text));
      case Stmt::Kind::For: return for_loop(s, depth);
      case Stmt::Kind::If: return if_then(s, depth);
      case Stmt::Kind::Barrier: return line(depth, "__syncthreads();");
      case Stmt::Kind::Intrinsic: return line(depth, intrinsic_call(s));
      case Stmt::Kind::Comment: return comment(s.text, depth, first);
      case Stmt::Kind::VecLoad:
      case Stmt::Kind::VecStore: return line(depth, vector_access(s));
    }
  }
};

// ---- what a program uses ----

struct Uses {
  TypeSet types = 0;
  std::set<int> intrinsics;
  bool tensor_map = false;
  std::set<UnOp> unary;
  std::set<std::pair<BinOp, ST>> binary;  // operator, operand type

  void expr(const Expr& e) {
    types |= bit(e.type);
    if (e.kind == Expr::Kind::Unary) unary.insert(e.un);
    if (e.kind == Expr::Kind::Binary) binary.insert({e.bin, e.args[0].type});
  }
  void stmt(const Stmt& s) {
    if (s.kind == Stmt::Kind::Decl || s.kind == Stmt::Kind::For || s.kind == Stmt::Kind::VecLoad ||
        s.kind == Stmt::Kind::VecStore)
      types |= bit(s.type);
    if (s.kind == Stmt::Kind::Intrinsic && s.intrinsic >= 0 && s.intrinsic < static_cast<int>(IntrinsicId::Count))
      intrinsics.insert(s.intrinsic);
  }
  void stmts(const std::vector<Stmt>& body) {
    kir::visit(body, [&](const Stmt& s) { stmt(s); });
    kir::visit_exprs(body, [&](const Expr& e) { expr(e); });
  }
  void kernel(const Kernel& k) {
    for (const Param& p : k.params) {
      if (p.kind == Param::Kind::TensorMap)
        tensor_map = true;
      else
        types |= bit(p.type);
    }
    for (const SharedArray& a : k.shared) types |= bit(a.type);
    stmts(k.body);
  }
};

constexpr std::string_view kTensorMapType = R"(// CUtensorMap as cuda.h defines it (NVRTC has no cuda.h).
#ifdef __CUDACC_RTC__
typedef struct CUtensorMap_st { alignas(64) unsigned long long opaque[16]; } CUtensorMap;
#else
#include <cuda.h>
#endif
)";

std::string includes(const Uses& uses) {
  bool f16 = uses.types & bit(ST::F16), bf16 = uses.types & bit(ST::BF16);
  for (int id : uses.intrinsics) {
    std::string_view src = intrinsic_info(static_cast<IntrinsicId>(id)).helper_source;
    f16 |= src.find("__half") != std::string_view::npos;
    bf16 |= src.find("__nv_bfloat16") != std::string_view::npos;
  }
  std::string out = f16 ? "#include <cuda_fp16.h>\n" : "";
  if (bf16) out += "#include <cuda_bf16.h>\n";
  if (uses.tensor_map) out += (out.empty() ? "" : "\n") + std::string(kTensorMapType);
  return out;
}

std::string helpers(const Uses& uses) {
  std::string out;
  for (const UnRow& r : kUnary)
    if (!r.helper.empty() && uses.unary.count(r.op)) out += fmt::format("\n{}", r.helper);
  std::set<std::string_view> printed;  // one helper text serves several rows
  for (const BinRow& r : kBinary)
    for (const auto& [op, type] : uses.binary)
      if (!r.helper.empty() && r.op == op && (r.types & bit(type)) && printed.insert(r.helper).second)
        out += fmt::format("\n{}", r.helper);
  for (const IntrinsicInfo& info : intrinsic_table())
    if (uses.intrinsics.count(static_cast<int>(info.id))) out += fmt::format("\n{}", info.helper_source);
  return out;
}

std::string param_decl(const Param& p) {
  switch (p.kind) {
    case Param::Kind::Buffer:
      return fmt::format("{}{}* __restrict__ {}", p.is_const ? "const " : "", cuda_type(p.type), cuda_id(p.name));
    case Param::Kind::Scalar: return fmt::format("{} {}", cuda_type(p.type), cuda_id(p.name));
    case Param::Kind::TensorMap: return fmt::format("const __grid_constant__ CUtensorMap {}", cuda_id(p.name));
  }
  return "";
}

std::string signature(const Kernel& k) {
  std::string bounds = k.min_blocks_per_sm > 0 ? fmt::format("{}, {}", k.block_threads, k.min_blocks_per_sm)
                                               : fmt::format("{}", k.block_threads);
  // A cluster's shape is the kernel's own (a plain launch of a grid that is a multiple of it).
  std::string cluster = k.cluster > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", k.cluster) : "";
  std::string head = fmt::format("extern \"C\" __global__ void __launch_bounds__({}){} {}(", bounds, cluster, k.name);
  std::vector<std::string> params;
  for (const Param& p : k.params) params.push_back(param_decl(p));
  std::string one_line = head + join(params) + ")";
  if (one_line.size() <= 100) return one_line + "\n";
  std::string out = head;
  for (size_t i = 0; i < params.size(); ++i) out += "\n    " + params[i] + (i + 1 < params.size() ? "," : ")");
  return out + "\n";
}

std::string print_one_kernel(const Kernel& k) {
  std::string out;
  for (const std::string& line : k.doc) out += "// " + line + "\n";
  out += signature(k) + "{\n";
  if (uses_dynamic_shared(k)) {
    // Past the static 48 KB: the arrays are views into the dynamic window the launch sizes.
    // Aligned as the most demanding array (wgmma's swizzled slabs: 1024 bytes, the swizzle's period).
    int align = 16;
    for (const SharedArray& a : k.shared) align = std::max(align, a.align);
    out += fmt::format("    extern __shared__ __align__({}) unsigned char emmy_dynamic_smem[];  // {} bytes\n", align,
                       shared_bytes(k));
    std::vector<int64_t> at = shared_offsets(k);
    for (size_t i = 0; i < k.shared.size(); ++i)
      out += fmt::format("    {0}* const {1} = reinterpret_cast<{0}*>(emmy_dynamic_smem + {2});  // [{3}]\n",
                         cuda_type(k.shared[i].type), k.shared[i].name, at[i], k.shared[i].count);
  } else {
    for (const SharedArray& a : k.shared)
      out += fmt::format("    __shared__ __align__({}) {} {}[{}];\n", a.align, cuda_type(a.type), a.name, a.count);
  }
  if (!k.shared.empty() && !k.body.empty()) out += "\n";
  Printer p;
  p.block(k.body, 1);
  return out + p.out + "}\n";
}

}  // namespace

std::string print_cuda_expr(const Expr& e) { return expr(e).text; }

std::string print_cuda(const Program& program) {
  Uses uses;
  for (const Kernel& k : program.kernels) uses.kernel(k);
  std::string knobs = program.knobs.empty() ? "default knobs" : fmt::format("knobs `{}`", program.knobs);
  std::string out = fmt::format("// Emmy: op `{}`, {}.\n// One translation unit, generated by emmyc: do not edit.\n",
                                program.op, knobs);
  std::string inc = includes(uses);
  if (!inc.empty()) out += "\n" + inc;
  out += helpers(uses);
  for (const Kernel& k : program.kernels) out += fmt::format("\n{}", print_one_kernel(k));
  return out;
}

}  // namespace emmy
