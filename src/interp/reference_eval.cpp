// evaluate_reference: each statement of an op is compiled into a tree of float64 nodes over
// index slots, then run over its whole index space; intermediates are kept as full tensors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "algebra/from_ast.hpp"
#include "algebra/laws.hpp"
#include "interp/reference.hpp"
#include "ir/numeric.hpp"
#include "support/ieee_rules.hpp"

namespace emmy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxCallDepth = 64;

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error("reference evaluator: " + message); }

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

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Stored make_stored(std::string name, DType dtype, std::vector<int64_t> shape, size_t width, LayoutPtr record) {
  Stored t{std::move(name), dtype, std::move(shape), {}, width, std::move(record), {}};
  t.strides.assign(t.shape.size(), 1);
  for (size_t k = t.shape.size(); k-- > 1;) t.strides[k - 1] = t.strides[k] * t.shape[k];
  t.data.assign(static_cast<size_t>(element_count(t.shape)) * width, 0.0);
  return t;
}

std::string shape_str(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// ---- the state of a running statement, and where its parts live ----------------------------

// Index values (one slot per index variable) and scratch space of one statement's evaluation.
struct State {
  std::vector<int64_t> slots;
  std::vector<double> locals;
};

// Slots and scratch regions handed out while a statement is compiled.
struct FrameLayout {
  size_t slots = 0;
  size_t locals = 0;
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

int64_t to_index(double v, const char* what) {
  if (!std::isfinite(v) || v != std::trunc(v) || std::fabs(v) > 9.0e15)
    fail(fmt::format("{} {} is not an integer", what, v));
  return static_cast<int64_t>(v);
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

double to_integer(double x, DType dtype) {
  double t = std::trunc(x);
  if (!std::isfinite(t) || std::fabs(t) >= 9.2e18) fail(fmt::format("cannot convert {} to {}", x, dtype_name(dtype)));
  auto v = static_cast<int64_t>(t);
  return dtype == DType::I32 ? static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                             : static_cast<double>(v);
}

double integer_quotient(double a, double b, bool remainder) {
  auto x = static_cast<int64_t>(a);
  auto y = static_cast<int64_t>(b);
  if (y == 0) fail(remainder ? "integer remainder by zero" : "integer division by zero");
  return static_cast<double>(remainder ? x % y : x / y);
}

double apply(Fn f, double a, double b) {
  switch (f) {
    case Fn::Neg: return -a;
    case Fn::Not: return a == 0 ? 1 : 0;
    case Fn::Add: return a + b;
    case Fn::Sub: return a - b;
    case Fn::ExpSub: return exp_difference(a, b);
    case Fn::Mul: return a * b;
    case Fn::Div: return a / b;
    case Fn::IDiv: return integer_quotient(a, b, false);
    case Fn::Mod: return integer_quotient(a, b, true);
    case Fn::Eq: return a == b;
    case Fn::Ne: return a != b;
    case Fn::Lt: return a < b;
    case Fn::Le: return a <= b;
    case Fn::Gt: return a > b;
    case Fn::Ge: return a >= b;
    case Fn::Exp: return std::exp(a);
    case Fn::Exp2: return std::exp2(a);
    case Fn::Log: return std::log(a);
    case Fn::Log2: return std::log2(a);
    case Fn::Sqrt: return std::sqrt(a);
    case Fn::Rsqrt: return 1.0 / std::sqrt(a);
    case Fn::Tanh: return std::tanh(a);
    case Fn::Erf: return std::erf(a);
    case Fn::Sigmoid: return 1.0 / (1.0 + std::exp(-a));
    case Fn::Abs: return std::fabs(a);
    case Fn::Max: return max_nan(a, b);
    case Fn::Min: return min_nan(a, b);
    case Fn::ToBool: return a != 0 ? 1 : 0;
    case Fn::ToI32: return to_integer(a, DType::I32);
    case Fn::ToI64: return to_integer(a, DType::I64);
    // An explicit cast is the program's: it rounds to its type as the kernels do (nothing else
    // rounds in the reference, which is exact math in float64).
    case Fn::ToF16: return kir::round_to(kir::ScalarType::F16, a);
    case Fn::ToBf16: return kir::round_to(kir::ScalarType::BF16, a);
    case Fn::ToF32: return kir::round_to(kir::ScalarType::F32, a);
    case Fn::ToF64: return a;
  }
  return kNaN;
}

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

  virtual double scalar(State& s) const {
    (void)s;
    fail("internal: a vector value used as a scalar");
  }
  virtual void eval(State& s, double* out) const { *out = scalar(s); }
  // Narrows this node to `width` values at `offset` of its value (a field); false when the
  // node cannot read a part by itself.
  virtual bool take_part(size_t offset, size_t width, const Type& type) {
    (void)offset, (void)width, (void)type;
    return false;
  }

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
  double scalar(State&) const override { return value_; }

 private:
  double value_;
};

// The value of an index variable.
class SlotNode : public Node {
 public:
  explicit SlotNode(size_t slot) : Node(Type::scalar(DType::I64), 1), slot_(slot) {}
  double scalar(State& s) const override { return static_cast<double>(s.slots[slot_]); }

 private:
  size_t slot_;
};

// A value held in the statement's scratch space (a monoid's lift parameter, a, b, or a let).
class LocalNode : public Node {
 public:
  LocalNode(size_t offset, size_t width, Type type, LayoutPtr record)
      : Node(std::move(type), width, std::move(record)), offset_(offset) {}
  double scalar(State& s) const override { return s.locals[offset_]; }
  void eval(State& s, double* out) const override { std::copy_n(s.locals.data() + offset_, width(), out); }
  bool take_part(size_t offset, size_t width, const Type& type) override {
    offset_ += offset;
    retype(width, type);
    return true;
  }

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

// The number of doubles a read of `t` gives: one element, or the length of the sliced dim.
size_t load_width(const Stored& t, const std::vector<IndexArg>& args) {
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k].is_slice) {
      if (t.width != 1) fail(fmt::format("a slice of '{}', whose elements are monoid carriers", t.name));
      return static_cast<size_t>(t.shape[k]);
    }
  return t.width;
}

int slice_dim(const std::vector<IndexArg>& args) {
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k].is_slice) return static_cast<int>(k);
  return -1;
}

