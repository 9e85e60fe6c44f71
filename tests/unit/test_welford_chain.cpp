// The discovered Welford chain (a mean, then the sum of squared deviations from it, written as
// two sums) lowered as one fold with carrier (n, mean, M2): which spellings fold and which keep
// two passes, and every output of the folded ops against the float64 two-pass reference on the
// interpreter, under scalar, register-tiled, COOP and split schedules, at ragged shapes and on
// every hostile kind (large, subnormal, NaN, -inf rows).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

const std::string kFile = std::string(EMMY_SOURCE_DIR) + "/tests/unit/programs/welford_chains.emmy";

struct ChainOp {
  std::string file, op;
};
// The folded ops: those of welford_chains.emmy, and the library's and examples' layer norms.
const std::vector<ChainOp>& folded_ops() {
  static const std::vector<ChainOp> ops{{kFile, "variance"},
                                        {kFile, "unbiased"},
                                        {kFile, "layernorm_naive"},
                                        {kFile, "spread"},
                                        {std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy", "layernorm"},
                                        {std::string(EMMY_SOURCE_DIR) + "/examples/layernorm.emmy", "layernorm_bf16"}};
  return ops;
}

const std::vector<std::string> kSchedules{
    "TILE=a:scalar", "TILE=a:scalar,TILE@c=f4",  "COOP=t32/v8", "COOP=t64/v2",          "COOP=t2/v2",
    "COOP=t8",       "TILE=a:scalar,REDUCE=g3k", "PLACE=cut",   "COOP=t32/v2,PLACE=cut"};

// The folds of the op's loop IR, in all its kernels.
int folds(const lir::Program& p) {
  int n = 0;
  for (const lir::Kernel& k : p.kernels)
    lir::visit(k.body, [&](const lir::Stmt& s) { n += s.kind == lir::Stmt::Kind::Fold; });
  return n;
}

// "" when the op under `knobs` matches the reference at (n, c), on ordinary inputs or on `kind`;
// nullopt when the reference checks nothing there (0 / 0 of an unbiased variance of one column,
// large inputs whose exact result overflows).
std::optional<std::string> run_one(const test::Run& l, const CheckedOp& op, const std::string& knobs, int64_t n,
                                   int64_t c, std::optional<HostileKind> kind = std::nullopt) {
  return test::interpreted_against_reference(*l.program, op, knobs, {{"N", n}, {"C", c}}, *find_target("sm_90"), 13,
                                             kind);
}

}  // namespace

TEST_CASE("welford chain: a mean and its squared deviations fold into one pass; other spellings keep two") {
  auto l = test::check_file(kFile);
  REQUIRE(!l->diags->has_errors());
  for (const ChainOp& c : folded_ops()) {
    CAPTURE(c.op);
    auto f = test::check_file(c.file);
    const CheckedOp& op = f->program->ops.at(c.op);
    for (const char* knobs : {"TILE=a:scalar", "COOP=t32/v8"}) {
      CAPTURE(knobs);
      lower::Lowered low = lower::lower_op(*f->program, op, {nullptr, "", knobs}, *find_target("sm_90"));
      CHECK(low.loops.kernels.size() == 1);
      CHECK(folds(low.loops) == 1);
      std::string ir = lir::print_program(low.loops);
      CHECK(ir.find("with Welford's carrier") != std::string::npos);
      CHECK(ir.find("carry (n: f32 <- 1; ") != std::string::npos);  // the count, lifted to 1
    }
    // Cut: the mean, then the squared deviations, each its own serial loop.
    lower::Lowered cut = lower::lower_op(*f->program, op, {nullptr, "", "PLACE=cut"}, *find_target("sm_90"));
    CHECK(folds(cut.loops) == 0);
  }
  for (const char* name : {"masked", "cross"}) {
    CAPTURE(name);
    lower::Lowered low =
        lower::lower_op(*l->program, l->program->ops.at(name), {nullptr, "", "TILE=a:scalar"}, *find_target("sm_90"));
    CHECK(folds(low.loops) == 0);
  }
}

TEST_CASE("welford chain: the folded ops match the two-pass reference at ragged shapes on every schedule") {
  int runs = 0;
  for (const ChainOp& c : folded_ops()) {
    auto l = test::check_file(c.file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), c.file);
    const CheckedOp& op = l->program->ops.at(c.op);
    for (const std::string& knobs : kSchedules)
      for (auto [n, cols] : {std::pair<int64_t, int64_t>{7, 33}, {3, 1}, {5, 77}, {37, 1000}, {1, 4096}, {9, 24}}) {
        CAPTURE(c.op);
        CAPTURE(knobs);
        CAPTURE(n);
        CAPTURE(cols);
        std::optional<std::string> failure;
        try {
          failure = run_one(*l, op, knobs, n, cols);
        } catch (const std::exception& e) {
          failure = e.what();
        }
        if (!failure) continue;
        CHECK_MESSAGE(failure->empty(), *failure);
        ++runs;
      }
  }
  MESSAGE(fmt::format("{} (op, schedule, shape) runs compared with the reference", runs));
  CHECK(runs > 300);
}

TEST_CASE("welford chain: the folded ops on hostile inputs (large, subnormal, NaN, -inf rows) on every schedule") {
  int runs = 0, skipped = 0;
  for (const ChainOp& c : folded_ops()) {
    auto l = test::check_file(c.file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), c.file);
    const CheckedOp& op = l->program->ops.at(c.op);
    for (const std::string& knobs : kSchedules)
      for (auto [n, cols] : {std::pair<int64_t, int64_t>{5, 77}, {9, 24}})
        for (HostileKind kind : test::kMatrixHostileKinds) {
          CAPTURE(c.op);
          CAPTURE(knobs);
          CAPTURE(n);
          CAPTURE(cols);
          CAPTURE(hostile_kind_name(kind));
          std::optional<std::string> failure;
          try {
            failure = run_one(*l, op, knobs, n, cols, kind);
          } catch (const std::exception& e) {
            failure = e.what();
          }
          if (!failure) {
            ++skipped;
            continue;
          }
          CHECK_MESSAGE(failure->empty(), *failure);
          ++runs;
        }
  }
  MESSAGE(fmt::format("{} (op, schedule, shape, kind) runs compared with the reference, {} left out", runs, skipped));
  CHECK(runs > 500);
}

}  // namespace emmy
