// Derived ops (`op f_bwd = grad(f, ...)`): every stdlib op's derivative against central finite
// differences of its forward op, both evaluated by the float64 reference at ragged sizes; the
// derived sdpa has FlashAttention-2's structure; the declaration's errors.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "autosched/auto_schedule.hpp"
#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "lower/passes.hpp"
#include "schedule_matrix.hpp"
#include "sema/grad.hpp"
#include "sema/print_checked.hpp"
#include "test_helpers.hpp"

using namespace emmy;

namespace {

// The stdlib with every explicit float cast made f64, and signatures read as f64: the reference
// then rounds nowhere, so finite differences measure the derivative and not a rounding step.
std::string exact_stdlib() {
  static const std::string dir = [] {
    const auto out = std::filesystem::temp_directory_path() / fmt::format("emmy_grad_stdlib_{}", ::getpid());
    std::filesystem::create_directories(out);
    for (const char* name : {"nn.emmy", "linalg.emmy", "monoids.emmy"}) {
      std::ifstream in(std::string(EMMY_SOURCE_DIR) + "/stdlib/" + name);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(out / name) << std::regex_replace(text, std::regex(R"(\b(f16|bf16|f32)\()"), "f64(");
    }
    return out.string();
  }();
  return dir;
}

std::unique_ptr<test::Run> check_exact(const std::string& text) {
  auto r = std::make_unique<test::Run>();
  r->diags = std::make_unique<Diagnostics>(r->sources);
  const uint32_t id = r->sources.add("grad_test.emmy", text);
  r->program = check_program(r->sources, id, SemaOptions{{exact_stdlib()}, DType::F64, {}}, *r->diags);
  return r;
}

SizeBindings bind(const CheckedOp& op, const std::string& text) {
  auto b = bind_sizes(op, text);
  REQUIRE(std::holds_alternative<SizeBindings>(b));
  return std::get<SizeBindings>(b);
}

// sum over the outputs o of <seed_o, o(inputs)>: the scalar whose gradient the derived op returns.
double pairing(const CheckedProgram& p, const CheckedOp& fwd, const SizeBindings& sizes, const TensorMap& inputs,
               const std::vector<std::pair<std::string, const HostTensor*>>& seeds) {
  const TensorMap out = evaluate_reference(p, fwd, sizes, inputs);
  double total = 0;
  for (const auto& [name, seed] : seeds) {
    const HostTensor& y = out.at(name);
    for (size_t i = 0; i < y.size(); ++i) total += seed->data[i] * y.data[i];
  }
  return total;
}

// Checks op's derived `<op>_bwd` element by element against central differences. `saving`: outputs
// of op the derived op takes (`saving mean, rstd`), given the forward's values.
void check_gradient(const std::string& import, const std::string& op, const std::string& sizes_text,
                    const std::vector<std::string>& saving = {}, const std::string& extra = "") {
  CAPTURE(op);
  CAPTURE(sizes_text);
  const std::string save = saving.empty() ? "" : fmt::format(" saving {}", fmt::join(saving, ", "));
  auto r = check_exact(fmt::format("import {};\n{}\nop {}_bwd = grad({}){};\n", import, extra, op, op, save));
  INFO(r->rendered());
  REQUIRE_FALSE(r->diags->has_errors());
  const CheckedProgram& p = *r->program;
  const CheckedOp& fwd = p.ops.at(op);
  const CheckedOp& bwd = p.ops.at(op + "_bwd");
  const SizeBindings sizes = bind(fwd, sizes_text);
  // The derived op's own: a seed's computed dim (dy: f32[B, T - K + 1]) is a size of its own.
  SizeBindings bwd_sizes = bind(bwd, sizes_text);
  bwd_sizes.insert(sizes.begin(), sizes.end());
  const TensorMap inputs = random_inputs(fwd, sizes, 7);
  TensorMap all = random_inputs(bwd, bwd_sizes, 11);  // the seeds d<output>, random
  for (const auto& [n, t] : inputs) all[n] = t;
  const TensorMap forward = evaluate_reference(p, fwd, sizes, inputs);
  for (const std::string& name : saving) all[name] = forward.at(name);
  // The derived op's parameters: the forward's, the saved tensors, then one seed per float output.
  std::vector<std::pair<std::string, const HostTensor*>> seeds;
  size_t k = fwd.decl->params.size() + saving.size();
  for (const ast::Param& o : fwd.decl->outputs)
    if (is_float(fwd.find(o.name.name)->elem.dtype))
      seeds.emplace_back(o.name.name, &all.at(bwd.decl->params.at(k++).name.name));
  REQUIRE(k == bwd.decl->params.size());
  const TensorMap grads = evaluate_reference(p, bwd, bwd_sizes, all);
  // Its outputs: one gradient per float input, in order.
  size_t g = 0;
  for (const ast::Param& x : fwd.decl->params) {
    if (!is_float(fwd.find(x.name.name)->elem.dtype)) continue;
    const std::string d = bwd.decl->outputs.at(g++).name.name;
    CAPTURE(d);
    const HostTensor& grad = grads.at(d);
    REQUIRE(grad.size() == inputs.at(x.name.name).size());
    int bad = 0;
    for (size_t i = 0; i < grad.size(); ++i) {
      TensorMap moved = inputs;
      const double x0 = moved.at(x.name.name).data[i], h = 1e-5 * std::max(1.0, std::fabs(x0));
      moved.at(x.name.name).data[i] = x0 + h;
      const double up = pairing(p, fwd, sizes, moved, seeds);
      moved.at(x.name.name).data[i] = x0 - h;
      const double down = pairing(p, fwd, sizes, moved, seeds);
      const double fd = (up - down) / (2 * h), got = grad.data[i];
      if (!(std::fabs(fd - got) <= 1e-6 + 1e-6 * std::max(std::fabs(fd), std::fabs(got))) && bad++ < 3)
        FAIL_CHECK(fmt::format("{}[{}]: derived {}, finite differences {}", d, i, got, fd));
    }
    CHECK(bad == 0);
  }
  CHECK(g == bwd.decl->outputs.size());
}

}  // namespace