// A read of a stored tensor: one element, the part of a record element that a field selects
// (possibly one entry of a vector field), or a slice along one dim.
class LoadNode : public Node {
 public:
  LoadNode(const Stored& t, std::vector<IndexArg> args, Type type)
      : Node(std::move(type), load_width(t, args), t.record),
        t_(t),
        args_(std::move(args)),
        slice_(slice_dim(args_)),
        part_width_(width()) {}

  double scalar(State& s) const override { return t_.data[element(s)]; }
  void eval(State& s, double* out) const override {
    size_t at = element(s);
    if (slice_ < 0) {
      std::copy_n(t_.data.data() + at, width(), out);
      return;
    }
    auto step = static_cast<size_t>(t_.strides[static_cast<size_t>(slice_)]);
    for (size_t e = 0; e < width(); ++e) out[e] = t_.data[at + e * step];
  }
  bool take_part(size_t offset, size_t width, const Type& type) override {
    if (slice_ >= 0 || part_index_) return false;
    part_ += offset;
    part_width_ = width;
    retype(width, type);
    return true;
  }
  // Narrows a vector-field read to one entry: r.o[e] reads one double, not the row.
  bool take_index(NodePtr& index) {
    if (slice_ >= 0 || part_index_ || type().kind != Type::Kind::Vector) return false;
    part_index_ = std::move(index);
    retype(1, Type::scalar(type().dtype));
    return true;
  }

 private:
  size_t element(State& s) const {
    int64_t flat = 0;
    for (size_t k = 0; k < args_.size(); ++k) {
      const IndexArg& a = args_[k];
      if (a.is_slice) continue;
      int64_t i = a.is_slot ? s.slots[a.slot] : to_index(a.expr->scalar(s), "an index");
      if (i < 0 || i >= t_.shape[k])
        fail(fmt::format("index {} is out of range for dim {} of '{}' (size {})", i, k, t_.name, t_.shape[k]));
      flat += i * t_.strides[k];
    }
    size_t at = static_cast<size_t>(flat) * t_.width + part_;
    if (!part_index_) return at;
    int64_t i = to_index(part_index_->scalar(s), "a vector index");
    if (i < 0 || i >= static_cast<int64_t>(part_width_))
      fail(fmt::format("vector index {} is out of range (length {})", i, part_width_));
    return at + static_cast<size_t>(i);
  }

  const Stored& t_;
  std::vector<IndexArg> args_;
  int slice_ = -1;
  size_t part_ = 0;        // offset of the field read, within an element
  size_t part_width_ = 0;  // its width
  NodePtr part_index_;     // an entry of a vector field, or null
};

// Elementwise function of one or two arguments; vector arguments are mapped, scalars broadcast.
class MapNode : public Node {
 public:
  MapNode(Fn fn, std::vector<NodePtr> args, Type type, size_t width, FrameLayout& frame)
      : Node(std::move(type), width), fn_(fn), args_(std::move(args)) {
    for (const NodePtr& a : args_) scratch_.push_back(a->width() > 1 ? frame.region(a->width()) : 0);
  }
  double scalar(State& s) const override {
    double a = args_[0]->scalar(s);
    return apply(fn_, a, args_.size() > 1 ? args_[1]->scalar(s) : 0.0);
  }
  void eval(State& s, double* out) const override {
    if (width() == 1) {
      *out = scalar(s);
      return;
    }
    double one[2] = {0, 0};
    const double* in[2] = {one, one + 1};
    size_t step[2] = {0, 0};
    for (size_t k = 0; k < args_.size(); ++k) {
      if (args_[k]->width() == 1) {
        one[k] = args_[k]->scalar(s);
        continue;
      }
      args_[k]->eval(s, s.locals.data() + scratch_[k]);
      in[k] = s.locals.data() + scratch_[k];
      step[k] = 1;
    }
    for (size_t e = 0; e < width(); ++e) out[e] = apply(fn_, in[0][e * step[0]], in[1][e * step[1]]);
  }

 private:
  Fn fn_;
  std::vector<NodePtr> args_;
  std::vector<size_t> scratch_;
};

// `a && b`, `a || b`: the right side is evaluated only when it decides the result.
class LogicNode : public Node {
 public:
  LogicNode(bool is_and, NodePtr a, NodePtr b)
      : Node(Type::scalar(DType::Bool), 1), is_and_(is_and), a_(std::move(a)), b_(std::move(b)) {}
  double scalar(State& s) const override {
    bool a = a_->scalar(s) != 0;
    if (a != is_and_) return a ? 1 : 0;
    return b_->scalar(s) != 0 ? 1 : 0;
  }

 private:
  bool is_and_;
  NodePtr a_, b_;
};

// select(c, a, b): only the chosen branch is evaluated (a guarded read stays in range).
class SelectNode : public Node {
 public:
  SelectNode(NodePtr c, NodePtr a, NodePtr b, Type type, size_t width)
      : Node(std::move(type), width), c_(std::move(c)), a_(std::move(a)), b_(std::move(b)) {}
  double scalar(State& s) const override { return c_->scalar(s) != 0 ? a_->scalar(s) : b_->scalar(s); }
  void eval(State& s, double* out) const override {
    const Node& branch = c_->scalar(s) != 0 ? *a_ : *b_;
    if (branch.width() == width())
      branch.eval(s, out);
    else
      std::fill_n(out, width(), branch.scalar(s));
  }

 private:
  NodePtr c_, a_, b_;
};

// A field of a record value that cannot read the field by itself (e.g. of a reduction).
class FieldNode : public Node {
 public:
  FieldNode(NodePtr base, size_t offset, size_t width, Type type, FrameLayout& frame)
      : Node(std::move(type), width), base_(std::move(base)), offset_(offset), scratch_(frame.region(base_->width())) {}
  double scalar(State& s) const override {
    base_->eval(s, s.locals.data() + scratch_);
    return s.locals[scratch_ + offset_];
  }
  void eval(State& s, double* out) const override {
    base_->eval(s, s.locals.data() + scratch_);
    std::copy_n(s.locals.data() + scratch_ + offset_, width(), out);
  }

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
  double scalar(State& s) const override {
    int64_t i = to_index(index_->scalar(s), "a vector index");
    if (i < 0 || i >= static_cast<int64_t>(base_->width()))
      fail(fmt::format("vector index {} is out of range (length {})", i, base_->width()));
    base_->eval(s, s.locals.data() + scratch_);
    return s.locals[scratch_ + static_cast<size_t>(i)];
  }

