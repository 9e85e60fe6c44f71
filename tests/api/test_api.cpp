// Tests of the embeddable API through libemmy.so alone (include/emmy/emmy.hpp and the C ABI), on
// the CPU: errors, sizes, the interpreter path against a float64 computation. Launches are tested
// on the GPU machine (tests/python/test_emmy_gpu.py, examples/embed with EMMY_EMBED_GPU=1).
// A program of its own: it links libemmy.so and none of Emmy's static layers, as users do.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <pthread.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "emmy/emmy.h"
#include "emmy/emmy.hpp"

using namespace emmy;

namespace {

constexpr const char* kRowOps = R"(
op rmsnorm(x: f16[N, C], w: f16[C]) -> (y: f16[N, C], r: f32[N]) {
  ms[n] = sum(c: f32(x[n, c]) * x[n, c]) / C;
  r[n] = rsqrt(ms + 1e-6);
  y[n, c] = x[n, c] * r[n] * w[c];
}

op scale(x: f32[N]) -> (y: f32[N]) {
  y[n] = 2.0 * x[n];
}
)";

api::Options options() {
  api::Options o;
  o.stdlib_dirs = {std::string(EMMY_SOURCE_DIR) + "/stdlib"};
  o.use_env_knobs = false;
  return o;
}

// A random f16 bit pattern of magnitude in [1/16, 1), random sign: a normal, exact value.
uint16_t random_f16(std::mt19937& rng) {
  const uint16_t sign = (rng() & 1u) << 15, exponent = static_cast<uint16_t>(11 + rng() % 4), mantissa = rng() & 0x3ffu;
  return static_cast<uint16_t>(sign | exponent << 10 | mantissa);
}

// The value of a finite f16 bit pattern.
double f16_value(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return bits & 0x8000 ? -magnitude : magnitude;
}

template <class F>
api::Error error_of(F&& f) {
  try {
    f();
  } catch (const api::Error& e) {
    return e;
  }
  FAIL("no emmy::api::Error was thrown");
  return api::Error(api::ErrorKind::Internal, "");
}

}  // namespace

TEST_CASE("api: a source that does not check is an Error with the diagnostics and a caret") {
  api::Error e = error_of([] {
    api::Program::from_source("op f(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n] +;\n}\n", "bad.emmy", options());
  });
  CHECK(e.kind() == api::ErrorKind::Source);
  const std::string text = e.what();
  CHECK(text.find("bad.emmy:2:") != std::string::npos);
  CHECK(text.find('^') != std::string::npos);
}

TEST_CASE("api: ops, specs, unknown names and targets") {
  api::Program p = api::Program::from_source(kRowOps, "row.emmy", options());
  CHECK(p.ops() == std::vector<std::string>{"rmsnorm", "scale"});
  api::Op op = p.op("rmsnorm");
  REQUIRE(op.inputs().size() == 2);
  CHECK(op.inputs()[0].name == "x");
  CHECK(op.inputs()[0].dtype == api::DType::F16);
  CHECK(op.inputs()[0].dims == std::vector<std::string>{"N", "C"});
  REQUIRE(op.outputs().size() == 2);
  CHECK(op.outputs()[1].dtype == api::DType::F32);
  CHECK(op.cuda().find("extern \"C\" __global__") != std::string::npos);
  CHECK(!op.target().empty());

  api::Error unknown = error_of([&] { p.op("rmsnrom"); });
  CHECK(unknown.kind() == api::ErrorKind::Argument);
  CHECK(std::string(unknown.what()).find("did you mean 'rmsnorm'") != std::string::npos);

  api::Options o = options();
  o.target = "sm_99";
  api::Error target = error_of([&] { api::Program::from_source(kRowOps, "row.emmy", o).op("scale"); });
  CHECK(std::string(target.what()).find("unknown target 'sm_99'") != std::string::npos);

  o = options();
  o.schedule = "nope";
  api::Error sched = error_of([&] { api::Program::from_source(kRowOps, "row.emmy", o).op("scale"); });
  CHECK(std::string(sched.what()).find("no schedule named \"nope\"") != std::string::npos);
}

