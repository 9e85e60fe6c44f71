// REDUCE=g<N>k|g<N>a (split_reduce.cpp): every op of the standard library and the examples
// with a reduction, split with the combining kernel and (where legal) with atomics, at ragged
// shapes (axes that N does not divide, axes shorter than N so that some groups are empty),
// interpreted against the float64 reference and compiled by NVRTC; the loop IR's shape; the
// errors; the atomics' CPU semantics.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/intrinsics.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "runtime/nvrtc.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

// Sizes of 3, ragged sizes (5, 7, 6, 9...: no N of the matrix divides all), sizes of 1 and 2,
// and a longer axis of 23 for each size in turn (many keys per group).
std::vector<SizeBindings> split_shapes(const CheckedOp& op) {
  std::vector<SizeBindings> out;
  for (const std::vector<int64_t>& cycle : test::matrix_size_cycles()) out.push_back(test::matrix_sizes(op, cycle));
  for (const std::string& n : test::input_size_names(op)) {
    SizeBindings s = out[2];
    s[n] = 23;
    out.push_back(s);
  }
  return out;
}

lower::Lowered lower_text(const test::Run& r, const std::string& op, const std::string& knobs,
                          const std::string& target = "sm_90") {
  return lower::lower_op(*r.program, r.program->ops.at(op), {nullptr, "", knobs}, *find_target(target));
}

