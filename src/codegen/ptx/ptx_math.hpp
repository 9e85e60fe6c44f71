// The PTX spellings of the kernel IR's scalar types, operators, conversions and math functions:
// tables of one instruction each, and the sequences (expf, logf, sigmoid) that the CUDA printer
// gets from CUDA's math library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/kernel.hpp"

namespace emmy::ptx {

// The PTX ISA the printed modules declare (CUDA 13's NVRTC writes the same).
constexpr std::string_view kPtxVersion = "9.0";

// An operand: a register (`%...`) or an immediate, and its kernel-IR type.
struct Val {
  std::string text;
  kir::ScalarType type = kir::ScalarType::F32;
};

// Thrown where the kernel IR holds something without a PTX spelling here; print_ptx reports it.
struct Unsupported {
  std::string what;
};

// Where the tables print: fresh temporaries and labels, instructions, label placements.
class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual std::string temp(kir::ScalarType type) = 0;
  virtual std::string label() = 0;
  virtual void line(std::string_view instruction) = 0;
  virtual void place(std::string_view label) = 0;
};

std::string_view reg_type(kir::ScalarType type);         // the .reg type: ".f32", ".b16", ".pred"
std::string_view reg_prefix(kir::ScalarType type);       // temporaries' letter: "f", "h", "p"
std::string_view ld_type(kir::ScalarType type);          // ld/st and arithmetic suffix: "f32", "s64", "b16"
std::string_view mov_type(kir::ScalarType type);         // mov/selp suffix: "f32", "b32", "b16", "pred"
uint16_t half_bits(kir::ScalarType type, double value);  // an f16 or bf16 value's bits

constexpr bool is_half(kir::ScalarType t) { return t == kir::ScalarType::F16 || t == kir::ScalarType::BF16; }

// `v` in a register: itself when it is one, else moved into a fresh temporary (an immediate).
Val materialize(Emitter& em, const Val& v);

// `insn d, a, b` into a fresh temporary d of `type`.
Val op2(Emitter& em, std::string_view insn, kir::ScalarType type, const std::string& a, const std::string& b);

// Operands of f32, f64, integer or pred type (f16 and bf16 go through f32 in the caller).
Val math_unary(Emitter& em, kir::UnOp op, const Val& a);
Val math_binary(Emitter& em, kir::BinOp op, const Val& a, const Val& b);
Val math_convert(Emitter& em, const Val& a, kir::ScalarType from, kir::ScalarType to);

}  // namespace emmy::ptx
