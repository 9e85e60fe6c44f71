// Every op of the standard library and the examples, under every scalar-tier schedule
// (PLACE fuse/cut per seam and per chain, register tiles), interpreted at several small
// and ragged shapes and compared element by element with the float64 reference; and
// every generated kernel compiled by NVRTC for sm_80, sm_90 and sm_120 without spills.
#include <doctest/doctest.h>

#include <cstdlib>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "runtime/nvrtc.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

std::unique_ptr<test::Run> load(const std::string& path) { return test::check_file(path); }

std::vector<std::string> program_files() { return test::program_files(EMMY_SOURCE_DIR); }

using test::main_ops;
using test::schedules;
using test::shape_text;

// Three shapes: every size 3; distinct sizes that no tile divides; sizes of 1 and 2.
std::vector<SizeBindings> shapes(const CheckedOp& op) {
  std::vector<SizeBindings> out;
  for (const std::vector<int64_t>& cycle : test::matrix_size_cycles()) out.push_back(test::matrix_sizes(op, cycle));
  return out;
}

}  // namespace

TEST_CASE("schedules: every stdlib op and example, every scalar-tier schedule, interpreted against the reference") {
  const TargetInfo& target = *find_target("sm_90");
  int runs = 0, ops = 0, degenerate = 0;
  for (const std::string& file : program_files()) {
    auto l = load(file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), file);
    for (const CheckedOp* op : main_ops(*l->program)) {
      ++ops;
      int passed_shapes = 0;
      for (const std::string& knobs : schedules(*l->program, *op)) {
        CAPTURE(file);
        CAPTURE(op->decl->name.name);
        CAPTURE(knobs);
        lower::Lowered low;
        try {
          low = lower::lower_op(*l->program, *op, {nullptr, "", knobs}, target);
        } catch (const lower::LowerError& e) {
          FAIL_CHECK("lowering failed: " << e.what());
          continue;
        }
        std::vector<std::string> problems = verify_program(low.kernels);
        CHECK_MESSAGE(problems.empty(), fmt::format("{}", fmt::join(problems, "\n")));
        for (const SizeBindings& sizes : shapes(*op)) {
          CAPTURE(shape_text(sizes));
          TensorMap inputs = random_inputs(*op, sizes, 7);
          TensorMap ref;
          try {
            ref = evaluate_reference(*l->program, *op, sizes, inputs);
          } catch (const std::exception&) {
            continue;  // the op does not accept these sizes (e.g. H not a multiple of KH)
          }
          if (!test::reference_finite(ref)) {  // e.g. an unbiased variance over one row: 0 / 0
            ++degenerate;
            continue;
          }
          TensorMap buffers = inputs;
          try {
            SimtOptions so;
            so.shuffle_blocks = true;
            so.seed = 3;
            run_simt(low.kernels, sizes, buffers, so);
          } catch (const std::exception& e) {
            FAIL_CHECK("interpreter: " << e.what());
            continue;
          }
          for (const auto& [name, want] : ref) {
            CAPTURE(name);
            REQUIRE(buffers.count(name));
            const Tolerance tol = tolerance_for(*op, want.dtype);
            Comparison c = compare(buffers.at(name), want, tol);
            CHECK_MESSAGE(c.ok, failure_reason(name, c, tol, want.shape));
          }
          ++runs;
          ++passed_shapes;
        }
      }
      CHECK_MESSAGE(passed_shapes > 0, op->decl->name.name << ": no shape was accepted by the reference");
    }
  }
  MESSAGE(
      fmt::format("{} ops, {} (schedule, shape) runs compared with the reference; {} left out (the reference "
                  "is not finite there)",
                  ops, runs, degenerate));
  CHECK(degenerate < runs / 50);
  CHECK(ops >= 40);
}