std::string lower_error(const test::Run& r, const std::string& op, const std::string& knobs) {
  try {
    lower_text(r, op, knobs);
  } catch (const lower::LowerError& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs `knobs` on the interpreter and compares every output with the reference, on random
// inputs and on each kind of -inf and NaN rows (issue 23: every split group starts from the
// identity, so a group of -inf alone meets it; the combine meets empty groups).
void check_numerics(const test::Run& r, const CheckedOp& op, const std::string& knobs, const SizeBindings& sizes,
                    int& runs) {
  CAPTURE(knobs);
  CAPTURE(test::shape_text(sizes));
  lower::Lowered low = lower::lower_op(*r.program, op, {nullptr, "", knobs}, *find_target("sm_90"));
  std::vector<std::string> problems = verify_program(low.kernels);
  REQUIRE_MESSAGE(problems.empty(), fmt::format("{}", fmt::join(problems, "\n")));
  const std::optional<HostileKind> kinds[] = {std::nullopt,
                                              HostileKind::NegInfPrefix,
                                              HostileKind::LeadingNegInf,
                                              HostileKind::TrailingNegInf,
                                              HostileKind::NegInfRows,
                                              HostileKind::NaN};
  for (const std::optional<HostileKind>& kind : kinds) {
    CAPTURE(kind ? hostile_kind_name(*kind) : "random");
    TensorMap inputs = kind ? hostile_inputs(op, sizes, 11, *kind) : random_inputs(op, sizes, 11);
    TensorMap ref;
    try {
      ref = evaluate_reference(*r.program, op, sizes, inputs);
    } catch (const std::exception&) {
      return;  // the op does not accept these sizes
    }
    if (kind ? !test::reference_meaningful(ref, *kind) : !test::reference_finite(ref))
      continue;  // 0 / 0 (a variance over one row): nothing to check
    TensorMap buffers = inputs;
    SimtOptions so;
    so.shuffle_blocks = true;
    so.seed = 5;
    run_simt(low.kernels, sizes, buffers, so);
    const std::string failures = test::output_failures(op, buffers, ref, kind);
    CHECK_MESSAGE(failures.empty(), failures);
    ++runs;
  }
}

}  // namespace

TEST_CASE("split reductions: every op with a reduction, k and a forms, interpreted against the reference") {
  const TargetInfo& target = *find_target("sm_90");
  int runs = 0, ops = 0, atomic_ops = 0;
  for (const std::string& file : test::program_files(EMMY_SOURCE_DIR)) {
    auto r = test::check_file(file);
    REQUIRE_MESSAGE(!r->diags->has_errors(), file);
    for (const CheckedOp* op : test::main_ops(*r->program)) {
      std::vector<std::string> all = test::split_schedules(*r->program, *op, target);
      if (all.empty()) continue;
      ++ops;
      atomic_ops += all.back().back() == 'a';  // the atomic schedules come last
      CAPTURE(file);
      CAPTURE(op->decl->name.name);
      for (const std::string& knobs : all)
        for (const SizeBindings& sizes : split_shapes(*op)) {
          try {
            check_numerics(*r, *op, knobs, sizes, runs);
          } catch (const std::exception& e) {
            FAIL_CHECK(knobs << ": " << e.what());
          }
        }
    }
  }
  MESSAGE(
      fmt::format("{} ops split ({} with the atomic form), {} (schedule, shape) runs compared", ops, atomic_ops, runs));
  CHECK(ops >= 30);
  CHECK(atomic_ops >= 5);
}

TEST_CASE("split reductions: the decode shape's schedule blocks and T < N, T = N, T = N + 1") {
  auto r = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  REQUIRE(!r->diags->has_errors());
  int runs = 0;
  for (const char* op : {"sdpa", "sdpa_causal", "sdpa_gqa", "sdpa_explicit"})
    for (int t : {3, 8, 9, 37}) {
      SizeBindings all{{"B", 1}, {"H", 2}, {"S", op == std::string("sdpa_causal") ? t : 2}, {"T", t}, {"D", 8},
                       {"E", 5}, {"KH", 1}};
      if (op == std::string("sdpa_gqa")) all["H"] = 4;
      SizeBindings sizes;  // the op's own sizes only
      for (const std::string& n : test::input_size_names(r->program->ops.at(op))) sizes[n] = all.at(n);
      for (const char* knobs :
           {"TILE=a:scalar,TILE@e=f4,REDUCE=g8k", "TILE=a:scalar,REDUCE@j=g2k", "TILE=a:scalar,PLACE=cut,REDUCE=g8k"})
        check_numerics(*r, r->program->ops.at(op), knobs, sizes, runs);
    }
  // The file's labelled blocks, as the GPU run measures them.
  for (const CheckedSchedule& s : r->program->schedules) {
    if (!s.decl->label || s.decl->label->name != "decode-splitkv") continue;
    lower::Lowered low = lower::lower_op(*r->program, r->program->ops.at("sdpa"), {&s, "", ""}, *find_target("sm_90"));
    CHECK(low.kernels.kernels.size() == 2);
    SizeBindings sizes{{"B", 2}, {"H", 2}, {"S", 1}, {"T", 200}, {"D", 16}, {"E", 16}};
    TensorMap inputs = random_inputs(r->program->ops.at("sdpa"), sizes, 3);
    TensorMap ref = evaluate_reference(*r->program, r->program->ops.at("sdpa"), sizes, inputs);
    TensorMap buffers = inputs;
    run_simt(low.kernels, sizes, buffers, {});
    const Tolerance tol = tolerance_for(DType::F16);
    Comparison c = compare(buffers.at("o"), ref.at("o"), tol);
    CHECK_MESSAGE(c.ok, failure_reason("o", c, tol, ref.at("o").shape));
    ++runs;
  }
  CHECK(runs > 40);
}

TEST_CASE("split reductions: the loop IR has a partial kernel over (g, threads) and a combining kernel") {
  auto r = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  lower::Lowered l = lower_text(*r, "sdpa", "TILE=a:scalar,TILE@e=f64,REDUCE=g32k");
  REQUIRE(l.loops.kernels.size() == 2);
  CHECK(l.loops.kernels[0].name == "partial");
  CHECK(l.loops.kernels[0].threads.front().name == "g");
  CHECK(l.loops.kernels[0].threads.front().size == "32");
  // The combine kernel: a thread per (b, h, i, e), the partial kernel's register tile of e undone.
  REQUIRE(l.loops.kernels[1].threads.size() == 4);
  CHECK(l.loops.kernels[1].threads.back().name == "e");
  CHECK(l.loops.kernels[1].scalar_tier);
  std::string text = lir::print_program(l.loops);
  CHECK(text.find("fold j<T in [(g * ((T + 31) / 32)), min(T, ((g + 1) * ((T + 31) / 32))))") != std::string::npos);
  CHECK(text.find("store part_o[g<32, b<B, h<H, i<S, e<E] = %run_o") != std::string::npos);
  CHECK(text.find("fold g<32 where part_m_folded[g, b, h, i]") != std::string::npos);
  CHECK(text.find("o: f32[tile] <- v[b, h, j, e]") != std::string::npos);
  CHECK(text.find("o: f32 <- part_o[g, b, h, i, e]") != std::string::npos);
  // Temps: one partial per carrier field, plus the flag.
  int temps = 0;
  for (const kir::Buffer& b : l.kernels.buffers) temps += b.role == kir::Buffer::Role::Temp;
  CHECK(temps == 4);

  auto lin = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  lower::Lowered a = lower_text(*lin, "matmul", "TILE=a:scalar,REDUCE=g4a");
  REQUIRE(a.loops.kernels.size() == 3);
  CHECK(a.loops.kernels[0].name == "init");
  std::string atext = lir::print_program(a.loops);
  CHECK(atext.find("atomic sum acc_c[m<M, n<N] <- %run_c") != std::string::npos);
  CHECK(atext.find("%c = acc_c[m, n]") != std::string::npos);
  std::string cuda = print_cuda(a.kernels);
  CHECK(cuda.find("emmy_atomic_add_f32(&acc_c[") != std::string::npos);
}

TEST_CASE("split reductions: errors name the knob, the rule and the fix") {
  auto r = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  auto lin = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  std::string none = lower_error(*r, "gelu", "REDUCE=g4k");
  CHECK(none.find("--knobs:1:1: error: REDUCE=g4k: op gelu has no reduction to split") == 0);
  CHECK(none.find("^~~~~~~~~~") != std::string::npos);
  std::string online = lower_error(*r, "sdpa", "TILE=a:scalar,REDUCE=g4a");
  CHECK(online.find("--knobs:1:15: error: REDUCE=g4a: the reduction over j carries (m, l, o) through the monoid "
                    "online(m), which has no atomic form") == 0);
  CHECK(online.find("help: use REDUCE=g4k") != std::string::npos);
  std::string user = lower_error(*r, "sdpa_explicit", "REDUCE=g2a");
  CHECK(user.find("no atomic form") != std::string::npos);
  auto any = test::check_source("op f(x: bool[N, C]) -> (y: bool[N]) { y[n] = any(c: x[n, c]); }");
  REQUIRE(!any->diags->has_errors());
  std::string noatomic = lower_error(*any, "f", "REDUCE=g2a");
  CHECK(noatomic.find("any of bool has no atomic form (atomics exist for sum of f32, f64, i32; max of f32, i32; min "
                      "of f32, i32)") != std::string::npos);
  std::string site = lower_error(*r, "softmax", "REDUCE@q=g2k");
  CHECK(site.find("REDUCE@q=g2k: q names no statement and no reduction axis of softmax (op softmax reduces in m, l "
                  "(over c))") != std::string::npos);
  CHECK(site.find("help: name a statement or an axis that a kernel reduces, e.g. REDUCE@m=g2k") != std::string::npos);
  std::string pointwise = lower_error(*r, "softmax", "REDUCE@y=g2k");
  CHECK(pointwise.find("no kernel of softmax reduces in statement y") != std::string::npos);
  std::string twice = lower_error(*lin, "matmul", "REDUCE=g2k,REDUCE@k=g4k");
  CHECK(twice.find("REDUCE@k=g4k is a second split: one reduction per op is split (REDUCE=g2k already)") !=
        std::string::npos);
  // From a schedule block: the entry's file, line and column.
  auto blk = test::check_source(
      "op f(x: f32[N]) -> (y: f32[N]) { y[n] = x[n] * 2; }\n"
      "schedule f for sm_90 as \"s\" { REDUCE = g4k; }\n");
  REQUIRE(!blk->diags->has_errors());
  std::string block_error;
  try {
    lower::lower_op(*blk->program, blk->program->ops.at("f"), {&blk->program->schedules.front(), "", ""},
                    *find_target("sm_90"));
  } catch (const lower::LowerError& e) {
    block_error = e.what();
  }
  CHECK(block_error.find("test.emmy:2:31: error: REDUCE=g4k: op f has no reduction") == 0);
  CHECK(block_error.find(" 2 | schedule f for sm_90 as \"s\" { REDUCE = g4k; }") != std::string::npos);
}

TEST_CASE("split reductions: a split kernel compiles with NVRTC for sm_80, sm_90 and sm_120 without spills") {
  if (!test::nvrtc_or_skip()) return;
  int kernels = 0;
  for (const std::string& file : test::program_files(EMMY_SOURCE_DIR)) {
    auto r = test::check_file(file);
    REQUIRE(!r->diags->has_errors());
    for (const char* target : {"sm_80", "sm_90", "sm_120"}) {
      // One translation unit per file and target: the kernels of every program in one
      // kir::Program, so that each helper (the atomics) is defined once.
      kir::Program all;
      all.op = file;
      for (const CheckedOp* op : test::main_ops(*r->program))
        for (const std::string& knobs : test::split_schedules(*r->program, *op, *find_target(target))) {
          if (knobs.find("g2k") == std::string::npos && knobs.find("g3a") == std::string::npos &&
              knobs.find("f4") == std::string::npos)
            continue;
          kir::Program one = lower::lower_op(*r->program, *op, {nullptr, "", knobs}, *find_target(target)).kernels;
          all.kernels.insert(all.kernels.end(), one.kernels.begin(), one.kernels.end());
          all.buffers.insert(all.buffers.end(), one.buffers.begin(), one.buffers.end());
        }
      if (all.kernels.empty()) continue;
      std::string source = print_cuda(all);
      CAPTURE(file);
      CAPTURE(std::string(target));
      runtime::CompileOptions co;
      co.target = find_target(target);
      runtime::CompileResult res = runtime::compile_cuda(source, "split.cu", co);
      REQUIRE_MESSAGE(res.ok, res.log);
      for (const runtime::KernelResources& k : res.resources) {
        CAPTURE(k.kernel);
        CHECK(k.spill_stores == 0);
        CHECK(k.spill_loads == 0);
        ++kernels;
      }
    }
  }
  MESSAGE(kernels << " split kernels compiled");
  CHECK(kernels > 100);
}

namespace {

// Global memory of one f32/i32 buffer for the atomics' semantics.
struct VectorPort final : kir::MemoryPort {
  std::vector<uint8_t> bytes;
  void read_shared(uint32_t, void*, uint32_t) override {}
  void write_shared(uint32_t, const void*, uint32_t) override {}
  void read_global(int, uint64_t offset, void* dst, uint32_t n) override { std::memcpy(dst, bytes.data() + offset, n); }
  void write_global(int, uint64_t offset, const void* src, uint32_t n) override {
    std::memcpy(bytes.data() + offset, src, n);
  }
};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Lanes 0..n-1 combine values[l] into element index[l] of a one-element-per-slot f32 buffer.
std::vector<float> run_atomic(kir::IntrinsicId id, std::vector<float> memory, const std::vector<int64_t>& index,
                              const std::vector<float>& values) {
  VectorPort port;
  port.bytes.resize(memory.size() * 4);
  std::memcpy(port.bytes.data(), memory.data(), port.bytes.size());
  int lanes = static_cast<int>(index.size());
  std::vector<uint32_t> in(static_cast<size_t>(3 * lanes));
  for (int l = 0; l < lanes; ++l) {
    in[static_cast<size_t>(l)] = static_cast<uint32_t>(index[static_cast<size_t>(l)]);
    in[static_cast<size_t>(lanes + l)] = 0;
    in[static_cast<size_t>(2 * lanes + l)] = bits(values[static_cast<size_t>(l)]);
  }
  kir::IntrinsicCall c;
  c.in = in;
  c.lanes = lanes;
  c.memory = &port;
  c.buffer = 0;
  c.elem_bytes = 4;
  kir::intrinsic_info(id).semantics(c);
  std::memcpy(memory.data(), port.bytes.data(), port.bytes.size());
  return memory;
}

}  // namespace

TEST_CASE("split reductions: the atomics' CPU semantics (lanes on one address apply in turn)") {
  using kir::IntrinsicId;
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(run_atomic(IntrinsicId::AtomicAddF32, {0, 10}, {0, 0, 1, 0}, {1, 2, 3, 4}) == std::vector<float>{7, 13});
  CHECK(run_atomic(IntrinsicId::AtomicMaxF32, {-inf, -inf, 5}, {0, 0, 1, 2, 2}, {-3, -7, -0.0f, 2, 9}) ==
        std::vector<float>{-3, -0.0f, 9});
  std::vector<float> mx = run_atomic(IntrinsicId::AtomicMaxF32, {-inf, 0.0f}, {0, 1}, {-0.0f, -1});
  CHECK(std::signbit(mx[0]));  // -0 replaces -inf
  CHECK(mx[1] == 0.0f);
  CHECK(run_atomic(IntrinsicId::AtomicMinF32, {inf, -2}, {0, 0, 1, 1}, {4, -6, 3, -2.5f}) ==
        std::vector<float>{-6, -2.5f});
  CHECK(kir::atomic_intrinsic("sum", kir::ScalarType::F32) == IntrinsicId::AtomicAddF32);
  CHECK(kir::atomic_intrinsic("max", kir::ScalarType::F64) == std::nullopt);
  CHECK(kir::atomic_intrinsic("prod", kir::ScalarType::F32) == std::nullopt);
  CHECK(kir::is_atomic(static_cast<int>(IntrinsicId::AtomicMinI32)));
  CHECK(!kir::is_atomic(static_cast<int>(IntrinsicId::CpAsync16)));
}

}  // namespace emmy