TEST_CASE("grad: std.nn's ops against finite differences") {
  check_gradient("std.nn", "softmax", "N=3,C=7");
  check_gradient("std.nn", "logsumexp", "N=3,C=7");
  check_gradient("std.nn", "layernorm", "N=3,C=7");
  check_gradient("std.nn", "rmsnorm", "N=3,C=7");
  check_gradient("std.nn", "gelu", "N=3,C=7");
  check_gradient("std.nn", "gelu_erf", "N=3,C=7");
  check_gradient("std.nn", "silu", "N=3,C=7");
  check_gradient("std.nn", "cross_entropy", "N=4,C=5");
  check_gradient("std.nn", "cross_entropy_mean", "N=4,C=5");
  check_gradient("std.nn", "sdpa", "B=1,H=2,S=3,T=5,D=4,E=3");
  check_gradient("std.nn", "sdpa_causal", "B=1,H=2,S=5,D=3,E=2");
  check_gradient("std.nn", "sdpa_gqa", "B=1,H=4,KH=2,S=3,T=4,D=3,E=2");
}

TEST_CASE("grad: reductions by user monoids, through their combine, against finite differences") {
  check_gradient("std.nn", "logsumexp_online", "N=3,C=7");
  // Welford's carrier (n, mean, M2): the combine's divisions and selects.
  check_gradient("std.monoids", "variance", "N=3,C=6", {}, R"(
op variance(x: f32[N, C]) -> (v: f32[N], mean: f32[N]) {
  r[n] = welford(c: x[n, c]);
  v[n] = r.q / r.n;
  mean[n] = r.u;
})");
  // A monoid of the file's own, associative but not commutative (the first maximum's value and
  // the sum of the values after it), with a lift of two arguments.
  check_gradient("std.monoids", "peaks", "N=3,C=7", {}, R"(
monoid last_sum(v: f32, s: f32) {
  identity = (0, 0);
  lift(x: f32, w: f32) = (x, x * w);
  combine(a, b) {
    yield (a.v + b.v, a.s * exp(b.v) + b.s);
  }
}
op peaks(x: f32[N, C], w: f32[C]) -> (y: f32[N]) {
  r[n] = last_sum(c: x[n, c], w[c]);
  v[n] = r.v;
  y[n] = r.s + sin2(v)[n];
}
op sin2(z: f32[N]) -> (y: f32[N]) {
  y[n] = tanh(z[n]) * z[n];
})");
  // A vector field: softmax_pv's o (its elements at one variable; what the scalar fields get from
  // them summed over it).
  check_gradient("std.nn", "sdpa_explicit", "B=1,H=2,S=3,T=5,D=4,E=3");
  check_gradient("std.monoids", "pool", "N=3,T=6,E=4", {}, R"(
op pool(s: f32[N, T], v: f32[T, E]) -> (o: f32[N, E], z: f32[N]) {
  r[n] = softmax_pv(t where t != 2: s[n, t] * s[n, t], v[t, :]);
  o[n, e] = r.o[e] / r.d;
  z[n] = r.m * r.d;
})");
}

