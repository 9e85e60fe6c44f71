// The kernel builder shared by the scalar tier (scalar.cpp, cooperative rows in coop.cpp) and
// the tensor-core tier (mma/): expression lowering (builder.cpp), monoid terms and carriers
// (reduce.cpp), and register scopes. Internal to the lower layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"
#include "ir/ieee_rules.hpp"
#include "ir/intrinsics.hpp"
#include "lower/kernel/plan.hpp"
#include "lower/monoid_table.hpp"
#include "lower/passes.hpp"
#include "lower/regroup_laws.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

using algebra::Term;
using algebra::TermOp;
using kir::ScalarType;
using tir::Expr;
using K = kir::Expr;

// Arithmetic on 16-bit floats runs in f32 and rounds once at the end, as the GPU does it.
inline constexpr double kLog2e = 1.4426950408889634;  // FAST_EXP: exp(x) = exp2(x * log2 e)

inline ScalarType compute_type(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 ? ScalarType::F32 : t;
}

inline ScalarType wider(ScalarType a, ScalarType b) {
  if (kir::is_float(a) || kir::is_float(b)) {
    if (a == ScalarType::F64 || b == ScalarType::F64) return ScalarType::F64;
    return ScalarType::F32;
  }
  if (a == ScalarType::Pred && b == ScalarType::Pred) return ScalarType::Pred;
  return ScalarType::I64;
}

// A literal converted to an integer as a C cast would on the GPU (cvt.rzi): toward zero,
// saturated, NaN to 0 — never the undefined behaviour of an out-of-range conversion.
inline int64_t saturated_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

inline K as(K e, ScalarType t) {
  if (e.type == t) return e;
  if (t == ScalarType::Pred && e.type != ScalarType::Pred)
    return kir::binary(kir::BinOp::Ne, e, kir::is_float(e.type) ? kir::cf(0, e.type) : kir::ci(0, e.type));
  if (e.kind == K::Kind::Const)
    return kir::is_float(t) ? kir::cf(e.fval, t) : kir::ci(kir::is_float(e.type) ? saturated_int(e.fval) : e.ival, t);
  return kir::cast(std::move(e), t);
}

inline K arith(kir::BinOp op, K a, K b, ScalarType result) {
  ScalarType ct = compute_type(result);
  return as(kir::binary(op, as(std::move(a), ct), as(std::move(b), ct)), result);
}

struct UnaryRow {
  std::string_view name;
  kir::UnOp op;
  bool costly;  // worth a register rather than computed again (KernelBuilder::kept_value)
};
inline constexpr UnaryRow kUnaryCalls[] = {
    {"exp", kir::UnOp::Exp, true},   {"exp2", kir::UnOp::Exp2, true},       {"log", kir::UnOp::Log, true},
    {"sqrt", kir::UnOp::Sqrt, true}, {"rsqrt", kir::UnOp::Rsqrt, true},     {"tanh", kir::UnOp::Tanh, true},
    {"erf", kir::UnOp::Erf, true},   {"sigmoid", kir::UnOp::Sigmoid, true}, {"abs", kir::UnOp::Abs, false}};
struct BinaryRow {
  std::string_view spelling;
  kir::BinOp op;
};
inline constexpr BinaryRow kBinaryOps[] = {{"+", kir::BinOp::Add},   {"-", kir::BinOp::Sub},  {"*", kir::BinOp::Mul},
                                           {"/", kir::BinOp::Div},   {"%", kir::BinOp::Rem},  {"max", kir::BinOp::Max},
                                           {"min", kir::BinOp::Min}, {"<", kir::BinOp::Lt},   {"<=", kir::BinOp::Le},
                                           {">", kir::BinOp::Gt},    {">=", kir::BinOp::Ge},  {"==", kir::BinOp::Eq},
                                           {"!=", kir::BinOp::Ne},   {"&&", kir::BinOp::And}, {"||", kir::BinOp::Or}};
struct TermRow {
  TermOp term;
  kir::BinOp op;
};
inline constexpr TermRow kTermBinary[] = {
    {TermOp::Add, kir::BinOp::Add}, {TermOp::Sub, kir::BinOp::Sub}, {TermOp::Mul, kir::BinOp::Mul},
    {TermOp::Div, kir::BinOp::Div}, {TermOp::Max, kir::BinOp::Max}, {TermOp::Min, kir::BinOp::Min},
    {TermOp::Lt, kir::BinOp::Lt},   {TermOp::Le, kir::BinOp::Le},   {TermOp::Gt, kir::BinOp::Gt},
    {TermOp::Ge, kir::BinOp::Ge},   {TermOp::Eq, kir::BinOp::Eq},   {TermOp::Ne, kir::BinOp::Ne},
    {TermOp::And, kir::BinOp::And}, {TermOp::Or, kir::BinOp::Or}};

