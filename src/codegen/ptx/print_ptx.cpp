// Prints kernel IR as PTX: each write of a kernel-IR register a fresh PTX register (phis where
// control flow merges), expressions as instructions into temporaries, loops and ifs as branches;
// what has no spelling here yet is reported, and the caller compiles the CUDA instead.
#include "codegen/ptx/print_ptx.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "codegen/ptx/ptx_intrinsics.hpp"
#include "codegen/ptx/ptx_math.hpp"
#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"
#include "ir/print_kernel.hpp"

namespace emmy {
namespace {
using namespace kir;
using namespace ptx;
using ST = ScalarType;

// A constant as a PTX immediate: floats by their bits (0f..., 0d...), 16-bit floats as the bits
// a b16 register is moved from.
std::string immediate(const Expr& e) {
  switch (e.type) {
    case ST::F32: {
      const float v = static_cast<float>(round_to(ST::F32, e.fval));
      return fmt::format("0f{:08X}", std::bit_cast<uint32_t>(v));
    }
    case ST::F64: return fmt::format("0d{:016X}", std::bit_cast<uint64_t>(e.fval));
    case ST::F16:
    case ST::BF16: return fmt::format("0x{:04X}", half_bits(e.type, round_to(e.type, e.fval)));
    case ST::I32: return std::to_string(static_cast<int32_t>(e.ival));
    case ST::U32: return std::to_string(static_cast<uint32_t>(e.ival));
    case ST::I64: return e.ival == INT64_MIN ? std::string("0x8000000000000000") : std::to_string(e.ival);
    case ST::Pred: return e.ival ? "1" : "0";
  }
  return "0";
}

// Whether evaluating `e` reads memory: such operands of a select, && or || are evaluated only
// on their side of the branch (a masked load past a row's end must not run).
bool reads_memory(const Expr& e) {
  bool found = false;
  visit(e, [&](const Expr& x) { found |= x.kind == Expr::Kind::Load; });
  return found;
}

// The C for loop's bound, evaluated once before the loop where the body assigns nothing it reads.
bool reads_any(const Expr& e, const std::set<std::string>& names) {
  bool found = false;
  visit(e, [&](const Expr& x) { found |= x.kind == Expr::Kind::Var && names.count(x.reg.name); });
  return found;
}

std::set<std::string> assigned_in(const std::vector<Stmt>& body) {
  std::set<std::string> out;
  visit(body, [&](const Stmt& s) {
    if (s.kind == Stmt::Kind::Assign || s.kind == Stmt::Kind::Decl || s.kind == Stmt::Kind::For ||
        s.kind == Stmt::Kind::VecLoad)
      out.insert(s.reg.name);
    for (const Reg& r : s.outs) out.insert(r.name);
  });
  return out;
}

// A declared kernel-IR register (or array): each element's current PTX register. A write gets
// a fresh register (the printed PTX is in SSA form but where control flow merges: ptxas takes
// twice as long on registers written in place); where control flow merges, each path moves its
// value into one register (a phi).
struct Bound {
  ST type = ST::F32;
  int count = 1;
  std::string base;              // "%x", or "%x$d1" for the second declaration of x
  std::vector<std::string> cur;  // element -> its current register
  int next = 0;                  // versions printed
  bool pinned = false;           // one register an element, written in place (a wgmma's accumulators)
};

// The registers a wgmma accumulates into: they keep one register each for their whole life, as
// the wgmmas of a chain and the code between them (a rescale) must write the same registers;
// versions would cost a move of every accumulator at each loop's back edge.
std::set<std::string> accumulator_names(const Kernel& k) {
  std::set<std::string> out;
  visit(k.body, [&](const Stmt& s) {
    if (s.kind == Stmt::Kind::Intrinsic && s.intrinsic >= 0 && s.intrinsic < static_cast<int>(IntrinsicId::Count) &&
        wgmma_n(static_cast<IntrinsicId>(s.intrinsic)) > 0)
      for (const Reg& r : s.outs) out.insert(r.name);
  });
  return out;
}

class KernelPrinter final : public Emitter {
 public:
  explicit KernelPrinter(const Kernel& k) : k_(k), pinned_(accumulator_names(k)) {}