TEST_CASE("grad: an index that is a summed variable plus or minus others, solved for it, against finite differences") {
  const std::string ops = R"(
op conv1d(x: f32[B, C, T], w: f32[F, C, K]) -> (y: f32[B, F, T - K + 1]) {
  y[b, f, t] = sum(c, k: x[b, c, t + k] * w[f, c, k]);
}
op corr2d(x: f32[H, W], w: f32[R, Q]) -> (y: f32[H - R + 1, W - Q + 1]) {
  y[i, j] = sum(a, b: x[i + a, j + b] * w[a, b]);
}
op flip(x: f32[N]) -> (y: f32[N]) {
  y[i] = x[N - 1 - i] * x[i];
}
op ahead(x: f32[N, C], s: f32[M]) -> (y: f32[M]) {
  y[i] = max(c: x[i + 1, c] * x[i + 1, c]) * s[i];
}
)";
  check_gradient("std.nn", "conv1d", "B=2,C=3,T=9,F=2,K=3", {}, ops);
  check_gradient("std.nn", "corr2d", "H=6,W=5,R=2,Q=3", {}, ops);
  check_gradient("std.nn", "flip", "N=7", {}, ops);
  check_gradient("std.nn", "ahead", "N=6,C=4,M=5", {}, ops);
  // The input gradient of the convolution sums over the filter taps and channels only.
  auto r = check_exact(fmt::format("import std.nn;\n{}\nop conv1d_bwd = grad(conv1d);\n", ops));
  REQUIRE_FALSE(r->diags->has_errors());
  const std::string ast = print_checked(*r->program);
  INFO(ast);
  CHECK(ast.find("assign dx[b, c, i2] : f64[B, C, T] = (sum [f, k] {f=F, k=K}") != std::string::npos);
}

TEST_CASE("grad: reductions kept inside their statements (variables only a where or index arithmetic sizes)") {
  const std::string ops = R"(
op window(x: f32[S], scale: f32[S]) -> (y: f32[S]) {
  y[i] = sum(j where j <= i && i - j <= 3: x[j]) * scale[i];
}
op prefix_max(x: f32[N, C]) -> (s: f32[N]) {
  s[n] = sum(k: x[n, k] * max(l where l <= k: x[n, l]));
}
op shifted(w: f32[N, N], x: f32[N, C]) -> (y: f32[N]) {
  y[n] = sum(k where k >= 1: w[n, k] * max(l: x[k - 1, l]) * min(l: x[k - 1, l]));
}
)";
  check_gradient("std.nn", "window", "S=9", {}, ops);
  check_gradient("std.nn", "prefix_max", "N=3,C=6", {}, ops);
  check_gradient("std.nn", "shifted", "N=5,C=4", {}, ops);
}

TEST_CASE("grad: second derivatives (a derived op derived again) against finite differences") {
  check_gradient("std.nn", "softmax_bwd", "N=3,C=7", {}, "op softmax_bwd = grad(softmax);");
  check_gradient("std.nn", "rmsnorm_bwd", "N=3,C=6", {}, "op rmsnorm_bwd = grad(rmsnorm);");
  check_gradient("std.nn", "gelu_bwd", "N=2,C=5", {}, "op gelu_bwd = grad(gelu);");
}

