// COOP=t<N>[/v<V>][/r<R> or /c<R>] on the row ops: interpreted against the float64 reference at ragged
// shapes (C not a multiple of V, C < N, rows not a multiple of the rows per block, C = 1; the row
// cache in registers or in shared memory where the row fits it, streamed where it does not), the vector
// path and the split visible in the kernel IR, a non-commutative monoid split in order, the
// lowering's errors, and NVRTC compilation for sm_80, sm_90 and sm_120 without spills.
#include <doctest/doctest.h>

#include <optional>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/print_kernel.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "runtime/nvrtc.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

struct RowOp {
  const char* file;
  const char* op;
  const char* vec;  // v8: 16 bytes of f16, two 16-byte accesses of f32
};

constexpr RowOp kRowOps[] = {
    {"/stdlib/nn.emmy", "softmax", "v8"},          {"/stdlib/nn.emmy", "layernorm", "v8"},
    {"/stdlib/nn.emmy", "rmsnorm", "v8"},          {"/stdlib/nn.emmy", "logsumexp", "v8"},
    {"/stdlib/nn.emmy", "logsumexp_online", "v8"}, {"/stdlib/nn.emmy", "cross_entropy", "v4"},
    {"/stdlib/nn.emmy", "cross_entropy", "v8"},    {"/examples/first_max.emmy", "first_max", "v8"},
};

// (N, C): C a multiple of 8 (vector path) with N not a multiple of the rows per block; C
// ragged; C smaller than the row's threads; C = 1; one row.
constexpr std::pair<int64_t, int64_t> kShapes[] = {{37, 1000}, {5, 77}, {9, 24}, {3, 1}, {1, 4096}};

// "" when the op under `knobs` matches the reference at (n, c) on ordinary inputs, or on
// hostile inputs of `kind` (skipped, with *skipped set, where their reference overflows).
std::string run_one(const test::Run& l, const CheckedOp& op, const std::string& knobs, int64_t n, int64_t c,
                    std::optional<HostileKind> kind = std::nullopt, bool* skipped = nullptr) {
  std::optional<std::string> failure =
      test::interpreted_against_reference(*l.program, op, knobs, {{"N", n}, {"C", c}}, *find_target("sm_90"), 11, kind);
  if (!failure && skipped) *skipped = true;
  return failure.value_or("");
}

}  // namespace

TEST_CASE("coop: row ops at ragged shapes, every thread count and vector width, against the reference") {
  int runs = 0;
  for (const RowOp& r : kRowOps) {
    auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + r.file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), r.file);
    const CheckedOp& op = l->program->ops.at(r.op);
    for (std::string coop : {fmt::format("COOP=t32/{}", r.vec), fmt::format("COOP=t256/{}", r.vec),
                             fmt::format("COOP=t64/{}", r.vec), std::string("COOP=t2/v2"), std::string("COOP=t1024/v2"),
                             std::string("COOP=t8"), fmt::format("COOP=t128/{},PLACE=cut", r.vec),
                             fmt::format("COOP=t32/{}/r2", r.vec), fmt::format("COOP=t128/{}/r1,PLACE=cut", r.vec),
                             // the row cache in shared memory: rows copied whole (their edges read
                             // from there), four rows a block of 128, and one
                             fmt::format("COOP=t32/{}/c2", r.vec), fmt::format("COOP=t128/{}/c2,PLACE=cut", r.vec)}) {
      for (auto [n, c] : kShapes) {
        CAPTURE(r.op);
        CAPTURE(coop);
        CAPTURE(n);
        CAPTURE(c);
        std::string failure;
        try {
          failure = run_one(*l, op, coop, n, c);
        } catch (const std::exception& e) {
          failure = e.what();
        }
        CHECK_MESSAGE(failure.empty(), failure);
        ++runs;
      }
    }
  }
  MESSAGE(fmt::format("{} (op, COOP, shape) runs compared with the reference", runs));
}

TEST_CASE("coop: row ops on hostile inputs (large, subnormal), every thread count") {
  int runs = 0, skipped = 0;
  for (const RowOp& r : kRowOps) {
    auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + r.file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), r.file);
    const CheckedOp& op = l->program->ops.at(r.op);
    for (std::string coop : {fmt::format("COOP=t32/{}", r.vec), fmt::format("COOP=t64/{}", r.vec),
                             std::string("COOP=t2/v2"), fmt::format("COOP=t128/{},PLACE=cut", r.vec),
                             fmt::format("COOP=t32/{}/r4", r.vec), fmt::format("COOP=t32/{}/c2", r.vec)})
      for (auto [n, c] : {std::pair<int64_t, int64_t>{5, 77}, {9, 24}})
        for (HostileKind kind : test::kMatrixHostileKinds) {
          CAPTURE(r.op);
          CAPTURE(coop);
          CAPTURE(n);
          CAPTURE(c);
          CAPTURE(hostile_kind_name(kind));
          std::string failure;
          bool skip = false;
          try {
            failure = run_one(*l, op, coop, n, c, kind, &skip);
          } catch (const std::exception& e) {
            failure = e.what();
          }
          CHECK_MESSAGE(failure.empty(), failure);
          skipped += skip;
          runs += !skip;
        }
  }
  MESSAGE(fmt::format("{} (op, COOP, shape, kind) runs compared with the reference, {} left out", runs, skipped));
  CHECK(runs > 100);
}

