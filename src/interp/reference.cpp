// The reference evaluator's set-up and checking: size bindings, shapes, seeded random
// inputs rounded to their dtypes, and the comparison of a result with the reference.
#include "interp/reference.hpp"

#include "ir/dtypes.hpp"
#include "ir/numeric.hpp"
#include "sema/size_expr.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "support/limits.hpp"
#include "support/suggest.hpp"

namespace emmy {
namespace {

// ---- sizes ----------------------------------------------------------------------------------

// The op's size names in order of first appearance (parameters, then outputs).
std::vector<std::string> size_names(const ast::OpDecl& decl) {
  std::vector<std::string> names;
  for (const auto* list : {&decl.params, &decl.outputs})
    for (const ast::Param& p : *list)
      for (const ast::Dim& d : p.dims)
        if (!d.is_literal() && !d.computed && std::find(names.begin(), names.end(), d.name) == names.end())
          names.push_back(d.name);
  return names;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

// "B=1,H=2" for the given names: an example binding.
std::string example_binding(const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const std::string& n : names) parts.push_back(n + "=64");
  return fmt::format("{}", fmt::join(parts, ","));
}

// The value an input of `dtype` holds: the kernel IR's rounding (one rounding from double,
// to nearest even), so reference and kernels read the same numbers.
double round_to_dtype(double x, DType dtype) { return kir::round_to(kir::scalar_of(dtype), x); }

// ---- the range of integer inputs ---------------------------------------------------------------

bool is_comparison(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}

// Finds the bound that the uses of integer input `name` put on its values: compared with an
// index variable of size C (== gives [0, C), an order [0, C]), or used as the k-th index of a
// tensor (that dim). An op-call argument whose fellow argument has the same shape plus one
// trailing dim (target[N] beside logits[N, C]) is taken as a class index into that dim.
class IndexUseFinder {
 public:
  IndexUseFinder(const CheckedOp& op, std::string name, const SizeBindings& sizes)
      : op_(op), name_(std::move(name)), sizes_(sizes) {}

  std::optional<int64_t> run() {
    for (const ast::Stmt& s : op_.decl->body) {
      vars_.clear();
      if (const auto* let = std::get_if<ast::LetStmt>(&s)) {
        visit(let->value);
        continue;
      }
      const auto& a = std::get<ast::AssignStmt>(s);
      if (const TensorInfo* t = op_.find(a.target.name))
        for (size_t k = 0; k < a.indices.size() && k < t->shape.size(); ++k)
          vars_.emplace_back(a.indices[k].text, t->shape[k]);
      visit(a.value);
    }
    return bound_;
  }

 private:
  void visit(const ast::Expr& e) {
    size_t scope = vars_.size();
    if (e.kind == ast::ExprKind::Reduce)
      for (const ReductionInfo& r : op_.reductions)
        if (r.expr_id == e.id)
          for (size_t k = 0; k < r.axes.size() && k < r.axis_sizes.size(); ++k)
            vars_.emplace_back(r.axes[k], r.axis_sizes[k]);
    if (e.kind == ast::ExprKind::Binary && is_comparison(e.text)) {
      for (int side = 0; side < 2; ++side)
        if (reads_input(e.args[side]))
          if (auto size = var_size(e.args[1 - side])) note(*size, e.text == "==" || e.text == "!=" ? 0 : 1);
    }
    if (e.kind == ast::ExprKind::Index && e.args[0].kind == ast::ExprKind::Name)
      if (const TensorInfo* t = op_.find(e.args[0].text))
        for (size_t k = 1; k < e.args.size() && k - 1 < t->shape.size(); ++k)
          if (reads_input(e.args[k])) note(t->shape[k - 1], 0);
    if (e.kind == ast::ExprKind::Call) call_argument(e);
    for (const ast::Expr& a : e.args) visit(a);
    for (const ast::Expr& w : e.where_) visit(w);
    vars_.resize(scope);
  }

