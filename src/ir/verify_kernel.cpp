// Verifies the kernel IR: scopes and types, register arrays, memory spaces, intrinsic
// operands, and that no barrier or collective intrinsic sits under thread-dependent control.
#include "ir/verify_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>

#include "ir/intrinsics.hpp"
#include "ir/print_kernel.hpp"

namespace emmy {
namespace {
using namespace kir;

using TypeSet = uint16_t;
constexpr TypeSet bit(ScalarType t) { return static_cast<TypeSet>(1u << static_cast<unsigned>(t)); }
constexpr TypeSet kPred = bit(ScalarType::Pred);
constexpr TypeSet kSigned = bit(ScalarType::I32) | bit(ScalarType::I64);
constexpr TypeSet kInts = kSigned | bit(ScalarType::U32);
constexpr TypeSet kFloats = bit(ScalarType::F16) | bit(ScalarType::BF16) | bit(ScalarType::F32) | bit(ScalarType::F64);
constexpr TypeSet kNumeric = kInts | kFloats;
constexpr TypeSet kAll = kNumeric | kPred;

// The operand types each operator applies to, in enum order.
constexpr std::array<TypeSet, 14> kUnTypes{
    kSigned | kFloats, kPred,   kSigned | kFloats, kFloats, kFloats, kFloats, kFloats,
    kFloats,           kFloats, kFloats,           kFloats, kFloats, kFloats, bit(ScalarType::F32)};
constexpr std::array<TypeSet, 21> kBinTypes{kNumeric, kNumeric, kNumeric, kNumeric, kNumeric, kNumeric, kNumeric,
                                            kFloats,  kNumeric, kNumeric, kNumeric, kNumeric, kAll,     kAll,
                                            kPred,    kPred,    kInts,    kInts,    kInts,    kInts,    kInts};

constexpr std::array<std::string_view, 10> kExprKind{"constant", "register", "special", "parameter", "unary",
                                                     "binary",   "select",   "cast",    "load",      "shared address"};
constexpr std::array<size_t, 10> kExprArity{0, 0, 0, 0, 1, 2, 3, 1, 1, 1};
constexpr std::array<std::string_view, 10> kStmtKind{"decl",    "assign",    "store",   "for",   "if",
                                                     "barrier", "intrinsic", "comment", "vload", "vstore"};
constexpr std::array<std::string_view, 4> kScopeName{"thread", "warp", "warpgroup", "block"};
constexpr std::array<size_t, 10> kStmtArityMin{0, 1, 2, 2, 1, 0, 0, 0, 1, 1};
// Intrinsic operands: at most a wgmma n256 (four A registers, a two-word descriptor, 128 accumulators).
constexpr std::array<size_t, 10> kStmtArityMax{1, 1, 2, 2, 1, 0, 134, 0, 1, 1};
constexpr int64_t kSharedLimit = 227 * 1024;  // the largest opt-in of any target (sm_90); a smaller GPU refuses at load

// How far a value may differ between the threads of a block.
enum class Vary : uint8_t { Uniform, Warp, Lane };
constexpr std::array<Vary, 6> kSpecialVary{Vary::Lane,    Vary::Uniform, Vary::Uniform,
                                           Vary::Uniform, Vary::Lane,    Vary::Warp};
using Taint = std::map<std::string, Vary>;

template <class E>
size_t idx(E e) {
  return static_cast<size_t>(e);
}

bool is_ident(std::string_view s) {
  auto ok = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) && std::all_of(s.begin(), s.end(), ok);
}

bool valid_intrinsic(int id) { return id >= 0 && id < static_cast<int>(IntrinsicId::Count); }
const IntrinsicInfo& info_of(int id) { return intrinsic_info(static_cast<IntrinsicId>(id)); }

bool well_shaped(const Expr& e) {
  if (e.args.size() != kExprArity[idx(e.kind)]) return false;
  return std::all_of(e.args.begin(), e.args.end(), [](const Expr& a) { return well_shaped(a); });
}

bool well_shaped(const Stmt& s) {
  size_t k = idx(s.kind);
  if (s.args.size() < kStmtArityMin[k] || s.args.size() > kStmtArityMax[k]) return false;
  return std::all_of(s.args.begin(), s.args.end(), [](const Expr& a) { return well_shaped(a); });
}

// ---- thread variance: a small taint analysis, iterated to a fixpoint over loops ----------

Vary vary_of(const Expr& e, const Taint& taint) {
  Vary v = Vary::Uniform;
  visit(e, [&](const Expr& x) {
    if (x.kind == Expr::Kind::Special) v = std::max(v, kSpecialVary[idx(x.special)]);
    if (x.kind == Expr::Kind::Var)
      if (auto it = taint.find(x.reg.name); it != taint.end()) v = std::max(v, it->second);
  });
  return v;
}

bool raise(Taint& taint, const std::string& name, Vary v) {
  Vary& cur = taint[name];
  if (v <= cur) return false;
  cur = v;
  return true;
}

Vary args_vary(const std::vector<Expr>& args, const Taint& taint) {
  Vary v = Vary::Uniform;
  for (const Expr& a : args) v = std::max(v, vary_of(a, taint));
  return v;
}

bool taint_block(const std::vector<Stmt>& body, Vary ctrl, Taint& taint);

bool taint_stmt(const Stmt& s, Vary ctrl, Taint& taint) {
  if (!well_shaped(s)) return false;
  Vary v = std::max(ctrl, args_vary(s.args, taint));
  switch (s.kind) {
    case Stmt::Kind::Decl:
    case Stmt::Kind::Assign:
    case Stmt::Kind::VecLoad: return raise(taint, s.reg.name, v);
    case Stmt::Kind::For: {  // both sides run: each raises taints as it goes
      bool var = raise(taint, s.reg.name, v);
      return taint_block(s.body, v, taint) || var;
    }
    case Stmt::Kind::If: {
      bool then = taint_block(s.body, v, taint);
      return taint_block(s.orelse, v, taint) || then;
    }
    case Stmt::Kind::Intrinsic: {
      const Scope scope = valid_intrinsic(s.intrinsic) ? info_of(s.intrinsic).scope : Scope::Thread;
      if (scope == Scope::Warp || scope == Scope::Warpgroup) v = Vary::Lane;
      bool changed = false;
      for (const Reg& r : s.outs) changed |= raise(taint, r.name, v);
      return changed;
    }
    default: return false;
  }
}

bool taint_block(const std::vector<Stmt>& body, Vary ctrl, Taint& taint) {
  bool changed = false;
  for (const Stmt& s : body) changed |= taint_stmt(s, ctrl, taint);
  return changed;
}

Taint thread_variance(const Kernel& k) {
  Taint taint;
  while (taint_block(k.body, Vary::Uniform, taint)) {
  }
  return taint;
}

// ---- the checker ---------------------------------------------------------------------------

struct RegInfo {
  ScalarType type;
  int count;
  bool loop_var;
};

struct Control {
  Vary vary;
  bool is_loop;
  std::string text;
};

class Checker {
 public:
  explicit Checker(const Kernel& k) : k_(k), taint_(thread_variance(k)) {}