TEST_CASE("api: an imported monoid is proved when an op that reduces with it is lowered, not at load") {
  // A library whose monoid is refuted (a - b is not associative): loading a program that imports
  // it succeeds, an op without it lowers, and the op that reduces with it fails with the
  // counterexample, located in the library.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "emmy_api_lazy_proofs";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "mine.emmy") << "monoid diff(x: f32) {\n  identity = 0;\n  combine(a, b) {\n"
                                      "    yield a.x - b.x;\n  }\n}\n";
  api::Options o = options();
  o.stdlib_dirs = {dir.string()};
  api::Program p = api::Program::from_source(
      "import std.mine;\n"
      "op twice(x: f32[N]) -> (y: f32[N]) {\n  y[n] = 2.0 * x[n];\n}\n"
      "op spread(x: f32[N]) -> (y: f32[1]) {\n  y[z] = diff(n: x[n]).x;\n}\n",
      "lazy.emmy", o);
  CHECK(p.op("twice").cuda().find("__global__") != std::string::npos);
  api::Error e = error_of([&] { p.op("spread"); });
  CHECK(e.kind() == api::ErrorKind::Source);
  const std::string text = e.what();
  CHECK(text.find("monoid diff is not associative") != std::string::npos);
  CHECK(text.find("mine.emmy:1:") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("api: Options::dtype reads the signatures' 16-bit float tensors as another dtype") {
  api::Options o = options();
  o.dtype = "bf16";
  api::Op op = api::Program::from_source(kRowOps, "row.emmy", o).op("rmsnorm");
  CHECK(op.inputs()[0].dtype == api::DType::BF16);
  CHECK(op.outputs()[0].dtype == api::DType::BF16);
  CHECK(op.outputs()[1].dtype == api::DType::F32);  // declared f32: kept
  o.dtype = "f64";                                  // every float tensor, the declared f32 ones too
  api::Op wide = api::Program::from_source(kRowOps, "row.emmy", o).op("rmsnorm");
  CHECK(wide.inputs()[0].dtype == api::DType::F64);
  CHECK(wide.outputs()[1].dtype == api::DType::F64);
  o.dtype = "i32";
  api::Error e = error_of([&] { api::Program::from_source(kRowOps, "row.emmy", o); });
  CHECK(std::string(e.what()) == "dtype 'i32': use f16, bf16, f32 or f64");
}

TEST_CASE("api: knobs that have no effect are warnings of the op") {
  api::Options o = options();
  o.knobs = "STAGE=d2/tma/ring";
  api::Op op = api::Program::from_source(kRowOps, "row.emmy", o).op("scale");
  REQUIRE(op.warnings().size() == 1);
  CHECK(op.warnings()[0] == "W050: STAGE=d2/tma/ring has no effect on the scalar tier (TILE=a:scalar): ignored");
}

TEST_CASE("api: sizes bind from the tensors' shapes; mismatches name the tensor and the size") {
  api::Op op = api::Program::from_source(kRowOps, "row.emmy", options()).op("rmsnorm");
  api::Sizes s = op.bind_sizes({{nullptr, api::DType::F16, {3, 5}}, {nullptr, api::DType::F16, {5}}});
  CHECK(s == api::Sizes{{"C", 5}, {"N", 3}});
  CHECK(op.output_shape(0, s) == std::vector<int64_t>{3, 5});
  CHECK(op.output_shape(1, s) == std::vector<int64_t>{3});
  api::Error clash = error_of([&] {
    op.bind_sizes({{nullptr, api::DType::F16, {3, 5}}, {nullptr, api::DType::F16, {6}}});
  });
  CHECK(std::string(clash.what()) == "rmsnorm: input w: f16[C] given shape [6]: C is 6 here but 5 elsewhere");
  api::Error rank = error_of([&] { op.bind_sizes({{nullptr, api::DType::F16, {15}}}); });
  CHECK(std::string(rank.what()).find("has rank 2, the tensor given has shape [15]") != std::string::npos);
  api::Error dtype = error_of([&] { op.bind_sizes({{nullptr, api::DType::F32, {3, 5}}}); });
  CHECK(std::string(dtype.what()).find("is f16, the tensor given is f32") != std::string::npos);
  api::Error count = error_of([&] { op.run_on_interpreter({}, {}); });
  CHECK(std::string(count.what()).find("rmsnorm takes 2 inputs") != std::string::npos);
}

TEST_CASE("api: run_on_interpreter matches a float64 computation on every element") {
  api::Op op = api::Program::from_source(kRowOps, "row.emmy", options()).op("rmsnorm");
  const int64_t N = 7, C = 33;
  std::mt19937 rng(5);
  // Outputs start as NaN (0x7e00 in f16): an element the kernels never write fails below.
  std::vector<uint16_t> x(N * C), w(C), y(N * C, 0x7e00);
  std::vector<float> r(N, std::numeric_limits<float>::quiet_NaN());
  for (auto& v : x) v = random_f16(rng);
  for (auto& v : w) v = random_f16(rng);
  op.run_on_interpreter({{x.data(), api::DType::F16, {N, C}}, {w.data(), api::DType::F16, {C}}},
                        {{y.data(), api::DType::F16, {N, C}}, {r.data(), api::DType::F32, {N}}});
  for (int64_t n = 0; n < N; ++n) {
    double ms = 0;
    for (int64_t c = 0; c < C; ++c) ms += std::pow(f16_value(x[n * C + c]), 2) / C;
    const double rr = 1 / std::sqrt(ms + 1e-6);
    CHECK(r[n] == doctest::Approx(rr).epsilon(1e-5));
    for (int64_t c = 0; c < C; ++c) {
      const double want = f16_value(x[n * C + c]) * rr * f16_value(w[c]);
      CHECK(f16_value(y[n * C + c]) == doctest::Approx(want).epsilon(2e-3));
    }
  }
}

TEST_CASE("api: an output dim computed from the inputs' sizes is bound from the tensors and checked") {
  constexpr const char* kConv = R"(
op conv1d(x: f32[B, T], w: f32[K]) -> (y: f32[B, T - K + 1]) {
  y[b, t] = sum(k: x[b, t + k] * w[k]);
}
)";
  api::Op op = api::Program::from_source(kConv, "conv.emmy", options()).op("conv1d");
  const int64_t B = 3, T = 29, K = 4;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(B * T), w(K), y(B * (T - K + 1), std::numeric_limits<float>::quiet_NaN());
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  const std::vector<api::Tensor> in{{x.data(), api::DType::F32, {B, T}}, {w.data(), api::DType::F32, {K}}};
  const api::Sizes sizes = op.bind_sizes(in);
  CHECK(sizes.at("y_dim1") == T - K + 1);
  CHECK(op.output_shape(0, sizes) == std::vector<int64_t>{B, T - K + 1});
  op.run_on_interpreter(in, {{y.data(), api::DType::F32, {B, T - K + 1}}});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t + K <= T; ++t) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += double{x[b * T + t + k]} * w[k];
      CHECK(y[b * (T - K + 1) + t] == doctest::Approx(want).epsilon(1e-5));
    }
  // An output of another length, and inputs that leave no output element: Argument errors.
  api::Error shape = error_of([&] { op.run_on_interpreter(in, {{y.data(), api::DType::F32, {B, T - K}}}); });
  CHECK(shape.kind() == api::ErrorKind::Argument);
  CHECK(std::string(shape.what()).find("T - K + 1 is 26") != std::string::npos);
  std::vector<float> long_w(T + 1);
  api::Error empty = error_of([&] {
    op.bind_sizes({{x.data(), api::DType::F32, {B, T}}, {long_w.data(), api::DType::F32, {T + 1}}});
  });
  CHECK(empty.kind() == api::ErrorKind::Argument);
  CHECK(std::string(empty.what()).find("is 0 at K=30,T=29") != std::string::npos);
}

