// COOP=.../k<K> (a row split between the CTAs of a thread-block cluster, the carriers combined
// through distributed shared memory) and PERSIST=1 on cooperative rows: the row ops interpreted
// against the float64 reference at ragged shapes (slices that end mid-chunk, empty slices of a
// short row, rows that start at every offset mod 8, more rows than the interpreter's CTAs) and on
// hostile inputs; the kernel IR's cluster, combine and walk; a combine without its cluster
// barrier reported as a race; the knob's errors; NVRTC for sm_90a and sm_120 without spills.
#include <doctest/doctest.h>

#include <optional>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/print_kernel.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/kernel/plan.hpp"
#include "lower/passes.hpp"
#include "runtime/nvrtc.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

struct RowOp {
  const char* file;
  const char* op;
};

constexpr RowOp kRowOps[] = {
    {"/stdlib/nn.emmy", "softmax"},       {"/stdlib/nn.emmy", "layernorm"},
    {"/stdlib/nn.emmy", "rmsnorm"},       {"/stdlib/nn.emmy", "logsumexp_online"},
    {"/stdlib/nn.emmy", "cross_entropy"}, {"/examples/first_max.emmy", "first_max"},
};

// (N, C): a long ragged row (slices of 1,256 columns at k4, 2,504 at k2), a row of a few chunks,
// a row shorter than one slice (later CTAs' slices empty), C = 1, more rows than the
// interpreter's three CTAs walk (PERSIST), the vector path (C a multiple of 8).
constexpr std::pair<int64_t, int64_t> kShapes[] = {{3, 5001}, {5, 77}, {9, 24}, {3, 1}, {11, 200}, {2, 4096}};

// "" when the op under `knobs` matches the reference at (n, c) on sm_90a (skipped, with *skipped
// set, where hostile inputs leave the reference nothing to check).
std::string run_one(const test::Run& l, const CheckedOp& op, const std::string& knobs, int64_t n, int64_t c,
                    std::optional<HostileKind> kind = std::nullopt, bool* skipped = nullptr) {
  std::optional<std::string> failure = test::interpreted_against_reference(*l.program, op, knobs, {{"N", n}, {"C", c}},
                                                                           *find_target("sm_90a"), 13, kind);
  if (!failure && skipped) *skipped = true;
  return failure.value_or("");
}

const std::vector<std::string> kKnobs = {
    "COOP=t128/v8/k2",           "COOP=t128/v8/k4",       "COOP=t256/v4/c2/k2",
    "COOP=t128/v8/r2/k2",        "COOP=t128/v8/k8",       "COOP=t128/v2/k2,PLACE=cut",
    "COOP=t128/v8/k2,PERSIST=1", "COOP=t32/v8,PERSIST=1", "COOP=t128/v8/c2/k4,PERSIST=1",
    "COOP=t32/v8/r4,PERSIST=1",  "COOP=t128,PERSIST=1",   "COOP=t128/v8/c8,PERSIST=1"};

}  // namespace

TEST_CASE("coop cluster: row ops split between a cluster's CTAs, and persistent rows, against the reference") {
  int runs = 0;
  for (const RowOp& r : kRowOps) {
    auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + r.file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), r.file);
    const CheckedOp& op = l->program->ops.at(r.op);
    for (const std::string& knobs : kKnobs)
      for (auto [n, c] : kShapes) {
        CAPTURE(r.op);
        CAPTURE(knobs);
        CAPTURE(n);
        CAPTURE(c);
        std::string failure;
        try {
          failure = run_one(*l, op, knobs, n, c);
        } catch (const std::exception& e) {
          failure = e.what();
        }
        CHECK_MESSAGE(failure.empty(), failure);
        ++runs;
      }
  }
  MESSAGE(fmt::format("{} (op, knobs, shape) runs compared with the reference", runs));
}