  std::vector<std::string> run() {
    kernel_level();
    block(k_.body);
    return std::move(errors_);
  }

 private:
  void error(const std::string& what) {
    errors_.push_back(where_.empty() ? fmt::format("{}: {}", k_.name, what)
                                     : fmt::format("{}: `{}`: {}", k_.name, where_, what));
  }

  void kernel_level() {
    if (!is_ident(k_.name)) error(fmt::format("kernel name '{}' is not an identifier", k_.name));
    if (k_.block_threads < 1 || k_.block_threads > 1024)
      error(fmt::format("{} threads per block (1 to 1024)", k_.block_threads));
    if (k_.min_blocks_per_sm < 0) error(fmt::format("min_blocks_per_sm {} (0: not given)", k_.min_blocks_per_sm));
    std::set<std::string> names;
    for (const Param& p : k_.params) global_name(p.name, "parameter", names);
    int64_t bytes = 0;
    for (const SharedArray& a : k_.shared) {
      global_name(a.name, "shared array", names);
      if (a.count <= 0) error(fmt::format("shared array '{}' has {} elements", a.name, a.count));
      if (a.align < type_bytes(a.type) || (a.align & (a.align - 1)) != 0)
        error(fmt::format("shared array '{}': alignment {} is not a power of two >= {}", a.name, a.align,
                          type_bytes(a.type)));
      bytes = (bytes + a.align - 1) / std::max(a.align, 1) * std::max(a.align, 1) +
              std::max<int64_t>(a.count, 0) * type_bytes(a.type);
    }
    if (bytes > kSharedLimit)
      error(fmt::format("{} bytes of shared arrays (a block holds at most {})", bytes, kSharedLimit));
    grid();
  }