TEST_CASE("coop: the kernel IR splits the row, combines in lane order and moves 16 bytes at a time") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const CheckedOp& op = l->program->ops.at("softmax");
  lower::Lowered low = lower::lower_op(*l->program, op, {nullptr, "", "COOP=t256/v8"}, *find_target("sm_90"));
  REQUIRE(low.kernels.kernels.size() == 1);
  const kir::Kernel& k = low.kernels.kernels[0];
  CHECK(k.block_threads == 256);
  std::string ir = print_program(low.kernels);
  CHECK(ir.find("strided, coalesced (the combine is proved commutative)") != std::string::npos);
  CHECK(ir.find("= vload<8> x[") != std::string::npos);
  CHECK(ir.find("vstore<8> y[") != std::string::npos);
  CHECK(ir.find("shfl_bfly<16>") != std::string::npos);
  CHECK(ir.find("barrier") != std::string::npos);
  CHECK(k.shared.size() == 3);  // the (m, l) of each of the block's 8 warps, and whether it saw an element
  // A warp a row: shuffles only, 4 rows a block of 128.
  lower::Lowered warp = lower::lower_op(*l->program, op, {nullptr, "", "COOP=t32/v8"}, *find_target("sm_90"));
  CHECK(warp.kernels.kernels[0].block_threads == 128);
  CHECK(warp.kernels.kernels[0].shared.empty());
  CHECK(print_program(warp.kernels).find("barrier") == std::string::npos);
  // The non-commutative monoid: contiguous ranges.
  auto fm = test::check_file(std::string(EMMY_SOURCE_DIR) + "/examples/first_max.emmy");
  lower::Lowered ordered = lower::lower_op(*fm->program, fm->program->ops.at("first_max"), {nullptr, "", "COOP=t64/v8"},
                                           *find_target("sm_90"));
  CHECK(print_program(ordered.kernels).find("a contiguous range each (the combine is not proved commutative)") !=
        std::string::npos);
}

TEST_CASE("coop: V elements wider than 16 bytes move as several 16-byte accesses") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const CheckedOp& op = l->program->ops.at("cross_entropy");  // f32 logits: v8 is 32 bytes
  lower::Lowered low = lower::lower_op(*l->program, op, {nullptr, "", "COOP=t32/v8"}, *find_target("sm_90"));
  std::string ir = print_program(low.kernels);
  CHECK(ir.find("= vload<4> logits[n * C + c0_2]") != std::string::npos);
  CHECK(ir.find("= vload<4> logits[n * C + c0_2 + 4i64]") != std::string::npos);
  CHECK(ir.find("vload<8>") == std::string::npos);
  CHECK(run_one(*l, op, "COOP=t32/v8", 9, 64).empty());
  CHECK(run_one(*l, op, "COOP=t32/v8", 9, 61).empty());
}

TEST_CASE("coop: the schedule blocks of the row ops lower, and COOP@site is a warning") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  int blocks = 0;
  for (const CheckedSchedule& s : l->program->schedules) {
    if (s.knobs.empty() || s.knobs[0].knob != Knob::Coop) continue;
    CAPTURE(s.decl->op.name);
    lower::Lowered low = lower::lower_op(*l->program, l->program->ops.at(s.decl->op.name), {&s, "", ""}, *s.target);
    CHECK(verify_program(low.kernels).empty());
    CHECK(low.knobs.warnings.empty());
    ++blocks;
  }
  CHECK(blocks >= 20);
  lower::Lowered low =
      lower::lower_op(*l->program, l->program->ops.at("softmax"), {nullptr, "", "COOP@c=t32"}, *find_target("sm_90"));
  REQUIRE(low.knobs.warnings.size() == 1);
  CHECK(low.knobs.warnings[0].code == "W050");
  CHECK(low.knobs.warnings[0].text.find("COOP@c=t32 has no effect") != std::string::npos);
}

TEST_CASE("coop: the row ops' kernels compile with NVRTC for sm_80, sm_90 and sm_120 without spills") {
  if (!test::nvrtc_or_skip()) return;
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  for (const char* target : {"sm_80", "sm_90", "sm_120"}) {
    for (const char* coop : {"COOP=t256/v8", "COOP=t32/v8", "COOP=t1024/v8", "COOP=t32/v8/r4", "COOP=t256/v8/r4"}) {
      for (const char* name : {"softmax", "layernorm", "rmsnorm", "logsumexp", "cross_entropy"}) {
        std::string knobs = std::string(name) == "cross_entropy" ? "COOP=t64/v4" : coop;
        const std::string at = fmt::format("{} {}", target, name);
        CAPTURE(at);
        CAPTURE(knobs);
        std::string source = print_cuda(
            lower::lower_op(*l->program, l->program->ops.at(name), {nullptr, "", knobs}, *find_target(target)).kernels);
        runtime::CompileOptions co;
        co.target = find_target(target);
        runtime::CompileResult r = runtime::compile_cuda(source, "coop.cu", co);
        REQUIRE_MESSAGE(r.ok, r.log);
        REQUIRE(r.resources.size() == 1);
        const runtime::KernelResources& k = r.resources[0];
        CHECK(k.spill_stores == 0);
        CHECK(k.spill_loads == 0);
        CHECK(k.stack_bytes == 0);  // the vector register arrays (and a row cache's, r<R>) stay in registers
        CHECK(r.ptx.find("ld.global.nc.v4.") != std::string::npos);  // 16-byte loads
      }
    }
  }
}

}  // namespace emmy
