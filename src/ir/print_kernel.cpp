// Prints the kernel IR as stable, readable text: one line per statement, infix expressions
// with explicit casts, braces for loops and ifs.
#include "ir/print_kernel.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"

namespace emmy {
namespace kir {
namespace {

constexpr std::array<int, 21> kBinPrec{
    kPrecAdditive,
    kPrecAdditive,
    kPrecMultiplicative,
    kPrecMultiplicative,
    kPrecMultiplicative,
    kPrecPrimary,
    kPrecPrimary,
    kPrecPrimary,  // min max pow
    kPrecRelational,
    kPrecRelational,
    kPrecRelational,
    kPrecRelational,  // < <= > >=
    kPrecEquality,
    kPrecEquality,
    kPrecAnd,
    kPrecOr,  // == != && ||
    kPrecShift,
    kPrecShift,
    kPrecBitAnd,
    kPrecBitOr,
    kPrecBitXor,
};

bool drop_parens(int child, int parent, bool right) {
  if (child >= kPrecUnary || parent == kPrecNone) return true;
  if (child < parent || (child == parent && right)) return false;  // C would read it otherwise
  if (parent == kPrecConditional) return true;
  bool bitwise_parent = parent == kPrecShift || (parent >= kPrecBitOr && parent <= kPrecBitAnd);
  if (child >= kPrecAdditive) return !bitwise_parent;                                 // a * b + c < d
  if (child == kPrecRelational || child == kPrecEquality) return parent <= kPrecAnd;  // i < n && p
  return child == parent;                                                             // a && b && c
}

}  // namespace

int binop_precedence(BinOp op) { return kBinPrec[static_cast<size_t>(op)]; }

std::string operand_text(const Infix& child, int parent, bool right) {
  return drop_parens(child.prec, parent, right) ? child.text : "(" + child.text + ")";
}

std::string shortest_float(double value, bool single) {
  std::array<char, 64> buf{};
  auto res = single ? std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<float>(value))
                    : std::to_chars(buf.data(), buf.data() + buf.size(), value);
  std::string s(buf.data(), res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

int intrinsic_buffer_input(const Stmt& stmt) {
  if (stmt.intrinsic < 0 || stmt.intrinsic >= static_cast<int>(IntrinsicId::Count)) return -1;
  const IntrinsicInfo& info = intrinsic_info(static_cast<IntrinsicId>(stmt.intrinsic));
  for (size_t i = 0; i < info.ins.size(); ++i)
    if (info.ins[i] == ScalarType::I64) return static_cast<int>(i);
  return -1;
}

}  // namespace kir

namespace {
using namespace kir;

// Literal suffixes of the kernel text: i32 and f32 are the unmarked defaults.
constexpr std::array<std::string_view, 8> kSuffix{"", "", "i64", "u32", "f16", "bf16", "", "f64"};
constexpr std::array<std::string_view, 3> kParamKind{"buffer", "scalar", "tensormap"};
constexpr std::array<std::string_view, 3> kRole{"input", "output", "temp"};

std::string float_literal(double value, ScalarType type) {
  double v = round_to(type, value);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return shortest_float(v, type != ScalarType::F64);
}

Infix const_infix(const Expr& e) {
  if (e.type == ScalarType::Pred) return {e.ival ? "true" : "false"};
  std::string text = is_float(e.type) ? float_literal(e.fval, e.type) : std::to_string(e.ival);
  std::string_view suffix = kSuffix[static_cast<size_t>(e.type)];
  if (!suffix.empty() && !std::isdigit(static_cast<unsigned char>(text.back())))
    return {fmt::format("{}({})", type_name(e.type), text)};  // f64(-inf)
  return {text + std::string(suffix), text[0] == '-' ? kPrecUnary : kPrecPrimary};
}

std::string reg_text(const Reg& r) { return r.elem < 0 ? r.name : fmt::format("{}[{}]", r.name, r.elem); }

Infix infix(const Expr& e);

Infix call(std::string_view fn, const Operands& args) {
  std::string s;
  for (const Expr& a : args) s += (s.empty() ? "" : ", ") + infix(a).text;
  return {fmt::format("{}({})", fn, s), kPrecPrimary};
}

Infix prefix(std::string_view op, const Expr& a) {
  std::string arg = operand_text(infix(a), kPrecUnary);
  if (arg[0] == op[0]) arg = "(" + arg + ")";  // - -x, ! !p
  return {std::string(op) + arg, kPrecUnary};
}

Infix unary_infix(const Expr& e) {
  if (e.un == UnOp::Neg || e.un == UnOp::Not) return prefix(unop_name(e.un), e.args[0]);
  return call(unop_name(e.un), e.args);
}

Infix binary_infix(const Expr& e) {
  int prec = binop_precedence(e.bin);
  if (prec == kPrecPrimary) return call(binop_name(e.bin), e.args);
  return {fmt::format("{} {} {}", operand_text(infix(e.args[0]), prec), binop_name(e.bin),
                      operand_text(infix(e.args[1]), prec, true)),
          prec};
}

Infix select_infix(const Expr& e) {
  return {fmt::format("{} ? {} : {}", operand_text(infix(e.args[0]), kPrecConditional, true),
                      operand_text(infix(e.args[1]), kPrecConditional, true),
                      operand_text(infix(e.args[2]), kPrecConditional, true)),
          kPrecConditional};
}

Infix infix(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Const: return const_infix(e);
    case Expr::Kind::Var: return {reg_text(e.reg)};
    case Expr::Kind::Special: return {std::string(special_name(e.special))};
    case Expr::Kind::Param: return {e.name};
    case Expr::Kind::Unary: return unary_infix(e);
    case Expr::Kind::Binary: return binary_infix(e);
    case Expr::Kind::Select: return select_infix(e);
    case Expr::Kind::Cast: return call(type_name(e.type), e.args);
    case Expr::Kind::Load: return {fmt::format("{}[{}]", e.name, infix(e.args[0]).text)};
    case Expr::Kind::SharedAddr: return {fmt::format("&{}[{}]", e.name, infix(e.args[0]).text), kPrecUnary};
  }
  return {"?"};
}

std::string intrinsic_name(int id) {
  if (id < 0 || id >= static_cast<int>(IntrinsicId::Count)) return fmt::format("intrinsic#{}", id);
  return std::string(intrinsic_info(static_cast<IntrinsicId>(id)).name);
}

// `d[0], d[1] = name<imm>(in, &buffer[index])`.
std::string intrinsic_line(const Stmt& s) {
  std::string outs, ins, imms;
  for (const Reg& r : s.outs) outs += (outs.empty() ? "" : ", ") + reg_text(r);
  int buffer_input = s.name.empty() ? -2 : intrinsic_buffer_input(s);
  if (buffer_input == -1) ins = "&" + s.name;
  for (size_t i = 0; i < s.args.size(); ++i) {
    std::string arg = print_expr(s.args[i]);
    if (static_cast<int>(i) == buffer_input) arg = fmt::format("&{}[{}]", s.name, arg);
    ins += (ins.empty() ? "" : ", ") + arg;
  }
  for (int64_t v : s.imm) imms += (imms.empty() ? "" : ", ") + std::to_string(v);
  return fmt::format("{}{}{}({})", outs.empty() ? "" : outs + " = ", intrinsic_name(s.intrinsic),
                     imms.empty() ? "" : "<" + imms + ">", ins);
}

std::string decl_line(const Stmt& s) {
  std::string shape = s.count == 1 ? "" : fmt::format("[{}]", s.count);
  std::string init = s.args.empty() ? "" : fmt::format(" = {}", print_expr(s.args[0]));
  return fmt::format("reg {}: {}{}{}", s.reg.name, type_name(s.type), shape, init);
}

// A constant bound of the loop variable's type is printed bare: `for j: i64 in [0, T)`.
std::string bound_text(const Expr& bound, ScalarType type) {
  bool bare = bound.kind == Expr::Kind::Const && bound.type == type && !is_float(type) &&
              bound.ival == static_cast<int32_t>(bound.ival);
  return bare ? std::to_string(bound.ival) : print_expr(bound);
}

std::string for_line(const Stmt& s) {
  return fmt::format("for {}: {} in [{}, {}){}{}", s.reg.name, type_name(s.type), bound_text(s.args[0], s.type),
                     bound_text(s.args[1], s.type), s.step == 1 ? "" : fmt::format(" step {}", s.step),
                     s.unroll == Unroll::Full    ? " unroll"
                     : s.unroll == Unroll::Never ? " nounroll"
                                                 : "");
}

void print_block(const std::vector<Stmt>& body, int depth, std::string& out);

void print_stmt(const Stmt& s, int depth, std::string& out) {
  std::string pad(2 * depth, ' ');
  if (s.kind == Stmt::Kind::Comment) {
    size_t start = 0;
    do {
      size_t end = s.text.find('\n', start);
      out += pad + "// " + s.text.substr(start, end - start) + "\n";
      start = end == std::string::npos ? end : end + 1;
    } while (start != std::string::npos);
    return;
  }
  out += pad + print_stmt_line(s);
  if (s.kind != Stmt::Kind::For && s.kind != Stmt::Kind::If) {
    out += "\n";
    return;
  }
  out += " {\n";
  print_block(s.body, depth + 1, out);
  if (!s.orelse.empty()) {
    out += pad + "} else {\n";
    print_block(s.orelse, depth + 1, out);
  }
  out += pad + "}\n";
}

void print_block(const std::vector<Stmt>& body, int depth, std::string& out) {
  for (const Stmt& s : body) print_stmt(s, depth, out);
}

std::string param_line(const Param& p) {
  std::string kind(kParamKind[static_cast<size_t>(p.kind)]);
  if (p.kind == Param::Kind::TensorMap) {
    constexpr std::array<std::string_view, 4> kSwizzle{"none", "32B", "64B", "128B"};
    std::string box;
    for (int b : p.box) box += (box.empty() ? "" : ", ") + std::to_string(b);
    return fmt::format("  param {}: {} of {} box [{}] swizzle {}\n", p.name, kind, p.map_of, box,
                       kSwizzle[static_cast<size_t>(p.swizzle)]);
  }
  bool show_const = p.kind == Param::Kind::Buffer && p.is_const;
  return fmt::format("  param {}: {}{} {}\n", p.name, kind, show_const ? " const" : "", type_name(p.type));
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& x : items) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string print_expr(const Expr& expr) { return infix(expr).text; }

std::string print_stmt_line(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::Decl: return decl_line(s);
    case Stmt::Kind::Assign: return reg_text(s.reg) + " = " + print_expr(s.args[0]);
    case Stmt::Kind::Store: return fmt::format("{}[{}] = {}", s.name, print_expr(s.args[0]), print_expr(s.args[1]));
    case Stmt::Kind::For: return for_line(s);
    case Stmt::Kind::If: return fmt::format("if {}", print_expr(s.args[0]));
    case Stmt::Kind::Barrier: return "barrier";
    case Stmt::Kind::Intrinsic: return intrinsic_line(s);
    case Stmt::Kind::Comment: return "// " + s.text;
    case Stmt::Kind::VecLoad:
      return fmt::format("{} = vload<{}> {}[{}]", s.reg.name, s.count, s.name, print_expr(s.args[0]));
    case Stmt::Kind::VecStore:
      return fmt::format("vstore<{}> {}[{}] = {}", s.count, s.name, print_expr(s.args[0]), s.reg.name);
  }
  return "?";
}

std::string print_kernel(const Kernel& k) {
  std::string out = fmt::format("kernel {} threads={}{} grid={}{}{}\n", k.name, k.block_threads,
                                k.min_blocks_per_sm > 0 ? fmt::format(" min_blocks={}", k.min_blocks_per_sm) : "",
                                print_expr(k.grid_x), k.persistent ? " persistent" : "",
                                k.cluster > 1 ? fmt::format(" cluster={}", k.cluster) : "");
  for (const std::string& line : k.doc) out += "  // " + line + "\n";
  for (const Param& p : k.params) out += param_line(p);
  for (const SharedArray& a : k.shared)
    out += fmt::format("  shared {}: {}[{}] align {}\n", a.name, type_name(a.type), a.count, a.align);
  out += "{\n";
  print_block(k.body, 1, out);
  return out + "}\n";
}

std::string print_program(const Program& p) {
  std::string out = fmt::format("program {}\n", p.op);
  out += fmt::format("  knobs {}\n", p.knobs.empty() ? "(none)" : p.knobs);
  out += fmt::format("  sizes {}\n", p.sizes.empty() ? "(none)" : join(p.sizes));
  for (const Buffer& b : p.buffers)
    out += fmt::format("  buffer {}: {} {}[{}]\n", b.name, kRole[static_cast<size_t>(b.role)], type_name(b.type),
                       join(b.dims));
  for (const Kernel& k : p.kernels) out += fmt::format("\n{}", print_kernel(k));
  return out;
}

}  // namespace emmy
