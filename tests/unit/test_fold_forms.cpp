// The tensor-core fold generated from the monoid's normal form: reductions of q . k^T (max,
// argmax, a user monoid, logsumexp), attention that also returns its row log-sum-exp or its row
// max and sum (the statistics its backward takes), sigmoid
// attention, a sink logit, and
// softmax attention with its score changed (soft cap,
// ALiBi, an additive bias, a two-sided window) take the tier under mma.sync and wgmma (in step
// and overlapped), f16 and bf16, and every output element matches the float64 reference on the interpreter: random
// inputs at ragged and unit shapes, and each hostile kind.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

const std::string kFile = std::string(EMMY_SOURCE_DIR) + "/tests/unit/programs/fold_variants.emmy";

// The file checked with its f16 tensors read as `dtype` (f16 or bf16), as `emmyc run --dtype` does.
struct Checked {
  SourceManager sources;
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<CheckedProgram> program;
};
std::unique_ptr<Checked> check_as(DType dtype) {
  auto c = std::make_unique<Checked>();
  c->diags = std::make_unique<Diagnostics>(c->sources);
  std::ifstream in(kFile);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint32_t id = c->sources.add(kFile, text);
  c->program =
      check_program(c->sources, id, SemaOptions{{std::string(EMMY_SOURCE_DIR) + "/stdlib"}, dtype, {}}, *c->diags);
  return c;
}

struct Schedule {
  const char* knobs;  // with <T> for the operand type, f16 or bf16
  const char* target;
};
const Schedule kSchedules[] = {
    {"TILE=a:mma_m16n8k16_<T>/w2x1/f1x4/k4,TILE@e=f64,STAGE=d2/cp/ring", "sm_90"},
    {"TILE=a:mma_m16n8k16_<T>/w2x1/f2x8/k4,TILE@e=f64,STAGE=d3/cp/ring,FAST_EXP=1", "sm_90"},
    {"TILE=a:wgmma_m64n64k16_<T>/w4x1/k4,TILE@e=f64,STAGE=d2/cp/ring", "sm_90a"},
    {"TILE=a:wgmma_m64n128k16_<T>/w4x1/k4,TILE@e=f64,STAGE=d2/tma/ring,FAST_EXP=1", "sm_90a"},
    // OVERLAP: P @ V one block behind the scores (folds without a vector field stay in step)
    {"TILE=a:wgmma_m64n128k16_<T>/w4x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1", "sm_90a"},
    // WSPEC and PINGPONG: a producer warpgroup, two consumer warpgroups taking turns (folds
    // without a vector field stay in step: no turns)
    {"TILE=a:wgmma_m64n128k16_<T>/w8x1/k4,TILE@e=f64,STAGE=d3/tma/ring,FAST_EXP=1,OVERLAP=1,WSPEC=p1,PINGPONG=1",
     "sm_90a"},
};

}  // namespace

