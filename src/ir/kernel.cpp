// Names, sizes and builders of the kernel IR.
#include "ir/kernel.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace emmy::kir {
namespace {

struct TypeRow {
  ScalarType type;
  std::string_view name, cuda;
  int bytes;
  bool is_float;
};
constexpr std::array<TypeRow, 8> kTypes{{
    {ScalarType::Pred, "pred", "bool", 1, false},
    {ScalarType::I32, "i32", "int", 4, false},
    {ScalarType::I64, "i64", "long long", 8, false},
    {ScalarType::U32, "u32", "unsigned", 4, false},
    {ScalarType::F16, "f16", "__half", 2, true},
    {ScalarType::BF16, "bf16", "__nv_bfloat16", 2, true},
    {ScalarType::F32, "f32", "float", 4, true},
    {ScalarType::F64, "f64", "double", 8, true},
}};
const TypeRow& row(ScalarType type) { return kTypes[static_cast<size_t>(type)]; }
// The table in enum order, and is_float (inline in the header, for the interpreter's inner
// loops) agreeing with its column.
constexpr bool table_agrees() {
  for (size_t k = 0; k < kTypes.size(); ++k)
    if (static_cast<size_t>(kTypes[k].type) != k || is_float(kTypes[k].type) != kTypes[k].is_float) return false;
  return true;
}
static_assert(table_agrees());

constexpr std::array<std::string_view, 6> kSpecials{"threadIdx.x", "blockIdx.x", "blockDim.x",
                                                    "gridDim.x",   "lane",       "warp"};
constexpr std::array<std::string_view, 14> kUnOps{"-",     "!",    "abs", "exp",     "exp2",  "log",  "sqrt",
                                                  "rsqrt", "tanh", "erf", "sigmoid", "floor", "ceil", "ex2.ftz"};
constexpr std::array<std::string_view, 21> kBinOps{"+",  "-",  "*",  "/",  "%",  "min", "max", "pow", "<", "<=", ">",
                                                   ">=", "==", "!=", "&&", "||", "<<",  ">>",  "&",   "|", "^"};

}  // namespace

std::string_view type_name(ScalarType type) { return row(type).name; }
std::string_view cuda_type(ScalarType type) { return row(type).cuda; }
int type_bytes(ScalarType type) { return row(type).bytes; }
std::string_view special_name(Special special) { return kSpecials[static_cast<size_t>(special)]; }
std::string_view unop_name(UnOp op) { return kUnOps[static_cast<size_t>(op)]; }
std::string_view binop_name(BinOp op) { return kBinOps[static_cast<size_t>(op)]; }
bool is_comparison(BinOp op) { return op >= BinOp::Lt && op <= BinOp::Or; }

void Operands::own(size_t capacity) {
  if (items_ ? items_.use_count() == 1 && capacity <= capacity_ : capacity == 0) return;
  capacity = std::max<size_t>(capacity, size_);
  std::shared_ptr<Expr[]> fresh = std::make_shared<Expr[]>(capacity);
  const bool alone = items_ && items_.use_count() == 1;
  for (uint32_t i = 0; i < size_; ++i) fresh[i] = alone ? std::move(items_[i]) : items_[i];
  items_ = std::move(fresh);
  capacity_ = static_cast<uint32_t>(capacity);
}

Expr& Operands::mut(size_t i) {
  own(size_);
  return items_[i];
}

std::span<Expr> Operands::mut() {
  own(size_);
  return {items_.get(), size_};
}

void Operands::pop_back() {
  own(size_);
  items_[--size_] = Expr{};
}

void Operands::push_back(Expr e) {
  own(std::max<size_t>(size_ + 1, capacity_));
  items_[size_++] = std::move(e);
}

void Operands::reserve(size_t n) { own(n); }

Expr cf(double value, ScalarType type) {
  Expr e;
  e.kind = Expr::Kind::Const;
  e.type = type;
  e.fval = value;
  // ival mirrors integral values only; converting an infinity or a huge value is undefined.
  e.ival = std::isfinite(value) && std::fabs(value) < 9.2e18 ? static_cast<int64_t>(value) : 0;
  return e;
}