constexpr const char* kGuarded = R"(
op attend(q: f16[B, H, S, D], k: f16[B, H, T, D], v: f16[B, H, T, E]) -> (o: f16[B, H, S, E]) {
  let scale = 1.0 / sqrt(D);
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) * scale;
  m[b, h, i] = max(j: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j: p[b, h, i, j]);
  o[b, h, i, e] = sum(j: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
}

schedule attend for sm_90 as "short" where S <= 8 && D <= 128 {
  PLACE = fuse;
  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4;
}

schedule attend for sm_90 {
  PLACE = fuse;
  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k8;
}
)";

TEST_CASE("api: a run takes the guarded block its sizes select; one that cannot serve them is W056") {
  api::Options o = options();
  o.target = "sm_90";
  api::Op op = api::Program::from_source(kGuarded, "guarded.emmy", o).op("attend");
  CHECK(op.knobs().find("/k8") != std::string::npos);  // without sizes: the unguarded block
  api::Sizes at{{"B", 1}, {"H", 1}, {"S", 5}, {"T", 7}, {"D", 40}, {"E", 3}};
  CHECK(op.knobs_at(at).find("/k4") != std::string::npos);  // the guard holds, k4 covers D = 40
  at["S"] = 9;
  CHECK(op.knobs_at(at).find("/k8") != std::string::npos);  // the guard fails
  CHECK(op.warnings().empty());
  // D = 100: the guard holds but k4 holds head dims up to 64 only: W056, and the next block runs.
  const int64_t S = 5, T = 7, D = 100, E = 3;
  std::mt19937 rng(11);
  std::vector<uint16_t> q(S * D), k(T * D), v(T * E), out(S * E, 0x7e00);
  for (auto* t : {&q, &k, &v})
    for (auto& x : *t) x = random_f16(rng);
  op.run_on_interpreter({{q.data(), api::DType::F16, {1, 1, S, D}},
                         {k.data(), api::DType::F16, {1, 1, T, D}},
                         {v.data(), api::DType::F16, {1, 1, T, E}}},
                        {{out.data(), api::DType::F16, {1, 1, S, E}}});
  REQUIRE(op.warnings().size() == 1);
  CHECK(op.warnings()[0].rfind("W056: guarded.emmy:11:1: schedule attend for sm_90 as \"short\" (guarded) cannot "
                               "serve these sizes (D = 100 is larger than this schedule handles (D <= 64)",
                               0) == 0);
  for (int64_t i = 0; i < S; ++i) {
    std::vector<double> p(T);
    double mx = -INFINITY, l = 0;
    for (int64_t j = 0; j < T; ++j) {
      for (int64_t d = 0; d < D; ++d) p[j] += f16_value(q[i * D + d]) * f16_value(k[j * D + d]) / std::sqrt(D);
      mx = std::max(mx, p[j]);
    }
    for (double& x : p) l += (x = std::exp(x - mx));
    for (int64_t e = 0; e < E; ++e) {
      double want = 0;
      for (int64_t j = 0; j < T; ++j) want += p[j] * f16_value(v[j * E + e]) / l;
      CHECK(f16_value(out[i * E + e]) == doctest::Approx(want).epsilon(1e-2).scale(1e-2));
    }
  }
  at["D"] = 100;
  at["S"] = 5;
  CHECK(op.knobs_at(at).find("/k8") != std::string::npos);
  CHECK(op.warnings().size() == 1);  // said once
}

