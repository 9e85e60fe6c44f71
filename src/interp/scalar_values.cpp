// --set: values for an op's scalar parameters, checked against their dtypes.
#include "interp/scalar_values.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "ir/numeric.hpp"
#include "support/paths.hpp"
#include "support/suggest.hpp"

namespace emmy {
namespace {

// What a scalar of each dtype holds. i64 stops at 2^53: the inputs are held as float64.
struct Range {
  DType dtype;
  double lo, hi;
  bool integral;
  const char* example;
};
constexpr Range kRanges[] = {
    {DType::Bool, 0, 1, true, "1"},
    {DType::I32, -2147483648.0, 2147483647.0, true, "3"},
    {DType::I64, -9007199254740992.0, 9007199254740992.0, true, "3"},
    {DType::F16, -65504.0, 65504.0, false, "0.5"},
    {DType::BF16, -3.3895313892515355e38, 3.3895313892515355e38, false, "0.5"},
    {DType::F32, -3.4028234663852886e38, 3.4028234663852886e38, false, "0.5"},
    {DType::F64, -1.7976931348623157e308, 1.7976931348623157e308, false, "0.5"},
};

const Range& range_of(DType d) {
  return *std::find_if(std::begin(kRanges), std::end(kRanges), [&](const Range& r) { return r.dtype == d; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> parse_number(std::string_view s) {
  if (s == "true") return 1.0;
  if (s == "false") return 0.0;
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string shape_text(const TensorInfo& t) {
  std::vector<std::string> dims;
  for (const Size& s : t.shape) dims.push_back(s.symbol.empty() ? std::to_string(s.literal) : s.symbol);
  return fmt::format("{}[{}]", dtype_name(t.elem.dtype), fmt::join(dims, ", "));
}

struct OpNames {
  std::string op;
  std::vector<std::string> scalars, all;  // scalar parameters; every parameter and size
};

OpNames names_of(const CheckedOp& op) {
  OpNames n{op.decl ? op.decl->name.name : "?", {}, {}};
  for (const TensorInfo& t : op.tensors) {
    if (t.role != TensorInfo::Role::Input) continue;
    if (t.shape.empty()) n.scalars.push_back(t.name);
    n.all.push_back(t.name);
    for (const Size& s : t.shape)
      if (!s.symbol.empty() && std::find(n.all.begin(), n.all.end(), s.symbol) == n.all.end())
        n.all.push_back(s.symbol);
  }
  return n;
}

std::string scalars_list(const OpNames& n) {
  return n.scalars.empty() ? fmt::format("op {} has no scalar parameters", n.op)
                           : fmt::format("the scalar parameters of {}: {}", n.op, fmt::join(n.scalars, ", "));
}

bool is_size(const CheckedOp& op, std::string_view name) {
  return std::any_of(op.tensors.begin(), op.tensors.end(), [&](const TensorInfo& t) {
    return std::any_of(t.shape.begin(), t.shape.end(), [&](const Size& s) { return s.symbol == name; });
  });
}

// Why `name` names no scalar parameter of the op: a tensor, a size, or nothing (the nearest name).
std::string not_a_scalar(const CheckedOp& op, const OpNames& n, std::string_view name) {
  const TensorInfo* t = op.find(std::string(name));
  if (t && t->role == TensorInfo::Role::Input)
    return fmt::format("'{}' is a tensor parameter of {} ({}), not a scalar: tensors get random inputs (--seed); {}",
                       name, n.op, shape_text(*t), scalars_list(n));
  if (is_size(op, name))
    return fmt::format("'{}' is a size of {}: give it in --shape; {}", name, n.op, scalars_list(n));
  const std::string guess = closest_name(name, n.all);
  return fmt::format("unknown parameter '{}' of op {}{}; {}", name, n.op,
                     guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess), scalars_list(n));
}

// The value of one entry for parameter `t`, or why it does not fit its dtype.
std::variant<double, std::string> value_for(const TensorInfo& t, std::string_view text) {
  const Range& r = range_of(t.elem.dtype);
  const std::string_view dtype = dtype_name(t.elem.dtype);
  const std::optional<double> v = parse_number(text);
  if (!v || !std::isfinite(*v))
    return fmt::format("value '{}' for {} is not a {}number: write e.g. {}={}", text, t.name, v ? "finite " : "",
                       t.name, r.example);
  if (r.integral && *v != std::floor(*v))
    return fmt::format("{} is {} {} parameter, and {} is not an integer: write e.g. {}={}", t.name,
                       dtype.front() == 'i' ? "an" : "a", dtype, text, t.name, std::trunc(*v));
  if (*v < r.lo || *v > r.hi)
    return fmt::format("value {} for {} is out of {}'s range ({} to {})", text, t.name, dtype, r.lo, r.hi);
  return r.integral ? *v : kir::round_to(kir::scalar_of(t.elem.dtype), *v);
}

}  // namespace

std::variant<ScalarValues, std::string> bind_scalars(const CheckedOp& op, const std::vector<std::string>& lists) {
  const OpNames names = names_of(op);
  ScalarValues out;
  for (const std::string& list : lists)
    for (std::string_view raw : split_commas(list)) {
      const std::string_view entry = trim(raw);
      const size_t eq = entry.find('=');
      const std::string_view name = trim(entry.substr(0, eq));
      const std::string example = names.scalars.empty() ? "W=3" : names.scalars.front() + "=3";
      if (eq == std::string_view::npos || name.empty())
        return fmt::format("malformed entry '{}': write NAME=VALUE, e.g. --set {}", entry, example);
      const TensorInfo* t = op.find(std::string(name));
      if (!t || t->role != TensorInfo::Role::Input || !t->shape.empty()) return not_a_scalar(op, names, name);
      if (out.count(t->name)) return fmt::format("{} is set twice: give each parameter once", name);
      std::variant<double, std::string> v = value_for(*t, trim(entry.substr(eq + 1)));
      if (const auto* why = std::get_if<std::string>(&v)) return *why;
      out.emplace(t->name, std::get<double>(v));
    }
  return out;
}

void set_scalars(TensorMap& inputs, const ScalarValues& values) {
  for (const auto& [name, v] : values) {
    auto it = inputs.find(name);
    if (it != inputs.end()) it->second.data.assign(1, v);
  }
}

std::string scalars_text(const ScalarValues& values) {
  std::vector<std::string> parts;
  for (const auto& [name, v] : values) parts.push_back(fmt::format("{}={}", name, v));
  return fmt::format("{}", fmt::join(parts, ","));
}

}  // namespace emmy