Expr ci(int64_t value, ScalarType type) {
  Expr e;
  e.kind = Expr::Kind::Const;
  e.type = type;
  e.ival = value;
  e.fval = static_cast<double>(value);
  return e;
}

Expr var(Reg reg, ScalarType type) {
  Expr e;
  e.kind = Expr::Kind::Var;
  e.type = type;
  e.reg = std::move(reg);
  return e;
}

Expr special(Special which) {
  Expr e;
  e.kind = Expr::Kind::Special;
  e.type = ScalarType::I32;
  e.special = which;
  return e;
}

Expr param(std::string name, ScalarType type) {
  Expr e;
  e.kind = Expr::Kind::Param;
  e.type = type;
  e.name = std::move(name);
  return e;
}

Expr unary(UnOp op, Expr a) {
  Expr e;
  e.kind = Expr::Kind::Unary;
  e.type = op == UnOp::Not ? ScalarType::Pred : a.type;
  e.un = op;
  e.args.reserve(1);
  e.args.push_back(std::move(a));
  return e;
}

Expr binary(BinOp op, Expr a, Expr b) {
  Expr e;
  e.kind = Expr::Kind::Binary;
  e.type = is_comparison(op) ? ScalarType::Pred : a.type;
  e.bin = op;
  e.args.reserve(2);
  e.args.push_back(std::move(a));
  e.args.push_back(std::move(b));
  return e;
}

Expr select(Expr pred, Expr a, Expr b) {
  Expr e;
  e.kind = Expr::Kind::Select;
  e.type = a.type;
  e.args.reserve(3);
  e.args.push_back(std::move(pred));
  e.args.push_back(std::move(a));
  e.args.push_back(std::move(b));
  return e;
}

Expr cast(Expr a, ScalarType type) {
  if (a.type == type) return a;
  Expr e;
  e.kind = Expr::Kind::Cast;
  e.type = type;
  e.args.reserve(1);
  e.args.push_back(std::move(a));
  return e;
}

Expr load(Space space, std::string buffer, Expr index, ScalarType type) {
  Expr e;
  e.kind = Expr::Kind::Load;
  e.type = type;
  e.space = space;
  e.name = std::move(buffer);
  e.args.reserve(1);
  e.args.push_back(std::move(index));
  return e;
}

Expr shared_addr(std::string array, Expr index) {
  Expr e;
  e.kind = Expr::Kind::SharedAddr;
  e.type = ScalarType::U32;
  e.name = std::move(array);
  e.args.reserve(1);
  e.args.push_back(std::move(index));
  return e;
}

Stmt without_children(const Stmt& s) {
  Stmt h;
  h.kind = s.kind;
  h.type = s.type;
  h.reg = s.reg;
  h.count = s.count;
  h.name = s.name;
  h.space = s.space;
  h.step = s.step;
  h.unroll = s.unroll;
  h.intrinsic = s.intrinsic;
  h.outs = s.outs;
  h.imm = s.imm;
  h.args = s.args;
  h.text = s.text;
  return h;
}

Stmt decl(std::string name, ScalarType type, int count) {
  Stmt s;
  s.kind = Stmt::Kind::Decl;
  s.reg.name = std::move(name);
  s.type = type;
  s.count = count;
  return s;
}

Stmt decl(std::string name, ScalarType type, Expr init, int count) {
  Stmt s = decl(std::move(name), type, count);
  s.args.push_back(cast(std::move(init), type));
  return s;
}

Stmt assign(Reg reg, Expr value) {
  Stmt s;
  s.kind = Stmt::Kind::Assign;
  s.reg = std::move(reg);
  s.args.push_back(std::move(value));
  return s;
}

Stmt store(Space space, std::string buffer, Expr index, Expr value) {
  Stmt s;
  s.kind = Stmt::Kind::Store;
  s.space = space;
  s.name = std::move(buffer);
  s.args = {std::move(index), std::move(value)};
  return s;
}