inline std::optional<kir::BinOp> binop_of(std::string_view spelling) {
  for (const BinaryRow& r : kBinaryOps)
    if (r.spelling == spelling) return r.op;
  return std::nullopt;
}

inline K binop(kir::BinOp op, K a, K b, ScalarType result) {
  if (kir::is_comparison(op) && op != kir::BinOp::And && op != kir::BinOp::Or) {
    ScalarType ct = compute_type(wider(a.type, b.type));
    return kir::binary(op, as(std::move(a), ct), as(std::move(b), ct));
  }
  if (op == kir::BinOp::And || op == kir::BinOp::Or)
    return kir::binary(op, as(std::move(a), ScalarType::Pred), as(std::move(b), ScalarType::Pred));
  return arith(op, std::move(a), std::move(b), result);
}

// A reduction's carrier: one register per field (a vector field: one element of it).
struct Carrier {
  std::vector<std::string> fields;
  std::vector<K> values;
  const K& at(const std::string& field) const {
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i] == field) return values[i];
    internal_error(__FILE__, __LINE__, fmt::format("no carrier field '{}'", field));
  }
};

// One chunk of V elements of a split axis in the vector path: the loads it shares between
// its elements and the stores it gathers into one vector store each. At namespace scope: a
// nested class with member initializers cannot be default-constructed inside its enclosing
// class (clang).
struct VecChunk {
  size_t block = 0;  // index in blocks_ of the chunk's body, where its vector loads go
  K base;            // the chunk's first element index
  K local;           // ... counted from the split's first column (its slice's, under COOP=.../k<K>)
  K elem;            // the current element's index (base + u)
  int u = 0;
  std::string axis;  // the split axis
  size_t depth = 0;  // blocks_'s size in an element's own block (a kept value is computed there)
  // A row of a tensor in the chunk: register arrays of `width` elements, one per access of at
  // most 16 bytes (V f16: one array of 8; V = 8 f32: two arrays of 4).
  struct Access {
    std::vector<std::string> arrays;
    int width = 1;
    std::string tensor;
    K index;
  };
  std::map<std::string, Access> loads;   // tensor + row -> its vector loads
  std::map<std::string, Access> stores;  // tensor + row -> arrays filled element by element
};

// COOP=.../c<R>, the row cache (row_cache.cpp): which body is being lowered (the dry run only
// finds the rows read again), the chunks kept so far (by tensor, element and bound), the rows
// worth keeping, their shared arrays and the ones copied in whole before the first pass, the
// current split's loop, and what the cached body needs at run time.
enum class RowCache { Off, Vector, Scalar, Peeled };
struct RowCacheState {
  RowCache mode = RowCache::Off;
  bool probe = false;
  std::set<std::string> held;
  std::set<std::string> reused;
  std::vector<std::pair<std::string, std::string>> first_reads;  // the dry run's rows (tensor, row), first read first
  std::map<std::string, K> bases;                                // the dry run's rows: each one's element 0
  std::map<std::string, std::string> reach;   // ... the size of the axis its splits walk ("" where they differ)
  std::map<std::string, std::string> arrays;  // kept row -> its shared array
  std::map<std::string, K> prefetched;        // rows copied whole into their arrays up front -> column 0's place there
  std::string guard;                          // the current split's loop (bounds, step)
  std::string axis;                           // the current split's axis size
  std::vector<K> conds;                       // sizes that must be multiples of V (the vector body)
  std::vector<std::string> sizes;             // the split axes' sizes, each at most N * V * R (in order)
  // COOP=.../r<R>, the cache in registers: a split is R copies of its chunk (copy: the one being
  // lowered, -1 outside; copy_cond: its bounds test), a kept chunk lives in register arrays
  // declared at the body's top (regs, by chunk key; decls), and the first reads of a row copied
  // whole (an input's) are loaded before the split's copies (preload), every load in flight at once.
  int copy = -1;
  K copy_cond;
  std::map<std::string, VecChunk::Access> regs;
  std::vector<kir::Stmt> decls, preload;
  // Under r<R>, the values of calls (exp, log...) of a kept chunk's element that a later pass
  // computes again: the dry run counts each call by its element (values_seen; twice: values_reused, with the
  // registers it takes), the bodies keep the reused ones in registers declared at the body's top
  // (values, by element and path), up to the target's registers for them (value_registers spent).
  size_t body_scope = 0;  // scopes_'s index of the body's own scope (its rows' statistics)
  std::set<std::string> values_seen;
  std::map<std::string, int> values_reused;
  std::map<std::string, K> values;
  int value_registers = 0;
};