  void call_argument(const ast::Expr& call) {
    const TensorInfo* self = op_.find(name_);
    if (!self) return;
    for (const ast::Expr& a : call.args) {
      if (a.kind != ast::ExprKind::Name || a.text != name_) continue;
      for (const ast::Expr& other : call.args) {
        const TensorInfo* t = other.kind == ast::ExprKind::Name ? op_.find(other.text) : nullptr;
        if (t && t->shape.size() == self->shape.size() + 1 &&
            std::equal(self->shape.begin(), self->shape.end(), t->shape.begin()))
          note(t->shape.back(), 0);
      }
    }
  }

  bool reads_input(const ast::Expr& e) const {
    if (e.kind == ast::ExprKind::Call && (e.text == "i64" || e.text == "i32") && e.args.size() == 1)
      return reads_input(e.args[0]);
    if (e.kind == ast::ExprKind::Name) return e.text == name_;
    return e.kind == ast::ExprKind::Index && e.args[0].kind == ast::ExprKind::Name && e.args[0].text == name_;
  }

  std::optional<Size> var_size(const ast::Expr& e) const {
    if (e.kind != ast::ExprKind::Name) return std::nullopt;
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == e.text) return it->second;
    return std::nullopt;
  }

  void note(const Size& size, int64_t extra) {
    int64_t n = size.literal;
    if (!size.symbol.empty()) {
      auto it = sizes_.find(size.symbol);
      if (it == sizes_.end()) return;
      n = it->second;
    }
    if (n + extra <= 0) return;
    bound_ = std::min(bound_.value_or(n + extra), n + extra);
  }

  const CheckedOp& op_;
  std::string name_;
  const SizeBindings& sizes_;
  std::vector<std::pair<std::string, Size>> vars_;  // index variables in scope
  std::optional<int64_t> bound_;
};

constexpr int64_t kDefaultIntBound = 8;

}  // namespace

namespace {

// A size --shape left out takes the value of the size at the same position of an input of the
// same rank (T of k[B, H, T, D] from S of q[B, H, S, D]); repeated until nothing changes.
void default_by_position(const CheckedOp& op, SizeBindings& sizes, std::vector<std::string>* notes) {
  std::set<std::string> computed;  // computed from the others, never guessed (dy: f32[B, T - K + 1])
  if (op.decl)
    for (const ast::Param& p : op.decl->params)
      for (const ast::Dim& d : p.dims)
        if (d.computed) computed.insert(d.name);
  std::vector<const TensorInfo*> inputs;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Input) inputs.push_back(&t);
  for (bool changed = true; changed;) {
    changed = false;
    for (const TensorInfo* t : inputs)
      for (size_t pos = 0; pos < t->shape.size(); ++pos) {
        const std::string& name = t->shape[pos].symbol;
        if (name.empty() || sizes.count(name) || computed.count(name)) continue;
        for (const TensorInfo* other : inputs) {
          if (other == t || other->shape.size() != t->shape.size()) continue;
          const std::string& from = other->shape[pos].symbol;
          auto it = from.empty() ? sizes.end() : sizes.find(from);
          if (it == sizes.end()) continue;
          sizes.emplace(name, it->second);
          if (notes) notes->push_back(fmt::format("{}={} (as {} of {})", name, it->second, from, other->name));
          changed = true;
          break;
        }
      }
  }
}

}  // namespace

