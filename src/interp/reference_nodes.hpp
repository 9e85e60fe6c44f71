// The reference evaluator's parts, private to src/interp: values and a statement's run state, the
// compiled expression nodes (reference_nodes.cpp) and the expression compiler that builds them
// (reference_compile.cpp); reference_eval.cpp runs an op's statements with them.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sema/sema.hpp"

namespace emmy {
struct ReferenceOptions;  // interp/reference.hpp
}

namespace emmy::reference_detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void fail(const std::string& message);

// ---- values ---------------------------------------------------------------------------------

// One field of a monoid carrier, flattened: `width` doubles at `offset` of the record.
struct FieldSlot {
  std::string name;
  DType dtype = DType::F32;
  size_t offset = 0;
  size_t width = 1;
  bool vector = false;
};

// A monoid carrier's layout, its fields in declaration order.
struct RecordLayout {
  std::string monoid;
  std::vector<FieldSlot> fields;
  size_t width = 0;

  const FieldSlot* find(std::string_view name) const {
    for (const FieldSlot& f : fields)
      if (f.name == name) return &f;
    return nullptr;
  }
};
using LayoutPtr = std::shared_ptr<const RecordLayout>;

// A tensor computed (or given) during an evaluation: each element is `width` doubles.
struct Stored {
  std::string name;
  DType dtype = DType::F64;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements, row-major
  size_t width = 1;
  LayoutPtr record;  // set when the elements are monoid carriers
  std::vector<double> data;
};

// ---- the state of a running statement, and where its parts live ----------------------------

// Index values (one slot per index variable) and scratch space of one statement's evaluation;
// `jitter` where the evaluation moves its narrowing casts' arguments (ReferenceOptions).
struct State {
  std::vector<int64_t> slots;
  std::vector<double> locals;
  const ReferenceOptions* jitter = nullptr;
  uint64_t salt = 0;  // the statement's, in the jitter's hash
  bool f32 = false;   // ReferenceOptions::f32_arithmetic: f32 values rounded after each operation
};

// `x` as the state computes a value of `dtype`: rounded to f32 under f32 arithmetic.
inline double as_computed(const State& s, DType dtype, double x) {
  return s.f32 && dtype == DType::F32 ? static_cast<double>(static_cast<float>(x)) : x;
}

// Slots and scratch regions handed out while a statement is compiled.
struct FrameLayout {
  size_t slots = 0;
  size_t locals = 0;
  size_t nodes = 0;  // MapNodes numbered, so that each cast's jitter is its own
  size_t slot() { return slots++; }
  size_t region(size_t width) {
    size_t at = locals;
    locals += width;
    return at;
  }
};

// Reduction axes: their slots and sizes.
struct Axes {
  std::vector<size_t> slots;
  std::vector<int64_t> sizes;
};

// Calls `body` at every point of `axes` in row-major order (once when there are no axes).
template <typename F>
void for_each_point(State& s, const Axes& axes, F&& body) {
  size_t n = axes.slots.size();
  for (size_t k = 0; k < n; ++k) {
    if (axes.sizes[k] <= 0) return;
    s.slots[axes.slots[k]] = 0;
  }
  for (;;) {
    body();
    size_t k = n;
    for (; k > 0; --k) {
      int64_t& v = s.slots[axes.slots[k - 1]];
      if (++v < axes.sizes[k - 1]) break;
      v = 0;
    }
    if (k == 0) return;
  }
}

// ---- elementwise functions ------------------------------------------------------------------

// ExpSub: a - b as the argument of exp or exp2, where -inf - -inf is -inf (support/ieee_rules.hpp).
// The enumerators grouped by family, as laid out by hand.
// clang-format off
enum class Fn {
  Neg, Not, Add, Sub, ExpSub, Mul, Div, IDiv, Mod, Eq, Ne, Lt, Le, Gt, Ge,
  Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Tanh, Erf, Sigmoid, Abs, Max, Min,
  ToBool, ToI32, ToI64, ToF16, ToBf16, ToF32, ToF64,
};
// clang-format on

// ---- nodes ----------------------------------------------------------------------------------

// A compiled expression: its sema type, how many doubles its value has, and (for a monoid
// carrier) the record layout. Width-1 nodes answer scalar(); all answer eval().
class Node {
 public:
  Node(Type type, size_t width, LayoutPtr record = nullptr)
      : type_(std::move(type)), width_(width), record_(std::move(record)) {}
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const Type& type() const { return type_; }
  size_t width() const { return width_; }
  const LayoutPtr& record() const { return record_; }

  virtual double scalar(State& s) const;
  virtual void eval(State& s, double* out) const;
  // Narrows this node to `width` values at `offset` of its value (a field); false when the
  // node cannot read a part by itself.
  virtual bool take_part(size_t offset, size_t width, const Type& type);