class KernelBuilder {
 public:
  KernelBuilder(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
                const LawMemo* laws = nullptr, KernelBodies bodies = KernelBodies::All)
      : p_(program), checked_(checked), knobs_(knobs), law_memo_(laws), bodies_(bodies) {}

  kir::Program run();
  // What run() decided for each kernel, in order.
  const std::vector<KernelPlan>& plans() const { return plans_; }

  // ---- what the tiers build with (the tensor-core tier in mma/ too) ------------------------
  // Names and scopes.
  std::string fresh(const std::string& base) { return fmt::format("{}_{}", base, ++counter_); }

  // A register named after a tensor or an index, unless a parameter already has the name
  // (matmul's tensor b and an index b): then with a trailing underscore.
  std::string unclashed(std::string name) const;

  struct Scope {
    std::map<std::string, K> index;       // index variable -> its value in addresses (clamped into its axis)
    std::map<std::string, K> value;       // index variable -> its value in arithmetic, where it is not clamped
    std::map<std::string, K> regs;        // Reg name -> value
    std::map<std::string, Carrier> memo;  // reductions already computed in this block
    std::map<std::string, K> cse;         // expensive subexpressions already in a register
    std::map<std::string, K> reciprocal;  // a float divisor (rendered) -> the register holding 1 / it
    std::map<std::string, Expr> maxima;   // a register holding max(c: e) over a whole axis -> that max
  };

  void emit(kir::Stmt s) { blocks_.back()->push_back(std::move(s)); }

  template <class F>
  std::vector<kir::Stmt> nested(F&& body) {
    std::vector<kir::Stmt> out;
    blocks_.push_back(&out);
    scopes_.push_back({});
    body();
    scopes_.pop_back();
    blocks_.pop_back();
    return out;
  }

  // The index's binding: in an address (a global read's subscripts), or as a value in arithmetic,
  // which is the unclamped one where a scope bound both.
  const K* find_index(const std::string& name, bool as_value = false) const;
  // The innermost scope, and a scope pushed and popped around a tier's own emission.
  Scope& scope() { return scopes_.back(); }
  void push_scope() { scopes_.push_back({}); }
  void pop_scope() { scopes_.pop_back(); }
  // Starts a kernel body: `body` is the only block, under one empty scope.
  void begin_body(std::vector<kir::Stmt>& body) {
    blocks_ = {&body};
    scopes_ = {{}};
  }
  // The statements of the block being emitted.
  const std::vector<kir::Stmt>& block() const { return *blocks_.back(); }

  // A value computed once per block (in a register), and a named register.
  K shared(K value);

  // A register initialized to `value`, in the current block; returns its value.
  K let(const std::string& name, K value);

  // Sizes, addresses and expressions.
  static K size_value(const std::string& size);

  K linear_index(const tir::Tensor& t, const std::vector<K>& idx) const;
  // Subscript k of a read of `t`: an index variable takes its binding (clamped into its axis where
  // the scope clamps it); a computed one (x[i - 1, l], k[b, h / G, j, d]) is clamped into dim k,
  // so that a read the program guards (select(i >= 1, max(l: x[i - 1, l]), 0), whose reduction
  // runs ahead of the select) never leaves its buffer.
  K subscript(const tir::Tensor& t, const Expr& index, size_t k);

  bool in_global(const std::string& name) const;

  K lower(const Expr& e);

  // The definition of an intermediate at the read's indices, its own axes renamed fresh.
  Expr inline_def(const Expr& e);
  static std::string render_key(const K& e);  // an expression as a memo key
  void stmt(const lir::Stmt& s);              // a loop-IR statement
  // exp(x); with FAST_EXP=1 on an f32 value, exp2(x * log2 e) as ex2.approx.ftz: one multiply
  // and one MUFU.EX2 instead of expf's range reduction (within a few ulp of it; results below
  // 2^-126 flush to 0, which a softmax weight that small never notices).
  K exp_value(K x) const;