std::variant<SizeBindings, std::string> bind_sizes(const CheckedOp& op, std::string_view text,
                                                   std::vector<std::string>* defaulted) {
  const std::string op_name = op.decl ? op.decl->name.name : "?";
  std::vector<std::string> names = op.decl ? size_names(*op.decl) : std::vector<std::string>{};
  SizeBindings out;
  if (!trim(text).empty()) {
    for (std::string_view raw : split(text, ',')) {
      std::string_view entry = trim(raw);
      size_t eq = entry.find('=');
      std::string_view name = trim(entry.substr(0, eq));
      if (eq == std::string_view::npos || !is_identifier(name))
        return fmt::format("malformed size binding '{}': write NAME=VALUE, e.g. {}", entry,
                           names.empty() ? std::string("S=64") : names[0] + "=64");
      std::string_view value_text = trim(entry.substr(eq + 1));
      std::optional<int64_t> value = parse_int(value_text);
      if (!value)
        return fmt::format("malformed value '{}' for size {}: write a positive integer, e.g. {}=64", value_text, name,
                           name);
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string guess = closest_name(name, names);
        std::string known =
            names.empty() ? std::string("it has no sizes") : fmt::format("its sizes are {}", fmt::join(names, ", "));
        return guess.empty()
                   ? fmt::format("unknown size '{}' for op {}: {}", name, op_name, known)
                   : fmt::format("unknown size '{}' for op {}: did you mean '{}'? ({})", name, op_name, guess, known);
      }
      if (out.count(std::string(name))) return fmt::format("size {} is bound twice: give each size once", name);
      if (*value <= 0) return fmt::format("size {} must be positive, got {}: write e.g. {}=64", name, *value, name);
      out.emplace(std::string(name), *value);
    }
  }
  if (defaulted) default_by_position(op, out, defaulted);
  std::vector<std::string> missing;
  for (const std::string& n : names)
    if (!out.count(n)) missing.push_back(n);
  if (!missing.empty())
    return fmt::format("missing size{} {} for op {}: bind every size, e.g. {}", missing.size() == 1 ? "" : "s",
                       fmt::join(missing, ", "), op_name, example_binding(missing));
  if (op.decl)
    if (std::optional<std::string> why = bind_computed_sizes(*op.decl, out)) return *why;
  if (std::optional<std::string> why = too_many_elements(op, out)) return *why;
  return out;
}

std::optional<std::string> too_many_elements(const CheckedOp& op, const SizeBindings& sizes) {
  auto count = [&](const std::vector<Size>& shape, std::vector<std::string>& factors) {
    int64_t n = 1;
    bool over = false;
    for (const Size& s : shape) {
      auto it = s.symbol.empty() ? sizes.end() : sizes.find(s.symbol);
      const int64_t d = s.symbol.empty() ? s.literal : it == sizes.end() ? 1 : it->second;
      factors.push_back(s.symbol.empty() ? std::to_string(d) : fmt::format("{}={}", s.symbol, d));
      over = over || d <= 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements;
    }
    return over;
  };
  for (const TensorInfo& t : op.tensors) {
    std::vector<std::string> factors;
    if (count(t.shape, factors))
      return fmt::format("tensor {} of op {} would hold {} elements, more than 2^60: pass smaller sizes", t.name,
                         op.decl ? op.decl->name.name : "?", fmt::join(factors, " x "));
  }
  for (const ReductionInfo& r : op.reductions) {
    std::vector<std::string> factors;
    if (count(r.axis_sizes, factors))
      return fmt::format("the reduction over {} of op {} would run {} steps, more than 2^60: pass smaller sizes",
                         fmt::join(r.axes, ", "), op.decl ? op.decl->name.name : "?", fmt::join(factors, " x "));
  }
  return std::nullopt;
}

std::optional<std::string> shape_syntax_error(std::string_view text) {
  for (std::string_view raw : split(text, ',')) {
    std::string_view entry = trim(raw);
    const size_t eq = entry.find('=');
    std::string_view name = trim(entry.substr(0, eq));
    if (eq == std::string_view::npos || !is_identifier(name))
      return fmt::format("malformed size binding '{}': write NAME=VALUE, e.g. N=64", entry);
    std::string_view value_text = trim(entry.substr(eq + 1));
    std::optional<int64_t> value = parse_int(value_text);
    if (!value)
      return fmt::format("malformed value '{}' for size {}: write a positive integer, e.g. {}=64", value_text, name,
                         name);
    if (*value <= 0) return fmt::format("size {} must be positive, got {}: write e.g. {}=64", name, *value, name);
  }
  return std::nullopt;
}

std::vector<int64_t> tensor_shape(const TensorInfo& tensor, const SizeBindings& sizes) {
  std::vector<int64_t> shape;
  for (const Size& s : tensor.shape) {
    if (s.symbol.empty()) {
      shape.push_back(s.literal);
      continue;
    }
    auto it = sizes.find(s.symbol);
    if (it == sizes.end()) throw std::runtime_error(fmt::format("size {} of '{}' is not bound", s.symbol, tensor.name));
    shape.push_back(it->second);
  }
  return shape;
}