  void global_name(const std::string& name, std::string_view what, std::set<std::string>& names) {
    if (!is_ident(name)) error(fmt::format("{} name '{}' is not an identifier", what, name));
    if (!names.insert(name).second)
      error(fmt::format("{} '{}' has the name of another parameter or shared array", what, name));
  }

  void grid() {
    if (!well_shaped(k_.grid_x)) return error("malformed grid expression");
    where_ = fmt::format("grid={}", print_expr(k_.grid_x));
    grid_operands(k_.grid_x);
    expr(k_.grid_x);
    if (k_.grid_x.type != ScalarType::I64) error(fmt::format("grid has type {}, not i64", type_name(k_.grid_x.type)));
    where_.clear();
  }

  void grid_operands(const Expr& grid) {
    visit(grid, [&](const Expr& e) {
      bool launch_time = e.kind == Expr::Kind::Const || e.kind == Expr::Kind::Param || e.kind == Expr::Kind::Unary ||
                         e.kind == Expr::Kind::Binary || e.kind == Expr::Kind::Select || e.kind == Expr::Kind::Cast;
      if (!launch_time)
        error(fmt::format("the grid may use scalar parameters only, not the {} '{}'", kExprKind[idx(e.kind)],
                          print_expr(e)));
    });
  }

  // ---- expressions ----

  void expr(const Expr& e) {
    for (const Expr& a : e.args) expr(a);
    switch (e.kind) {
      case Expr::Kind::Const: return constant(e);
      case Expr::Kind::Var: use_reg(e.reg, e.type); return;
      case Expr::Kind::Special: return expect_type(e, ScalarType::I32);
      case Expr::Kind::Param: return scalar_param(e);
      case Expr::Kind::Unary: return unary(e);
      case Expr::Kind::Binary: return binary(e);
      case Expr::Kind::Select: return select(e);
      case Expr::Kind::Cast: return;
      case Expr::Kind::Load: return memory(e.space, e.name, e.args[0], e.type, false);
      case Expr::Kind::SharedAddr: return shared_addr(e);
    }
  }

  void expect_type(const Expr& e, ScalarType want) {
    if (e.type != want)
      error(fmt::format("{} '{}' has type {}, expected {}", kExprKind[idx(e.kind)], print_expr(e), type_name(e.type),
                        type_name(want)));
  }

  void constant(const Expr& e) {
    bool fits = e.type == ScalarType::I32   ? e.ival >= INT32_MIN && e.ival <= INT32_MAX
                : e.type == ScalarType::U32 ? e.ival >= 0 && e.ival <= UINT32_MAX
                                            : true;
    if (!fits) error(fmt::format("constant {} does not fit {}", e.ival, type_name(e.type)));
  }