TEST_CASE("grad: saved forward tensors instead of recomputed ones, against finite differences") {
  check_gradient("std.nn", "layernorm", "N=3,C=7", {"mean", "rstd"});
  // Attention saving o and the softmax statistics, FlashAttention-2's memory: the backward
  // recomputes the scores and exp(s - m) only.
  check_gradient("std.nn", "attend", "B=1,H=2,S=3,T=5,D=4,E=3", {"o", "m", "l"}, R"(
op attend(q: f16[B, H, S, D], k: f16[B, H, T, D], v: f16[B, H, T, E]) -> (o: f16[B, H, S, E], m: f32[B, H, S], l: f32[B, H, S]) {
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) / sqrt(D);
  m[b, h, i] = max(j: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j: p[b, h, i, j]);
  o[b, h, i, e] = sum(j: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
})");
  auto r = check_exact("import std.nn;\nop a = grad(sdpa) saving o, m, l;\n");
  REQUIRE_FALSE(r->diags->has_errors());
  std::vector<std::string> params;
  for (const ast::Param& x : r->program->ops.at("a").decl->params) params.push_back(x.name.name);
  CHECK(fmt::format("{}", fmt::join(params, " ")) == "q k v o m l do");
  std::set<std::string> body;
  for (const ast::Stmt& st : r->program->ops.at("a").decl->body)
    if (const auto* as = std::get_if<ast::AssignStmt>(&st)) body.insert(as->target.name);
  CHECK(body.count("s"));  // recomputed
  CHECK(body.count("p"));
  CHECK_FALSE(body.count("m"));  // given
  CHECK_FALSE(body.count("l"));
  CHECK_FALSE(body.count("o_sum"));
  CHECK_FALSE(body.count("o"));
}

TEST_CASE("grad: std.linalg's ops against finite differences") {
  for (const char* op : {"matmul", "matmul_nt", "matmul_bias", "matmul_bias_relu", "matmul_bias_gelu",
                         "matmul_bias_silu", "matmul_swiglu"})
    check_gradient("std.linalg", op, "M=3,K=5,N=4");
  check_gradient("std.linalg", "bmm", "Z=2,M=3,K=5,N=4");
  check_gradient("std.linalg", "bmm_nt_bias_relu", "Z=2,M=3,K=5,N=4");
}

namespace {

// Whether the outputs of `body` (an op over x: f32[N, C], v: f32[N, C]) come out unchanged when
// its statement `m` is shifted: the prover's verdict, then the same question put to the
// reference (the op evaluated with m and with m + 0.75): they must agree.
void check_invariance(const std::string& body, bool expected) {
  CAPTURE(body);
  auto source = [&](const std::string& shift) {
    std::string text = body;
    const size_t at = text.find(";", text.find("m[n] ="));
    text.insert(at, shift);
    return "op f(x: f32[N, C], v: f32[N, C]) -> (y: f32[N, C]) {\n" + text + "\n}\n";
  };
  auto plain = test::check_source(source(""));
  INFO(plain->rendered());
  REQUIRE_FALSE(plain->diags->has_errors());
  const CheckedOp& op = plain->program->ops.at("f");
  const sema::grad::Straight flat = sema::grad::flatten(op, [](const std::string&) { return nullptr; });
  CHECK(sema::grad::outputs_shift_invariant(flat, "m") == expected);
  auto shifted = test::check_source(source(" + 0.75"));
  REQUIRE_FALSE(shifted->diags->has_errors());
  const SizeBindings sizes{{"N", 3}, {"C", 5}};
  const TensorMap inputs = random_inputs(op, sizes, 5);
  const HostTensor a = evaluate_reference(*plain->program, op, sizes, inputs).at("y");
  const HostTensor b = evaluate_reference(*shifted->program, shifted->program->ops.at("f"), sizes, inputs).at("y");
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a.data[i] - b.data[i]));
  CHECK((worst < 1e-12) == expected);
}

}  // namespace