TEST_CASE("api: a block that says `auto;` takes the auto-schedule where it is taken, over the base target's") {
  constexpr const char* kAuto = R"(
op rows(x: f16[N, C]) -> (y: f16[N, C]) {
  m[n] = max(c: x[n, c]);
  y[n, c] = x[n, c] - m[n];
}

schedule rows for sm_90 {
  PLACE = cut;
}

schedule rows for sm_90a where C >= 65536 {
  PLACE = fuse;
  COOP = t1024/v8;
}

schedule rows for sm_90a auto;
)";
  api::Options o = options();
  o.target = "sm_90a";
  api::Op op = api::Program::from_source(kAuto, "auto.emmy", o).op("rows");
  CHECK(op.knobs().find("COOP=t") != std::string::npos);  // derived at nominal sizes, not sm_90's PLACE=cut
  CHECK(op.knobs_at({{"N", 8}, {"C", 70000}}) == "PLACE=fuse,COOP=t1024/v8");               // the guarded block
  CHECK(op.knobs_at({{"N", 4096}, {"C", 1000}}).find("COOP=t32/v8") != std::string::npos);  // 125 vectors a row
  o.target = "sm_90";
  CHECK(api::Program::from_source(kAuto, "auto.emmy", o).op("rows").knobs() == "PLACE=cut");
}

