// The abstract syntax tree of a .emmy module: value-semantic nodes with source ranges.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "support/source.hpp"

namespace emmy::ast {

// A name as written, with where it was written.
struct Ident {
  std::string name;
  SourceRange range;
};

enum class ExprKind {
  Int,     // 42                      text = spelling, int_value
  Float,   // 1.5e-3                  text = spelling, float_value
  Bool,    // true / false            int_value = 0 or 1
  Inf,     // inf
  Name,    // x                       text = name
  Index,   // base[i, j]              args[0] = base, args[1..] = indices
  Field,   // base.name               args[0] = base, text = field name
  Slice,   // the ':' of v[b, h, j, :] (only inside an Index)
  Unary,   // -x, !x                  text = operator, args[0]
  Binary,  // a + b, a < b, a && b    text = operator, args[0], args[1]
  Call,    // f(a, b)                 text = callee, args
  Reduce,  // sum(j, k where p: a)    text = monoid, axes, where_ (0 or 1), args
  Tuple,   // (a, b, c)               args
};

// One expression node. `id` is unique within a module and indexes sema's side tables
// (types, shapes), so checked information never mutates the tree.
struct Expr {
  ExprKind kind = ExprKind::Int;
  SourceRange range;
  uint32_t id = 0;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
  std::vector<Expr> args;
  std::vector<Ident> axes;   // Reduce only
  std::vector<Expr> where_;  // Reduce only: the predicate, if any
  SourceRange callee_range;  // Call/Reduce/Field: the range of the name
};

// `e` without its operands (args, where_): the start of a rewrite that rebuilds them, so a
// rewrite costs the tree's size, not size x depth (copying e, then its operands again).
Expr node_of(const Expr& e);

// A dim of a parameter's shape: a size variable (B, S...) or a literal (64).
struct Dim {
  std::string name;  // empty for a literal; a computed dim's size is named by build_ast (`y_dim2`)
  int64_t value = 0;
  SourceRange range;
  std::shared_ptr<const Expr> computed;  // `T - K + 1`: the expression over the inputs' sizes
  std::string text;                      // ... as written
  bool is_literal() const { return name.empty(); }
};

struct Param {
  Ident name;
  Ident dtype;
  std::vector<Dim> dims;  // empty = a scalar
  bool has_shape = false;
};

struct LetStmt {
  Ident name;
  Expr value;
};

// `t[i, j] = expr;` (indices may be empty for a scalar `t = expr;`).
struct AssignStmt {
  Ident target;
  std::vector<Expr> indices;
  bool bracketed = false;  // `t[] = ...` or `t[..]` vs plain `t = ...`
  Expr value;
  SourceRange range;
};

using Stmt = std::variant<LetStmt, AssignStmt>;

struct OpDecl {
  std::vector<std::string> doc;  // `///` lines, without the slashes
  Ident name;
  std::vector<Param> params;
  std::vector<Param> outputs;
  std::vector<Stmt> body;
  SourceRange range;
};

// `op sdpa_bwd = grad(sdpa, q, k, v) saving m, l;`: an op sema derives from another
// (docs/language.md, "Derived ops"). `wrt` empty: every float input of `of`.
struct GradDecl {
  std::vector<std::string> doc;
  Ident name;
  Ident fn;  // the word `grad`
  Ident of;
  std::vector<Ident> wrt;
  std::vector<Ident> saved;  // `saving m, l`: forward tensors the derived op takes instead of recomputing
  SourceRange range;
};

// A monoid field or lift parameter: `m: f32` or `o: f32[E]`.
struct Field {
  Ident name;
  Ident dtype;
  std::optional<Dim> vector_dim;
};

struct MonoidDecl {
  std::vector<std::string> doc;
  Ident name;
  std::vector<Field> fields;
  std::optional<Expr> identity;
  SourceRange identity_range;
  std::optional<std::vector<Field>> lift_params;
  std::optional<Expr> lift_value;
  SourceRange lift_range;
  Ident combine_lhs, combine_rhs;
  std::vector<LetStmt> combine_lets;
  std::optional<Expr> combine_yield;
  SourceRange combine_range;
  bool has_combine = false;
  std::vector<Ident> assumes;  // `assume associative;`
  SourceRange range;
};

// `KNOB[@site] = value;` — value is the verbatim source text, parsed by the codec.
struct KnobEntry {
  Ident knob;
  std::optional<Ident> site;
  std::string value;
  SourceRange value_range;  // empty range (begin == end) for an empty value
  SourceRange range;
};

struct ScheduleDecl {
  std::vector<std::string> doc;
  Ident op;
  Ident target;
  std::optional<Ident> label;  // `as "NAME"`: name without quotes, range of the string
  std::optional<Expr> guard;   // `where M * N <= 4194304`: over the op's sizes (sema checks it)
  std::vector<KnobEntry> entries;
  std::optional<SourceRange> automatic;  // `auto;` for the knobs: the auto-schedule (the word's range)
  SourceRange range;
};

struct ImportDecl {
  std::vector<Ident> path;  // std . nn
  SourceRange range;
  std::string dotted() const;
};

using Item = std::variant<ImportDecl, OpDecl, MonoidDecl, ScheduleDecl, GradDecl>;

struct Module {
  uint32_t file = 0;
  std::vector<Item> items;
  uint32_t expr_count = 0;  // ids run 1..expr_count
};

}  // namespace emmy::ast