TEST_CASE("grad: which reductions the outputs do not depend on, re-checked by evaluation") {
  // softmax, and attention's normalized sum: exp(x - m) is scaled by exp(-c), so are its sums
  check_invariance("m[n] = max(c: x[n, c]); e[n, c] = exp(x[n, c] - m[n]); y[n, c] = e / sum(k: e[n, k]);", true);
  check_invariance(
      "m[n] = max(c: x[n, c]); p[n, c] = exp(x[n, c] - m[n]); y[n, c] = sum(k: p[n, k] * v[n, k]) / sum(k: p[n, k]) "
      "+ x[n, c];",
      true);
  // log-sum-exp: m + log(sum(exp(x - m))) shifts by c - c
  check_invariance("m[n] = max(c: x[n, c]); y[n, c] = m[n] + log(sum(k: exp(x[n, k] - m[n]))) - x[n, c];", true);
  // a select of zero moves as its other branch
  check_invariance(
      "m[n] = max(c: x[n, c]); p[n, c] = select(c > 1, exp(x[n, c] - m[n]), 0); y[n, c] = p / sum(k: p[n, k]);", true);
  // not invariant: unnormalized, the maximum itself, a constant added to a scaled term
  check_invariance("m[n] = max(c: x[n, c]); y[n, c] = exp(x[n, c] - m[n]);", false);
  check_invariance("m[n] = max(c: x[n, c]); y[n, c] = x[n, c] - m[n];", false);
  check_invariance("m[n] = max(c: x[n, c]); e[n, c] = exp(x[n, c] - m[n]) + 1; y[n, c] = e / sum(k: e[n, k]);", false);
  check_invariance("m[n] = max(c: x[n, c]); y[n, c] = exp(x[n, c] - m[n]) / sum(k: exp(x[n, k] - 2 * m[n]));", false);
}

TEST_CASE("grad: derived ops on their auto-schedules, interpreted at ragged sizes, ordinary and hostile inputs") {
  auto r = test::check_source(R"(import std.nn;
import std.linalg;
op softmax_bwd = grad(softmax);
op layernorm_bwd = grad(layernorm) saving mean, rstd;
op ce_bwd = grad(cross_entropy_mean);
op causal_bwd = grad(sdpa_causal);
op gqa_bwd = grad(sdpa_gqa);
op gelu_mm_bwd = grad(matmul_bias_gelu);
)");
  INFO(r->rendered());
  REQUIRE_FALSE(r->diags->has_errors());
  int runs = 0;
  for (const char* target_name : {"sm_90a", "sm_80"}) {
    const TargetInfo& target = *find_target(target_name);
    for (const char* name : {"softmax_bwd", "layernorm_bwd", "ce_bwd", "causal_bwd", "gqa_bwd", "gelu_mm_bwd"}) {
      const CheckedOp& op = r->program->ops.at(name);
      const SizeBindings sizes = name == std::string("gqa_bwd") ? SizeBindings{{"B", 1},  {"H", 4}, {"KH", 2}, {"S", 9},
                                                                               {"T", 11}, {"D", 8}, {"E", 5}}
                                                                : test::cycled_sizes(op, {3, 13, 17, 11, 9, 7, 5});
      CAPTURE(name);
      CAPTURE(target_name);
      CAPTURE(test::shape_text(sizes));
      const autosched::AutoSchedule choice = autosched::auto_schedule(*r->program, op, target, &sizes, nullptr);
      CAPTURE(choice.knobs);
      const lower::Lowered low = lower::lower_op(*r->program, op, {nullptr, "", "", choice.knobs}, target);
      std::vector<std::optional<HostileKind>> kinds{std::nullopt};
      for (HostileKind k : kHostileKinds) kinds.push_back(k);
      for (const std::optional<HostileKind>& kind : kinds) {
        CAPTURE((kind ? hostile_kind_name(*kind) : "ordinary"));
        TensorMap inputs = kind ? hostile_inputs(op, sizes, 7, *kind) : random_inputs(op, sizes, 7);
        const TensorMap ref = evaluate_reference(*r->program, op, sizes, inputs);
        if (kind && !test::reference_meaningful(ref, *kind)) continue;
        SimtOptions so;
        so.shuffle_blocks = true;
        run_simt(low.kernels, sizes, inputs, so);
        const std::string failures = test::output_failures(op, inputs, ref, kind);
        CHECK_MESSAGE(failures.empty(), failures);
        ++runs;
      }
    }
  }
  MESSAGE(runs << " interpreted runs of derived ops");
}