TEST_CASE("tensor cores: folds of other monoids over q . k^T and changed scores, against the reference") {
  const std::vector<std::string> ops{"top",           "nearest",          "top_count",     "lse",        "attend_lse",
                                     "attend_stats",  "sigmoid_attend",   "sink_attend",   "capped",     "alibi",
                                     "biased",        "window",           "masked_select", "scaled_exp", "exp2_attend",
                                     "normalized_pv", "normalized_strict"};
  int runs = 0;
  for (DType dtype : {DType::F16, DType::BF16}) {
    auto c = check_as(dtype);
    REQUIRE(!c->diags->has_errors());
    const std::string type = dtype == DType::F16 ? "f16" : "bf16";
    for (const std::string& name : ops)
      for (const Schedule& s : kSchedules) {
        std::string knobs = s.knobs;
        knobs.replace(knobs.find("<T>"), 3, type);
        CAPTURE(name);
        CAPTURE(knobs);
        const CheckedOp& op = c->program->ops.at(name);
        lower::Lowered low = lower::lower_op(*c->program, op, {nullptr, "", knobs}, *find_target(s.target));
        REQUIRE(low.plans.size() == 1);
        CHECK_MESSAGE(low.plans[0].tier == lower::KernelPlan::Tier::MmaFold, low.plans[0].refused);
        std::vector<std::string> problems = verify_program(low.kernels);
        CHECK_MESSAGE(problems.empty(), fmt::format("{}", fmt::join(problems, "\n")));
        // Ragged (no tile divides them) and unit sizes, keys past two blocks of 128 (the interior
        // blocks' unmasked math, lane floats included), then every hostile kind at the ragged ones.
        const SizeBindings ragged{{"B", 2}, {"S", 37}, {"T", 45}, {"D", 24}, {"E", 19}};
        const SizeBindings unit{{"B", 1}, {"S", 1}, {"T", 1}, {"D", 1}, {"E", 1}};
        const SizeBindings interior{{"B", 1}, {"S", 150}, {"T", 300}, {"D", 24}, {"E", 19}};
        std::vector<std::pair<SizeBindings, std::optional<HostileKind>>> cases{
            {ragged, std::nullopt}, {unit, std::nullopt}, {interior, std::nullopt}};
        for (HostileKind kind : test::kMatrixHostileKinds) cases.emplace_back(ragged, kind);
        for (const auto& [sizes, kind] : cases) {
          CAPTURE(test::shape_text(sizes));
          CAPTURE((kind ? hostile_kind_name(*kind) : "ordinary"));
          TensorMap inputs = kind ? hostile_inputs(op, sizes, 7, *kind) : random_inputs(op, sizes, 7);
          TensorMap ref = evaluate_reference(*c->program, op, sizes, inputs);
          if (kind && !test::reference_meaningful(ref, *kind)) continue;  // overflowed in exact arithmetic
          TensorMap buffers = inputs;
          SimtOptions so;
          so.shuffle_blocks = true;
          so.seed = 3;
          run_simt(low.kernels, sizes, buffers, so);
          const std::string failures = test::output_failures(op, buffers, ref, kind);
          if (kind && test::known_divergence(name, knobs, *kind))  // the list stays exact
            CHECK_MESSAGE(!failures.empty(), "fixed: " << name);
          else
            CHECK_MESSAGE(failures.empty(), failures);
          ++runs;
        }
      }
  }
  MESSAGE(runs << " runs");
  CHECK(runs >= 500);
}

namespace {

// The kernel without its wgmma.wait_group statements.
void drop_wgmma_waits(std::vector<kir::Stmt>& body) {
  std::erase_if(body, [](const kir::Stmt& st) {
    return st.kind == kir::Stmt::Kind::Intrinsic && st.intrinsic == static_cast<int>(kir::IntrinsicId::WgmmaWait);
  });
  for (kir::Stmt& st : body) {
    drop_wgmma_waits(st.body);
    drop_wgmma_waits(st.orelse);
  }
}

// After the first wgmma.commit_group, a write of the accumulator its wgmma writes.
bool write_after_commit(std::vector<kir::Stmt>& body, std::optional<kir::Reg>& acc) {
  for (size_t i = 0; i < body.size(); ++i) {
    kir::Stmt& st = body[i];
    if (st.kind == kir::Stmt::Kind::Intrinsic && kir::wgmma_n(static_cast<kir::IntrinsicId>(st.intrinsic)) > 0)
      acc = st.outs[0];
    if (st.kind == kir::Stmt::Kind::Intrinsic && st.intrinsic == static_cast<int>(kir::IntrinsicId::WgmmaCommit) &&
        acc) {
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  kir::assign(*acc, kir::cf(0, kir::ScalarType::F32)));
      return true;
    }
    if (write_after_commit(st.body, acc) || write_after_commit(st.orelse, acc)) return true;
  }
  return false;
}

