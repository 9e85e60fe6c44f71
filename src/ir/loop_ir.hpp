// The loop IR: per kernel, the index space its threads own and the ordered loop nest
// each thread runs — registers, folds (reductions carried together), stores.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "algebra/laws.hpp"
#include "ir/tensor_ir.hpp"
#include "support/warning.hpp"

namespace emmy::lir {

// A carrier field of a fold: its register and how an element is lifted into it.
struct CarrierField {
  std::string name;  // field of the monoid ("m", "l", "o")
  DType dtype = DType::F32;
  tir::Expr lift;         // the element's value of this field at the fold's axis index
  bool per_tile = false;  // one register per element of the enclosing register tile
};

struct Stmt {
  enum class Kind {
    Loop,     // axis; tile > 1: a register tile of `tile` elements, unrolled and guarded
    Compute,  // reg = value: a statement computed once per thread (reductions inside it
              // become serial loops with their monoid's carrier)
    Store,    // tensor[vars] = value (an output, or an intermediate a cut materializes);
              // with `atomic` set, value is combined into the element by that atomic instead
    Fold,     // one loop over `axis` [where] carrying `fields` through `monoid`'s combine;
              // then each entry of `results` (reg = value) reads the carrier (Reg nodes).
              // With `range` = {lo, hi}: only axis indices in [lo, hi) (a split's group)
  };
  Kind kind = Kind::Compute;
  tir::Axis axis;
  int tile = 1;
  std::string reg;              // Compute: the register (named after the tensor)
  std::string tensor;           // Store
  std::vector<tir::Axis> vars;  // Store: the tensor's index variables
  tir::Expr value;
  std::string monoid;            // Fold: the proved monoid's name, for printing
  std::vector<tir::Expr> where;  // Fold
  std::vector<tir::Expr> range;  // Fold: empty (the whole axis) or {lo, hi}, I64 over the thread's indices
  std::string atomic;            // Store: "" (overwrite) or the monoid whose atomic combines ("sum", "max", "min")
  std::vector<CarrierField> fields;
  algebra::MonoidTerms terms;  // Fold: identity and combine (a = carrier, b = lifted element)
  std::vector<Stmt> results;   // Fold: Compute statements reading the carrier
  std::vector<Stmt> body;      // Loop
};

struct Kernel {
  std::string name;  // the statement it is named after
  std::vector<std::string> doc;
  std::vector<tir::Axis> threads;  // one thread per point of this space, outermost first
  std::vector<Stmt> body;
  bool scalar_tier = false;  // a split's combine kernel: N partials an element, no work for tensor cores
};

struct Program {
  tir::Program tensors;                   // after inlining elementwise intermediates
  std::vector<std::string> materialized;  // intermediates a cut writes to global memory
  std::vector<Kernel> kernels;            // launch order
  std::vector<std::string> decisions;     // one line per PLACE/TILE decision, for --ir loop
  std::vector<Warning> warnings;          // knobs with nothing to decide (W050), assumed laws (W053)
};

std::string print_program(const Program& program);  // `emmyc compile --ir loop`

// Walkers: every statement of `body` and those nested in it (a loop's body, a fold's results),
// parents first; and the expressions one statement holds itself (value, where, range, the
// fields' lifts), not those of the statements nested in it.
void visit(const std::vector<Stmt>& body, const std::function<void(const Stmt&)>& f);
void visit(std::vector<Stmt>& body, const std::function<void(Stmt&)>& f);
void visit_exprs(const Stmt& s, const std::function<void(const tir::Expr&)>& f);

}  // namespace emmy::lir