TensorMap random_inputs(const CheckedOp& op, const SizeBindings& sizes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> magnitude(0.1, 1.0);
  std::bernoulli_distribution coin(0.5);
  TensorMap out;
  for (const TensorInfo& t : op.tensors) {
    if (t.role != TensorInfo::Role::Input) continue;
    HostTensor h;
    h.dtype = t.elem.dtype;
    h.shape = tensor_shape(t, sizes);
    size_t n = 1;
    for (int64_t d : h.shape) n *= static_cast<size_t>(d);
    h.data.resize(n);
    if (is_int(h.dtype)) {
      int64_t bound = op.decl ? IndexUseFinder(op, t.name, sizes).run().value_or(kDefaultIntBound) : kDefaultIntBound;
      std::uniform_int_distribution<int64_t> pick(0, bound - 1);
      for (double& v : h.data) v = static_cast<double>(pick(rng));
    } else if (h.dtype == DType::Bool) {
      for (double& v : h.data) v = coin(rng) ? 1.0 : 0.0;
    } else {
      for (double& v : h.data) {
        double x = magnitude(rng);
        v = round_to_dtype(coin(rng) ? -x : x, h.dtype);
      }
    }
    out.emplace(t.name, std::move(h));
  }
  return out;
}

namespace {

// The smallest normal magnitude of a float dtype: below it values are subnormal.
double smallest_normal(DType dtype) {
  switch (dtype) {
    case DType::F16: return std::ldexp(1.0, -14);
    case DType::F64: return std::numeric_limits<double>::min();
    default: return std::ldexp(1.0, -126);  // bf16 and f32 share f32's exponent range
  }
}

// One hostile change to the element at flat index `i` of a float input (`row` elements a row,
// 0 for rank < 2), `x` its ordinary value; `u` a uniform number in [0, 1).
double hostile_value(HostileKind kind, DType dtype, size_t i, size_t row, double x, double u) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  switch (kind) {
    case HostileKind::Large:
      return dtype == DType::F16 || dtype == DType::BF16 ? round_to_dtype(x * kHostileScale, dtype) : x;
    case HostileKind::NegInfRows: return row > 0 && i < row ? neg_inf : x;
    case HostileKind::LeadingNegInf: return row > 0 && i % row == 0 ? neg_inf : x;
    case HostileKind::TrailingNegInf: return row > 0 && i % row == row - 1 ? neg_inf : x;
    case HostileKind::NegInfPrefix: return row > 0 && i % row < (row + 1) / 2 ? neg_inf : x;
    case HostileKind::NaN: return i % 7 == 3 ? std::numeric_limits<double>::quiet_NaN() : x;
    case HostileKind::Denormal:
      return i % 2 == 0 ? round_to_dtype(std::copysign((0.1 + 0.8 * u) * smallest_normal(dtype), x), dtype) : x;
  }
  return x;
}

}  // namespace

std::string_view hostile_kind_name(HostileKind kind) {
  static constexpr std::pair<HostileKind, std::string_view> kNames[] = {{HostileKind::Large, "large"},
                                                                        {HostileKind::NegInfRows, "-inf rows"},
                                                                        {HostileKind::LeadingNegInf, "leading -inf"},
                                                                        {HostileKind::TrailingNegInf, "trailing -inf"},
                                                                        {HostileKind::NegInfPrefix, "-inf first half"},
                                                                        {HostileKind::NaN, "NaN"},
                                                                        {HostileKind::Denormal, "denormal"}};
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "?";
}

TensorMap hostile_inputs(const CheckedOp& op, const SizeBindings& sizes, uint64_t seed, HostileKind kind) {
  TensorMap out = random_inputs(op, sizes, seed);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (auto& [name, t] : out) {
    if (!is_float(t.dtype)) continue;
    const size_t row = t.shape.size() >= 2 ? static_cast<size_t>(t.shape.back()) : 0;
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = hostile_value(kind, t.dtype, i, row, t.data[i], unit(rng));
  }
  return out;
}

}  // namespace emmy
