// Dtypes, value types and the promotion rules (docs/language.md, "Types").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/suggest.hpp"

namespace emmy {

enum class DType { Bool, I32, I64, F16, BF16, F32, F64 };

std::optional<DType> parse_dtype(std::string_view name);
std::string_view dtype_name(DType t);
std::vector<std::string_view> dtype_names();
bool is_float(DType t);
bool is_int(DType t);

// A size: a symbolic dim (S, D...) or a literal. Index variables are bound to one.
struct Size {
  std::string symbol;  // empty for a literal
  int64_t literal = 0;
  bool operator==(const Size&) const = default;
  std::string str() const { return symbol.empty() ? std::to_string(literal) : symbol; }
};
// A tensor's shape as written: "[N, C]"; "" for a scalar.
std::string shape_text(const std::vector<Size>& shape);

// The type of a value in an expression.
struct Type {
  enum class Kind { Error, Scalar, Vector, Record, Tuple };
  Kind kind = Kind::Error;
  DType dtype = DType::F32;
  bool weak = false;                                      // an untyped literal: adapts to the other operand
  Size length;                                            // Vector: its length
  std::string monoid;                                     // Record: the monoid whose carrier this is
  std::vector<std::pair<std::string, Size>> vector_dims;  // Record: the monoid's dims bound to sizes
  std::vector<Type> elems;                                // Tuple

  static Type error() { return {}; }
  static Type scalar(DType d, bool weak = false) {
    Type t;
    t.kind = Kind::Scalar;
    t.dtype = d;
    t.weak = weak;
    return t;
  }
  static Type vector(DType d, Size n) {
    Type t = scalar(d);
    t.kind = Kind::Vector;
    t.length = std::move(n);
    return t;
  }
  bool is_error() const { return kind == Kind::Error; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_numeric() const { return (kind == Kind::Scalar || kind == Kind::Vector) && dtype != DType::Bool; }
  bool is_bool() const { return kind == Kind::Scalar && dtype == DType::Bool; }
  std::string str() const;
};

// Result of combining two operand dtypes arithmetically (weak literals adapt).
Type promote(const Type& a, const Type& b);
// The concrete dtype a weak literal takes when nothing constrains it.
DType materialize(const Type& t);
// Whether a value of type `from` may be stored into a `to` tensor without a cast.
bool storable(const Type& from, DType to);

// Built-in elementwise functions: name, arity, and how the result type is formed.
enum class FnRule { FloatUnary, SameAsArgs, Select, Cast };
struct BuiltinFn {
  std::string_view name;
  int arity;
  FnRule rule;
};
const BuiltinFn* find_builtin_fn(std::string_view name);
const std::vector<BuiltinFn>& builtin_fns();

// Built-in reductions (their reference definitions live in stdlib/monoids.emmy).
enum class ReduceRule { Accumulate, Same, Logical, Index };
struct BuiltinReduction {
  std::string_view name;
  ReduceRule rule;
};
const BuiltinReduction* find_builtin_reduction(std::string_view name);
const std::vector<BuiltinReduction>& builtin_reductions();

// The help for an unknown dtype: the likely one (f23 -> f32, float -> f32, int -> i32), or the list.
std::string dtype_hint(std::string_view name);

}  // namespace emmy