TEST_CASE("api: without a GPU, compile() still reports resources and launch is a Device error that says why") {
  api::Op op = api::Program::from_source(kRowOps, "row.emmy", options()).op("scale");
  std::vector<api::KernelInfo> kernels;
  try {
    kernels = op.compile();
  } catch (const api::Error& e) {
    CHECK(e.kind() == api::ErrorKind::Compile);  // no NVRTC here
    MESSAGE("skipped: " << e.what());
    return;
  }
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].registers > 0);
  CHECK(kernels[0].spill_bytes == 0);
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    MESSAGE("launch not tested here: there is a CUDA driver (the GPU tests launch)");
    return;
  }
  api::Error e = error_of([&] { op.launch({{nullptr, api::DType::F32, {4}}}, {{nullptr, api::DType::F32, {4}}}); });
  CHECK(e.kind() == api::ErrorKind::Device);
  CHECK(std::string(e.what()).find("cannot launch on the GPU: no CUDA driver") == 0);
}

TEST_CASE("api: the C ABI reports errors through emmy_last_error and runs on the interpreter") {
  emmy_program* program = nullptr;
  CHECK(emmy_program_from_source("op f(x: f32[N]) -> (y: f32[N]) { y[n] = ; }", "c.emmy", nullptr, &program) ==
        EMMY_ERROR_SOURCE);
  CHECK(std::string(emmy_last_error()).find("c.emmy:1:") != std::string::npos);
  emmy_options o{};
  std::string stdlib = std::string(EMMY_SOURCE_DIR) + "/stdlib";
  o.stdlib_path = stdlib.c_str();
  REQUIRE(emmy_program_from_source(kRowOps, "row.emmy", &o, &program) == EMMY_OK);
  CHECK(emmy_program_op_count(program) == 2);
  CHECK(std::string(emmy_program_op_name(program, 1)) == "scale");
  CHECK(emmy_program_op_name(program, 2) == nullptr);
  emmy_op* op = nullptr;
  CHECK(emmy_op_get(program, "nope", &op) == EMMY_ERROR_ARGUMENT);
  REQUIRE(emmy_op_get(program, "scale", &op) == EMMY_OK);
  const char* name = nullptr;
  int32_t dtype = -1, rank = -1;
  CHECK(emmy_op_tensor(op, 1, 0, &name, &dtype, &rank) == EMMY_OK);
  CHECK(std::string(name) == "y");
  CHECK(dtype == EMMY_F32);
  CHECK(rank == 1);
  const int64_t shape[1] = {5};
  std::vector<float> x = {1, -2, 3.5f, 0.25f, 7}, y(5, std::numeric_limits<float>::quiet_NaN());
  emmy_tensor in{x.data(), EMMY_F32, 1, shape}, out{y.data(), EMMY_F32, 1, shape};
  int64_t out_shape[1] = {0};
  CHECK(emmy_op_output_shape(op, &in, 1, 0, out_shape) == EMMY_OK);
  CHECK(out_shape[0] == 5);
  CHECK(emmy_op_output_shape(op, &in, 1, -1, out_shape) == EMMY_ERROR_ARGUMENT);
  CHECK(emmy_op_output_shape(op, &in, 0, 0, out_shape) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) == "scale takes 1 inputs, 0 given");
  CHECK(emmy_op_warning_count(op) == 0);
  CHECK(emmy_op_warning(op, 0) == nullptr);
  REQUIRE(emmy_op_run_host(op, &in, 1, &out, 1) == EMMY_OK);
  CHECK(y == std::vector<float>{2, -4, 7, 0.5f, 14});
  emmy_tensor bad{x.data(), 42, 1, shape};
  CHECK(emmy_op_run_host(op, &bad, 1, &out, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()).find("unknown dtype 42") != std::string::npos);
  emmy_op_free(op);
  emmy_program_free(program);
}