TEST_CASE("coop cluster: hostile inputs (large, subnormal, NaN, -inf rows) through the cluster's combine") {
  int runs = 0, skipped = 0;
  for (const RowOp& r : kRowOps) {
    auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + r.file);
    const CheckedOp& op = l->program->ops.at(r.op);
    for (const char* knobs : {"COOP=t128/v8/k4", "COOP=t128/v8/c2/k2,PERSIST=1"})
      for (HostileKind kind : test::kMatrixHostileKinds) {
        CAPTURE(r.op);
        CAPTURE(knobs);
        CAPTURE(hostile_kind_name(kind));
        std::string failure;
        bool skip = false;
        try {
          failure = run_one(*l, op, knobs, 5, 1001, kind, &skip);
        } catch (const std::exception& e) {
          failure = e.what();
        }
        CHECK_MESSAGE(failure.empty(), failure);
        skipped += skip;
        runs += !skip;
      }
  }
  MESSAGE(fmt::format("{} runs compared with the reference, {} left out", runs, skipped));
  CHECK(runs > 50);
}

TEST_CASE("coop cluster: the kernel IR: a cluster, slices, a combine through distributed shared memory, a walk") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const CheckedOp& op = l->program->ops.at("layernorm");
  lower::Lowered low = lower::lower_op(*l->program, op, {nullptr, "", "COOP=t256/v8/k4"}, *find_target("sm_90a"));
  REQUIRE(low.kernels.kernels.size() == 1);
  const kir::Kernel& k = low.kernels.kernels[0];
  CHECK(k.cluster == 4);
  CHECK(!k.persistent);
  const std::string ir = print_program(low.kernels);
  CHECK(ir.find("slice_lo") != std::string::npos);
  CHECK(ir.find("dsmem_ld_f32(") != std::string::npos);
  CHECK(ir.find("cluster_sync()") != std::string::npos);
  CHECK(ir.find("cluster=4") != std::string::npos);
  // A cluster barrier a combine (each reading the 4 CTAs' carriers), and the kernel's last.
  int syncs = 0, reads = 0;
  kir::visit(k.body, [&](const kir::Stmt& s) {
    syncs += s.kind == kir::Stmt::Kind::Intrinsic && s.intrinsic == static_cast<int>(kir::IntrinsicId::ClusterSync);
    reads += s.kind == kir::Stmt::Kind::Intrinsic && s.intrinsic == static_cast<int>(kir::IntrinsicId::DsmemLdF32);
  });
  CHECK(syncs >= 2);
  CHECK(reads % 4 == 0);
  CHECK(reads >= 4 * (syncs - 1));
  CHECK(lower::print_plans(low.plans).find("each row split between 4 CTAs") != std::string::npos);
  lower::Lowered walk =
      lower::lower_op(*l->program, op, {nullptr, "", "COOP=t256/v8/k2,PERSIST=1"}, *find_target("sm_90a"));
  CHECK(walk.kernels.kernels[0].persistent);
  CHECK(print_program(walk.kernels).find("PERSIST: the CTAs walk the rows") != std::string::npos);
  CHECK(lower::print_plans(walk.plans).find("persistent: the CTAs the device holds") != std::string::npos);
}

TEST_CASE("coop cluster: a walk keeps the weights' slices in shared memory, copied once before it") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const CheckedOp& op = l->program->ops.at("layernorm");
  lower::Lowered low =
      lower::lower_op(*l->program, op, {nullptr, "", "COOP=t128/v8/c2/k2,PERSIST=1"}, *find_target("sm_90a"));
  const std::string ir = print_program(low.kernels);
  CHECK(ir.find("the weights (beta, gamma) kept in shared memory for the whole walk") != std::string::npos);
  CHECK(ir.find("= vload<8> wc_gamma") != std::string::npos);
  CHECK(ir.find("= vload<8> wc_beta") != std::string::npos);
  // Without PERSIST (a CTA a row) or without c<R> nothing is kept.
  for (const char* knobs : {"COOP=t128/v8/c2/k2", "COOP=t128/v8/k2,PERSIST=1"}) {
    CAPTURE(knobs);
    CHECK(print_program(lower::lower_op(*l->program, op, {nullptr, "", knobs}, *find_target("sm_90a")).kernels)
              .find("wc_gamma") == std::string::npos);
  }
  // A whole row's weights and cache past the target's shared memory: the schedule's error.
  try {
    lower::lower_op(*l->program, op, {nullptr, "", "COOP=t1024/v8/c13,PERSIST=1"}, *find_target("sm_90a"));
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("more than the target's") != std::string::npos);
  }
  // A row cache that fits alone but not beside the kept weights says so, and how to mend it.
  try {
    lower::lower_op(*l->program, op, {nullptr, "", "COOP=t512/v8/c13,PERSIST=1"}, *find_target("sm_90a"));
    FAIL("no error");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK(what.find("(213024 of them the weights PERSIST keeps)") != std::string::npos);
    CHECK(what.find("drop PERSIST, or split the rows between more CTAs (k<K>)") != std::string::npos);
  }
}

