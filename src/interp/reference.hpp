// The reference evaluator: computes an op's outputs straight from its definition, in
// float64, independent of every lowering decision. It is the oracle of all correctness tests.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include "interp/compare.hpp"
#include "interp/tensor_data.hpp"
#include "sema/sema.hpp"

namespace emmy {

// E069's help: the reference evaluator's, the library's and `emmyc run`'s (ir/launch_expr.hpp's
// zero_size_divisor) alike.
inline constexpr const char* kZeroDivisorHelp =
    "give sizes under which no divisor is zero (a divisor computed from sizes, such as `let G = H / KH`, is 0 "
    "when KH > H), or guard the division (select)";

// What the op does at the run's sizes that no sizes should make it do: a read outside its tensor
// (E068) or an integer division by zero (E069). The reference evaluator's message, at the
// expression's place in the source (invalid where it has none), with its code and help.
struct ReferenceRangeError : std::runtime_error {
  ReferenceRangeError(const std::string& what, SourceRange where, std::string code_ = "E068",
                      std::string hint_ =
                          "give sizes under which every read stays inside its tensor, or guard the "
                          "read (select, where)")
      : std::runtime_error("reference evaluator: " + what),
        message(what),
        range(where),
        code(std::move(code_)),
        hint(std::move(hint_)) {}
  std::string message;
  SourceRange range;
  std::string code, hint;
};

// Binds every size symbol of the op's parameters from "B=1,H=2,S=64,D=16". Sizes of the
// op that the text does not bind, unknown names, non-positive or malformed values are
// errors (a one-line message naming the size and the legal form).
// With `defaulted`, a size left out takes the value of the size at the same position of another
// input of the same rank (T of k[B, H, T, D] from S of q[B, H, S, D]); each such default is
// described in `defaulted`, e.g. "T=4096 (as S of q)".
std::variant<SizeBindings, std::string> bind_sizes(const CheckedOp& op, std::string_view text,
                                                   std::vector<std::string>* defaulted = nullptr);

// Whether a tensor of the op, or a reduction's steps, would hold more than 2^60 elements under
// the bindings (the count wraps 64-bit indices or byte sizes): the message names the shape.
std::optional<std::string> too_many_elements(const CheckedOp& op, const SizeBindings& sizes);

// The form of a size list alone, op unknown (the REPL's :shape): NAME=VALUE entries with positive
// integer values; the message of the first malformed entry.
std::optional<std::string> shape_syntax_error(std::string_view text);

// The shape of a parameter or output under the bindings.
std::vector<int64_t> tensor_shape(const TensorInfo& tensor, const SizeBindings& sizes);

// Random inputs for every parameter: seeded, never zero (|x| in [0.1, 1], random sign for
// floats, rounded to the dtype; integers in the range their use allows, e.g. class indices
// in [0, C)), deterministic for a seed.
TensorMap random_inputs(const CheckedOp& op, const SizeBindings& sizes, uint64_t seed);

// Inputs that break what ordinary ones let pass: random_inputs with the float inputs changed.
//   Large         f16/bf16 inputs scaled by kHostileScale (|x| in [1.2, 12]): a product of two
//                 (an attention score q.k/sqrt(D)) reaches 30-200, so an exp of it overflows
//                 f16 and, past 88, f32 too, unless the largest term is subtracted first.
//   NegInfRows    the first row (last axis) of every float input of rank >= 2 is -inf.
//   LeadingNegInf the first element of every row of every float input of rank >= 2 is -inf.
//   TrailingNegInf the last element of every such row is -inf.
//   NegInfPrefix  the first half (rounded up) of every such row is -inf: runs of -inf before the
//                 first finite value, and whole split groups (REDUCE=g<N>) of -inf.
//   NaN           every 7th element of every float input is NaN (the reference propagates it).
//   Denormal      every other element of every float input is subnormal in its dtype.
enum class HostileKind { Large, NegInfRows, LeadingNegInf, TrailingNegInf, NegInfPrefix, NaN, Denormal };
inline constexpr HostileKind kHostileKinds[] = {
    HostileKind::Large,        HostileKind::NegInfRows, HostileKind::LeadingNegInf, HostileKind::TrailingNegInf,
    HostileKind::NegInfPrefix, HostileKind::NaN,        HostileKind::Denormal};
inline constexpr double kHostileScale = 12;
std::string_view hostile_kind_name(HostileKind kind);
TensorMap hostile_inputs(const CheckedOp& op, const SizeBindings& sizes, uint64_t seed, HostileKind kind);

// How the reference evaluates. `cast_jitter` > 0: the argument of every narrowing cast (f16(x),
// bf16(x)) that does not already hold a value of its type is moved by up to that fraction of
// itself before it rounds, by an amount drawn from `seed`, the cast and the index values: a
// kernel computes the argument in f32, in its own order, so its rounding may land on the
// neighbouring value; the changes this makes downstream measure how much the op's own roundings
// can move each output (the check's peers, docs/running.md).
struct ReferenceOptions {
  double cast_jitter = 0;
  uint64_t seed = 0;
  // Every f32 value rounded to f32 after each elementwise operation and each constant, a sum's or
  // product's result once (its terms f32, its steps exact: the kernels' trees of short runs come
  // nearer the exact sum than one long f32 run), a monoid's combine exact: a peer of the float64
  // reference for ops whose f32 arithmetic is ill-conditioned at the inputs (1 + tanh(z) at
  // large |z|) that never widens the bounds of a long reduction.
  bool f32_arithmetic = false;
};

// Evaluates every output of `op` (op calls inlined, user monoids through their combine,
// `where` masks, lets, dims as values) in float64. An explicit cast rounds to its type
// (f16(x) is x rounded to f16, as in the kernels; nothing else rounds); casts to integer
// types truncate. The intermediates named in `also` (plain tensors of the op's own statements)
// are returned beside the outputs.
TensorMap evaluate_reference(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes,
                             const TensorMap& inputs, const std::vector<std::string>& also = {},
                             const ReferenceOptions& options = {});

// The check's peers: the reference evaluated kJitteredReferences times with its narrowing casts'
// arguments jittered by kCastJitter (seeds drawn from `seed`), as runs that round those casts to
// the neighbouring value come out, and once in f32 arithmetic (ReferenceOptions::f32_arithmetic)
// (compare.hpp's within_peers).
std::vector<TensorMap> cast_jittered_references(const CheckedProgram& program, const CheckedOp& op,
                                                const SizeBindings& sizes, const TensorMap& inputs, uint64_t seed);

}  // namespace emmy