 protected:
  void retype(size_t width, const Type& type) {
    width_ = width;
    type_ = type;
    record_ = nullptr;
  }

 private:
  Type type_;
  size_t width_;
  LayoutPtr record_;
};
using NodePtr = std::unique_ptr<Node>;

class ConstNode : public Node {
 public:
  ConstNode(double value, Type type) : Node(std::move(type), 1), value_(value) {}
  double scalar(State&) const override;

 private:
  double value_;
};

// The value of an index variable.
class SlotNode : public Node {
 public:
  explicit SlotNode(size_t slot) : Node(Type::scalar(DType::I64), 1), slot_(slot) {}
  double scalar(State& s) const override;

 private:
  size_t slot_;
};

// A value held in the statement's scratch space (a monoid's lift parameter, a, b, or a let).
class LocalNode : public Node {
 public:
  LocalNode(size_t offset, size_t width, Type type, LayoutPtr record)
      : Node(std::move(type), width, std::move(record)), offset_(offset) {}
  double scalar(State& s) const override;
  void eval(State& s, double* out) const override;
  bool take_part(size_t offset, size_t width, const Type& type) override;

 private:
  size_t offset_;
};

// One index of a tensor read: an index variable's slot, an index expression, or a slice.
struct IndexArg {
  size_t slot = 0;
  bool is_slot = false;
  bool is_slice = false;
  NodePtr expr;
};

// A read of a stored tensor: one element, the part of a record element that a field selects
// (possibly one entry of a vector field), or a slice along one dim.
class LoadNode : public Node {
 public:
  // `where`: the read in the source, for the error of an index outside the tensor.
  LoadNode(const Stored& t, std::vector<IndexArg> args, Type type, SourceRange where = {});

  double scalar(State& s) const override;
  void eval(State& s, double* out) const override;
  bool take_part(size_t offset, size_t width, const Type& type) override;
  // Narrows a vector-field read to one entry: r.o[e] reads one double, not the row.
  bool take_index(NodePtr& index);

 private:
  size_t element(State& s) const;

  const Stored& t_;
  std::vector<IndexArg> args_;
  int slice_ = -1;
  size_t part_ = 0;        // offset of the field read, within an element
  size_t part_width_ = 0;  // its width
  NodePtr part_index_;     // an entry of a vector field, or null
  SourceRange where_;
};

// Elementwise function of one or two arguments; vector arguments are mapped, scalars broadcast.
class MapNode : public Node {
 public:
  // `where`: the expression in the source, for the error of an integer division by zero.
  MapNode(Fn fn, std::vector<NodePtr> args, Type type, size_t width, FrameLayout& frame, SourceRange where = {});
  double scalar(State& s) const override;
  void eval(State& s, double* out) const override;

 private:
  // The argument of a narrowing cast under jitter: moved by up to ReferenceOptions::cast_jitter
  // of itself, the amount a hash of the node, the index values and the vector lane gives.
  double jittered(const State& s, double a, size_t lane) const;
  // fn_ of a and b as the state computes it (as_computed); an integer division or remainder by
  // zero is the located E069.
  double computed(const State& s, double a, double b) const;

  Fn fn_;
  std::vector<NodePtr> args_;
  std::vector<size_t> scratch_;
  uint64_t id_ = 0;
  SourceRange where_;
};

// `a && b`, `a || b`: the right side is evaluated only when it decides the result.
class LogicNode : public Node {
 public:
  LogicNode(bool is_and, NodePtr a, NodePtr b)
      : Node(Type::scalar(DType::Bool), 1), is_and_(is_and), a_(std::move(a)), b_(std::move(b)) {}
  double scalar(State& s) const override;

 private:
  bool is_and_;
  NodePtr a_, b_;
};

// select(c, a, b): only the chosen branch is evaluated (a guarded read stays in range).
class SelectNode : public Node {
 public:
  SelectNode(NodePtr c, NodePtr a, NodePtr b, Type type, size_t width)
      : Node(std::move(type), width), c_(std::move(c)), a_(std::move(a)), b_(std::move(b)) {}
  double scalar(State& s) const override;
  void eval(State& s, double* out) const override;

 private:
  NodePtr c_, a_, b_;
};

// A field of a record value that cannot read the field by itself (e.g. of a reduction).
class FieldNode : public Node {
 public:
  FieldNode(NodePtr base, size_t offset, size_t width, Type type, FrameLayout& frame)
      : Node(std::move(type), width), base_(std::move(base)), offset_(offset), scratch_(frame.region(base_->width())) {}
  double scalar(State& s) const override;
  void eval(State& s, double* out) const override;

 private:
  NodePtr base_;
  size_t offset_;
  size_t scratch_;
};

