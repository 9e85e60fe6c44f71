// The tensor IR: an op as statements over named axes, every name resolved — lets and
// elementwise calls substituted, bare tensor names indexed, reduction axes sized.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sema/types.hpp"

namespace emmy::tir {

// An index variable or reduction axis and its size (a size symbol or a decimal literal).
struct Axis {
  std::string name;
  std::string size;
};

struct Expr {
  enum class Kind {
    Const,   // value
    Size,    // name: a size symbol used as a value (D in 1 / sqrt(D))
    Index,   // name: an index variable
    Read,    // name = tensor; args = one index per dim (Slice for a whole vector dim)
    Slice,   // the ':' of v[b, h, j, :]
    Unary,   // op ("-", "!"), args[0]
    Binary,  // op ("+", "<", "&&", "max"...), args[0], args[1]
    Call,    // op = builtin function (exp, select, f32...), args
    Reduce,  // monoid, axes, where (0 or 1 predicate), args = the lifted values
    Field,   // name = field; args[0] = a record-valued expression, args[1] = element (vector field)
    Reg,     // name: a value the loop IR keeps in a register (a carrier field, a row statistic)
  };
  Kind kind = Kind::Const;
  DType dtype = DType::F32;
  std::string record;  // non-empty: the value is a carrier of this monoid
  double value = 0;
  std::string name, op;
  std::vector<Expr> args;
  std::vector<Axis> axes;
  std::vector<Expr> where;
};

struct Tensor {
  enum class Role { Input, Output, Intermediate };
  std::string name;
  Role role = Role::Input;
  DType dtype = DType::F32;
  std::string record;             // a monoid carrier
  std::vector<std::string> dims;  // sizes, outermost first
};

// `name[vars] = value`. Reductions stay inside expressions; lowering decides where they run.
struct Stmt {
  std::string name;
  std::vector<Axis> vars;
  Expr value;
};

struct Program {
  std::string op;
  std::vector<std::string> sizes;  // every size symbol the op's parameters use
  std::vector<Tensor> tensors;     // inputs, outputs, intermediates
  std::vector<Stmt> stmts;         // in order
  // Each call to_tensor inlined, in order: the callee and the prefix of its statements' names.
  std::vector<std::pair<std::string, std::string>> inlined;
  const Tensor* find(const std::string& name) const;
  const Stmt* def(const std::string& name) const;
};

std::string print_expr(const Expr& e);
std::string print_program(const Program& program);  // `emmyc compile --ir tensor`

// Walkers: visit calls f on e and every node below it (arguments and predicates), parents
// first; any_node says whether `match` holds for one of them.
void visit(const Expr& e, const std::function<void(const Expr&)>& f);
bool any_node(const Expr& e, const std::function<bool(const Expr&)>& match);

bool has_reduce(const Expr& e);
// e without the dtype casts around it (f16(f32(x[i])) -> x[i]).
const Expr& strip_casts(const Expr& e);
// The nodes of e (arguments and predicates), counted up to `cap`: min(count, cap).
size_t node_count(const Expr& e, size_t cap);
// The most nodes an expression may have and still be copied into its uses (a let into each
// reference, an elementwise intermediate into each read); a larger one is a tensor of its own,
// computed once, so that nested definitions cost their size, not the size of their expansion.
constexpr size_t kMaxCopiedNodes = 256;
bool reads(const Expr& e, const std::string& tensor);
// Every tensor e reads, added to `out` (one walk for what `reads` asks name by name).
void add_reads(const Expr& e, std::set<std::string>& out);
bool uses_index(const Expr& e, const std::string& index);  // the index variable appears in e
// Replaces index variables by expressions (for inlining a definition at a use).
Expr substitute(const Expr& e, const std::vector<std::pair<std::string, Expr>>& by);

// Rewrites build the result node by node: `Expr out = e;` then rewriting out.args copies every
// subtree once per level above it (quadratic in depth: a 4,000-term chain took 2 GB).
// node_of(e) is e without its operands (args, where); map_children applies f to each operand
// (args, then where), map_args to the args only (where copied as it is).
Expr node_of(const Expr& e);
Expr map_children(const Expr& e, const std::function<Expr(const Expr&)>& f);
Expr map_args(const Expr& e, const std::function<Expr(const Expr&)>& f);

}  // namespace emmy::tir