  std::string print() {
    scopes_.emplace_back();
    prologue();
    block(k_.body);
    line("ret;");
    std::string out;
    for (const SharedArray& a : k_.shared)
      if (!uses_dynamic_shared(k_))
        out += fmt::format(".shared .align {} .b8 {}[{}];\n", a.align, shared_symbol(a.name),
                           a.count * type_bytes(a.type));
    out += fmt::format("\n.visible .entry {}(\n", k_.name);
    for (size_t i = 0; i < k_.params.size(); ++i)
      out += fmt::format("    .param {}{}\n", param_decl(k_.params[i], param_symbol(i)),
                         i + 1 < k_.params.size() ? "," : "");
    out += fmt::format(")\n.maxntid {}, 1, 1\n", k_.block_threads);
    if (k_.min_blocks_per_sm > 0) out += fmt::format(".minnctapersm {}\n", k_.min_blocks_per_sm);
    if (k_.cluster > 1) out += fmt::format(".explicitcluster\n.reqnctapercluster {}, 1, 1\n", k_.cluster);
    out += "{\n";
    for (const auto& [name, type] : decls_) out += fmt::format("    .reg {} {};\n", type, name);
    return out + "\n" + body_ + "}\n";
  }

  // ---- Emitter: what the math and intrinsic tables print through ----
  std::string temp(ST type) override {
    const std::string name = fmt::format("%t${}{}", reg_prefix(type), temps_++);
    decls_.emplace_back(name, std::string(reg_type(type)));
    return name;
  }
  std::string label() override { return fmt::format("$L{}", labels_++); }
  void line(std::string_view text) override { body_ += fmt::format("    {}\n", text); }
  void place(std::string_view label) override { body_ += fmt::format("{}:\n", label); }

 private:
  const Kernel& k_;
  std::set<std::string> pinned_;
  std::string body_;
  std::vector<std::pair<std::string, std::string>> decls_;  // PTX register, .reg type
  std::vector<std::map<std::string, Bound>> scopes_;        // kernel-IR register -> its PTX register
  std::map<std::string, int> uses_of_name_;                 // declarations seen of a name
  std::map<std::string, std::string> buffers_;              // buffer -> its global address register
  std::map<std::string, std::string> shared_base_;          // shared array -> its shared-window address register
  std::map<std::string, std::string> tensor_maps_;          // tensor-map parameter -> its generic address
  int temps_ = 0, labels_ = 0;

  // ---- names ----
  std::string shared_symbol(const std::string& array) const { return fmt::format("{}_{}", k_.name, array); }
  std::string param_symbol(size_t i) const { return fmt::format("{}_param_{}", k_.name, i); }

  // A tensor map is the 128-byte CUtensorMap itself (__grid_constant__), read through its address.
  static std::string param_decl(const Param& p, const std::string& symbol) {
    if (p.kind == Param::Kind::Buffer) return ".u64 " + symbol;
    if (p.kind == Param::Kind::TensorMap) return fmt::format(".align 64 .b8 {}[128]", symbol);
    return fmt::format(".{} {}", p.type == ST::Pred ? "u8" : ld_type(p.type), symbol);
  }

  // A new version of element e of b: a register of its own.
  std::string fresh(Bound& b, int e) {
    std::string name =
        b.count == 1 ? fmt::format("{}${}", b.base, b.next++) : fmt::format("{}$e{}${}", b.base, e, b.next++);
    decls_.emplace_back(name, std::string(reg_type(b.type)));
    return name;
  }

  Bound& declare(const std::string& name, ST type, int count) {
    const int n = uses_of_name_[name]++;
    Bound b{type, count, n == 0 ? "%" + name : fmt::format("%{}$d{}", name, n), {}, 0, pinned_.count(name) > 0};
    for (int e = 0; e < count; ++e) b.cur.push_back(fresh(b, e));
    return scopes_.back()[name] = std::move(b);
  }

