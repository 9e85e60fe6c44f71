// Issue 23: rows with -inf (a padding mask, a forbidden class) and NaN, against values written
// down here the way PyTorch computes them, not against Emmy's reference: logsumexp (two-pass and
// one-pass), softmax and cross_entropy under every scalar-tier and split schedule, on the
// interpreter, and softmax and logsumexp written in one statement (issue 24: hoisted). -inf
// before, after and among finite values weighs 0; an all -inf row's logsumexp is -inf and its
// softmax NaN; NaN anywhere in a row makes the row NaN (max propagates it); argmax picks the
// first NaN.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "lower/passes.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Row r of C values: r = 0 one leading -inf; 1 a run of -inf over the first two thirds; 2 one
// trailing -inf; 3 -inf at every third place; 4 all -inf; 5 a NaN in the middle; 6 none.
std::vector<double> rows(int64_t n, int64_t c) {
  std::vector<double> x(static_cast<size_t>(n * c));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < c; ++j) {
      double v = static_cast<double>((j * 7 + r) % 9) * 0.5 - 2.0;  // exact in f16
      switch (r % 7) {
        case 0: v = j == 0 ? kNegInf : v; break;
        case 1: v = j < 2 * c / 3 ? kNegInf : v; break;
        case 2: v = j == c - 1 ? kNegInf : v; break;
        case 3: v = j % 3 == 0 ? kNegInf : v; break;
        case 4: v = kNegInf; break;
        case 5: v = j == c / 2 ? kNaN : v; break;
        default: break;
      }
      x[static_cast<size_t>(r * c + j)] = v;
    }
  return x;
}

// PyTorch's logsumexp of one row: -inf for an all -inf row, NaN with a NaN.
double logsumexp(const double* x, int64_t c) {
  double m = kNegInf;
  for (int64_t j = 0; j < c; ++j) m = std::isnan(x[j]) || std::isnan(m) ? kNaN : std::max(m, x[j]);
  if (std::isnan(m) || m == kNegInf) return m;
  double s = 0;
  for (int64_t j = 0; j < c; ++j) s += std::exp(x[j] - m);
  return m + std::log(s);
}

bool same(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

// Every schedule of `op` of `r` on the interpreter; `expect(x, row, got)` checks the outputs of
// one row.
template <class Expect>
void each_schedule(const test::Run& r, const char* op_name, const SizeBindings& sizes, const Expect& expect,
                   int& runs) {
  REQUIRE(!r.diags->has_errors());
  const CheckedOp& op = r.program->ops.at(op_name);
  const TargetInfo& target = *find_target("sm_90");
  std::vector<std::string> all = test::schedules(*r.program, op);
  for (const std::string& k : test::split_schedules(*r.program, op, target)) all.push_back(k);
  TensorMap inputs = random_inputs(op, sizes, 3);
  const int64_t n = sizes.at("N"), c = sizes.at("C");
  HostTensor& x = inputs.begin()->second;  // the rows: x or logits (the first input by name)
  x.data = rows(n, c);
  for (const std::string& knobs : all) {
    CAPTURE(op_name);
    CAPTURE(knobs);
    lower::Lowered low = lower::lower_op(*r.program, op, {nullptr, "", knobs}, target);
    TensorMap got = inputs;
    run_simt(low.kernels, sizes, got, {});
    for (int64_t row = 0; row < n; ++row) {
      CAPTURE(row);
      expect(x.data.data() + row * c, row, got);
    }
    ++runs;
  }
}

template <class Expect>
void each_schedule(const char* op_name, const SizeBindings& sizes, const Expect& expect, int& runs) {
  each_schedule(*test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy"), op_name, sizes, expect, runs);
}

// Issue 24: softmax and logsumexp in one statement each; hoist-invariant moves their row
// statistics into statements of their own (y_max, y_sum), which must not change a value.
constexpr const char* kOneStatement = R"(
op softmax1(x: f32[N, C]) -> (y: f32[N, C]) {
  y[n, c] = exp(x[n, c] - max(k: x[n, k])) / sum(k: exp(x[n, k] - max(l: x[n, l])));
}
op logsumexp1(x: f32[N, C]) -> (y: f32[N]) {
  y[n] = max(k: x[n, k]) + log(sum(k: exp(x[n, k] - max(l: x[n, l]))));
}
)";

}  // namespace