// After every wgmma that reads A from registers, at its group's commit, a write of that A register
// (in every loop: some run no trip at a given shape). The number of writes inserted.
int write_a_after_commit(std::vector<kir::Stmt>& body, std::optional<kir::Reg>& a) {
  int inserted = 0;
  std::optional<kir::Reg> pending;
  for (size_t i = 0; i < body.size(); ++i) {
    kir::Stmt& st = body[i];
    if (st.kind == kir::Stmt::Kind::Intrinsic && kir::wgmma_a_in_registers(static_cast<kir::IntrinsicId>(st.intrinsic)))
      pending = st.args[0].reg;
    if (st.kind == kir::Stmt::Kind::Intrinsic && st.intrinsic == static_cast<int>(kir::IntrinsicId::WgmmaCommit) &&
        pending) {
      body.insert(body.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  kir::assign(*pending, kir::ci(0, kir::ScalarType::U32)));
      a = pending;
      pending.reset();
      ++inserted;
      continue;
    }
    inserted += write_a_after_commit(st.body, a) + write_a_after_commit(st.orelse, a);
  }
  return inserted;
}

std::string simt_message(const kir::Program& p, const SizeBindings& sizes, TensorMap buffers) {
  try {
    run_simt(p, sizes, buffers, {});
  } catch (const SimtError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE(
    "tensor cores: the interpreter reports a wgmma accumulator read or written, or its A registers written, before its "
    "wait_group") {
  auto c = check_as(DType::F16);
  REQUIRE(!c->diags->has_errors());
  const CheckedOp& op = c->program->ops.at("alibi");
  lower::Lowered low = lower::lower_op(
      *c->program, op, {nullptr, "", "TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d2/tma/ring"},
      *find_target("sm_90a"));
  const SizeBindings sizes{{"B", 1}, {"S", 70}, {"T", 150}, {"D", 24}, {"E", 19}};
  TensorMap inputs = random_inputs(op, sizes, 5);
  TensorMap ok = inputs;
  CHECK_NOTHROW(run_simt(low.kernels, sizes, ok, {}));  // as emitted: every read after its wait
  kir::Program early = low.kernels;
  for (kir::Kernel& k : early.kernels) drop_wgmma_waits(k.body);
  std::string err = simt_message(early, sizes, inputs);
  CHECK_MESSAGE(err.find("read of score") != std::string::npos, err);
  CHECK_MESSAGE(err.find("before wgmma.wait_group") != std::string::npos, err);
  // A write of the accumulator between the commit and the wait races with the wgmma.
  kir::Program racing = low.kernels;
  std::optional<kir::Reg> acc;
  REQUIRE(write_after_commit(racing.kernels.front().body, acc));
  err = simt_message(racing, sizes, inputs);
  CHECK_MESSAGE(err.find("write of " + acc->name) != std::string::npos, err);
  // P @ V reads P from registers: overwriting P before the group's wait races with it too (what
  // OVERLAP's repack, which waits for the previous block's P @ V first, must not do).
  lower::Lowered ov = lower::lower_op(
      *c->program, op, {nullptr, "", "TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d3/tma/ring,OVERLAP=1"},
      *find_target("sm_90a"));
  REQUIRE(ov.plans[0].overlap);
  TensorMap fine = inputs;
  CHECK_NOTHROW(run_simt(ov.kernels, sizes, fine, {}));
  kir::Program clobbered = ov.kernels;
  std::optional<kir::Reg> a;
  REQUIRE(write_a_after_commit(clobbered.kernels.front().body, a) > 0);
  err = simt_message(clobbered, sizes, inputs);
  CHECK_MESSAGE(err.find("write of " + a->name) != std::string::npos, err);
  CHECK_MESSAGE(err.find("A operand (registers)") != std::string::npos, err);
  CHECK_MESSAGE(err.find("before wgmma.wait_group") != std::string::npos, err);
}

}  // namespace emmy