  Bound* find(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(name); f != it->end()) return &f->second;
    return nullptr;
  }
  Bound& bound(const std::string& name) {
    if (Bound* b = find(name)) return *b;
    throw Unsupported{fmt::format("register '{}' used before its declaration", name)};
  }
  static size_t elem_of(const Reg& r) { return static_cast<size_t>(std::max(r.elem, 0)); }

  std::string reg_name(const Reg& r) { return bound(r.name).cur.at(elem_of(r)); }
  // The register a write of r goes to: a fresh version, current from now on.
  std::string define(const Reg& r) {
    Bound& b = bound(r.name);
    if (b.pinned) return b.cur.at(elem_of(r));
    return b.cur.at(elem_of(r)) = fresh(b, static_cast<int>(elem_of(r)));
  }

  // The current registers of the names given that are visible here (a merge's or a loop's variables).
  std::map<std::string, std::vector<std::string>> snapshot(const std::set<std::string>& names) {
    std::map<std::string, std::vector<std::string>> out;
    for (const std::string& n : names)
      if (Bound* b = find(n); b && !b->pinned) out[n] = b->cur;
    return out;
  }
  // Moves each variable of `phis` from its current registers into the phi registers.
  void move_into(const std::map<std::string, std::vector<std::string>>& phis) {
    for (const auto& [name, regs] : phis) {
      Bound& b = bound(name);
      for (size_t e = 0; e < regs.size(); ++e)
        if (b.cur[e] != regs[e]) line(fmt::format("mov.{} {}, {};", mov_type(b.type), regs[e], b.cur[e]));
    }
  }
  void set_current(const std::map<std::string, std::vector<std::string>>& regs) {
    for (const auto& [name, r] : regs) bound(name).cur = r;
  }
  // Fresh phi registers for the variables of `names`.
  std::map<std::string, std::vector<std::string>> phis_for(
      const std::map<std::string, std::vector<std::string>>& vars) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [name, regs] : vars) {
      Bound& b = bound(name);
      for (size_t e = 0; e < regs.size(); ++e) out[name].push_back(fresh(b, static_cast<int>(e)));
    }
    return out;
  }

  // ---- prologue: parameters, shared arrays ----
  void prologue() {
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const Param& p = k_.params[i];
      if (p.kind == Param::Kind::Buffer) {
        const std::string raw = temp(ST::I64), addr = "%g$" + p.name;
        decls_.emplace_back(addr, ".b64");
        line(fmt::format("ld.param.u64 {}, [{}];", raw, param_symbol(i)));
        line(fmt::format("cvta.to.global.u64 {}, {};", addr, raw));
        buffers_[p.name] = addr;
      } else if (p.kind == Param::Kind::Scalar) {
        if (p.type == ST::Pred) throw Unsupported{"a bool scalar parameter"};
        const std::string r = declare(p.name, p.type, 1).cur[0];
        line(fmt::format("ld.param.{} {}, [{}];", ld_type(p.type), r, param_symbol(i)));
      } else {
        const std::string raw = temp(ST::I64), addr = "%m$" + p.name;
        decls_.emplace_back(addr, ".b64");
        line(fmt::format("mov.b64 {}, {};", raw, param_symbol(i)));
        line(fmt::format("cvta.param.u64 {}, {};", addr, raw));
        tensor_maps_[p.name] = addr;
      }
    }
    const std::vector<int64_t> offsets = shared_offsets(k_);
    for (size_t i = 0; i < k_.shared.size(); ++i) {
      const std::string r = "%s$" + k_.shared[i].name;
      decls_.emplace_back(r, ".b32");
      if (uses_dynamic_shared(k_))
        line(fmt::format("mov.u32 {}, emmy_dynamic_smem;", r)),
            line(fmt::format("add.u32 {0}, {0}, {1};", r, offsets[i]));
      else
        line(fmt::format("mov.u32 {}, {};", r, shared_symbol(k_.shared[i].name)));
      shared_base_[k_.shared[i].name] = r;
    }
  }

  // ---- expressions ----
  Val materialize(const Val& v) { return ptx::materialize(*this, v); }

  Val expr(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Const:
        if (is_half(e.type) || e.type == ST::Pred) return materialize({immediate(e), e.type});
        return {immediate(e), e.type};
      case Expr::Kind::Var: return {reg_name(e.reg), e.type};
      case Expr::Kind::Special: return special(e.special);
      case Expr::Kind::Param: return {bound(e.name).cur[0], e.type};
      case Expr::Kind::Unary: return unary(e);
      case Expr::Kind::Binary: return binary(e);
      case Expr::Kind::Select: return select(e);
      case Expr::Kind::Cast:
        if (e.args[0].kind == Expr::Kind::Special) return convert(special(e.args[0].special), ST::U32, e.type);
        return convert(expr(e.args[0]), e.args[0].type, e.type);
      case Expr::Kind::Load: return load(e);
      case Expr::Kind::SharedAddr: return shared_address(e.name, expr(e.args[0]));
    }
    throw Unsupported{"an expression kind"};
  }

  Val special(Special s) {
    const std::string r = temp(ST::U32);
    switch (s) {
      case Special::ThreadIdx: line(fmt::format("mov.u32 {}, %tid.x;", r)); break;
      case Special::BlockIdx: line(fmt::format("mov.u32 {}, %ctaid.x;", r)); break;
      case Special::BlockDim: line(fmt::format("mov.u32 {}, %ntid.x;", r)); break;
      case Special::GridDim: line(fmt::format("mov.u32 {}, %nctaid.x;", r)); break;
      case Special::LaneId: line(fmt::format("mov.u32 {}, %laneid;", r)); break;
      case Special::WarpId:
        line(fmt::format("mov.u32 {}, %tid.x;", r));
        line(fmt::format("shr.u32 {0}, {0}, 5;", r));
        break;
    }
    return {r, ST::I32};
  }

  Val unary(const Expr& e) {
    const ST t = e.args[0].type;
    Val a = expr(e.args[0]);
    if (is_half(t)) {
      if (e.un == UnOp::Neg || e.un == UnOp::Abs) {
        const std::string r = temp(t);
        line(fmt::format("{}.b16 {}, {}, {};", e.un == UnOp::Neg ? "xor" : "and", r, a.text,
                         e.un == UnOp::Neg ? "0x8000" : "0x7FFF"));
        return {r, t};
      }
      return convert(math_unary(*this, e.un, convert(a, t, ST::F32)), ST::F32, t);
    }
    return math_unary(*this, e.un, a);
  }

  // f16 and bf16 arithmetic runs in f32 and rounds back, as the CUDA printer's half math does:
  // one rounding of an exact f32 result for + - * / (f32 holds twice their precision and more).
  Val binary(const Expr& e) {
    const ST t = e.args[0].type;
    if ((e.bin == BinOp::And || e.bin == BinOp::Or) && reads_memory(e.args[1])) return short_circuit(e);
    Val a = expr(e.args[0]), b = expr(e.args[1]);
    if (is_half(t)) {
      Val r = math_binary(*this, e.bin, convert(a, t, ST::F32), convert(b, t, ST::F32));
      return r.type == ST::Pred ? r : convert(r, ST::F32, t);
    }
    return math_binary(*this, e.bin, a, b);
  }

  // a && b, a || b with b read only where a leaves it to decide.
  Val short_circuit(const Expr& e) {
    const std::string r = temp(ST::Pred), done = label();
    line(fmt::format("mov.pred {}, {};", r, expr(e.args[0]).text));
    line(fmt::format("@{}{} bra {};", e.bin == BinOp::And ? "!" : "", r, done));
    line(fmt::format("mov.pred {}, {};", r, expr(e.args[1]).text));
    place(done);
    return {r, ST::Pred};
  }

  Val select(const Expr& e) {
    const ST t = e.type;
    Val p = materialize(expr(e.args[0]));
    if (reads_memory(e.args[1]) || reads_memory(e.args[2])) {
      const std::string r = temp(t), other = label(), done = label();
      line(fmt::format("@!{} bra {};", p.text, other));
      line(fmt::format("mov.{} {}, {};", mov_type(t), r, expr(e.args[1]).text));
      line(fmt::format("bra {};", done));
      place(other);
      line(fmt::format("mov.{} {}, {};", mov_type(t), r, expr(e.args[2]).text));
      place(done);
      return {r, t};
    }
    Val a = expr(e.args[1]), b = expr(e.args[2]);
    const std::string r = temp(t);
    if (t == ST::Pred) {
      line(fmt::format("mov.pred {}, {};", r, b.text));
      line(fmt::format("@{} mov.pred {}, {};", p.text, r, a.text));
    } else {
      line(fmt::format("selp.{} {}, {}, {}, {};", mov_type(t), r, a.text, b.text, p.text));
    }
    return {r, t};
  }

  Val convert(Val a, ST from, ST to) { return math_convert(*this, a, from, to); }

  // The global address of element `index` of buffer `name`.
  std::string global_address(const std::string& name, Val index, ST elem) {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) throw Unsupported{fmt::format("buffer '{}' is not a parameter", name)};
    const std::string r = temp(ST::I64);
    const int size = type_bytes(elem);
    if (index.type == ST::I64)
      line(fmt::format("mad.lo.s64 {}, {}, {}, {};", r, index.text, size, it->second));
    else
      line(fmt::format("mad.wide.{} {}, {}, {}, {};", index.type == ST::U32 ? "u32" : "s32", r, materialize(index).text,
                       size, it->second));
    return r;
  }

  Val shared_address(const std::string& array, Val index) {
    auto it = shared_base_.find(array);
    if (it == shared_base_.end()) throw Unsupported{fmt::format("shared array '{}' is not declared", array)};
    ST elem = ST::F32;
    for (const SharedArray& a : k_.shared)
      if (a.name == array) elem = a.type;
    const std::string r = temp(ST::U32);
    Val i = index.type == ST::I64 ? convert(index, ST::I64, ST::U32) : index;
    line(fmt::format("mad.lo.u32 {}, {}, {}, {};", r, i.text, type_bytes(elem), it->second));
    return {r, ST::U32};
  }

  std::string address(Space space, const std::string& name, Val index, ST elem) {
    return space == Space::Global ? global_address(name, index, elem) : shared_address(name, index).text;
  }

  std::string_view load_space(Space space, const std::string& name) const {
    if (space == Space::Shared) return "shared";
    const Param* p = k_.find_param(name);
    return p && p->is_const ? "global.nc" : "global";
  }

  Val load(const Expr& e) {
    const std::string at = address(e.space, e.name, expr(e.args[0]), e.type);
    if (e.type == ST::Pred) {
      const std::string byte = temp(ST::U32), r = temp(ST::Pred);
      line(fmt::format("ld.{}.u8 {}, [{}];", load_space(e.space, e.name), byte, at));
      line(fmt::format("setp.ne.u32 {}, {}, 0;", r, byte));
      return {r, ST::Pred};
    }
    const std::string r = temp(e.type);
    line(fmt::format("ld.{}.{} {}, [{}];", load_space(e.space, e.name), ld_type(e.type), r, at));
    return {r, e.type};
  }

  // ---- statements ----
  void block(const std::vector<Stmt>& body) {
    scopes_.emplace_back();
    for (const Stmt& s : body) stmt(s);
    scopes_.pop_back();
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::Decl: return decl(s);
      case Stmt::Kind::Assign: return assign(s.reg, expr(s.args[0]));
      case Stmt::Kind::Store: return store(s);
      case Stmt::Kind::For: return for_loop(s);
      case Stmt::Kind::If: return if_then(s);
      case Stmt::Kind::Barrier: return line("bar.sync 0;");
      case Stmt::Kind::Intrinsic: return intrinsic(s);
      case Stmt::Kind::Comment: return comment(s.text);
      case Stmt::Kind::VecLoad:
      case Stmt::Kind::VecStore: return vector_access(s);
    }
  }

  void comment(const std::string& text) {
    size_t start = 0;
    do {
      const size_t end = text.find('\n', start);
      line(fmt::format("// {}", text.substr(start, end - start)));
      start = end == std::string::npos ? end : end + 1;
    } while (start != std::string::npos);
  }

  void decl(const Stmt& s) {
    // The initial value is read before the name is bound: `x = x + 1` in a new scope reads the outer x.
    std::optional<Val> init;
    if (!s.args.empty()) init = expr(s.args[0]);
    Bound& b = declare(s.reg.name, s.type, s.count);
    if (!init) return;
    if (s.count == 1) return assign({s.reg.name, -1}, *init);
    for (const std::string& r : b.cur) line(fmt::format("mov.{} {}, {};", mov_type(s.type), r, init->text));
  }

  // A temporary (written once, read by this assignment alone) becomes the register's current
  // version; any other value is moved into a fresh one (never another variable's register: the
  // moves into phis at a loop's back edge would then have to be ordered).
  void assign(const Reg& reg, const Val& v) {
    if (v.text.rfind("%t$", 0) == 0 && !bound(reg.name).pinned) {
      bound(reg.name).cur.at(elem_of(reg)) = v.text;
      return;
    }
    const ST type = bound(reg.name).type;
    const std::string dest = define(reg);
    if (dest != v.text) line(fmt::format("mov.{} {}, {};", mov_type(type), dest, v.text));
  }

  void store(const Stmt& s) {
    const ST t = s.args[1].type;
    const std::string at = address(s.space, s.name, expr(s.args[0]), t);
    Val v = expr(s.args[1]);
    const std::string_view space = s.space == Space::Shared ? "shared" : "global";
    if (t == ST::Pred) {
      const std::string byte = temp(ST::U32);
      line(fmt::format("selp.u32 {}, 1, 0, {};", byte, v.text));
      return line(fmt::format("st.{}.u8 [{}], {};", space, at, byte));
    }
    line(fmt::format("st.{}.{} [{}], {};", space, ld_type(t), at, materialize(v).text));
  }

  // One aligned access of count * size bytes: 4- and 8-byte elements straight into (out of)
  // the array's registers; 16-bit ones two to a 32-bit word, bools (a byte each) four, or one
  // 16-bit word of two.
  void vector_access(const Stmt& s) {
    const bool is_load = s.kind == Stmt::Kind::VecLoad;
    const std::string at = address(s.space, s.name, expr(s.args[0]), s.type);
    const std::string_view space =
        is_load ? load_space(s.space, s.name) : (s.space == Space::Shared ? "shared" : "global");
    // A load defines each element anew; a store reads them.
    auto elem = [&](int e) {
      const Reg r{s.reg.name, bound(s.reg.name).count == 1 ? -1 : e};
      return is_load ? define(r) : reg_name(r);
    };
    const int size = type_bytes(s.type), bytes = s.count * size;
    const int per_word = size >= 4 ? 1 : std::min(4 / size, s.count);
    std::vector<std::string> words;
    std::string word_type(ld_type(s.type));
    if (per_word == 1) {
      for (int e = 0; e < s.count; ++e) words.push_back(elem(e));
    } else {
      word_type = bytes == 2 ? "u16" : "b32";
      for (int w = 0; w < s.count / per_word; ++w) words.push_back(temp(ST::U32));
    }
    if (!is_load && per_word > 1) pack_words(s.type, per_word, words, elem);
    std::string list;
    for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
    const std::string vec = words.size() == 1 ? "" : fmt::format(".v{}", words.size());
    const std::string operand = words.size() == 1 ? list : "{" + list + "}";
    if (is_load)
      line(fmt::format("ld.{}{}.{} {}, [{}];", space, vec, word_type, operand, at));
    else
      line(fmt::format("st.{}{}.{} [{}], {};", space, vec, word_type, at, operand));
    if (is_load && per_word > 1) unpack_words(s.type, per_word, words, elem);
  }

  template <class Elem>
  void pack_words(ST type, int per_word, const std::vector<std::string>& words, const Elem& elem) {
    for (size_t w = 0; w < words.size(); ++w) {
      const int e0 = static_cast<int>(w) * per_word;
      if (type != ST::Pred) {
        line(fmt::format("mov.b32 {}, {{{}, {}}};", words[w], elem(e0), elem(e0 + 1)));
        continue;
      }
      line(fmt::format("mov.b32 {}, 0;", words[w]));
      for (int k = 0; k < per_word; ++k) {
        const std::string byte = temp(ST::U32);
        line(fmt::format("selp.u32 {}, 1, 0, {};", byte, elem(e0 + k)));
        line(fmt::format("bfi.b32 {0}, {1}, {0}, {2}, 8;", words[w], byte, 8 * k));
      }
    }
  }

  template <class Elem>
  void unpack_words(ST type, int per_word, const std::vector<std::string>& words, const Elem& elem) {
    for (size_t w = 0; w < words.size(); ++w) {
      const int e0 = static_cast<int>(w) * per_word;
      if (type != ST::Pred) {
        line(fmt::format("mov.b32 {{{}, {}}}, {};", elem(e0), elem(e0 + 1), words[w]));
        continue;
      }
      for (int k = 0; k < per_word; ++k) {
        const std::string byte = temp(ST::U32);
        line(fmt::format("bfe.u32 {}, {}, {}, 8;", byte, words[w], 8 * k));
        line(fmt::format("setp.ne.u32 {}, {}, 0;", elem(e0 + k), byte));
      }
    }
  }

  static std::optional<int64_t> constant(const Expr& e) {
    if (e.kind == Expr::Kind::Const && !is_float(e.type)) return e.ival;
    return std::nullopt;
  }

  // Loops marked `unroll` with constant bounds are unrolled here, as NVVM does for `#pragma
  // unroll`; any other loop is a test at the top and a branch back.
  void for_loop(const Stmt& s) {
    scopes_.emplace_back();
    std::optional<int64_t> lo = constant(s.args[0]), hi = constant(s.args[1]);
    const std::string_view t = ld_type(s.type);
    if (s.unroll == kir::Unroll::Full && lo && hi && s.step > 0 && (*hi - *lo) / s.step <= 1024) {
      for (int64_t i = *lo; i < *hi; i += s.step) {
        scopes_.emplace_back();
        const std::string v = declare(s.reg.name, s.type, 1).cur[0];
        line(fmt::format("mov.{} {}, {};", t, v, i));
        block(s.body);
        scopes_.pop_back();
      }
      scopes_.pop_back();
      return;
    }
    Val first = expr(s.args[0]);
    // The loop variable is one register, written before the loop and at the end of each pass;
    // each variable the body writes has a phi register, its value at the top of every pass.
    const std::string v = declare(s.reg.name, s.type, 1).cur[0];
    line(fmt::format("mov.{} {}, {};", t, v, first.text));
    const std::set<std::string> written = assigned_in(s.body);
    const bool hoist = !reads_any(s.args[1], written) && !reads_memory(s.args[1]);
    Val last = hoist ? materialize(expr(s.args[1])) : Val{};
    const auto phis = phis_for(snapshot(written));
    move_into(phis);
    set_current(phis);
    const std::string head = label(), end = label(), exit = temp(ST::Pred);
    place(head);
    if (s.unroll == kir::Unroll::Never) line(".pragma \"nounroll\";");
    if (!hoist) last = expr(s.args[1]);
    line(fmt::format("setp.ge.{} {}, {}, {};", t, exit, v, last.text));
    line(fmt::format("@{} bra {};", exit, end));
    block(s.body);
    move_into(phis);
    set_current(phis);
    line(fmt::format("add.{0} {1}, {1}, {2};", t, v, s.step));
    line(fmt::format("bra {};", head));
    place(end);
    scopes_.pop_back();
  }

  // Each variable either branch writes leaves both through one phi register.
  void if_then(const Stmt& s) {
    Val p = materialize(expr(s.args[0]));
    std::set<std::string> written = assigned_in(s.body);
    written.merge(assigned_in(s.orelse));
    const auto before = snapshot(written);
    const auto phis = phis_for(before);
    const std::string other = label(), done = label();
    line(fmt::format("@!{} bra {};", p.text, other));
    block(s.body);
    move_into(phis);
    set_current(before);
    if (s.orelse.empty() && phis.empty()) {
      place(other);
      return;
    }
    line(fmt::format("bra {};", done));
    place(other);
    block(s.orelse);
    move_into(phis);
    place(done);
    set_current(phis);
  }

  void intrinsic(const Stmt& s) {
    if (s.intrinsic < 0 || s.intrinsic >= static_cast<int>(IntrinsicId::Count))
      throw Unsupported{"an intrinsic outside the table"};
    const auto id = static_cast<IntrinsicId>(s.intrinsic);
    IntrinsicOperands ops;
    const int buffer_input = s.name.empty() ? -2 : intrinsic_buffer_input(s);
    const ScalarType buffer_elem = buffer_input >= 0 ? buffer_type(s.name) : ST::F32;
    if (buffer_input == -1) {  // TMA: the tensor map's address first
      auto it = tensor_maps_.find(s.name);
      if (it == tensor_maps_.end()) throw Unsupported{fmt::format("tensor map '{}' is not a parameter", s.name)};
      ops.ins.push_back(it->second);
    }
    for (size_t i = 0; i < s.args.size(); ++i) {
      Val v = expr(s.args[i]);
      if (static_cast<int>(i) == buffer_input) v = {global_address(s.name, v, buffer_elem), ST::I64};
      ops.ins.push_back(materialize(v).text);
    }
    ops.imms = s.imm;
    // Results in fresh registers, but a wgmma's: its accumulators are written in place, as the
    // asynchronous chain of wgmmas to their wait_group reads and writes the same registers.
    const bool in_place = wgmma_n(id) > 0;
    for (const Reg& r : s.outs) ops.outs.push_back(in_place ? reg_name(r) : define(r));
    print_intrinsic(*this, id, ops);
  }

  ST buffer_type(const std::string& name) const {
    const Param* p = k_.find_param(name);
    if (!p) throw Unsupported{fmt::format("buffer '{}' is not a parameter", name)};
    return p->type;
  }
};

}  // namespace

PtxPrint print_ptx(const Program& program, std::string_view arch) {
  std::string out = fmt::format("// Emmy: op `{}`, {}.\n// Printed as PTX by emmyc: do not edit.\n\n", program.op,
                                program.knobs.empty() ? "default knobs" : fmt::format("knobs `{}`", program.knobs));
  out += fmt::format(".version {}\n.target {}\n.address_size 64\n", kPtxVersion, arch);
  int dynamic_align = 0;
  for (const Kernel& k : program.kernels)
    if (uses_dynamic_shared(k))
      for (const SharedArray& a : k.shared) dynamic_align = std::max({dynamic_align, 16, a.align});
  if (dynamic_align > 0) out += fmt::format("\n.extern .shared .align {} .b8 emmy_dynamic_smem[];\n", dynamic_align);
  for (const Kernel& k : program.kernels) {
    try {
      out += "\n";
      for (const std::string& line : k.doc) out += "// " + line + "\n";
      out += KernelPrinter(k).print();
    } catch (const Unsupported& u) {
      return {{}, fmt::format("{} in {}", u.what, k.name)};
    }
  }
  return {out, {}};
}

}  // namespace emmy