TEST_CASE("masked rows: logsumexp, two-pass and one-pass, is PyTorch's on -inf and NaN rows under every schedule") {
  const SizeBindings sizes{{"N", 14}, {"C", 37}};
  int runs = 0;
  for (const char* op : {"logsumexp", "logsumexp_online"})
    each_schedule(
        op, sizes,
        [&](const double* x, int64_t row, const TensorMap& got) {
          const double want = logsumexp(x, 37), y = got.at("y").data[static_cast<size_t>(row)];
          CHECK_MESSAGE(same(y, want, 1e-5), fmt::format("y = {}, want {}", y, want));
        },
        runs);
  CHECK(runs > 20);
}

TEST_CASE("masked rows: softmax is 0 at -inf, NaN on all -inf and NaN rows, under every schedule") {
  const SizeBindings sizes{{"N", 14}, {"C", 37}};
  int runs = 0;
  each_schedule(
      "softmax", sizes,
      [&](const double* x, int64_t row, const TensorMap& got) {
        const double lse = logsumexp(x, 37);
        for (int64_t j = 0; j < 37; ++j) {
          const double want = std::isinf(lse) ? kNaN : std::exp(x[j] - lse);  // -inf - -inf: NaN, as PyTorch
          const double y = got.at("y").data[static_cast<size_t>(row * 37 + j)];
          CHECK_MESSAGE(same(y, want, 2e-3), fmt::format("y[{}] = {}, want {}", j, y, want));
        }
      },
      runs);
  CHECK(runs > 8);
}

TEST_CASE("masked rows: cross_entropy is finite wherever the target's logit is finite") {
  const SizeBindings sizes{{"N", 14}, {"C", 37}};
  int runs = 0;
  each_schedule(
      "cross_entropy", sizes,
      [&](const double* x, int64_t row, const TensorMap& got) {
        const auto t = static_cast<int64_t>(got.at("target").data[static_cast<size_t>(row)]);
        const double want = logsumexp(x, 37) - x[t];
        const double loss = got.at("loss").data[static_cast<size_t>(row)];
        CHECK_MESSAGE(same(loss, want, 1e-5), fmt::format("loss = {}, want {} (target {})", loss, want, t));
      },
      runs);
  CHECK(runs > 8);
}

TEST_CASE("masked rows: softmax and logsumexp in one statement, their row statistics hoisted, are PyTorch's") {
  auto r = test::check_source(kOneStatement);
  REQUIRE(!r->diags->has_errors());
  const std::string hoisted =
      tir::print_program(lower::hoist_invariant(lower::to_tensor(*r->program, r->program->ops.at("softmax1")), {}));
  CHECK(hoisted.find("y_sum[n<N] = sum(k<C: exp((x[n, k] - y_max[n])))") != std::string::npos);
  int runs = 0;
  for (const SizeBindings& sizes : {SizeBindings{{"N", 14}, {"C", 37}}, SizeBindings{{"N", 7}, {"C", 1}}}) {
    const int64_t c = sizes.at("C");
    each_schedule(
        *r, "softmax1", sizes,
        [&](const double* x, int64_t row, const TensorMap& got) {
          const double lse = logsumexp(x, c);
          for (int64_t j = 0; j < c; ++j) {
            const double want = std::isinf(lse) ? kNaN : std::exp(x[j] - lse);
            const double y = got.at("y").data[static_cast<size_t>(row * c + j)];
            CHECK_MESSAGE(same(y, want, 1e-5), fmt::format("y[{}] = {}, want {}", j, y, want));
          }
        },
        runs);
    each_schedule(
        *r, "logsumexp1", sizes,
        [&](const double* x, int64_t row, const TensorMap& got) {
          const double want = logsumexp(x, c), y = got.at("y").data[static_cast<size_t>(row)];
          CHECK_MESSAGE(same(y, want, 1e-5), fmt::format("y = {}, want {}", y, want));
        },
        runs);
  }
  CHECK(runs > 20);
}

}  // namespace emmy