 private:
  NodePtr base_, index_;
  size_t scratch_;
};

// ---- reductions ---------------------------------------------------------------------------

enum class Builtin { Sum, Prod, Max, Min, Any, All, ArgMax, ArgMin };

Builtin builtin_kind(std::string_view name) {
  static const std::pair<std::string_view, Builtin> kTable[] = {
      {"sum", Builtin::Sum}, {"prod", Builtin::Prod}, {"max", Builtin::Max},       {"min", Builtin::Min},
      {"any", Builtin::Any}, {"all", Builtin::All},   {"argmax", Builtin::ArgMax}, {"argmin", Builtin::ArgMin},
  };
  for (const auto& [n, k] : kTable)
    if (n == name) return k;
  fail(fmt::format("unknown built-in reduction '{}'", name));
}

// A built-in reduction, by its definition in std.monoids, folded left in index order.
class BuiltinReduceNode : public Node {
 public:
  BuiltinReduceNode(Builtin kind, Axes axes, NodePtr where, NodePtr body, Type type)
      : Node(std::move(type), 1),
        kind_(kind),
        axes_(std::move(axes)),
        where_(std::move(where)),
        body_(std::move(body)) {}

  double scalar(State& s) const override {
    double acc = identity();
    double best = kind_ == Builtin::ArgMax ? -kInf : kInf;  // argmax/argmin: (v, i) = (best, acc)
    for_each_point(s, axes_, [&] {
      if (where_ && where_->scalar(s) == 0) return;
      double x = body_->scalar(s);
      switch (kind_) {
        case Builtin::Sum: acc += x; break;
        case Builtin::Prod: acc *= x; break;
        case Builtin::Max: acc = max_nan(acc, x); break;
        case Builtin::Min: acc = min_nan(acc, x); break;
        case Builtin::Any: acc = (acc != 0 || x != 0) ? 1 : 0; break;
        case Builtin::All: acc = (acc != 0 && x != 0) ? 1 : 0; break;
        case Builtin::ArgMax:
        case Builtin::ArgMin: {
          auto j = static_cast<double>(s.slots[axes_.slots[0]]);
          // The first NaN wins, as in PyTorch (stdlib/monoids.emmy).
          bool better = !std::isnan(best) && (std::isnan(x) || (kind_ == Builtin::ArgMax ? x > best : x < best));
          if (better || (x == best && j < acc)) {
            best = x;
            acc = j;
          }
          break;
        }
      }
    });
    return acc;
  }

 private:
  double identity() const {
    switch (kind_) {
      case Builtin::Sum: return 0;
      case Builtin::Prod: return 1;
      case Builtin::Max: return integer_limit(true);
      case Builtin::Min: return integer_limit(false);
      case Builtin::Any: return 0;
      case Builtin::All: return 1;
      case Builtin::ArgMax:
      case Builtin::ArgMin: return 0;
    }
    return 0;
  }

  // The identity of an integer max (min) is the type's lowest (highest) value, as in
  // stdlib/monoids.emmy's table of the lowering; -inf (+inf) for floats.
  double integer_limit(bool low) const {
    switch (type().dtype) {
      case DType::I32:
        return low ? static_cast<double>(std::numeric_limits<int32_t>::min()) : std::numeric_limits<int32_t>::max();
      case DType::I64:
        return low ? static_cast<double>(std::numeric_limits<int64_t>::min())
                   : static_cast<double>(std::numeric_limits<int64_t>::max());
      default: return low ? -kInf : kInf;
    }
  }

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

void write_carrier(State& s, const std::vector<CarrierPart>& parts, double* out) {
  for (const CarrierPart& p : parts) {
    if (p.value->width() == p.width)
      p.value->eval(s, out + p.offset);
    else
      std::fill_n(out + p.offset, p.width, p.value->scalar(s));
  }
}

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

  double scalar(State& s) const override {
    double out = 0;
    eval(s, &out);
    return out;
  }
  void eval(State& s, double* out) const override {
    double* l = s.locals.data();
    size_t w = width();
    write_carrier(s, m_.identity, l + m_.acc);
    bool first = m_.first_element;
    for_each_point(s, axes_, [&] {
      if (where_ && where_->scalar(s) == 0) return;
      for (size_t k = 0; k < args_.size(); ++k) args_[k]->eval(s, l + m_.arg_offsets[k]);
      if (m_.has_lift) write_carrier(s, m_.lift, l + m_.b);
      if (first) {  // combine(identity, x) = x, without the identity meeting x in floats
        std::copy_n(l + m_.b, w, l + m_.acc);
        first = false;
        return;
      }
      std::copy_n(l + m_.acc, w, l + m_.a);
      for (const auto& [value, offset] : m_.lets) value->eval(s, l + offset);
      write_carrier(s, m_.yield, l + m_.tmp);
      std::copy_n(l + m_.tmp, w, l + m_.acc);
    });
    std::copy_n(l + m_.acc, w, out);
  }

 private:
  CompiledMonoid m_;
  Axes axes_;
  NodePtr where_;
  std::vector<NodePtr> args_;
};

// ---- expression compiler --------------------------------------------------------------------

Fn binary_fn(const std::string& op, bool integer) {
  static const std::pair<std::string_view, Fn> kOps[] = {
      {"+", Fn::Add}, {"-", Fn::Sub}, {"*", Fn::Mul}, {"%", Fn::Mod}, {"==", Fn::Eq},
      {"!=", Fn::Ne}, {"<", Fn::Lt},  {"<=", Fn::Le}, {">", Fn::Gt},  {">=", Fn::Ge},
  };
  if (op == "/") return integer ? Fn::IDiv : Fn::Div;
  for (const auto& [name, fn] : kOps)
    if (name == op) return fn;
  fail(fmt::format("unsupported operator '{}'", op));
}