  // COOP is the scalar tier's: a tensor-core kernel's rows are its warps' (in_tensor_core_).
  bool coop_on() const { return knobs_.coop_threads > 1 && !in_tensor_core_; }

  // Monoids: a reduction's lowering, a term as a kernel expression (`hint` types constants and
  // infinities), and two carriers combined (a share that combined no element skipped, as
  // coop_combine does), a value of the lane `mask` away.
  // A carrier's fields, types and proved identity and combine (over a.<field>, b.<field>), and its
  // lift over the lift's parameters where known: the domain of the laws (a count > 0).
  using CarrierSpec = MonoidLowering;
  MonoidLowering monoid_of(const Expr& e);
  static MonoidLowering widen_selections(MonoidLowering m);
  K term_value(const Term& t, const std::map<std::string, K>& env, ScalarType hint);
  std::vector<K> combine_pair(const CarrierSpec& spec, const std::vector<K>& a, const std::vector<K>& b);
  std::vector<K> combine_shares(const CarrierSpec& spec, const std::vector<K>& a, const K& a_has,
                                const std::vector<K>& b, const K& b_has);
  // combine_shares where `has` (each share's flag its last value), else combine_pair.
  std::vector<K> combine_held(const CarrierSpec& spec, std::vector<K> a, std::vector<K> b, bool has);
  K shuffle_xor(const K& value, int mask);

  // What the builder lowers, and its warnings: regroupings that rely on assumed laws (W053), knobs a
  // plan could not apply (W050).
  const lir::Program& loops() const { return p_; }
  const CheckedProgram& checked() const { return checked_; }
  const LawMemo* law_memo() const { return law_memo_; }  // may be null
  const Knobs& knobs() const { return knobs_; }
  KernelBodies bodies() const { return bodies_; }
  std::vector<Warning>& law_warnings() { return law_warnings_; }

 private:
  std::vector<Scope> scopes_;
  std::vector<std::vector<kir::Stmt>*> blocks_;