TEST_CASE("api: the C ABI checks every tensor before it reads through it") {
  emmy_options o{};
  std::string stdlib = std::string(EMMY_SOURCE_DIR) + "/stdlib";
  o.stdlib_path = stdlib.c_str();
  emmy_program* program = nullptr;
  REQUIRE(emmy_program_from_source(kRowOps, "row.emmy", &o, &program) == EMMY_OK);
  emmy_op* op = nullptr;
  REQUIRE(emmy_op_get(program, "scale", &op) == EMMY_OK);
  const int64_t shape[1] = {4};
  std::vector<float> x = {1, 2, 3, 4}, y(4, 0.0f);
  emmy_tensor in{x.data(), EMMY_F32, 1, shape}, out{y.data(), EMMY_F32, 1, shape};

  emmy_tensor null_data{nullptr, EMMY_F32, 1, shape};
  CHECK(emmy_op_run_host(op, &null_data, 1, &out, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) == "scale: input 0 has 4 elements but its data pointer is NULL");
  CHECK(emmy_op_run_host(op, &in, 1, &null_data, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) == "scale: output 0 has 4 elements but its data pointer is NULL");
  // A rank past the one-entry shape array: refused before `shape` is read (it used to be copied).
  emmy_tensor wide{x.data(), EMMY_F32, 1 << 28, shape};
  CHECK(emmy_op_run_host(op, &wide, 1, &out, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) == "scale: input 0 (x) has rank 1; the tensor given has rank 268435456");
  int64_t out_shape[1] = {0};
  CHECK(emmy_op_output_shape(op, &wide, 1, 0, out_shape) == EMMY_ERROR_ARGUMENT);
  const int64_t negative[1] = {-4};
  emmy_tensor neg{x.data(), EMMY_F32, 1, negative};
  CHECK(emmy_op_run_host(op, &neg, 1, &out, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) == "scale: input 0 has a negative extent -4");
  const int64_t empty[1] = {0};
  emmy_tensor none{x.data(), EMMY_F32, 1, empty}, none_out{y.data(), EMMY_F32, 1, empty};
  CHECK(emmy_op_run_host(op, &none, 1, &none_out, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) ==
        "scale: size N is 0: ops run on tensors with elements (empty tensors are not supported); skip the call when "
        "a tensor is empty");
  CHECK(emmy_op_run_host(op, &in, 2, &out, 1) == EMMY_ERROR_ARGUMENT);
  CHECK(std::string(emmy_last_error()) == "scale takes 1 inputs, 2 given");
  // Shapes alone (output_shape) need no data.
  CHECK(emmy_op_output_shape(op, &null_data, 1, 0, out_shape) == EMMY_OK);
  CHECK(out_shape[0] == 4);
  REQUIRE(emmy_op_run_host(op, &in, 1, &out, 1) == EMMY_OK);
  CHECK(y == std::vector<float>{2, 4, 6, 8});
  emmy_op_free(op);
  emmy_program_free(program);
}