  void scalar_param(const Expr& e) {
    const Param* p = k_.find_param(e.name);
    if (!p || p->kind != Param::Kind::Scalar) return error(fmt::format("'{}' is not a scalar parameter", e.name));
    expect_type(e, p->type);
  }

  void unary(const Expr& e) {
    ScalarType a = e.args[0].type;
    if (!(kUnTypes[idx(e.un)] & bit(a))) error(fmt::format("'{}' does not apply to {}", unop_name(e.un), type_name(a)));
    expect_type(e, e.un == UnOp::Not ? ScalarType::Pred : a);
  }

  void binary(const Expr& e) {
    ScalarType a = e.args[0].type, b = e.args[1].type;
    if (a != b)
      return error(fmt::format("operands of '{}' have types {} and {}", binop_name(e.bin), type_name(a), type_name(b)));
    if (!(kBinTypes[idx(e.bin)] & bit(a)))
      error(fmt::format("'{}' does not apply to {}", binop_name(e.bin), type_name(a)));
    expect_type(e, is_comparison(e.bin) ? ScalarType::Pred : a);
  }

  void select(const Expr& e) {
    if (e.args[0].type != ScalarType::Pred)
      error(fmt::format("select condition has type {}, not pred", type_name(e.args[0].type)));
    if (e.args[1].type != e.args[2].type)
      return error(
          fmt::format("select branches have types {} and {}", type_name(e.args[1].type), type_name(e.args[2].type)));
    expect_type(e, e.args[1].type);
  }

  const SharedArray* find_shared(const std::string& name) const {
    for (const SharedArray& a : k_.shared)
      if (a.name == name) return &a;
    return nullptr;
  }

  void index_type(const Expr& index, ScalarType want, std::string_view space) {
    if (index.type != want)
      error(fmt::format("{} index has type {}, not {}", space, type_name(index.type), type_name(want)));
  }

  const SharedArray* shared_index(const std::string& name, const Expr& index) {
    const SharedArray* a = find_shared(name);
    if (!a) {
      error(fmt::format("'{}' is not a shared array", name));
      return nullptr;
    }
    index_type(index, ScalarType::I32, "shared");
    if (index.kind == Expr::Kind::Const && (index.ival < 0 || index.ival >= a->count))
      error(fmt::format("index {} outside [0, {}) of shared array '{}'", index.ival, a->count, name));
    return a;
  }

  void memory(Space space, const std::string& name, const Expr& index, ScalarType type, bool store) {
    ScalarType holds;
    if (space == Space::Shared) {
      const SharedArray* a = shared_index(name, index);
      if (!a) return;
      holds = a->type;
    } else {
      const Param* p = k_.find_param(name);
      if (!p || p->kind != Param::Kind::Buffer) return error(fmt::format("'{}' is not a buffer parameter", name));
      index_type(index, ScalarType::I64, "global");
      if (store && p->is_const) error(fmt::format("stores to const buffer '{}'", name));
      holds = p->type;
    }
    if (holds != type)
      error(
          fmt::format("'{}' holds {}, {} as {}", name, type_name(holds), store ? "stored" : "loaded", type_name(type)));
  }

  void shared_addr(const Expr& e) {
    shared_index(e.name, e.args[0]);
    expect_type(e, ScalarType::U32);
  }

  // ---- registers and scopes ----

