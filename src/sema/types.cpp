#include "sema/types.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace emmy {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  int rank;  // promotion order; floats of equal rank meet at f32
};

constexpr std::array<DTypeRow, 7> kDTypes = {{
    {DType::Bool, "bool", 0},
    {DType::I32, "i32", 1},
    {DType::I64, "i64", 2},
    {DType::F16, "f16", 3},
    {DType::BF16, "bf16", 3},
    {DType::F32, "f32", 4},
    {DType::F64, "f64", 5},
}};

const DTypeRow& row(DType t) { return kDTypes[static_cast<size_t>(t)]; }

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes)
    if (r.name == name) return r.type;
  return std::nullopt;
}

std::string_view dtype_name(DType t) { return row(t).name; }

std::vector<std::string_view> dtype_names() {
  std::vector<std::string_view> v;
  for (const DTypeRow& r : kDTypes) v.push_back(r.name);
  return v;
}

bool is_float(DType t) { return row(t).rank >= 3; }
bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

std::string shape_text(const std::vector<Size>& shape) {
  std::vector<std::string> dims;
  for (const Size& s : shape) dims.push_back(s.str());
  return shape.empty() ? "" : fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string Type::str() const {
  switch (kind) {
    case Kind::Error: return "<error>";
    case Kind::Scalar:
      return std::string(weak ? (is_float(dtype) ? "float literal" : "integer literal") : dtype_name(dtype));
    case Kind::Vector: return fmt::format("{}[{}]", dtype_name(dtype), length.str());
    case Kind::Record: return fmt::format("{} carrier", monoid);
    case Kind::Tuple: {
      std::string s;
      for (const Type& e : elems) s += (s.empty() ? "" : ", ") + e.str();
      return "(" + s + ")";
    }
  }
  return "?";
}

Type promote(const Type& a, const Type& b) {
  if (a.is_error() || b.is_error()) return Type::error();
  Type out = a.kind == Type::Kind::Vector ? a : b;  // a vector operand makes a vector
  out.weak = a.weak && b.weak;
  if (a.weak != b.weak) {
    const Type& strong = a.weak ? b : a;
    const Type& weak = a.weak ? a : b;
    // A float literal next to an integer makes f32; otherwise the strong type wins.
    out.dtype = is_float(weak.dtype) && !is_float(strong.dtype) ? DType::F32 : strong.dtype;
    return out;
  }
  const DTypeRow& ra = row(a.dtype);
  const DTypeRow& rb = row(b.dtype);
  if (ra.rank == rb.rank && a.dtype != b.dtype)
    out.dtype = DType::F32;  // f16 with bf16
  else
    out.dtype = ra.rank >= rb.rank ? a.dtype : b.dtype;
  return out;
}

DType materialize(const Type& t) {
  if (!t.weak) return t.dtype;
  return is_float(t.dtype) ? DType::F32 : t.dtype == DType::Bool ? DType::Bool : DType::I64;
}

bool storable(const Type& from, DType to) {
  if (from.kind != Type::Kind::Scalar) return false;
  if (to == DType::Bool) return from.dtype == DType::Bool;
  if (from.dtype == DType::Bool) return false;
  if (is_int(to)) return is_int(from.dtype);
  return true;  // any number into a float tensor
}

const std::vector<BuiltinFn>& builtin_fns() {
  static const std::vector<BuiltinFn> fns = {
      {"exp", 1, FnRule::FloatUnary},  {"exp2", 1, FnRule::FloatUnary}, {"log", 1, FnRule::FloatUnary},
      {"log2", 1, FnRule::FloatUnary}, {"sqrt", 1, FnRule::FloatUnary}, {"rsqrt", 1, FnRule::FloatUnary},
      {"tanh", 1, FnRule::FloatUnary}, {"erf", 1, FnRule::FloatUnary},  {"sigmoid", 1, FnRule::FloatUnary},
      {"abs", 1, FnRule::SameAsArgs},  {"max", 2, FnRule::SameAsArgs},  {"min", 2, FnRule::SameAsArgs},
      {"select", 3, FnRule::Select},   {"bool", 1, FnRule::Cast},       {"i32", 1, FnRule::Cast},
      {"i64", 1, FnRule::Cast},        {"f16", 1, FnRule::Cast},        {"bf16", 1, FnRule::Cast},
      {"f32", 1, FnRule::Cast},        {"f64", 1, FnRule::Cast},
  };
  return fns;
}

const BuiltinFn* find_builtin_fn(std::string_view name) {
  for (const BuiltinFn& f : builtin_fns())
    if (f.name == name) return &f;
  return nullptr;
}

const std::vector<BuiltinReduction>& builtin_reductions() {
  static const std::vector<BuiltinReduction> table = {
      {"sum", ReduceRule::Accumulate}, {"prod", ReduceRule::Accumulate}, {"max", ReduceRule::Same},
      {"min", ReduceRule::Same},       {"any", ReduceRule::Logical},     {"all", ReduceRule::Logical},
      {"argmax", ReduceRule::Index},   {"argmin", ReduceRule::Index},
  };
  return table;
}

const BuiltinReduction* find_builtin_reduction(std::string_view name) {
  for (const BuiltinReduction& r : builtin_reductions())
    if (r.name == name) return &r;
  return nullptr;
}

std::string dtype_hint(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"float", "f32"},  {"float32", "f32"}, {"half", "f16"},      {"float16", "f16"},
      {"double", "f64"}, {"float64", "f64"}, {"int", "i32"},       {"int32", "i32"},
      {"long", "i64"},   {"int64", "i64"},   {"bfloat16", "bf16"}, {"boolean", "bool"},
  };
  std::vector<std::string> names;
  for (auto n : dtype_names()) names.push_back(std::string(n));
  std::string guess = closest_name(name, names);
  for (const auto& [alias, dtype] : kAliases)
    if (alias == name) guess = dtype;
  if (name == "f8") return fmt::format("fp8 is not supported yet; dtypes are: {}", fmt::join(names, ", "));
  return guess.empty() ? fmt::format("dtypes are: {}", fmt::join(names, ", "))
                       : fmt::format("did you mean '{}'?", guess);
}

}  // namespace emmy
