// The reference evaluator's elementwise functions and compiled expression nodes, each run in float64.
#include "interp/reference_nodes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "interp/reference.hpp"
#include "ir/numeric.hpp"
#include "support/ieee_rules.hpp"

namespace emmy::reference_detail {

void fail(const std::string& message) { throw std::runtime_error("reference evaluator: " + message); }

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

int64_t to_index(double v, const char* what) {
  if (!std::isfinite(v) || v != std::trunc(v) || std::fabs(v) > 9.0e15)
    fail(fmt::format("{} {} is not an integer", what, v));
  return static_cast<int64_t>(v);
}

// ---- elementwise functions ------------------------------------------------------------------

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

void write_carrier(State& s, const std::vector<CarrierPart>& parts, double* out) {
  for (const CarrierPart& p : parts) {
    if (p.value->width() == p.width)
      p.value->eval(s, out + p.offset);
    else
      std::fill_n(out + p.offset, p.width, p.value->scalar(s));
  }
}

}  // namespace

// ---- nodes ----------------------------------------------------------------------------------

double Node::scalar(State& s) const {
  (void)s;
  fail("internal: a vector value used as a scalar");
}

void Node::eval(State& s, double* out) const { *out = scalar(s); }

bool Node::take_part(size_t offset, size_t width, const Type& type) {
  (void)offset, (void)width, (void)type;
  return false;
}

double ConstNode::scalar(State& s) const { return as_computed(s, type().dtype, value_); }

double SlotNode::scalar(State& s) const { return static_cast<double>(s.slots[slot_]); }

double LocalNode::scalar(State& s) const { return s.locals[offset_]; }

void LocalNode::eval(State& s, double* out) const { std::copy_n(s.locals.data() + offset_, width(), out); }

bool LocalNode::take_part(size_t offset, size_t width, const Type& type) {
  offset_ += offset;
  retype(width, type);
  return true;
}

LoadNode::LoadNode(const Stored& t, std::vector<IndexArg> args, Type type, SourceRange where)
    : Node(std::move(type), load_width(t, args), t.record),
      t_(t),
      args_(std::move(args)),
      slice_(slice_dim(args_)),
      part_width_(width()),
      where_(where) {}

double LoadNode::scalar(State& s) const { return t_.data[element(s)]; }

void LoadNode::eval(State& s, double* out) const {
  size_t at = element(s);
  if (slice_ < 0) {
    std::copy_n(t_.data.data() + at, width(), out);
    return;
  }
  auto step = static_cast<size_t>(t_.strides[static_cast<size_t>(slice_)]);
  for (size_t e = 0; e < width(); ++e) out[e] = t_.data[at + e * step];
}

bool LoadNode::take_part(size_t offset, size_t width, const Type& type) {
  if (slice_ >= 0 || part_index_) return false;
  part_ += offset;
  part_width_ = width;
  retype(width, type);
  return true;
}

bool LoadNode::take_index(NodePtr& index) {
  if (slice_ >= 0 || part_index_ || type().kind != Type::Kind::Vector) return false;
  part_index_ = std::move(index);
  retype(1, Type::scalar(type().dtype));
  return true;
}

size_t LoadNode::element(State& s) const {
  int64_t flat = 0;
  for (size_t k = 0; k < args_.size(); ++k) {
    const IndexArg& a = args_[k];
    if (a.is_slice) continue;
    int64_t i = a.is_slot ? s.slots[a.slot] : to_index(a.expr->scalar(s), "an index");
    if (i < 0 || i >= t_.shape[k])
      throw ReferenceRangeError(
          fmt::format("index {} is out of range for dim {} of '{}' (size {})", i, k, t_.name, t_.shape[k]), where_);
    flat += i * t_.strides[k];
  }
  size_t at = static_cast<size_t>(flat) * t_.width + part_;
  if (!part_index_) return at;
  int64_t i = to_index(part_index_->scalar(s), "a vector index");
  if (i < 0 || i >= static_cast<int64_t>(part_width_))
    fail(fmt::format("vector index {} is out of range (length {})", i, part_width_));
  return at + static_cast<size_t>(i);
}

MapNode::MapNode(Fn fn, std::vector<NodePtr> args, Type type, size_t width, FrameLayout& frame, SourceRange where)
    : Node(std::move(type), width), fn_(fn), args_(std::move(args)), id_(frame.nodes++), where_(where) {
  for (const NodePtr& a : args_) scratch_.push_back(a->width() > 1 ? frame.region(a->width()) : 0);
}