Fn call_fn(std::string_view name) {
  static const std::pair<std::string_view, Fn> kFns[] = {
      {"exp", Fn::Exp},     {"exp2", Fn::Exp2},   {"log", Fn::Log},     {"log2", Fn::Log2},       {"sqrt", Fn::Sqrt},
      {"rsqrt", Fn::Rsqrt}, {"tanh", Fn::Tanh},   {"erf", Fn::Erf},     {"sigmoid", Fn::Sigmoid}, {"abs", Fn::Abs},
      {"max", Fn::Max},     {"min", Fn::Min},     {"bool", Fn::ToBool}, {"i32", Fn::ToI32},       {"i64", Fn::ToI64},
      {"f16", Fn::ToF16},   {"bf16", Fn::ToBf16}, {"f32", Fn::ToF32},   {"f64", Fn::ToF64},
  };
  for (const auto& [n, fn] : kFns)
    if (n == name) return fn;
  fail(fmt::format("unsupported function '{}'", name));
}

bool is_comparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

// The width of an elementwise result: vectors must agree, scalars broadcast.
size_t joint_width(const std::vector<const Node*>& args) {
  size_t w = 1;
  for (const Node* a : args) {
    if (a->record()) fail("a monoid carrier used as a value; select a field with '.'");
    if (a->width() == 1) continue;
    if (w != 1 && w != a->width()) fail(fmt::format("vectors of different lengths: {} and {}", w, a->width()));
    w = a->width();
  }
  return w;
}

// Compiles the expressions every context shares; names, indexing and reductions are the
// context's (an op statement or a monoid body).
class ExprCompiler {
 public:
  explicit ExprCompiler(FrameLayout& frame) : frame_(frame) {}
  virtual ~ExprCompiler() = default;

  NodePtr compile(const ast::Expr& e) {
    using K = ast::ExprKind;
    switch (e.kind) {
      case K::Int: return std::make_unique<ConstNode>(static_cast<double>(e.int_value), Type::scalar(DType::I64, true));
      case K::Float: return std::make_unique<ConstNode>(e.float_value, Type::scalar(DType::F32, true));
      case K::Inf: return std::make_unique<ConstNode>(kInf, Type::scalar(DType::F32, true));
      case K::Bool: return std::make_unique<ConstNode>(e.int_value ? 1.0 : 0.0, Type::scalar(DType::Bool));
      case K::Name: return name(e);
      case K::Index: return index(e);
      case K::Field: return field(e);
      case K::Slice: fail("a slice ':' outside the vector argument of a monoid reduction");
      case K::Unary: return unary(e);
      case K::Binary: return binary(e);
      case K::Call: return call(e);
      case K::Reduce: return reduce(e);
      case K::Tuple: fail("a tuple outside a monoid's identity, lift or yield");
    }
    fail("unknown expression kind");
  }

  // A scalar-valued expression (an index, a where predicate, a built-in reduction's body).
  NodePtr compile_scalar(const ast::Expr& e, const char* what) {
    NodePtr n = compile(e);
    if (n->width() != 1 || n->record()) fail(fmt::format("{} must be a scalar", what));
    return n;
  }

  // The parts of a carrier tuple (or a single component) for a record of `layout`.
  std::vector<CarrierPart> carrier(const ast::Expr& e, const RecordLayout& layout, const char* what) {
    std::vector<const ast::Expr*> parts;
    if (e.kind == ast::ExprKind::Tuple)
      for (const ast::Expr& a : e.args) parts.push_back(&a);
    else
      parts.push_back(&e);
    if (parts.size() != layout.fields.size())
      fail(fmt::format("{} of monoid {} has {} components for {} fields", what, layout.monoid, parts.size(),
                       layout.fields.size()));
    std::vector<CarrierPart> out;
    for (size_t i = 0; i < parts.size(); ++i) {
      const FieldSlot& f = layout.fields[i];
      NodePtr v = compile(*parts[i]);
      if (v->record() || (v->width() != 1 && v->width() != f.width))
        fail(fmt::format("component {} of the {} of monoid {} does not fit field '{}'", i + 1, what, layout.monoid,
                         f.name));
      out.push_back({std::move(v), f.offset, f.width});
    }
    return out;
  }

 protected:
  virtual NodePtr name(const ast::Expr& e) = 0;
  virtual NodePtr index(const ast::Expr& e) { return vector_index(e); }
  virtual NodePtr reduce(const ast::Expr& e) { fail(fmt::format("a reduction ({}) inside a monoid", e.text)); }

  NodePtr vector_index(const ast::Expr& e) {
    NodePtr base = compile(e.args[0]);
    if (base->type().kind != Type::Kind::Vector || base->record())
      fail(fmt::format("a {} cannot be indexed", base->type().str()));
    if (e.args.size() != 2) fail("a vector takes one index");
    NodePtr ix = compile_scalar(e.args[1], "a vector index");
    if (auto* l = dynamic_cast<LoadNode*>(base.get()); l && l->take_index(ix)) return base;
    return std::make_unique<VectorIndexNode>(std::move(base), std::move(ix), frame_);
  }

  NodePtr field(const ast::Expr& e) {
    NodePtr base = compile(e.args[0]);
    const LayoutPtr layout = base->record();
    if (!layout)
      fail(fmt::format("no field '{}': the value is a {}, not a monoid carrier", e.text, base->type().str()));
    const FieldSlot* f = layout->find(e.text);
    if (!f) fail(fmt::format("monoid {} has no field '{}'", layout->monoid, e.text));
    Type t = f->vector ? Type::vector(f->dtype, Size{"", static_cast<int64_t>(f->width)}) : Type::scalar(f->dtype);
    if (base->take_part(f->offset, f->width, t)) return base;
    return std::make_unique<FieldNode>(std::move(base), f->offset, f->width, t, frame_);
  }

  NodePtr unary(const ast::Expr& e) {
    NodePtr a = compile(e.args[0]);
    size_t w = joint_width({a.get()});
    Type t = a->type();
    if (e.text == "!")
      return std::make_unique<MapNode>(Fn::Not, vec(std::move(a)), Type::scalar(DType::Bool), w, frame_);
    if (e.text == "-") return std::make_unique<MapNode>(Fn::Neg, vec(std::move(a)), t, w, frame_);
    fail(fmt::format("unsupported unary operator '{}'", e.text));
  }