namespace {

// An attention backward saving o, m and l (lowered as `low`), interpreted on the forward's
// `inputs` with the saved tensors the forward's values (m and l its intermediates or outputs)
// and a random seed do (`seed`), against the float64 reference: why outputs are off, "" if none.
// Each kernel's tier by its name without the hash (k_bwd_dk_dv_1fc130: k_bwd_dk_dv).
std::map<std::string, std::string> kernel_tiers(const lower::Lowered& low) {
  std::map<std::string, std::string> tiers;
  for (const lower::KernelPlan& p : low.plans)
    tiers[p.kernel.substr(0, p.kernel.rfind('_'))] = lower::tier_name(p.tier);
  return tiers;
}

std::string saved_backward_failures(const CheckedProgram& program, const CheckedOp& fwd, const CheckedOp& bwd,
                                    const lower::Lowered& low, const SizeBindings& sizes, TensorMap inputs,
                                    uint64_t seed) {
  const TensorMap forward = evaluate_reference(program, fwd, sizes, inputs, {"m", "l"});
  for (const char* saved : {"o", "m", "l"}) inputs[saved] = forward.at(saved);
  inputs["do"] = random_inputs(bwd, sizes, seed).at("do");
  const TensorMap ref = evaluate_reference(program, bwd, sizes, inputs);
  SimtOptions so;
  so.shuffle_blocks = true;
  run_simt(low.kernels, sizes, inputs, so);
  return test::output_failures(bwd, inputs, ref);
}

}  // namespace

TEST_CASE(
    "grad: attention's backward given the forward's o, m and l, on the tensor cores, interpreted at ragged sizes") {
  // The forward (attend) computes what the backward saves; the backward's outputs take a kernel
  // each (dq over query rows, dk and dv over key rows), each a fold on the tensor cores: dv's
  // weight P / l times do (the factor 1 / l moved from the value to the weight), dq's and dk's
  // weight dS = P * (dP - D) with two contractions, the scores and dP = dO V^T. Causal: dq's
  // keys bounded above by its rows, dk's and dv's queries below.
  auto r = test::check_source(R"(import std.nn;
op attend(q: f16[B, H, S, D], k: f16[B, H, T, D], v: f16[B, H, T, E]) -> (o: f16[B, H, S, E], m: f32[B, H, S], l: f32[B, H, S]) {
  let scale = 1.0 / sqrt(D);
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) * scale;
  m[b, h, i] = max(j: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j: p[b, h, i, j]);
  o[b, h, i, e] = sum(j: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
}
op attend_causal(q: f16[B, H, S, D], k: f16[B, H, S, D], v: f16[B, H, S, E]) -> (o: f16[B, H, S, E], m: f32[B, H, S], l: f32[B, H, S]) {
  let scale = 1.0 / sqrt(D);
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) * scale;
  m[b, h, i] = max(j where j <= i: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j where j <= i: p[b, h, i, j]);
  o[b, h, i, e] = sum(j where j <= i: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
}
op bwd = grad(sdpa) saving o, m, l;
op causal_bwd = grad(sdpa_causal) saving o, m, l;
)");
  INFO(r->rendered());
  REQUIRE_FALSE(r->diags->has_errors());
  const std::string fold = lower::tier_name(lower::KernelPlan::Tier::MmaFold);
  int runs = 0;
  for (const auto& [fwd_name, bwd_name] : {std::pair{"attend", "bwd"}, std::pair{"attend_causal", "causal_bwd"}})
    // A ring by cp.async (sm_80 and sm_90), by TMA, and the auto-schedule's choice at (1, 8, 4096, 64).
    for (const auto& [target_name, knobs] :
         {std::pair<const char*, std::string>{"sm_80",
                                              "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4,STAGE=d2/cp/ring"},
          {"sm_90", "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x8/k4,STAGE=d3/tma/ring"},
          // wgmma: both contractions from K-major swizzled slabs, dk's and dv's P @ value from
          // registers, the ring filled by a producer warpgroup.
          {"sm_90a", "PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w4x1/k4,STAGE=d2/tma/ring,WSPEC=p1"},
          {"sm_90a", ""}}) {
      const CheckedOp& fwd = r->program->ops.at(fwd_name);
      const CheckedOp& bwd = r->program->ops.at(bwd_name);
      const TargetInfo& target = *find_target(target_name);
      CAPTURE(bwd_name);
      CAPTURE(target_name);
      std::string chosen = knobs;
      if (chosen.empty()) {
        const SizeBindings at{{"B", 1}, {"H", 8}, {"S", 4096}, {"T", 4096}, {"D", 64}, {"E", 64}};
        chosen = autosched::auto_schedule(*r->program, bwd, target, &at, nullptr).knobs;
        CHECK(chosen.find("TILE=a:mma_m16n8k16") != std::string::npos);
      }
      CAPTURE(chosen);
      const lower::Lowered low = lower::lower_op(*r->program, bwd, {nullptr, "", chosen}, target);
      std::map<std::string, std::string> tiers = kernel_tiers(low);
      CHECK(tiers.size() == 3);                                    // and dl = rowsum(dO * O) / l, once a row
      CHECK(tiers["k_" + std::string(bwd_name) + "_dq"] == fold);  // two contractions: dO V^T and Q K^T
      // dK and dV in one fold over the query blocks, both kept in registers: P and dS once a block.
      CHECK(tiers["k_" + std::string(bwd_name) + "_dk_dv"] == fold);
      for (const SizeBindings& sizes : {SizeBindings{{"B", 1}, {"H", 2}, {"S", 77}, {"T", 70}, {"D", 16}, {"E", 24}},
                                        SizeBindings{{"B", 2}, {"H", 1}, {"S", 130}, {"T", 130}, {"D", 32}, {"E", 8}},
                                        SizeBindings{{"B", 1}, {"H", 1}, {"S", 64}, {"T", 64}, {"D", 64}, {"E", 64}}})
        for (double magnitude : {1.0, 8.0}) {  // 8 (exact in f16): scores near 100, exp(s - m) across its range
          CAPTURE(test::shape_text(sizes));
          CAPTURE(magnitude);
          TensorMap inputs = random_inputs(fwd, sizes, 3 + runs);
          for (const char* x : {"q", "k"})
            for (double& e : inputs.at(x).data) e *= magnitude;
          const std::string failures =
              saved_backward_failures(*r->program, fwd, bwd, low, sizes, std::move(inputs), 40 + runs);
          CHECK_MESSAGE(failures.empty(), failures);
          ++runs;
        }
    }
  CHECK(runs == 48);
}