  const RegInfo* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto r = it->find(name); r != it->end()) return &r->second;
    return nullptr;
  }

  const RegInfo* use_reg(const Reg& r, ScalarType type) {
    const RegInfo* info = lookup(r.name);
    if (!info) {
      error(fmt::format("register '{}' is not declared in this scope", r.name));
      return nullptr;
    }
    if (info->count == 1 && r.elem >= 0) error(fmt::format("scalar register '{}' is indexed", r.name));
    if (info->count > 1 && r.elem < 0) error(fmt::format("register array '{}' is used without an index", r.name));
    if (info->count > 1 && r.elem >= info->count)
      error(fmt::format("index {} outside [0, {}) of register array '{}'", r.elem, info->count, r.name));
    if (info->type != type)
      error(fmt::format("register '{}' is {}, used as {}", r.name, type_name(info->type), type_name(type)));
    return info;
  }

  void declare(const std::string& name, RegInfo info) {
    if (!is_ident(name)) error(fmt::format("register name '{}' is not an identifier", name));
    if (k_.find_param(name) || find_shared(name))
      error(fmt::format("register '{}' has the name of a parameter or shared array", name));
    if (!scopes_.back().emplace(name, info).second)
      error(fmt::format("redeclares register '{}' in the same scope", name));
  }

  // ---- statements ----

  void block(const std::vector<Stmt>& body) {
    scopes_.emplace_back();
    for (const Stmt& s : body) stmt(s);
    scopes_.pop_back();
  }

  void stmt(const Stmt& s) {
    if (!well_shaped(s)) {
      where_.clear();
      return error(fmt::format("malformed {} statement", kStmtKind[idx(s.kind)]));
    }
    where_ = print_stmt_line(s);
    for (const Expr& a : s.args) expr(a);
    switch (s.kind) {
      case Stmt::Kind::Decl: return decl(s);
      case Stmt::Kind::Assign: return assign(s);
      case Stmt::Kind::Store: return memory(s.space, s.name, s.args[0], s.args[1].type, true);
      case Stmt::Kind::For: return for_loop(s);
      case Stmt::Kind::If: return if_then(s);
      case Stmt::Kind::Barrier: return collective("barrier", Vary::Uniform);
      case Stmt::Kind::Intrinsic: return intrinsic(s);
      case Stmt::Kind::Comment: return;
      case Stmt::Kind::VecLoad:
      case Stmt::Kind::VecStore: return vector_access(s);
    }
  }

  // One aligned access of 2, 4, 8 or 16 bytes between memory and a whole register array.
  void vector_access(const Stmt& s) {
    bool store = s.kind == Stmt::Kind::VecStore;
    int bytes = s.count * type_bytes(s.type);
    if (s.count < 1 || (s.count & (s.count - 1)) != 0 || (bytes != 2 && bytes != 4 && bytes != 8 && bytes != 16))
      error(fmt::format("a vector access of {} {} is {} bytes (2, 4, 8 or 16, a power-of-two count)", s.count,
                        type_name(s.type), bytes));
    memory(s.space, s.name, s.args[0], s.type, store);
    const RegInfo* info = lookup(s.reg.name);
    if (!info) return error(fmt::format("register '{}' is not declared in this scope", s.reg.name));
    if (info->count != s.count || info->type != s.type)
      error(fmt::format("vector of {} {} through register array '{}' of {} {}", s.count, type_name(s.type), s.reg.name,
                        info->count, type_name(info->type)));
  }

  void decl(const Stmt& s) {
    if (s.count < 1) error(fmt::format("register '{}' has {} elements", s.reg.name, s.count));
    if (!s.args.empty() && s.args[0].type != s.type)
      error(fmt::format("initial value has type {}, register '{}' is {}", type_name(s.args[0].type), s.reg.name,
                        type_name(s.type)));
    declare(s.reg.name, {s.type, s.count, false});
  }

  void assign(const Stmt& s) {
    const RegInfo* info = lookup(s.reg.name);
    if (info && info->loop_var) error(fmt::format("assigns the loop variable '{}'", s.reg.name));
    ScalarType value = s.args[0].type;
    if (info && info->type != value)
      return error(fmt::format("assigns {} to {} register '{}'", type_name(value), type_name(info->type), s.reg.name));
    use_reg(s.reg, value);
  }

  void for_loop(const Stmt& s) {
    if (s.type != ScalarType::I32 && s.type != ScalarType::I64)
      error(fmt::format("loop variable '{}' has type {} (i32 or i64 required)", s.reg.name, type_name(s.type)));
    for (const Expr& bound : s.args)
      if (bound.type != s.type)
        error(fmt::format("loop bound '{}' has type {}, the loop variable {}", print_expr(bound), type_name(bound.type),
                          type_name(s.type)));
    if (s.step < 1) error(fmt::format("loop step {} (positive required)", s.step));
    Vary v = std::max(vary_of(s.args[0], taint_), vary_of(s.args[1], taint_));
    std::string text = where_;
    control_.push_back({v, true, text});
    scopes_.emplace_back();
    declare(s.reg.name, {s.type, 1, true});
    for (const Stmt& b : s.body) stmt(b);
    scopes_.pop_back();
    control_.pop_back();
  }

  void if_then(const Stmt& s) {
    if (s.args[0].type != ScalarType::Pred)
      error(fmt::format("if condition has type {}, not pred", type_name(s.args[0].type)));
    control_.push_back({vary_of(s.args[0], taint_), false, where_});
    block(s.body);
    block(s.orelse);
    control_.pop_back();
  }

  // `what` may run only where control differs at most by `allowed` between threads.
  void collective(std::string_view what, Vary allowed) {
    for (const Control& c : control_) {
      if (c.vary <= allowed) continue;
      return error(fmt::format("{} under `{}`, whose {} differ{} between {}", what, c.text,
                               c.is_loop ? "bounds" : "condition", c.is_loop ? "" : "s",
                               c.vary == Vary::Lane ? "the threads of a warp" : "warps"));
    }
  }

  void intrinsic(const Stmt& s) {
    if (!valid_intrinsic(s.intrinsic)) return error(fmt::format("no intrinsic #{}", s.intrinsic));
    const IntrinsicInfo& info = info_of(s.intrinsic);
    if (s.outs.size() != info.outs.size())
      error(fmt::format("{} results, '{}' gives {}", s.outs.size(), info.name, info.outs.size()));
    if (s.args.size() != info.ins.size())
      error(fmt::format("{} operands, '{}' takes {}", s.args.size(), info.name, info.ins.size()));
    if (static_cast<int>(s.imm.size()) != info.imms)
      error(fmt::format("{} immediates, '{}' takes {}", s.imm.size(), info.name, info.imms));
    for (size_t i = 0; i < std::min(s.outs.size(), info.outs.size()); ++i) use_reg(s.outs[i], info.outs[i]);
    for (size_t i = 0; i < std::min(s.args.size(), info.ins.size()); ++i)
      if (s.args[i].type != info.ins[i])
        error(fmt::format("operand {} of '{}' has type {}, expected {}", i, info.name, type_name(s.args[i].type),
                          type_name(info.ins[i])));
    intrinsic_memory(s, info);
    if (info.scope == Scope::Warp && k_.block_threads % 32 != 0)
      error(
          fmt::format("warp-collective '{}' in a block of {} threads (not whole warps)", info.name, k_.block_threads));
    if (info.scope == Scope::Warpgroup && k_.block_threads % 128 != 0)
      error(fmt::format("warpgroup-collective '{}' in a block of {} threads (not whole warpgroups of 128)", info.name,
                        k_.block_threads));
    // A warpgroup's branches are checked as a warp's: uniform per warp (the lowering keeps them
    // uniform per block).
    if (info.scope != Scope::Thread)
      collective(fmt::format("{}-collective '{}'", kScopeName[idx(info.scope)], info.name),
                 info.scope == Scope::Block ? Vary::Uniform : Vary::Warp);
  }

  // The global operand: a buffer parameter replacing the i64 index, or a tensor map.
  void intrinsic_memory(const Stmt& s, const IntrinsicInfo& info) {
    bool wants_buffer = std::find(info.ins.begin(), info.ins.end(), ScalarType::I64) != info.ins.end();
    if (s.name.empty()) {
      if (wants_buffer) error(fmt::format("'{}' needs the global buffer it reads", info.name));
      return;
    }
    const Param* p = k_.find_param(s.name);
    Param::Kind want = wants_buffer ? Param::Kind::Buffer : Param::Kind::TensorMap;
    if (!p || p->kind != want)
      error(fmt::format("'{}' is not a {} parameter", s.name, wants_buffer ? "buffer" : "tensor map"));
  }

  const Kernel& k_;
  Taint taint_;
  std::vector<std::map<std::string, RegInfo>> scopes_;
  std::vector<Control> control_;
  std::string where_;
  std::vector<std::string> errors_;
};