  // `in_exp`: the argument of exp or exp2, where a difference is Fn::ExpSub.
  NodePtr binary(const ast::Expr& e, bool in_exp = false) {
    NodePtr a = compile(e.args[0]);
    NodePtr b = compile(e.args[1]);
    size_t w = joint_width({a.get(), b.get()});
    if (e.text == "&&" || e.text == "||") {
      if (w != 1) fail(fmt::format("'{}' of vectors", e.text));
      return std::make_unique<LogicNode>(e.text == "&&", std::move(a), std::move(b));
    }
    Type t = promote(a->type(), b->type());
    if (is_comparison(e.text)) {
      if (w != 1) fail("a comparison of vectors");
      t = Type::scalar(DType::Bool);
    }
    Fn fn = binary_fn(e.text, is_int(materialize(t)));
    if (in_exp && fn == Fn::Sub) fn = Fn::ExpSub;
    if (fn == Fn::Mod && !is_int(materialize(t))) fail("'%' of non-integers");
    return std::make_unique<MapNode>(fn, vec(std::move(a), std::move(b)), t, w, frame_);
  }

  NodePtr call(const ast::Expr& e) {
    const BuiltinFn* fn = find_builtin_fn(e.text);
    if (!fn) return call_other(e);
    if (static_cast<int>(e.args.size()) != fn->arity)
      fail(fmt::format("{} takes {} arguments, got {}", e.text, fn->arity, e.args.size()));
    std::vector<NodePtr> args;
    const bool exp = e.text == "exp" || e.text == "exp2";
    for (const ast::Expr& a : e.args)
      args.push_back(exp && a.kind == ast::ExprKind::Binary && a.text == "-" ? binary(a, true) : compile(a));
    std::vector<const Node*> raw;
    for (const NodePtr& a : args) raw.push_back(a.get());
    size_t w = joint_width(raw);
    Type t = args[0]->type();
    switch (fn->rule) {
      case FnRule::FloatUnary:
        if (!is_float(t.dtype)) {
          t.dtype = DType::F32;
          t.weak = false;
        }
        break;
      case FnRule::SameAsArgs:
        for (size_t i = 1; i < args.size(); ++i) t = promote(t, args[i]->type());
        break;
      case FnRule::Select: {
        if (args[0]->width() != 1) fail("select's condition must be a scalar");
        Type r = args[1]->type().dtype == DType::Bool ? args[1]->type() : promote(args[1]->type(), args[2]->type());
        if (w > 1 && r.kind != Type::Kind::Vector) r = Type::vector(r.dtype, Size{"", static_cast<int64_t>(w)});
        return std::make_unique<SelectNode>(std::move(args[0]), std::move(args[1]), std::move(args[2]), r, w);
      }
      case FnRule::Cast:
        t.dtype = *parse_dtype(e.text);
        t.weak = false;
        break;
    }
    return std::make_unique<MapNode>(call_fn(e.text), std::move(args), t, w, frame_);
  }

  virtual NodePtr call_other(const ast::Expr& e) { fail(fmt::format("unknown function '{}'", e.text)); }

  static std::vector<NodePtr> vec(NodePtr a, NodePtr b = nullptr) {
    std::vector<NodePtr> v;
    v.push_back(std::move(a));
    if (b) v.push_back(std::move(b));
    return v;
  }

  FrameLayout& frame_;
};

// ---- monoid bodies ----------------------------------------------------------------------------

// A name inside a monoid body: a lift parameter, a or b of combine, or a let of combine.
struct Local {
  size_t offset = 0;
  size_t width = 1;
  Type type;
  LayoutPtr record;
};

class MonoidCompiler : public ExprCompiler {
 public:
  MonoidCompiler(FrameLayout& frame, std::string monoid) : ExprCompiler(frame), monoid_(std::move(monoid)) {}
  void define(const std::string& name, Local local) { locals_[name] = std::move(local); }

 protected:
  NodePtr name(const ast::Expr& e) override {
    auto it = locals_.find(e.text);
    if (it == locals_.end()) fail(fmt::format("unknown name '{}' in monoid {}", e.text, monoid_));
    const Local& l = it->second;
    return std::make_unique<LocalNode>(l.offset, l.width, l.type, l.record);
  }

 private:
  std::string monoid_;
  std::map<std::string, Local> locals_;
};

Type field_type(const ast::Field& f, size_t width) {
  DType d = parse_dtype(f.dtype.name).value_or(DType::F32);
  return f.vector_dim ? Type::vector(d, Size{"", static_cast<int64_t>(width)}) : Type::scalar(d);
}

Type record_type(const std::string& monoid) {
  Type t;
  t.kind = Type::Kind::Record;
  t.monoid = monoid;
  return t;
}

// The width of a field or lift parameter, with the monoid's vector dims bound at the use site.
size_t declared_width(const ast::Field& f, const std::map<std::string, int64_t>& dims) {
  if (!f.vector_dim) return 1;
  if (f.vector_dim->is_literal()) return static_cast<size_t>(f.vector_dim->value);
  auto it = dims.find(f.vector_dim->name);
  if (it == dims.end())
    fail(fmt::format("the length {} of field '{}' is not bound by the arguments", f.vector_dim->name, f.name.name));
  return static_cast<size_t>(it->second);
}

LayoutPtr record_layout(const ast::MonoidDecl& d, const std::map<std::string, int64_t>& dims) {
  auto layout = std::make_shared<RecordLayout>();
  layout->monoid = d.name.name;
  for (const ast::Field& f : d.fields) {
    size_t w = declared_width(f, dims);
    layout->fields.push_back(
        {f.name.name, parse_dtype(f.dtype.name).value_or(DType::F32), layout->width, w, f.vector_dim.has_value()});
    layout->width += w;
  }
  return layout;
}