  // The tensor-core tier (mma/): fills `out`'s launch shape and body when the kernel's
  // contractions fit the knobs' mma atom; else false with `why`.
  // `plan`: what the tier decided, where it takes the kernel.
  bool mma_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why, KernelPlan& plan);

  // op(x), every exp through exp_value (the one place FAST_EXP acts); an exp or exp2 of a
  // difference takes it as kir::exp_difference (-inf - -inf is -inf there: ir/ieee_rules.hpp).
  K unary_value(kir::UnOp op, K x);
  // exp(a - m) where m is a register holding max(c: a) and c ranges over that max's axis here:
  // m is -inf only where every a is, so the difference is a - (m == -inf ? 0 : m), with no test
  // an element (nullopt: not that form).
  std::optional<K> exp_below_row_max(const Expr& e, ScalarType t);
  // A row maximum m (in `ct`) safe to subtract below it: m == -inf ? 0 : m, in a register (both
  // exp-below-max forms: a monoid's combine, a row statistic).
  K finite_max(const K& m, ScalarType ct);

  // ---- names and scopes (the builder's own) -----------------------------------------------
  const K* find_reg(const std::string& name) const;
  const Carrier* find_memo(const std::string& key) const;

  // An expensive value computed once per block: the combine of a carrier repeats
  // max(a.m, b.m) and exp(a.m - n) in every field, and must not pay for them each time.
  // A divisor whose reciprocal a tier computed once (a row's normalizer, divided into every
  // element of the row): x / d becomes x * (1 / d).
  const K* find_reciprocal(const K& divisor) const;

  K call(const Expr& e, ScalarType t);
  K call_value(const Expr& e, ScalarType t);

  K read(const Expr& e);

  // Reads of a register statement by its own index variables (the thread's row).
  bool is_own_row(const Expr& e) const;

  Expr fresh_axes(const Expr& e);

  Carrier record(const Expr& e, const std::optional<K>& elem);

  // ---- reductions -------------------------------------------------------------------------
  static std::string result_field(const Expr& e);

  Carrier reduce(const Expr& e, const std::optional<K>& elem);

  static std::vector<std::string> axis_list(const std::vector<tir::Axis>& axes);

  static std::string axes_names(const std::vector<tir::Axis>& axes);

  // Nested loops over `axes` (outermost first) around `body`, as statements.
  template <class F>
  std::vector<kir::Stmt> axis_loops(const std::vector<tir::Axis>& axes, F&& body, size_t k = 0) {
    std::vector<kir::Stmt> out;
    if (k == axes.size()) return out;
    const tir::Axis& a = axes[k];
    // A reduction axis named like an enclosing loop's variable (softmax's c, reduced inside
    // the loop over c that stores y) gets a fresh name instead of shadowing it.
    std::string loop_var = find_index(a.name) ? fresh(a.name) : unclashed(a.name);
    std::vector<kir::Stmt> inner = nested([&] {
      scopes_.back().index[a.name] = kir::var({loop_var}, ScalarType::I64);
      if (k + 1 == axes.size())
        body();
      else
        for (kir::Stmt& s : axis_loops(axes, body, k + 1)) emit(std::move(s));
    });
    out.push_back(
        kir::for_loop(loop_var, ScalarType::I64, kir::ci(0, ScalarType::I64), size_value(a.size), std::move(inner)));
    return out;
  }

  // The lifted element: field -> value, for the current point of the reduction.
  std::map<std::string, K> lift(const Expr& e, const MonoidLowering& m, const K& vector_elem);

  // v[b, h, j, :] at element `elem`: the slice replaced by the element index.
  Expr with_elem(const Expr& e, const K& elem);

  // carrier <- combine(carrier, lifted), every field from the old values.
  // With `has` (the fold starts from its first element): the lifted value itself until has.
  void combine_into(Carrier& c, const MonoidLowering& m, const std::map<std::string, K>& lifted,
                    const std::optional<K>& has = std::nullopt);

  // exp(x - max(..., x, ...)), online softmax's rescale: the maximum n is never below x, so
  // -inf - -inf arises only where n is -inf, and n replaced by 0 there (once, shared by every
  // exp against it) is the exp of a difference's rule at one select a carrier, not one an exp.
  std::optional<K> exp_below_max(const Term& d, const std::map<std::string, K>& env, ScalarType hint);

  // ---- loop IR statements -----------------------------------------------------------------

  // A split reduction's partial combined into its accumulator (REDUCE=g<N>a).
  static kir::Stmt atomic_store(const lir::Stmt& s, const tir::Tensor& t, K index, K value);

  // `start`/`threads`: COOP's register tiles, strided over the row's threads.
  void loop(const lir::Stmt& s, std::optional<K> start = std::nullopt, int threads = 1);

  // Inside a tile: per-tile carrier registers read as element u.
  void bind_tile_element(int u);

  void fold(const lir::Stmt& s, int tile);

  // The tile element u's index, clamped into the axis so its loads stay in bounds.
  void bind_clamped(int u);

  // ---- kernels ----------------------------------------------------------------------------
  kir::Kernel kernel(const lir::Kernel& k, kir::Program& program);

  // Parameters: the buffers the body touches, in program order, then every size.
  static void collect_params(kir::Kernel& k, const kir::Program& program);
  // A kernel without its body (KernelBodies): the buffers its loop kernel reads (through the
  // register intermediates it inlines) or stores, as emission would pass them.
  void loop_params(const lir::Kernel& lk, kir::Kernel& k, const kir::Program& program) const;

  const lir::Program& p_;
  const CheckedProgram& checked_;
  const Knobs& knobs_;
  const LawMemo* law_memo_;
  KernelBodies bodies_;
  int counter_ = 0;
  int widen_half_ = 0;
  bool quiet_reduce_ = false;          // the statement's comment already says what the reduction is
  std::vector<tir::Axis> bound_axes_;  // the Loop, Fold and Reduce axes around what is lowered, innermost last
  int lazy_ = 0;      // lowering a select's arm or the right operand of && or ||: it runs only where taken
  struct AxesBound {  // bound_axes_ with `axes` while it lives
    std::vector<tir::Axis>& stack;
    size_t depth;
    AxesBound(std::vector<tir::Axis>& s, const std::vector<tir::Axis>& axes) : stack(s), depth(s.size()) {
      stack.insert(stack.end(), axes.begin(), axes.end());
    }
    AxesBound(const AxesBound&) = delete;
    AxesBound& operator=(const AxesBound&) = delete;
    ~AxesBound() { stack.resize(depth); }
  };
  int tile_ = 1;
  K tile_base_, tile_size_;
  std::string tile_axis_;
  std::map<std::string, std::pair<std::string, ScalarType>> tile_arrays_;

  // ---- COOP=t<N>[/v<V>]: cooperative rows and vector accesses (coop.cpp) -------------
  bool coop_top() const { return coop_on() && !coop_inner_; }
  void coop_kernel(const lir::Kernel& k, kir::Kernel& out, const K& total);
  void coop_cached_body(const lir::Kernel& k);
  void coop_cached_split(const tir::Axis& axis, bool contiguous, const std::function<void()>& element);
  K cached_read(const tir::Tensor& t, std::vector<K> idx);
  std::optional<K> prefetched_read(const tir::Tensor& t, std::vector<K> idx);
  K cache_column(const std::string& row, const tir::Tensor& t, K column) const;
  K register_read(const tir::Tensor& t, const std::string& row, const std::string& key, const K& at);
  // A call's value kept for a later pass of the row cache in registers: its element's key (the
  // call, the chunk's copy and element) where it may be kept, and the value computed or kept.
  std::optional<std::string> kept_value_key(const Expr& e, ScalarType t) const;
  K kept_value(const std::string& key, ScalarType t, const std::function<K()>& compute);
  // The R copies of a split's chunk under COOP=.../r<R> (row_cache.cpp): `body(var)` lowers the
  // chunk at element `var`; emitted as the copies' first elements, the hoisted loads, then each
  // copy behind its bounds test `var < hi`.
  struct ChunkCopies {
    std::vector<std::string> vars;
    std::vector<std::vector<kir::Stmt>> bodies;
    std::vector<kir::Stmt> preload;
  };
  ChunkCopies lower_copies(const std::string& base, const K& hi, const std::function<void(const K&)>& body);
  void emit_copies(ChunkCopies copies, const K& lo, const K& hi, int step);
  const std::string& cache_array(const std::string& row, const tir::Tensor& t);
  void cache_forget(const std::string& tensor);
  void coop_reduce(const std::string& monoid, const std::vector<tir::Axis>& axes, const CarrierSpec& spec,
                   const std::vector<K>& carrier, const std::optional<K>& has, const std::function<void()>& element);
  void coop_split(const tir::Axis& axis, bool contiguous, const std::function<void()>& element);
  void coop_peeled(const tir::Axis& axis, const std::string& var, int step, const std::function<void()>& element);
  void coop_edges(const tir::Axis& axis, const K& peel, const K& end, const std::function<void()>& element);
  bool vec_row_ok(const tir::Tensor& t, const K& row);
  void coop_chunk(const tir::Axis& axis, const K& base, const std::function<void()>& element);
  void coop_combine(const std::string& monoid, const CarrierSpec& spec, const std::vector<K>& carrier,
                    const std::optional<K>& has);
  const MonoidLaws& coop_laws(const std::string& monoid, const CarrierSpec& spec);
  void coop_loop(const lir::Stmt& s);
  void invert_row_divisors(const lir::Stmt& loop);
  void coop_store(const tir::Tensor& t, const std::vector<K>& idx, const K& value);
  std::optional<K> vec_read(const Expr& e);
  K realigned_read(const tir::Tensor& t, const K& row);
  VecChunk::Access realigned_chunk(const tir::Tensor& t, const K& row);
  std::vector<std::vector<kir::Stmt>> unswitched_chunks(const tir::Axis& axis, const std::string& var,
                                                        const std::function<void()>& element,
                                                        const RowCacheState& before, std::vector<kir::Stmt> shift0);
  bool row_invariant(const Expr& e) const;
  bool vec_stride_ok(const tir::Tensor& t);
  VecChunk::Access vec_access(const tir::Tensor& t, const K& index, const std::string& prefix,
                              std::vector<kir::Stmt>& decls);
  // Elements a chunk: V, or one in the row cache's scalar variant (and the peeled variant's
  // contiguous shares, split as the scalar variant's).
  int vec_width() const { return cache_.mode == RowCache::Scalar ? 1 : knobs_.coop_vec; }
  static kir::Reg vec_reg(const VecChunk::Access& a, int u);
  kir::Stmt vec_move(const VecChunk::Access& a, size_t j, bool load, const std::string& buffer, kir::Space space,
                     const K& first);

  // COOP=.../k<K> and PERSIST (coop_cluster.cpp): the CTA's rank in its cluster, its slices of the
  // split axes (by size), the kernel's top block (where the slices are declared, at top_block_at_,
  // and the combines' parity registers), and the weights a walk keeps in shared memory.
  struct Slice {
    K span, lo, len;
    K span_of_sizes;  // span as an expression of the sizes alone (a test a size class decides)
  };
  // PERSIST with COOP's c<R>: one-dimensional inputs read along a split axis (gamma[c]) are kept in
  // shared memory for the whole walk, this CTA's slice of each (its columns [lo, lo + span + V)),
  // copied once before the walk while the slice fits the row cache.
  struct WeightCache {
    std::map<std::string, std::string> arrays;  // tensor -> its shared array
    std::map<std::string, std::string> axis;    // tensor -> the size of the axis it is read along
  };
  void coop_walk(const K& unit, const K& units, int threads, const std::function<void(const K&)>& body,
                 const std::function<void()>& setup);
  const Slice& cluster_slice(const std::string& size);
  K split_extent(const tir::Axis& axis);
  K split_index(const tir::Axis& axis, const K& local);
  void cluster_combine(const CarrierSpec& spec, const std::vector<K>& carrier, const std::optional<K>& has);
  WeightCache row_weights(const lir::Kernel& k);
  void weights_copy(int threads);
  // A read of a kept weight: its shared array and the element there of global `index` (nullopt where
  // `tensor` is not kept, or outside the row cache's bodies, which alone run where the copy did).
  std::optional<std::pair<std::string, K>> weight_at(const std::string& tensor, const K& index);
  K load_input(const std::string& tensor, const K& index, ScalarType type);  // a global read, or the kept weight's
  std::optional<K> coop_cta_;
  std::map<std::string, Slice> slices_;
  std::vector<kir::Stmt>* top_block_ = nullptr;
  size_t top_block_at_ = 0;
  WeightCache weights_;
  size_t row_scope_ = 0;  // the scope that binds the row's indices (PERSIST: inside the walk)

  bool coop_inner_ = false;                                 // lowering one thread's share of a row (no more splitting)
  bool in_tensor_core_ = false;                             // building a kernel on the tensor-core tier
  K coop_lane_, coop_row_ok_, coop_warp_lane_, coop_warp_;  // the thread's place in its row
  std::set<std::string> coop_axes_;                         // the thread-space axes (a row's index variables)
  int address_depth_ = 0;                                   // > 0 while a global read's subscripts are lowered
  std::map<std::string, MonoidLaws> laws_;                  // by monoid, as the algebra layer proved it
  std::vector<Warning> law_warnings_;                       // W053 (assumed laws) and W050 (knobs not applied)
  std::optional<VecChunk> vec_;
  std::vector<K> vec_conds_;  // what the vector path needs at run time (strides % V == 0)
  int vec_used_ = 0;          // vector accesses the current split made
  // The peeled vector path (rows that need not start V-aligned): chunks of V from each row's
  // first element where the anchor's row is V-aligned; the anchor is the first row a chunk
  // reaches; the number of elements before it, `peel_`, a register emitted after the chunks.
  bool peeling_ = false;
  std::optional<K> peel_anchor_;
  // A peeled split with realigned weights is lowered once a shift (unswitched_chunks): whether
  // the split read one (realigned_seen_), and the shift the copy being lowered takes.
  bool realigned_seen_ = false;
  std::optional<int> realign_shift_;
  K peel_;
  RowCacheState cache_;
  K coop_slot_;  // the thread's row among the block's rows
  int64_t cache_capacity() const {
    return static_cast<int64_t>(knobs_.coop_threads) * knobs_.coop_vec * knobs_.coop_cache;
  }
  // A kept row's elements in its shared array (row_cache.cpp).
  int64_t cache_slot(const std::string& row, const tir::Tensor& t) const;
  bool copied_whole(const std::string& row, const tir::Tensor& t) const;
  void cache_prefetch(const std::vector<std::string>& rows);
  int cache_min_blocks(const kir::Kernel& k) const;
  std::vector<kir::SharedArray>* shared_ = nullptr;
  std::vector<KernelPlan> plans_;
  // W054 of kernels with no contraction to tile: kept only where no kernel takes the tensor cores
  // (a derived backward's row statistic beside its folds is no refusal worth a warning).
  std::vector<Warning> untileable_;
};

}  // namespace emmy::lower::detail
