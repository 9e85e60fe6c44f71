// CLUSTER on the tensor-core contractions: the plan and the kernel's cluster, the same bits as
// without it on the interpreter (clusters run together, race check on, blocks shuffled) on
// random and hostile inputs at ragged shapes, and NVRTC's cubins for every target that takes it.
#include <doctest/doctest.h>

#include "codegen/cuda/print_cuda.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/kernel/plan.hpp"
#include "lower/passes.hpp"
#include "runtime/nvrtc.hpp"
#include "same_bits.hpp"
#include "schedule/targets.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

struct Case {
  const char* target;
  std::string knobs;  // without CLUSTER
  const char* cluster;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      {"sm_90a", "TILE=a:wgmma_m64n256k16_f16/w8x1/k4,STAGE=d3/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8,PERSIST=1", "m2"},
      {"sm_90a", "TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d3/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1", "m2"},
      {"sm_90a", "TILE=a:wgmma_m64n128k16_f16/w8x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1", "m2"},
      {"sm_90a", "TILE=a:wgmma_m64n128k16_f16/w8x1/k8,STAGE=d3/tma/ring", "n2"},
      // One box of the shared tile: each CTA brings its share of the box's rows.
      {"sm_90a", "TILE=a:wgmma_m64n128k16_f16/w16x1/k4,STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,PERSIST=1", "n2"},
      {"sm_90a", "TILE=a:wgmma_m64n64k16_f16/w4x1/k4,STAGE=d3/tma/ring", "m2"},
      {"sm_90", "TILE=a:mma_m16n8k16_f16/w2x2/f4x8/k4,STAGE=d3/tma/ring", "m2"},
      {"sm_120", "TILE=a:mma_m16n8k16_f16/w2x2/f4x4/k8,STAGE=d2/tma/ring,PERSIST=1", "n2"},
  };
  return all;
}

}  // namespace

TEST_CASE("cluster: pairs of CTAs share a tile by multicast, with the same bits as without") {
  auto la = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  REQUIRE(!la->diags->has_errors());
  const CheckedOp& op = la->program->ops.at("matmul");
  for (const Case& c : cases()) {
    const std::string knobs = c.knobs + ",CLUSTER=" + c.cluster;
    CAPTURE(c.target);
    CAPTURE(knobs);
    const TargetInfo& target = *find_target(c.target);
    lower::Lowered plain = lower::lower_op(*la->program, op, {nullptr, "", c.knobs}, target);
    lower::Lowered paired = lower::lower_op(*la->program, op, {nullptr, "", knobs}, target);
    REQUIRE(paired.plans.size() == 1);
    CHECK(paired.plans[0].cluster == 2);
    CHECK(paired.plans[0].cluster_axis == c.cluster[0]);
    CHECK(paired.plans[0].no_cluster.empty());
    REQUIRE(paired.kernels.kernels.size() == 1);
    CHECK(paired.kernels.kernels[0].cluster == 2);
    CHECK(plain.kernels.kernels[0].cluster == 1);
    CHECK(verify_program(paired.kernels).empty());
    // Ragged: an odd number of row and column tiles (a pair's second tile past the matrix).
    for (const SizeBindings& sizes :
         {SizeBindings{{"M", 300}, {"N", 530}, {"K", 333}}, SizeBindings{{"M", 129}, {"N", 77}, {"K", 33}}}) {
      test::check_same_bits(plain.kernels, paired.kernels, sizes, random_inputs(op, sizes, 11), "c", true);
      test::check_same_bits(plain.kernels, paired.kernels, sizes, hostile_inputs(op, sizes, 12, HostileKind::Large),
                            "c", true);
    }
  }
}

TEST_CASE("cluster: NVRTC compiles the clustered kernels for every target that takes them, without spills") {
  if (!test::nvrtc_or_skip()) return;
  auto la = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  REQUIRE(!la->diags->has_errors());
  const CheckedOp& op = la->program->ops.at("matmul");
  for (const Case& c : cases()) {
    const std::string knobs = c.knobs + ",CLUSTER=" + c.cluster;
    CAPTURE(knobs);
    const TargetInfo& target = *find_target(c.target);
    lower::Lowered low = lower::lower_op(*la->program, op, {nullptr, "", knobs}, target);
    runtime::CompileOptions co;
    co.target = &target;
    co.cubin = true;
    runtime::CompileResult r = runtime::compile_cuda(print_cuda(low.kernels), "cluster.cu", co);
    REQUIRE_MESSAGE(r.ok, r.log);
    CHECK(r.ptx.find(".reqnctapercluster 2, 1, 1") != std::string::npos);
    CHECK(r.ptx.find(".multicast::cluster") != std::string::npos);
    CHECK_FALSE(r.cubin.empty());
    for (const runtime::KernelResources& k : r.resources) CHECK(k.spill_stores == 0);
  }
}

}  // namespace emmy