// Compiles identity, lift and combine of `d` for arguments of the given widths.
CompiledMonoid compile_monoid(const ast::MonoidDecl& d, const std::vector<size_t>& arg_widths, FrameLayout& frame) {
  const std::vector<ast::Field>& params = d.lift_params ? *d.lift_params : d.fields;
  std::map<std::string, int64_t> dims;
  for (size_t k = 0; k < params.size(); ++k) {
    const ast::Field& p = params[k];
    if (!p.vector_dim) {
      if (arg_widths[k] != 1) fail(fmt::format("argument {} of {} must be a scalar", k + 1, d.name.name));
      continue;
    }
    auto n = static_cast<int64_t>(arg_widths[k]);
    int64_t want = p.vector_dim->is_literal() ? p.vector_dim->value : dims.emplace(p.vector_dim->name, n).first->second;
    if (n != want)
      fail(fmt::format("argument {} of {} has length {}, which does not fit {}", k + 1, d.name.name, n,
                       p.vector_dim->is_literal() ? std::to_string(p.vector_dim->value) : p.vector_dim->name));
  }
  CompiledMonoid m;
  m.layout = record_layout(d, dims);
  size_t w = m.layout->width;
  m.acc = frame.region(w);
  m.a = frame.region(w);
  m.b = frame.region(w);
  m.tmp = frame.region(w);
  m.has_lift = d.lift_value.has_value();
  std::string why;
  if (std::optional<algebra::MonoidTerms> terms = algebra::monoid_terms(d, why))
    m.first_element = algebra::identity_unsafe(*terms);
  if (!d.identity) fail(fmt::format("monoid {} has no identity", d.name.name));
  if (!d.has_combine || !d.combine_yield) fail(fmt::format("monoid {} has no combine", d.name.name));

  MonoidCompiler identity(frame, d.name.name);
  m.identity = identity.carrier(*d.identity, *m.layout, "identity");

  MonoidCompiler lift(frame, d.name.name);
  size_t at = m.b;
  for (size_t k = 0; k < params.size(); ++k) {
    size_t pw = arg_widths[k];
    size_t offset = m.has_lift ? frame.region(pw) : at;
    at += pw;
    m.arg_offsets.push_back(offset);
    lift.define(params[k].name.name, Local{offset, pw, field_type(params[k], pw), nullptr});
  }
  if (m.has_lift) m.lift = lift.carrier(*d.lift_value, *m.layout, "lift");

  MonoidCompiler combine(frame, d.name.name);
  combine.define(d.combine_lhs.name, Local{m.a, w, record_type(d.name.name), m.layout});
  combine.define(d.combine_rhs.name, Local{m.b, w, record_type(d.name.name), m.layout});
  for (const ast::LetStmt& let : d.combine_lets) {
    NodePtr v = combine.compile(let.value);
    if (v->record()) fail(fmt::format("let {} of monoid {} holds a carrier", let.name.name, d.name.name));
    size_t offset = frame.region(v->width());
    combine.define(let.name.name, Local{offset, v->width(), v->type(), nullptr});
    m.lets.emplace_back(std::move(v), offset);
  }
  m.yield = combine.carrier(*d.combine_yield, *m.layout, "yield");
  return m;
}

// ---- ops ------------------------------------------------------------------------------------

TensorMap run_op(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes, const TensorMap& inputs,
                 int depth, const std::vector<std::string>& also = {});

// One op's evaluation: sizes, the tensors computed so far, and the outputs of the ops it calls.
struct OpRun {
  const CheckedProgram& program;
  const CheckedOp& op;
  const SizeBindings& sizes;
  int depth = 0;
  std::set<std::string> dims;                  // the op's symbolic sizes
  std::map<std::string, Stored> tensors;       // inputs, lets, intermediates, outputs
  std::map<std::string, Stored> call_outputs;  // "layernorm(h,gamma,beta).y"
  std::set<std::string> calls_done;            // "layernorm(h,gamma,beta)"

  const Stored& tensor(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) fail(fmt::format("'{}' is used before it is computed", name));
    return it->second;
  }
  int64_t size(const Size& s) const {
    if (s.symbol.empty()) return s.literal;
    auto it = sizes.find(s.symbol);
    if (it == sizes.end()) fail(fmt::format("size {} of op {} is not bound", s.symbol, op.decl->name.name));
    return it->second;
  }
  std::vector<int64_t> shape(const std::vector<Size>& s) const {
    std::vector<int64_t> out;
    for (const Size& x : s) out.push_back(size(x));
    return out;
  }
};

const ast::OpDecl* callee_of(const CheckedProgram& program, const ast::Expr& e) {
  if (e.kind != ast::ExprKind::Call) return nullptr;
  auto it = program.ops.find(e.text);
  return it == program.ops.end() ? nullptr : it->second.decl;
}

// Runs a called op on the caller's tensors (once per distinct call) and returns its output.
const Stored& call_output(OpRun& run, const ast::Expr& call, const std::string& field) {
  const CheckedOp& callee = run.program.ops.at(call.text);
  const ast::OpDecl& decl = *callee.decl;
  std::vector<std::string> arg_names;
  for (const ast::Expr& a : call.args) arg_names.push_back(a.text);
  std::string key = fmt::format("{}({})", call.text, fmt::join(arg_names, ","));
  if (!run.calls_done.count(key)) {
    if (run.depth >= kMaxCallDepth) fail(fmt::format("op calls nested deeper than {}", kMaxCallDepth));
    if (call.args.size() != decl.params.size())
      fail(fmt::format("op {} takes {} arguments, got {}", call.text, decl.params.size(), call.args.size()));
    TensorMap inputs;
    SizeBindings sizes;
    for (size_t k = 0; k < call.args.size(); ++k) {
      const ast::Param& p = decl.params[k];
      if (call.args[k].kind != ast::ExprKind::Name)
        fail(fmt::format("argument {} of op {} is not a tensor name", k + 1, call.text));
      const Stored& t = run.tensor(call.args[k].text);
      if (t.width != 1 || t.shape.size() != p.dims.size())
        fail(fmt::format("argument '{}' does not fit parameter {} of op {}", t.name, p.name.name, call.text));
      for (size_t d = 0; d < p.dims.size(); ++d) {
        const ast::Dim& dim = p.dims[d];
        int64_t want = dim.is_literal() ? dim.value : sizes.emplace(dim.name, t.shape[d]).first->second;
        if (want != t.shape[d])
          fail(fmt::format("dim {} of '{}' is {} but op {} needs {}", d, t.name, t.shape[d], call.text, want));
      }
      inputs[p.name.name] = HostTensor{parse_dtype(p.dtype.name).value_or(DType::F32), t.shape, t.data};
    }
    TensorMap outputs = run_op(run.program, callee, sizes, inputs, run.depth + 1);
    for (auto& [name, h] : outputs) {
      Stored s = make_stored(key + "." + name, h.dtype, h.shape, 1, nullptr);
      s.data = std::move(h.data);
      run.call_outputs.emplace(key + "." + name, std::move(s));
    }
    run.calls_done.insert(key);
  }
  std::string out = field;
  if (out.empty()) {
    if (decl.outputs.size() != 1) fail(fmt::format("op {} has {} outputs; name one", call.text, decl.outputs.size()));
    out = decl.outputs[0].name.name;
  }
  auto it = run.call_outputs.find(key + "." + out);
  if (it == run.call_outputs.end()) fail(fmt::format("op {} has no output '{}'", call.text, out));
  return it->second;
}

