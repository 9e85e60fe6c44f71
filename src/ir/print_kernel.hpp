// The stable, readable text of the kernel IR (`emmyc compile --ir kernel`), and the infix
// and literal helpers it shares with the CUDA printer.
#pragma once

#include <string>

#include "ir/kernel.hpp"

namespace emmy {

std::string print_kernel(const kir::Kernel& kernel);
std::string print_program(const kir::Program& program);
std::string print_expr(const kir::Expr& expr);
// The statement's first line, unindented: `o[3] = 0.0`, `for j: i64 in [0, T) unroll`.
std::string print_stmt_line(const kir::Stmt& stmt);

namespace kir {

// C precedence levels (both printers produce C-style infix).
enum Prec : int {
  kPrecNone = 0,  // a call argument or a statement: never parenthesized
  kPrecConditional = 3,
  kPrecOr,
  kPrecAnd,
  kPrecBitOr,
  kPrecBitXor,
  kPrecBitAnd,
  kPrecEquality,
  kPrecRelational,
  kPrecShift,
  kPrecAdditive,
  kPrecMultiplicative,
  kPrecUnary = 15,
  kPrecPrimary = 16,
};

// An expression's text and the precedence of its outermost operator.
struct Infix {
  std::string text;
  int prec = kPrecPrimary;
};

int binop_precedence(BinOp op);  // Min/Max/Pow: kPrecPrimary (printed as calls)
// `child` as an operand of an operator of precedence `parent` (right: the right operand),
// parenthesized where C needs it or where the reading would not be obvious.
std::string operand_text(const Infix& child, int parent, bool right = false);

// The shortest decimal text that reads back as the same float (single) or double, with a
// '.' or an exponent so that it is a floating literal: "0.1", "1e+30", "3.0". Finite only.
std::string shortest_float(double value, bool single);

// The first input of an intrinsic that the buffer `Stmt::name` replaces by `&name[index]`
// (the first i64 input), or -1 where `name` is a tensor map prepended as `&name`.
int intrinsic_buffer_input(const Stmt& stmt);

}  // namespace kir
}  // namespace emmy