// ---- the program's bindings ----------------------------------------------------------------

bool is_decimal(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

template <class T>
void unique_names(const std::vector<T>& items, std::string_view what, const auto& name_of,
                  std::vector<std::string>& out) {
  std::set<std::string> seen;
  for (const T& x : items)
    if (!seen.insert(name_of(x)).second) out.push_back(fmt::format("two {}s named '{}'", what, name_of(x)));
}

const Buffer* find_buffer(const Program& p, const std::string& name) {
  for (const Buffer& b : p.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

void bind_params(const Program& prog, const Kernel& k, std::vector<std::string>& out) {
  const std::set<std::string> sizes(prog.sizes.begin(), prog.sizes.end());
  for (const Param& p : k.params) {
    if (p.kind == Param::Kind::Scalar && (!sizes.count(p.name) || p.type != ScalarType::I64))
      out.push_back(fmt::format("{}: scalar parameter '{}: {}' is not an i64 size of the program", k.name, p.name,
                                type_name(p.type)));
    if (p.kind != Param::Kind::Buffer) continue;
    const Buffer* b = find_buffer(prog, p.name);
    if (!b) {
      out.push_back(fmt::format("{}: buffer parameter '{}' names no buffer of the program", k.name, p.name));
      continue;
    }
    if (b->type != p.type)
      out.push_back(fmt::format("{}: parameter '{}' is {}, the buffer {}", k.name, p.name, type_name(p.type),
                                type_name(b->type)));
    if (!p.is_const && b->role == Buffer::Role::Input)
      out.push_back(fmt::format("{}: writable parameter '{}' binds an input buffer", k.name, p.name));
  }
}

bool written(const Program& prog, const std::string& buffer) {
  for (const Kernel& k : prog.kernels)
    if (const Param* p = k.find_param(buffer); p && p->kind == Param::Kind::Buffer && !p->is_const) return true;
  return false;
}

}  // namespace

std::vector<std::string> verify_kernel(const Kernel& kernel) { return Checker(kernel).run(); }

std::vector<std::string> verify_program(const Program& prog) {
  std::vector<std::string> out;
  unique_names(
      prog.sizes, "size", [](const std::string& s) { return s; }, out);
  unique_names(
      prog.buffers, "buffer", [](const Buffer& b) { return b.name; }, out);
  unique_names(
      prog.kernels, "kernel", [](const Kernel& k) { return k.name; }, out);
  const std::set<std::string> sizes(prog.sizes.begin(), prog.sizes.end());
  for (const Buffer& b : prog.buffers) {
    for (const std::string& d : b.dims)
      if (!sizes.count(d) && !is_decimal(d))
        out.push_back(fmt::format("buffer '{}': dimension '{}' is neither a size nor a number", b.name, d));
    if (b.role == Buffer::Role::Output && !written(prog, b.name))
      out.push_back(fmt::format("output buffer '{}' is written by no kernel", b.name));
  }
  for (std::string& m : out) m = fmt::format("program {}: {}", prog.op, m);
  for (const Kernel& k : prog.kernels) {
    std::vector<std::string> bindings;
    bind_params(prog, k, bindings);
    for (std::string& m : bindings) out.push_back(fmt::format("program {}: {}", prog.op, m));
    for (std::string& m : verify_kernel(k)) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace emmy