// Compiles the expressions of one op statement: index variables, tensors, dims, op calls,
// built-in and user-monoid reductions.
class OpCompiler : public ExprCompiler {
 public:
  OpCompiler(OpRun& run, FrameLayout& frame) : ExprCompiler(frame), run_(run) {}

  size_t bind_var(const std::string& name) {
    size_t slot = frame_.slot();
    vars_.emplace_back(name, slot);
    return slot;
  }

 protected:
  std::optional<size_t> var(const std::string& name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return it->second;
    return std::nullopt;
  }

  NodePtr name(const ast::Expr& e) override {
    if (auto slot = var(e.text)) return std::make_unique<SlotNode>(*slot);
    if (const TensorInfo* t = run_.op.find(e.text)) return bare_tensor(*t);
    if (run_.dims.count(e.text))
      return std::make_unique<ConstNode>(static_cast<double>(run_.size(Size{e.text, 0})), Type::scalar(DType::I64));
    fail(fmt::format("unknown name '{}' in op {}", e.text, run_.op.decl->name.name));
  }

  // A bare tensor name: a scalar, or the tensor indexed by its own left-hand index names.
  NodePtr bare_tensor(const TensorInfo& info) {
    const Stored& t = run_.tensor(info.name);
    std::vector<IndexArg> args;
    if (!t.shape.empty()) {
      if (info.index_vars.size() != t.shape.size())
        fail(fmt::format("'{}' is a tensor of rank {}; index it", info.name, t.shape.size()));
      for (const std::string& v : info.index_vars) {
        auto slot = var(v);
        if (!slot) fail(fmt::format("bare '{}' needs index variable '{}', which is not in scope", info.name, v));
        args.push_back(IndexArg{*slot, true, false, nullptr});
      }
    }
    return load(t, std::move(args));
  }

  static NodePtr load(const Stored& t, std::vector<IndexArg> args) {
    Type type = t.record ? record_type(t.record->monoid) : Type::scalar(t.dtype);
    for (size_t k = 0; k < args.size(); ++k)
      if (args[k].is_slice) type = Type::vector(t.dtype, Size{"", t.shape[k]});
    return std::make_unique<LoadNode>(t, std::move(args), type);
  }

  NodePtr index(const ast::Expr& e) override {
    const ast::Expr& base = e.args[0];
    const Stored* t = nullptr;
    if (base.kind == ast::ExprKind::Name && !var(base.text) && run_.op.find(base.text))
      t = &run_.tensor(base.text);
    else if (callee_of(run_.program, base))
      t = &call_output(run_, base, "");
    else if (base.kind == ast::ExprKind::Field && callee_of(run_.program, base.args[0]))
      t = &call_output(run_, base.args[0], base.text);
    if (!t) return vector_index(e);
    if (e.args.size() - 1 != t->shape.size())
      fail(fmt::format("'{}' has {} dims but {} indices are given", t->name, t->shape.size(), e.args.size() - 1));
    std::vector<IndexArg> args;
    for (size_t k = 1; k < e.args.size(); ++k) {
      const ast::Expr& ix = e.args[k];
      if (ix.kind == ast::ExprKind::Slice) {
        args.push_back(IndexArg{0, false, true, nullptr});
      } else if (auto slot = ix.kind == ast::ExprKind::Name ? var(ix.text) : std::nullopt) {
        args.push_back(IndexArg{*slot, true, false, nullptr});
      } else {
        NodePtr n = compile_scalar(ix, "an index");
        if (!is_int(materialize(n->type()))) fail(fmt::format("an index of '{}' is not an integer", t->name));
        args.push_back(IndexArg{0, false, false, std::move(n)});
      }
    }
    return load(*t, std::move(args));
  }

  NodePtr call_other(const ast::Expr& e) override {
    if (callee_of(run_.program, e)) {  // a scalar output, read bare: mean_of(x)
      const Stored& t = call_output(run_, e, "");
      if (!t.shape.empty()) fail(fmt::format("the result of op {} is a tensor; index it", e.text));
      return load(t, {});
    }
    return ExprCompiler::call_other(e);
  }

  NodePtr reduce(const ast::Expr& e) override {
    const ReductionInfo* info = nullptr;
    for (const ReductionInfo& r : run_.op.reductions)
      if (r.expr_id == e.id) info = &r;
    if (!info || info->axis_sizes.size() != e.axes.size())
      fail(fmt::format("reduction {} has no checked axis sizes", e.text));
    size_t scope = vars_.size();
    Axes axes;
    for (size_t k = 0; k < e.axes.size(); ++k) {
      axes.slots.push_back(bind_var(e.axes[k].name));
      axes.sizes.push_back(run_.size(info->axis_sizes[k]));
    }
    NodePtr where = e.where_.empty() ? nullptr : compile_scalar(e.where_[0], "a where predicate");
    NodePtr out;
    if (find_builtin_reduction(e.text))
      out = builtin_reduce(e, std::move(axes), std::move(where));
    else
      out = monoid_reduce(e, std::move(axes), std::move(where));
    vars_.resize(scope);
    return out;
  }

  NodePtr builtin_reduce(const ast::Expr& e, Axes axes, NodePtr where) {
    Builtin kind = builtin_kind(e.text);
    if (e.args.size() != 1) fail(fmt::format("{} reduces one expression, got {}", e.text, e.args.size()));
    if ((kind == Builtin::ArgMax || kind == Builtin::ArgMin) && axes.slots.size() != 1)
      fail(fmt::format("{} reduces exactly one axis", e.text));
    NodePtr body = compile_scalar(e.args[0], "the body of a built-in reduction");
    DType d = materialize(body->type());
    if ((kind == Builtin::Sum || kind == Builtin::Prod) && (d == DType::F16 || d == DType::BF16)) d = DType::F32;
    if (kind == Builtin::Any || kind == Builtin::All) d = DType::Bool;
    if (kind == Builtin::ArgMax || kind == Builtin::ArgMin) d = DType::I64;
    return std::make_unique<BuiltinReduceNode>(kind, std::move(axes), std::move(where), std::move(body),
                                               Type::scalar(d));
  }