namespace {

struct SmallStackRun {
  std::string source;
  int status = -1;
  std::string error;
};

void* compile_on_small_stack(void* arg) {
  auto* run = static_cast<SmallStackRun*>(arg);
  emmy_options o{};
  std::string stdlib = std::string(EMMY_SOURCE_DIR) + "/stdlib";
  o.stdlib_path = stdlib.c_str();
  emmy_program* program = nullptr;
  run->status = emmy_program_from_source(run->source.c_str(), "deep.emmy", &o, &program);
  run->error = emmy_last_error();
  emmy_op* op = nullptr;
  if (run->status == EMMY_OK) {
    run->status = emmy_op_get(program, "f", &op);
    std::vector<float> x(8, 1.0f), y(8, 0.0f);
    const int64_t shape[1] = {8};
    emmy_tensor in{x.data(), EMMY_F32, 1, shape}, out{y.data(), EMMY_F32, 1, shape};
    if (run->status == EMMY_OK) run->status = emmy_op_run_host(op, &in, 1, &out, 1);
    if (run->status == EMMY_OK && y[0] != 1000.0f) run->status = 99;
  }
  emmy_op_free(op);
  emmy_program_free(program);
  return nullptr;
}

}  // namespace

TEST_CASE("api: a 1000-deep expression checks, lowers and runs from a thread with a 256 KB stack") {
  // The deepest pass needs about 1.5 MB here (1.5 KB a level): libemmy runs them on its own stack.
  std::string body = "x[i]";
  for (int i = 1; i < 1000; ++i) body += " + x[i]";
  SmallStackRun run{"op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + body + ";\n}\n", -1, ""};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, compile_on_small_stack, &run) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  CHECK_MESSAGE(run.status == EMMY_OK, run.error);
  // One level more is E004, an error and not a crash.
  SmallStackRun deeper{"op f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = " + body + " + x[i];\n}\n", -1, ""};
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  REQUIRE(pthread_create(&thread, &attr, compile_on_small_stack, &deeper) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  CHECK(deeper.status == EMMY_ERROR_SOURCE);
  CHECK(deeper.error.find("error[E004]: expression nested more than 1000 levels deep") != std::string::npos);
}

TEST_CASE("api: sizes at which a divisor computed from sizes is 0 are refused before any kernel runs (E069)") {
  constexpr const char* kGrouped = R"(
op grouped(q: f32[H, D], k: f32[KH, D]) -> (s: f32[H]) {
  let G = H / KH;
  s[h] = sum(d: q[h, d] * k[h / G, d]);
}
)";
  api::Op op = api::Program::from_source(kGrouped, "grouped.emmy", options()).op("grouped");
  std::vector<float> q(2 * 3, 0.5f), k(4 * 3, 1.0f), s(2, 0.0f);
  api::Error e = error_of([&] {
    op.run_on_interpreter({{q.data(), api::DType::F32, {2, 3}}, {k.data(), api::DType::F32, {4, 3}}},
                          {{s.data(), api::DType::F32, {2}}});
  });
  CHECK(e.kind() == api::ErrorKind::Argument);
  CHECK(std::string(e.what()).find("divides by H / KH, which is 0 there") != std::string::npos);
  CHECK(std::string(e.what()).find("H=2") != std::string::npos);
  CHECK(std::string(e.what()).find("[E069]") != std::string::npos);
  // Where the divisor is not 0 the same op runs.
  std::vector<float> k2(2 * 3, 1.0f), s4(4, 0.0f), q4(4 * 3, 0.5f);
  op.run_on_interpreter({{q4.data(), api::DType::F32, {4, 3}}, {k2.data(), api::DType::F32, {2, 3}}},
                        {{s4.data(), api::DType::F32, {4}}});
  CHECK(s4[3] == doctest::Approx(1.5));
}