Stmt for_loop(std::string var_name, ScalarType type, Expr lo, Expr hi, std::vector<Stmt> body, Unroll unroll) {
  Stmt s;
  s.kind = Stmt::Kind::For;
  s.reg.name = std::move(var_name);
  s.type = type;
  s.args = {std::move(lo), std::move(hi)};
  s.body = std::move(body);
  s.unroll = unroll;
  return s;
}

Stmt if_then(Expr pred, std::vector<Stmt> then, std::vector<Stmt> orelse) {
  Stmt s;
  s.kind = Stmt::Kind::If;
  s.args.push_back(std::move(pred));
  s.body = std::move(then);
  s.orelse = std::move(orelse);
  return s;
}

Stmt barrier() {
  Stmt s;
  s.kind = Stmt::Kind::Barrier;
  return s;
}

Stmt comment(std::string text) {
  Stmt s;
  s.kind = Stmt::Kind::Comment;
  s.text = std::move(text);
  return s;
}

Stmt vec_load(std::string array, ScalarType type, int count, std::string buffer, Expr index, Space space) {
  Stmt s;
  s.kind = Stmt::Kind::VecLoad;
  s.reg.name = std::move(array);
  s.type = type;
  s.count = count;
  s.space = space;
  s.name = std::move(buffer);
  s.args.push_back(std::move(index));
  return s;
}

Stmt vec_store(std::string buffer, Expr index, std::string array, ScalarType type, int count, Space space) {
  Stmt s = vec_load(std::move(array), type, count, std::move(buffer), std::move(index), space);
  s.kind = Stmt::Kind::VecStore;
  return s;
}

const Param* Kernel::find_param(std::string_view param_name) const {
  for (const Param& p : params)
    if (p.name == param_name) return &p;
  return nullptr;
}

std::vector<int64_t> shared_offsets(const Kernel& kernel) {
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (const SharedArray& a : kernel.shared) {
    int64_t align = std::max(a.align, 1);
    at = (at + align - 1) / align * align;
    offsets.push_back(at);
    at += std::max<int64_t>(a.count, 0) * type_bytes(a.type);
  }
  return offsets;
}

int64_t shared_bytes(const Kernel& kernel) {
  if (kernel.shared.empty()) return 0;
  const SharedArray& last = kernel.shared.back();
  return shared_offsets(kernel).back() + std::max<int64_t>(last.count, 0) * type_bytes(last.type);
}

std::optional<std::string> check_limits(const Program& program, const std::map<std::string, int64_t>& sizes) {
  for (const SizeLimit& l : program.limits) {
    auto it = sizes.find(l.size);
    if (it != sizes.end() && it->second > l.max)
      return fmt::format("{} = {} is larger than this schedule handles ({} <= {}): {}", l.size, it->second, l.size,
                         l.max, l.why);
  }
  return std::nullopt;
}

void visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const Expr& a : e.args) visit(a, f);
}

Expr map_children(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  Expr out;  // the node without its operands: copying e would copy every subtree once more
  out.kind = e.kind;
  out.type = e.type;
  out.fval = e.fval;
  out.ival = e.ival;
  out.reg = e.reg;
  out.name = e.name;
  out.special = e.special;
  out.un = e.un;
  out.bin = e.bin;
  out.space = e.space;
  out.args.reserve(e.args.size());
  for (const Expr& a : e.args) out.args.push_back(f(a));
  return out;
}

void visit(const std::vector<Stmt>& body, const std::function<void(const Stmt&)>& f) {
  for (const Stmt& s : body) {
    f(s);
    visit(s.body, f);
    visit(s.orelse, f);
  }
}

void visit_exprs(const std::vector<Stmt>& body, const std::function<void(const Expr&)>& f) {
  visit(body, [&](const Stmt& s) {
    for (const Expr& a : s.args) visit(a, f);
  });
}

std::vector<Stmt> map_stmts(std::vector<Stmt> body, const std::function<std::vector<Stmt>(Stmt)>& f) {
  std::vector<Stmt> out;
  out.reserve(body.size());
  for (Stmt& s : body) {
    s.body = map_stmts(std::move(s.body), f);
    s.orelse = map_stmts(std::move(s.orelse), f);
    for (Stmt& r : f(std::move(s))) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace emmy::kir