  NodePtr monoid_reduce(const ast::Expr& e, Axes axes, NodePtr where) {
    auto it = run_.program.monoids.find(e.text);
    if (it == run_.program.monoids.end() || !it->second.decl) fail(fmt::format("unknown reduction '{}'", e.text));
    const ast::MonoidDecl& d = *it->second.decl;
    size_t params = d.lift_params ? d.lift_params->size() : d.fields.size();
    if (e.args.size() != params)
      fail(fmt::format("monoid {} takes {} arguments, got {}", e.text, params, e.args.size()));
    std::vector<NodePtr> args;
    std::vector<size_t> widths;
    for (const ast::Expr& a : e.args) {
      args.push_back(compile(a));
      if (args.back()->record()) fail(fmt::format("a monoid carrier passed to {}", e.text));
      widths.push_back(args.back()->width());
    }
    CompiledMonoid m = compile_monoid(d, widths, frame_);
    return std::make_unique<MonoidReduceNode>(std::move(m), std::move(axes), std::move(where), std::move(args),
                                              record_type(d.name.name));
  }

 private:
  OpRun& run_;
  std::vector<std::pair<std::string, size_t>> vars_;  // index variables in scope, innermost last
};

// Evaluates `value` at every point of `shape` (bound to `lhs_vars`) into a new tensor `name`.
void run_statement(OpRun& run, const std::string& name, DType dtype, const std::vector<std::string>& lhs_vars,
                   const std::vector<int64_t>& shape, const ast::Expr& value) {
  FrameLayout frame;
  OpCompiler compiler(run, frame);
  Axes axes;
  if (lhs_vars.size() != shape.size())
    fail(fmt::format("'{}' is defined with {} indices but has {} dims", name, lhs_vars.size(), shape.size()));
  for (size_t k = 0; k < lhs_vars.size(); ++k) {
    axes.slots.push_back(compiler.bind_var(lhs_vars[k]));
    axes.sizes.push_back(shape[k]);
  }
  NodePtr node = compiler.compile(value);
  if (node->type().kind == Type::Kind::Vector) fail(fmt::format("the value of '{}' is a vector; index it", name));
  Stored t = make_stored(name, dtype, shape, node->width(), node->record());
  State s{std::vector<int64_t>(frame.slots, 0), std::vector<double>(frame.locals, 0.0)};
  size_t flat = 0;
  double* out = t.data.data();
  for_each_point(s, axes, [&] {
    node->eval(s, out + flat * t.width);
    ++flat;
  });
  run.tensors.insert_or_assign(name, std::move(t));
}

std::set<std::string> symbolic_dims(const ast::OpDecl& decl) {
  std::set<std::string> dims;
  for (const auto* list : {&decl.params, &decl.outputs})
    for (const ast::Param& p : *list)
      for (const ast::Dim& d : p.dims)
        if (!d.is_literal()) dims.insert(d.name);
  return dims;
}

void load_inputs(OpRun& run, const TensorMap& inputs) {
  for (const TensorInfo& t : run.op.tensors) {
    if (t.role != TensorInfo::Role::Input) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) fail(fmt::format("no input '{}' for op {}", t.name, run.op.decl->name.name));
    std::vector<int64_t> shape = run.shape(t.shape);
    if (it->second.shape != shape || it->second.data.size() != static_cast<size_t>(element_count(shape)))
      fail(fmt::format("input '{}' has shape {} ({} values) but op {} needs {}", t.name, shape_str(it->second.shape),
                       it->second.data.size(), run.op.decl->name.name, shape_str(shape)));
    Stored s = make_stored(t.name, t.elem.dtype, shape, 1, nullptr);
    s.data = it->second.data;
    run.tensors.insert_or_assign(t.name, std::move(s));
  }
}

TensorMap run_op(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes, const TensorMap& inputs,
                 int depth, const std::vector<std::string>& also) {
  if (!op.decl) fail("the op has no declaration");
  OpRun run{program, op, sizes, depth, symbolic_dims(*op.decl), {}, {}, {}};
  for (const std::string& d : run.dims)
    if (run.size(Size{d, 0}) <= 0) fail(fmt::format("size {} of op {} must be positive", d, op.decl->name.name));
  load_inputs(run, inputs);
  for (const ast::Stmt& stmt : op.decl->body) {
    if (const auto* let = std::get_if<ast::LetStmt>(&stmt)) {
      const TensorInfo* info = op.find(let->name.name);
      if (!info || info->elem.kind != Type::Kind::Scalar) fail(fmt::format("let {} was not checked", let->name.name));
      run_statement(run, let->name.name, info->elem.dtype, {}, {}, let->value);
      continue;
    }
    const auto& a = std::get<ast::AssignStmt>(stmt);
    const TensorInfo* info = op.find(a.target.name);
    if (!info || info->elem.is_error()) fail(fmt::format("'{}' was not checked", a.target.name));
    std::vector<std::string> lhs;
    for (const ast::Expr& ix : a.indices) {
      if (ix.kind != ast::ExprKind::Name)
        fail(fmt::format("an index on the left of '{}' is not a plain name", a.target.name));
      lhs.push_back(ix.text);
    }
    run_statement(run, a.target.name, info->elem.dtype, lhs, run.shape(info->shape), a.value);
  }
  TensorMap out;
  for (const TensorInfo& t : op.tensors) {
    if (t.role != TensorInfo::Role::Output) continue;
    const Stored& s = run.tensor(t.name);
    if (s.width != 1) fail(fmt::format("output '{}' holds monoid carriers", t.name));
    out[t.name] = HostTensor{t.elem.dtype, s.shape, s.data};
  }
  for (const std::string& name : also)
    if (const TensorInfo* t = op.find(name); t && t->role == TensorInfo::Role::Intermediate && run.tensors.count(name))
      if (const Stored& s = run.tensors.at(name); s.width == 1) out[name] = HostTensor{t->elem.dtype, s.shape, s.data};
  return out;
}

}  // namespace

TensorMap evaluate_reference(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes,
                             const TensorMap& inputs, const std::vector<std::string>& also) {
  return run_op(program, op, sizes, inputs, 0, also);
}

}  // namespace emmy