double MapNode::jittered(const State& s, double a, size_t lane) const {
  const kir::ScalarType to = fn_ == Fn::ToF16 ? kir::ScalarType::F16 : kir::ScalarType::BF16;
  if (!std::isfinite(a) || kir::round_to(to, a) == a) return a;  // a value of the type: nothing to flip
  auto mix = [](uint64_t z) {                                    // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(mix(s.jitter->seed ^ s.salt) + 0x9e3779b97f4a7c15ULL * (id_ + 1) + lane);
  for (int64_t v : s.slots) h = mix(h ^ static_cast<uint64_t>(v));
  const double r = static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;  // in [-1, 1)
  return a * (1.0 + s.jitter->cast_jitter * r);
}

double MapNode::computed(const State& s, double a, double b) const {
  if ((fn_ == Fn::IDiv || fn_ == Fn::Mod) && static_cast<int64_t>(b) == 0)
    throw ReferenceRangeError(
        fmt::format("integer {} of {} by zero", fn_ == Fn::Mod ? "remainder" : "division", static_cast<int64_t>(a)),
        where_, "E069", kZeroDivisorHelp);
  return as_computed(s, type().dtype, apply(fn_, a, b));
}

double MapNode::scalar(State& s) const {
  double a = args_[0]->scalar(s);
  if (s.jitter && (fn_ == Fn::ToF16 || fn_ == Fn::ToBf16)) a = jittered(s, a, 0);
  return computed(s, a, args_.size() > 1 ? args_[1]->scalar(s) : 0.0);
}

void MapNode::eval(State& s, double* out) const {
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
  const bool jitter = s.jitter && (fn_ == Fn::ToF16 || fn_ == Fn::ToBf16);
  for (size_t e = 0; e < width(); ++e) {
    const double a = in[0][e * step[0]];
    out[e] = computed(s, jitter ? jittered(s, a, e) : a, in[1][e * step[1]]);
  }
}

double LogicNode::scalar(State& s) const {
  bool a = a_->scalar(s) != 0;
  if (a != is_and_) return a ? 1 : 0;
  return b_->scalar(s) != 0 ? 1 : 0;
}

double SelectNode::scalar(State& s) const { return c_->scalar(s) != 0 ? a_->scalar(s) : b_->scalar(s); }

void SelectNode::eval(State& s, double* out) const {
  const Node& branch = c_->scalar(s) != 0 ? *a_ : *b_;
  if (branch.width() == width())
    branch.eval(s, out);
  else
    std::fill_n(out, width(), branch.scalar(s));
}

double FieldNode::scalar(State& s) const {
  base_->eval(s, s.locals.data() + scratch_);
  return s.locals[scratch_ + offset_];
}

void FieldNode::eval(State& s, double* out) const {
  base_->eval(s, s.locals.data() + scratch_);
  std::copy_n(s.locals.data() + scratch_ + offset_, width(), out);
}

double VectorIndexNode::scalar(State& s) const {
  int64_t i = to_index(index_->scalar(s), "a vector index");
  if (i < 0 || i >= static_cast<int64_t>(base_->width()))
    fail(fmt::format("vector index {} is out of range (length {})", i, base_->width()));
  base_->eval(s, s.locals.data() + scratch_);
  return s.locals[scratch_ + static_cast<size_t>(i)];
}

// ---- reductions ---------------------------------------------------------------------------

Builtin builtin_kind(std::string_view name) {
  static const std::pair<std::string_view, Builtin> kTable[] = {
      {"sum", Builtin::Sum}, {"prod", Builtin::Prod}, {"max", Builtin::Max},       {"min", Builtin::Min},
      {"any", Builtin::Any}, {"all", Builtin::All},   {"argmax", Builtin::ArgMax}, {"argmin", Builtin::ArgMin},
  };
  for (const auto& [n, k] : kTable)
    if (n == name) return k;
  fail(fmt::format("unknown built-in reduction '{}'", name));
}

double BuiltinReduceNode::scalar(State& s) const {
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
  // Under f32 arithmetic the terms are f32 values and the result is rounded once: the kernels'
  // sums run in trees of short serial runs, far nearer the exact sum than one long f32 run.
  return as_computed(s, type().dtype, acc);
}

double BuiltinReduceNode::identity() const {
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

double BuiltinReduceNode::integer_limit(bool low) const {
  switch (type().dtype) {
    case DType::I32:
      return low ? static_cast<double>(std::numeric_limits<int32_t>::min()) : std::numeric_limits<int32_t>::max();
    case DType::I64:
      return low ? static_cast<double>(std::numeric_limits<int64_t>::min())
                 : static_cast<double>(std::numeric_limits<int64_t>::max());
    default: return low ? -kInf : kInf;
  }
}

double MonoidReduceNode::scalar(State& s) const {
  double out = 0;
  eval(s, &out);
  return out;
}

void MonoidReduceNode::eval(State& s, double* out) const {
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
    // The combine exact under f32 arithmetic too (as a sum is: BuiltinReduceNode); the lifted
    // elements are f32 values, and what reads the carrier rounds its own results.
    const bool f32 = std::exchange(s.f32, false);
    for (const auto& [value, offset] : m_.lets) value->eval(s, l + offset);
    write_carrier(s, m_.yield, l + m_.tmp);
    s.f32 = f32;
    std::copy_n(l + m_.tmp, w, l + m_.acc);
  });
  std::copy_n(l + m_.acc, w, out);
}

}  // namespace emmy::reference_detail