TEST_CASE("grad: grouped-query attention's backward: per-head partials folded on the tensor cores, summed by group") {
  // The key head kh's gradient sums over its group's query heads h (h / G == kh) and over the
  // queries i: the derived op sums over i first into a per-head partial (dk_part[b, h, j, d]),
  // which folds on the tensor cores like attention's dk, then over the group. The saved m and l
  // are sdpa_gqa's own intermediates, taken from the reference's evaluation of the forward.
  auto r = test::check_source("import std.nn;\nop gqa_bwd = grad(sdpa_gqa) saving o, m, l;\n");
  INFO(r->rendered());
  REQUIRE_FALSE(r->diags->has_errors());
  const CheckedOp& fwd = r->program->ops.at("sdpa_gqa");
  const CheckedOp& bwd = r->program->ops.at("gqa_bwd");
  std::set<std::string> body;
  for (const ast::Stmt& st : bwd.decl->body)
    if (const auto* as = std::get_if<ast::AssignStmt>(&st)) body.insert(as->target.name);
  CHECK(body.count("dk_part"));
  CHECK(body.count("dv_part"));
  const TargetInfo& target = *find_target("sm_90");
  const lower::Lowered low = lower::lower_op(
      *r->program, bwd, {nullptr, "", "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x8/k4,STAGE=d2/cp/ring"}, target);
  std::map<std::string, std::string> tiers = kernel_tiers(low);
  const std::string fold = lower::tier_name(lower::KernelPlan::Tier::MmaFold);
  CHECK(tiers["k_gqa_bwd_dq"] == fold);
  CHECK(tiers["k_gqa_bwd_dv_part_dk_part"] == fold);
  int runs = 0;
  for (const SizeBindings& sizes :
       {SizeBindings{{"B", 1}, {"H", 4}, {"KH", 2}, {"S", 33}, {"T", 70}, {"D", 16}, {"E", 24}},
        SizeBindings{{"B", 2}, {"H", 6}, {"KH", 2}, {"S", 65}, {"T", 17}, {"D", 32}, {"E", 8}}}) {
    CAPTURE(test::shape_text(sizes));
    TensorMap inputs = random_inputs(fwd, sizes, 5 + runs);
    const std::string failures =
        saved_backward_failures(*r->program, fwd, bwd, low, sizes, std::move(inputs), 50 + runs);
    CHECK_MESSAGE(failures.empty(), failures);
    ++runs;
  }
  CHECK(runs == 2);
}