TEST_CASE("coop cluster: a combine that reads a peer's carrier before the cluster barrier is a reported race") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const CheckedOp& op = l->program->ops.at("rmsnorm");
  lower::Lowered low = lower::lower_op(*l->program, op, {nullptr, "", "COOP=t128/v8/k2"}, *find_target("sm_90a"));
  kir::Kernel& k = low.kernels.kernels[0];
  // Drop the combine's cluster barrier (the first), keep the kernel's last.
  bool dropped = false;
  k.body = kir::map_stmts(std::move(k.body), [&](kir::Stmt s) -> std::vector<kir::Stmt> {
    if (!dropped && s.kind == kir::Stmt::Kind::Intrinsic &&
        s.intrinsic == static_cast<int>(kir::IntrinsicId::ClusterSync)) {
      dropped = true;
      return {};
    }
    return {std::move(s)};
  });
  REQUIRE(dropped);
  SizeBindings sizes{{"N", 3}, {"C", 1000}};
  TensorMap inputs = random_inputs(op, sizes, 3);
  try {
    run_simt(low.kernels, sizes, inputs, SimtOptions{});
    FAIL("no race reported");
  } catch (const SimtError& e) {
    CHECK(std::string(e.what()).find("race") != std::string::npos);
  }
}

TEST_CASE("coop cluster: k<K> errors") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const CheckedOp& op = l->program->ops.at("softmax");
  auto error_of = [&](const char* knobs, const char* target) {
    try {
      lower::lower_op(*l->program, op, {nullptr, "", knobs}, *find_target(target));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string shared = error_of("COOP=t64/v8/k2", "sm_90a");
  CHECK(shared.find("a split row needs a CTA of its own") != std::string::npos);
  CHECK(shared.find("use t128 or more") != std::string::npos);
  const std::string sm80 = error_of("COOP=t128/v8/k2", "sm_80");
  CHECK(!sm80.empty());
  CHECK(error_of("COOP=t128/v8/k3", "sm_90a").find("power of two") != std::string::npos);
  CHECK(error_of("COOP=t128/v8/k16", "sm_90a") != "");
  CHECK(error_of("COOP=t128/v8/k2", "sm_90a").empty());
}

TEST_CASE("coop cluster: the kernels compile with NVRTC for sm_90a and sm_120 without spills") {
  if (!test::nvrtc_or_skip()) return;
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  for (const char* target : {"sm_90a", "sm_120"})
    for (const char* knobs : {"COOP=t256/v8/k2", "COOP=t512/v8/c4/k4,PERSIST=1", "COOP=t128/v8/r4/k2,PERSIST=1"})
      for (const char* name : {"softmax", "layernorm", "rmsnorm"}) {
        const std::string at = fmt::format("{} {} {}", target, name, knobs);
        CAPTURE(at);
        std::string source = print_cuda(
            lower::lower_op(*l->program, l->program->ops.at(name), {nullptr, "", knobs}, *find_target(target)).kernels);
        CHECK(source.find("__cluster_dims__") != std::string::npos);
        CHECK(source.find("ld.shared::cluster") != std::string::npos);
        runtime::CompileOptions co;
        co.target = find_target(target);
        runtime::CompileResult r = runtime::compile_cuda(source, "cluster_rows.cu", co);
        REQUIRE_MESSAGE(r.ok, r.log);
        REQUIRE(r.resources.size() == 1);
        CHECK(r.resources[0].spill_stores == 0);
        CHECK(r.resources[0].spill_loads == 0);
        CHECK(r.ptx.find("mapa.shared::cluster") != std::string::npos);
      }
}

}  // namespace emmy
