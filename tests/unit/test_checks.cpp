// The checks fail when they should: an output element no kernel writes, a reference that is
// NaN everywhere, and a deliberately broken online-softmax fold (kernel IR mutated after
// lowering) on hostile and on ordinary inputs.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "lower/passes.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"
#include "tune/output_check.hpp"

namespace emmy {
namespace {

using ExprEdit = std::function<void(kir::Expr&)>;

// Applies `edit` to every expression of `stmts`, operands before the expression itself.
void edit_expr(kir::Expr& e, const ExprEdit& edit) {
  for (kir::Expr& a : e.args.mut()) edit_expr(a, edit);
  edit(e);
}

void edit_stmts(std::vector<kir::Stmt>& stmts, const ExprEdit& edit) {
  for (kir::Stmt& s : stmts) {
    for (kir::Expr& a : s.args) edit_expr(a, edit);
    edit_stmts(s.body, edit);
    edit_stmts(s.orelse, edit);
  }
}

// Counts the expressions of `program` that `edit` changed (it returns whether it did).
int edit_program(kir::Program& program, const std::function<bool(kir::Expr&)>& edit) {
  int edits = 0;
  for (kir::Kernel& k : program.kernels) edit_stmts(k.body, [&](kir::Expr& e) { edits += edit(e); });
  return edits;
}

// The running max forgotten: every float max is 0, so the fold computes exp(s) where it
// computed exp(s - max), and rescales by exp(0) = 1. Exact math is unchanged (the naive
// softmax); exp of a large score overflows.
bool drop_max(kir::Expr& e) {
  if (e.kind != kir::Expr::Kind::Binary || e.bin != kir::BinOp::Max || !kir::is_float(e.type)) return false;
  e = kir::cf(0, e.type);
  return true;
}

// The rescale of the running sum dropped: run_x * exp(run_m - m') (the carrier's fields are
// the registers run_*) becomes run_x.
bool drop_rescale(kir::Expr& e) {
  if (e.kind != kir::Expr::Kind::Binary || e.bin != kir::BinOp::Mul) return false;
  const kir::Expr& carried = e.args[0];
  if (carried.kind != kir::Expr::Kind::Var || carried.reg.name.rfind("run_", 0) != 0) return false;
  e = kir::Expr(carried);
  return true;
}

struct Case {
  std::unique_ptr<test::Run> run;
  const CheckedOp* op = nullptr;
  lower::Lowered low;
};

Case lowered(const std::string& file, const std::string& op, const std::string& knobs) {
  Case c{test::check_file(std::string(EMMY_SOURCE_DIR) + file), nullptr, {}};
  REQUIRE(!c.run->diags->has_errors());
  c.op = &c.run->program->ops.at(op);
  c.low = lower::lower_op(*c.run->program, *c.op, {nullptr, "", knobs}, *find_target("sm_90"));
  return c;
}

// The interpreter's outputs for `inputs` and the tuner's verdict on them ("" when right).
std::string interpreted_verdict(const Case& c, const kir::Program& program, const SizeBindings& sizes,
                                const TensorMap& inputs, TensorMap* outputs = nullptr) {
  TensorMap buffers = inputs;
  run_simt(program, sizes, buffers, {});
  const TensorMap ref = evaluate_reference(*c.run->program, *c.op, sizes, inputs);
  if (outputs) *outputs = buffers;
  return tune::first_wrong_output(*c.op, buffers, ref);
}

}  // namespace

TEST_CASE("checks: an output element that no kernel writes fails, though the L2 figure of the rest is fine") {
  Case c = lowered("/stdlib/nn.emmy", "gelu", "TILE=a:scalar");
  const SizeBindings sizes{{"N", 64}, {"C", 64}};
  const TensorMap inputs = random_inputs(*c.op, sizes, 3);
  CHECK(interpreted_verdict(c, c.low.kernels, sizes, inputs).empty());  // the kernels as lowered pass
  // One block fewer: the last block's elements keep the NaN the interpreter fills outputs with.
  kir::Program short_grid = c.low.kernels;
  REQUIRE(short_grid.kernels.size() == 1);
  kir::Kernel& k = short_grid.kernels[0];
  k.grid_x = kir::binary(kir::BinOp::Sub, k.grid_x, kir::ci(1, k.grid_x.type));
  TensorMap got;
  const std::string why = interpreted_verdict(c, short_grid, sizes, inputs, &got);
  const TensorMap ref = evaluate_reference(*c.run->program, *c.op, sizes, inputs);
  const Comparison cmp = compare(got.at("y"), ref.at("y"), tolerance_for(*c.op, DType::F16));
  CHECK_FALSE(cmp.ok);
  CHECK(cmp.off > 0);
  CHECK(cmp.off < 64 * 64 / 2);
  CHECK(cmp.non_finite == cmp.off);
  CHECK(std::isnan(cmp.worst_got));
  CHECK(cmp.rel_l2 < tolerance_for(DType::F16).rel_l2);  // the written elements are right
  CHECK(why == fmt::format("y: {} of 4096 elements off ({} non-finite), worst y{}: got nan, want {:.6g} (bound "
                           "5.0e-03 + 1.0e-02*|want| + 5.0e-03*rms, rms {:.3g})",
                           cmp.off, cmp.off, index_text(cmp.worst, {64, 64}), cmp.worst_want, cmp.reference_rms));
}

TEST_CASE("checks: a reference NaN in every element fails the tuner's check, kernels agreeing or not") {
  Case c = lowered("/stdlib/nn.emmy", "softmax", "TILE=a:scalar");
  const SizeBindings sizes{{"N", 4}, {"C", 16}};
  TensorMap inputs = random_inputs(*c.op, sizes, 3);
  for (double& v : inputs.at("x").data) v = -std::numeric_limits<double>::infinity();  // every row empty
  TensorMap got;
  const std::string why = interpreted_verdict(c, c.low.kernels, sizes, inputs, &got);
  CHECK(why ==
        "y: the reference is NaN in 100% of the elements (64 of 64; at most 1% allowed): these inputs check nothing");
}

TEST_CASE("checks: a fold without the max subtraction passes ordinary inputs and fails large ones") {
  // sdpa fused (one query row a thread, (m, l, o) carried over the keys) and cut (m, then p,
  // l and o through memory): with every max gone the kernels compute the naive softmax, right
  // in exact arithmetic, so the ordinary inputs (|x| <= 1) pass; the large ones (scores up to
  // ~200) overflow exp in f32, and the output is NaN.
  struct Broken {
    const char* knobs;
    SizeBindings sizes;
  };
  for (const Broken& b :
       {Broken{"PLACE=fuse,TILE=a:scalar,TILE@e=f8", {{"B", 1}, {"H", 2}, {"S", 9}, {"T", 40}, {"D", 16}, {"E", 8}}},
        Broken{"PLACE=cut,TILE=a:scalar", {{"B", 1}, {"H", 1}, {"S", 5}, {"T", 33}, {"D", 16}, {"E", 4}}}}) {
    CAPTURE(b.knobs);
    Case c = lowered("/stdlib/nn.emmy", "sdpa", b.knobs);
    const TensorMap ordinary = random_inputs(*c.op, b.sizes, 5);
    const TensorMap large = hostile_inputs(*c.op, b.sizes, 5, HostileKind::Large);
    CHECK(interpreted_verdict(c, c.low.kernels, b.sizes, ordinary).empty());
    CHECK(interpreted_verdict(c, c.low.kernels, b.sizes, large).empty());
    kir::Program broken = c.low.kernels;
    CHECK(edit_program(broken, drop_max) > 0);
    CHECK(interpreted_verdict(c, broken, b.sizes, ordinary).empty());  // the blind spot of ordinary inputs
    const std::string why = interpreted_verdict(c, broken, b.sizes, large);
    CHECK_MESSAGE(why.find("elements off") != std::string::npos, why);
  }
}

TEST_CASE("checks: a fold that does not rescale its running sum fails on ordinary and on large inputs") {
  // run_l * exp(run_m - m') + ... becomes run_l + ...: wrong whenever a row's max grows after
  // its first element, that is on nearly every row.
  struct Broken {
    const char* op;
    const char* knobs;
    SizeBindings sizes;
  };
  for (const Broken& b : {Broken{"sdpa",
                                 "PLACE=fuse,TILE=a:scalar,TILE@e=f8",
                                 {{"B", 1}, {"H", 2}, {"S", 9}, {"T", 40}, {"D", 16}, {"E", 8}}},
                          Broken{"logsumexp_online", "TILE=a:scalar", {{"N", 7}, {"C", 50}}}}) {
    CAPTURE(b.op);
    Case c = lowered("/stdlib/nn.emmy", b.op, b.knobs);
    kir::Program broken = c.low.kernels;
    CHECK(edit_program(broken, drop_rescale) > 0);
    for (const TensorMap& inputs :
         {random_inputs(*c.op, b.sizes, 5), hostile_inputs(*c.op, b.sizes, 5, HostileKind::Large)}) {
      CHECK(interpreted_verdict(c, c.low.kernels, b.sizes, inputs).empty());
      const std::string why = interpreted_verdict(c, broken, b.sizes, inputs);
      CHECK_MESSAGE(why.find("elements off") != std::string::npos, why);
    }
  }
}

TEST_CASE("checks: NaN and -inf rows propagate to the same places on every op") {
  int runs = 0;
  for (const std::string& file : test::program_files(EMMY_SOURCE_DIR)) {
    auto l = test::check_file(file);
    REQUIRE(!l->diags->has_errors());
    for (const CheckedOp* op : test::main_ops(*l->program)) {
      const std::string name = op->decl->name.name;
      const lower::Lowered low =
          lower::lower_op(*l->program, *op, {nullptr, "", "TILE=a:scalar"}, *find_target("sm_90"));
      const SizeBindings sizes = test::matrix_sizes(*op, test::matrix_size_cycles()[1]);
      for (HostileKind kind : {HostileKind::NaN, HostileKind::NegInfRows}) {
        CAPTURE(name);
        CAPTURE(hostile_kind_name(kind));
        const TensorMap inputs = hostile_inputs(*op, sizes, 7, kind);
        TensorMap ref;
        try {
          ref = evaluate_reference(*l->program, *op, sizes, inputs);
        } catch (const std::exception&) {
          continue;  // sizes the op rejects
        }
        TensorMap got = inputs;
        run_simt(low.kernels, sizes, got, {});
        const std::string why = test::output_failures(*op, got, ref, kind);
        CHECK_MESSAGE(why.empty(), why);  // relu's max(x, 0) included: NaN propagates (issue 23)
        ++runs;
      }
    }
  }
  CHECK(runs > 80);
}

}  // namespace emmy