// v[e] of a vector value.
class VectorIndexNode : public Node {
 public:
  VectorIndexNode(NodePtr base, NodePtr index, FrameLayout& frame)
      : Node(Type::scalar(base->type().dtype), 1),
        base_(std::move(base)),
        index_(std::move(index)),
        scratch_(frame.region(base_->width())) {}
  double scalar(State& s) const override;

 private:
  NodePtr base_, index_;
  size_t scratch_;
};

// ---- reductions ---------------------------------------------------------------------------

enum class Builtin { Sum, Prod, Max, Min, Any, All, ArgMax, ArgMin };

Builtin builtin_kind(std::string_view name);

// A built-in reduction, by its definition in std.monoids, folded left in index order.
class BuiltinReduceNode : public Node {
 public:
  BuiltinReduceNode(Builtin kind, Axes axes, NodePtr where, NodePtr body, Type type)
      : Node(std::move(type), 1),
        kind_(kind),
        axes_(std::move(axes)),
        where_(std::move(where)),
        body_(std::move(body)) {}

  double scalar(State& s) const override;

 private:
  double identity() const;
  // The identity of an integer max (min) is the type's lowest (highest) value, as in
  // stdlib/monoids.emmy's table of the lowering; -inf (+inf) for floats.
  double integer_limit(bool low) const;

  Builtin kind_;
  Axes axes_;
  NodePtr where_, body_;
};

// One component of a carrier tuple (identity, lift or yield), written at `offset`; a scalar
// fills a vector field.
struct CarrierPart {
  NodePtr value;
  size_t offset = 0;
  size_t width = 1;
};

// A compiled user monoid at one use site: identity, optional lift, combine's lets and yield,
// and where its values live in the scratch space.
struct CompiledMonoid {
  LayoutPtr layout;
  std::vector<CarrierPart> identity;
  std::vector<CarrierPart> lift;                 // empty: the arguments are the fields
  std::vector<std::pair<NodePtr, size_t>> lets;  // value, offset
  std::vector<CarrierPart> yield;
  std::vector<size_t> arg_offsets;  // where each reduction argument is written
  size_t acc = 0, a = 0, b = 0, tmp = 0;
  bool has_lift = false;
  bool first_element = false;  // the fold starts from its first element (algebra::identity_unsafe)
};

// A user-monoid reduction: acc = combine(acc, lift(args)) over the points, in index order.
class MonoidReduceNode : public Node {
 public:
  MonoidReduceNode(CompiledMonoid m, Axes axes, NodePtr where, std::vector<NodePtr> args, Type type)
      : Node(std::move(type), m.layout->width, m.layout),
        m_(std::move(m)),
        axes_(std::move(axes)),
        where_(std::move(where)),
        args_(std::move(args)) {}

  double scalar(State& s) const override;
  void eval(State& s, double* out) const override;

 private:
  CompiledMonoid m_;
  Axes axes_;
  NodePtr where_;
  std::vector<NodePtr> args_;
};

// ---- expression compiler --------------------------------------------------------------------

// Compiles the expressions every context shares; names, indexing and reductions are the
// context's (an op statement or a monoid body).
class ExprCompiler {
 public:
  explicit ExprCompiler(FrameLayout& frame) : frame_(frame) {}
  virtual ~ExprCompiler() = default;

  NodePtr compile(const ast::Expr& e);

  // A scalar-valued expression (an index, a where predicate, a built-in reduction's body).
  NodePtr compile_scalar(const ast::Expr& e, const char* what);

  // The parts of a carrier tuple (or a single component) for a record of `layout`.
  std::vector<CarrierPart> carrier(const ast::Expr& e, const RecordLayout& layout, const char* what);

 protected:
  virtual NodePtr name(const ast::Expr& e) = 0;
  virtual NodePtr index(const ast::Expr& e);
  virtual NodePtr reduce(const ast::Expr& e);

  NodePtr vector_index(const ast::Expr& e);
  NodePtr field(const ast::Expr& e);
  NodePtr unary(const ast::Expr& e);
  // `in_exp`: the argument of exp or exp2, where a difference is Fn::ExpSub.
  NodePtr binary(const ast::Expr& e, bool in_exp = false);
  NodePtr call(const ast::Expr& e);
  virtual NodePtr call_other(const ast::Expr& e);

  static std::vector<NodePtr> vec(NodePtr a, NodePtr b = nullptr);

  FrameLayout& frame_;
};

// The sema type of a monoid carrier.
Type record_type(const std::string& monoid);

// Compiles identity, lift and combine of `d` for arguments of the given widths.
CompiledMonoid compile_monoid(const ast::MonoidDecl& d, const std::vector<size_t>& arg_widths, FrameLayout& frame);

}  // namespace emmy::reference_detail