TEST_CASE("schedules: every stdlib op and example, every scalar-tier schedule, on hostile inputs") {
  // Large magnitudes and subnormals at the ragged shape (distinct sizes no tile divides) under
  // every schedule; NaN and the -inf rows, one kind a schedule in turn (test::rotated_hostile_kinds),
  // so that every op meets each of them; test_checks.cpp runs NaN and -inf rows over every op, and
  // test_split_reduce.cpp every kind under every split schedule.
  const TargetInfo& target = *find_target("sm_90");
  int runs = 0, not_meaningful = 0;
  for (const std::string& file : program_files()) {
    auto l = load(file);
    REQUIRE_MESSAGE(!l->diags->has_errors(), file);
    for (const CheckedOp* op : main_ops(*l->program)) {
      const SizeBindings sizes = test::matrix_sizes(*op, test::matrix_size_cycles()[1]);
      size_t schedule_index = 0;
      for (const std::string& knobs : schedules(*l->program, *op)) {
        const std::vector<HostileKind> kinds = test::rotated_hostile_kinds(schedule_index++);
        CAPTURE(file);
        CAPTURE(op->decl->name.name);
        CAPTURE(knobs);
        CAPTURE(shape_text(sizes));
        lower::Lowered low;
        try {
          low = lower::lower_op(*l->program, *op, {nullptr, "", knobs}, target);
        } catch (const lower::LowerError&) {
          continue;  // the ordinary matrix above reports it
        }
        for (HostileKind kind : kinds) {
          CAPTURE(hostile_kind_name(kind));
          TensorMap inputs = hostile_inputs(*op, sizes, 7, kind);
          TensorMap ref;
          try {
            ref = evaluate_reference(*l->program, *op, sizes, inputs);
          } catch (const std::exception&) {
            continue;  // the op does not accept these sizes
          }
          if (!test::reference_meaningful(ref, kind)) {
            ++not_meaningful;
            continue;
          }
          TensorMap buffers = inputs;
          try {
            run_simt(low.kernels, sizes, buffers, {});
          } catch (const std::exception& e) {
            FAIL_CHECK("interpreter: " << e.what());
            continue;
          }
          const std::string failures = test::output_failures(*op, buffers, ref, kind);
          CHECK_MESSAGE(failures.empty(), failures);
          ++runs;
        }
      }
    }
  }
  MESSAGE(
      fmt::format("{} (schedule, hostile kind) runs compared with the reference; {} left out (reference not finite)",
                  runs, not_meaningful));
  CHECK(runs > 400);
}

}  // namespace emmy

namespace emmy {

TEST_CASE("schedules: every generated kernel compiles with NVRTC for sm_80, sm_90 and sm_120 without spills") {
  if (!test::nvrtc_or_skip()) return;
  int kernels = 0, max_regs = 0;
  std::string report;
  for (const std::string& file : program_files()) {
    auto l = load(file);
    REQUIRE(!l->diags->has_errors());
    // Four schedules per op (fused, cut, a register tile, cooperative rows), each file's ops in
    // one translation unit per schedule and target (COOP's, which define intrinsic helpers, one
    // per op), lowered for that target (its defaults, e.g. the carrier tile, differ).
    for (int variant = 0; variant < 4; ++variant) {
      for (const char* target : {"sm_80", "sm_90", "sm_120"}) {
        std::vector<std::string> sources(1);
        for (const CheckedOp* op : main_ops(*l->program)) {
          std::vector<std::string> all = schedules(*l->program, *op);
          auto coop = std::find_if(all.begin(), all.end(),
                                   [](const std::string& k) { return k.find("COOP=") != std::string::npos; });
          std::string knobs = variant == 0 ? all[0] : variant == 1 ? all[1] : variant == 2 ? all.back() : *coop;
          std::string cuda =
              print_cuda(lower::lower_op(*l->program, *op, {nullptr, "", knobs}, *find_target(target)).kernels);
          if (variant == 3)
            sources.push_back(std::move(cuda));
          else
            sources[0] += cuda;
        }
        for (const std::string& source : sources) {
          if (source.empty()) continue;
          CAPTURE(file);
          CAPTURE(variant);
          std::string target_name = target;
          CAPTURE(target_name);
          runtime::CompileOptions co;
          co.target = find_target(target);
          runtime::CompileResult r = runtime::compile_cuda(source, "schedules.cu", co);
          REQUIRE_MESSAGE(r.ok, r.log);
          CHECK(!r.resources.empty());
          for (const runtime::KernelResources& k : r.resources) {
            CAPTURE(k.kernel);
            CHECK(k.spill_stores == 0);
            CHECK(k.spill_loads == 0);
            CHECK(k.registers > 0);
            CHECK(k.registers <= 255);
            max_regs = std::max(max_regs, k.registers);
            ++kernels;
            if (std::string(target) == "sm_90" && variant == 0) report += runtime::format_resources(k) + "\n";
          }
        }
      }
    }
  }
  MESSAGE(fmt::format("{} kernel compilations, at most {} registers; sm_90, fused schedules:\n{}", kernels, max_regs,
                      report));
  CHECK(kernels > 100);
}

}  // namespace emmy