TEST_CASE("grad: dK and dV in register tiles narrower than their axes fold the keys in step, a tile of each a pass") {
  // Head dims past the register tile (d and e in tiles of 64): one pass over the keys a tile of
  // each, the shorter axis's tiles past its end computing columns nothing stores.
  auto r = test::check_source("import std.nn;\nop bwd = grad(sdpa) saving o, m, l;\n");
  REQUIRE_FALSE(r->diags->has_errors());
  const CheckedOp& fwd = r->program->ops.at("sdpa");
  const CheckedOp& bwd = r->program->ops.at("bwd");
  const std::string fold = lower::tier_name(lower::KernelPlan::Tier::MmaFold);
  int runs = 0;
  for (const char* knobs : {"PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x8/k8,STAGE=d3/tma/ring",
                            "PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w4x1/k8,STAGE=d2/tma/ring,WSPEC=p1"}) {
    CAPTURE(knobs);
    const lower::Lowered low = lower::lower_op(*r->program, bwd, {nullptr, "", knobs}, *find_target("sm_90a"));
    CHECK(kernel_tiers(low)["k_bwd_dk_dv"] == fold);
    for (const SizeBindings& sizes : {SizeBindings{{"B", 1}, {"H", 2}, {"S", 77}, {"T", 90}, {"D", 100}, {"E", 72}},
                                      SizeBindings{{"B", 1}, {"H", 1}, {"S", 40}, {"T", 33}, {"D", 24}, {"E", 128}}}) {
      CAPTURE(test::shape_text(sizes));
      const std::string failures =
          saved_backward_failures(*r->program, fwd, bwd, low, sizes, random_inputs(fwd, sizes, 60 + runs), 70 + runs);
      CHECK_MESSAGE(failures.empty(), failures);
      ++runs;
    }
  }
  CHECK(runs == 4);
}

TEST_CASE("grad: every op of the stdlib, the examples and the test programs derives, or says why at its construct") {
  int derived = 0, refused = 0;
  std::vector<std::string> files = test::program_files(EMMY_SOURCE_DIR);
  for (const auto& e : std::filesystem::directory_iterator(std::string(EMMY_SOURCE_DIR) + "/tests/unit/programs"))
    if (e.path().extension() == ".emmy") files.push_back(e.path().string());
  for (const std::string& file : files) {
    auto plain = test::check_file(file);
    if (plain->diags->has_errors()) continue;
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> names;
    for (const CheckedOp* op : test::main_ops(*plain->program)) {
      bool has_float = false;
      for (const ast::Param& p : op->decl->params) has_float = has_float || is_float(op->find(p.name.name)->elem.dtype);
      if (!has_float) continue;
      names.push_back(op->decl->name.name);
      text += fmt::format("\nop {}_gradall = grad({});", op->decl->name.name, op->decl->name.name);
    }
    auto r = std::make_unique<test::Run>();
    r->diags = std::make_unique<Diagnostics>(r->sources);
    const uint32_t id = r->sources.add(file, text + "\n");
    r->program = check_program(r->sources, id,
                               SemaOptions{{std::string(EMMY_SOURCE_DIR) + "/stdlib"}, std::nullopt, {}}, *r->diags);
    CAPTURE(file);
    for (const Diagnostic& d : r->diags->all()) {
      CAPTURE(r->diags->render_one(d));
      // Only E067 (no rule yet), located in the forward op: never an error in a derived op's text.
      CHECK(d.code == "E067");
      CHECK(r->sources.file(d.range.file).path().find('#') == std::string::npos);
    }
    for (const std::string& n : names) (r->program->ops.count(n + "_gradall") ? derived : refused)++;
  }
  MESSAGE(derived << " ops derived, " << refused << " refused with E067");
  CHECK(derived > 50);
}
