// The reference evaluator against hand-written loops: std.nn, std.linalg, user monoids,
// integer semantics, size bindings, random inputs and the comparison of results.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "driver/run.hpp"
#include "interp/reference.hpp"
#include "interp/scalar_values.hpp"
#include "ir/numeric.hpp"
#include "test_helpers.hpp"
#include "tune/output_check.hpp"

using namespace emmy;
using emmy::test::check_source;

namespace {

std::unique_ptr<test::Run> load(const std::string& source) {
  auto r = check_source(source);
  INFO(r->rendered());
  REQUIRE_FALSE(r->diags->has_errors());
  return r;
}

SizeBindings bind(const CheckedOp& op, const std::string& text) {
  auto b = bind_sizes(op, text);
  if (const auto* err = std::get_if<std::string>(&b)) FAIL_CHECK(*err);
  REQUIRE(std::holds_alternative<SizeBindings>(b));
  return std::get<SizeBindings>(b);
}

std::string bind_error(const CheckedOp& op, const std::string& text) {
  auto b = bind_sizes(op, text);
  REQUIRE(std::holds_alternative<std::string>(b));
  return std::get<std::string>(b);
}

// Inputs (random unless given) and the reference outputs of one op.
struct Evaluated {
  TensorMap in, out;
};

Evaluated evaluate(const test::Run& r, const std::string& op_name, const std::string& sizes, uint64_t seed = 7,
                   const TensorMap& overrides = {}) {
  const CheckedOp& op = r.program->ops.at(op_name);
  SizeBindings s = bind(op, sizes);
  Evaluated e;
  e.in = random_inputs(op, s, seed);
  for (const auto& [name, t] : overrides) e.in[name] = t;
  e.out = evaluate_reference(*r.program, op, s, e.in);
  return e;
}

// Row-major element of a tensor.
double at(const HostTensor& t, std::initializer_list<int64_t> idx) {
  REQUIRE(idx.size() == t.shape.size());
  int64_t flat = 0;
  size_t k = 0;
  for (int64_t i : idx) flat = flat * t.shape[k++] + i;
  return t.data.at(static_cast<size_t>(flat));
}

HostTensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<double> data) {
  return HostTensor{dtype, std::move(shape), std::move(data)};
}

// |a - b| small relative to the size of the values (both are exact float64 math).
bool close(double a, double b, double tol = 1e-12) { return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b)); }

// Attention over a [B, H, S, D] / [B, KH, T, D] / [B, KH, T, E] layout; head h reads
// key/value head h / group; `causal` keeps j <= i.
std::vector<double> hand_attention(const TensorMap& in, int64_t B, int64_t H, int64_t KH, int64_t S, int64_t T,
                                   int64_t D, int64_t E, bool causal) {
  const HostTensor &q = in.at("q"), &k = in.at("k"), &v = in.at("v");
  int64_t group = H / KH;
  std::vector<double> o;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        double m = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += at(q, {b, h, i, d}) * at(k, {b, h / group, j, d});
          s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(D));
          if (!causal || j <= i) m = std::max(m, s[static_cast<size_t>(j)]);
        }
        double l = 0;
        std::vector<double> acc(static_cast<size_t>(E), 0.0);
        for (int64_t j = 0; j < T; ++j) {
          if (causal && j > i) continue;
          double p = std::exp(s[static_cast<size_t>(j)] - m);
          l += p;
          for (int64_t e = 0; e < E; ++e) acc[static_cast<size_t>(e)] += p * at(v, {b, h / group, j, e});
        }
        for (double a : acc) o.push_back(a / l);
      }
  return o;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    CHECK(close(got[i], want[i], tol));
  }
}

}  // namespace

TEST_CASE("reference: softmax rows sum to 1 and match a hand loop") {
  auto r = load("import std.nn;\n");
  auto e = evaluate(*r, "softmax", "N=3,C=5");
  const HostTensor& x = e.in.at("x");
  const HostTensor& y = e.out.at("y");
  CHECK(y.dtype == DType::F16);
  CHECK(y.shape == std::vector<int64_t>{3, 5});
  for (int64_t n = 0; n < 3; ++n) {
    double m = -INFINITY, l = 0, row = 0;
    for (int64_t c = 0; c < 5; ++c) m = std::max(m, at(x, {n, c}));
    for (int64_t c = 0; c < 5; ++c) l += std::exp(at(x, {n, c}) - m);
    for (int64_t c = 0; c < 5; ++c) {
      CHECK(close(at(y, {n, c}), std::exp(at(x, {n, c}) - m) / l));
      row += at(y, {n, c});
    }
    CHECK(close(row, 1.0));
  }
}

TEST_CASE("reference: matmul and its epilogues match hand loops") {
  auto r = load("import std.linalg;\n");
  auto e = evaluate(*r, "matmul_bias_relu", "M=3,K=5,N=2");
  auto p = evaluate(*r, "matmul", "M=3,K=5,N=2", 7);
  CHECK(p.in.at("a").data == e.in.at("a").data);  // same seed, same first inputs
  const HostTensor &a = e.in.at("a"), &b = e.in.at("b"), &bias = e.in.at("bias");
  int negatives = 0;
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t n = 0; n < 2; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < 5; ++k) acc += at(a, {m, k}) * at(b, {k, n});
      CHECK(close(at(p.out.at("c"), {m, n}), acc));
      negatives += acc + at(bias, {n}) < 0;
      CHECK(close(at(e.out.at("c"), {m, n}), std::max(acc + at(bias, {n}), 0.0)));
    }
  CHECK(negatives > 0);  // the ReLU was exercised
}

TEST_CASE("reference: layernorm and rmsnorm match hand loops, statistics included") {
  auto r = load("import std.nn;\n");
  auto e = evaluate(*r, "layernorm", "N=2,C=5");
  const HostTensor &x = e.in.at("x"), &g = e.in.at("gamma"), &b = e.in.at("beta");
  for (int64_t n = 0; n < 2; ++n) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < 5; ++c) mean += at(x, {n, c}) / 5;
    for (int64_t c = 0; c < 5; ++c) var += (at(x, {n, c}) - mean) * (at(x, {n, c}) - mean) / 5;
    double rstd = 1 / std::sqrt(var + 1e-5);
    CHECK(close(at(e.out.at("mean"), {n}), mean));
    CHECK(close(at(e.out.at("rstd"), {n}), rstd));
    for (int64_t c = 0; c < 5; ++c)
      CHECK(close(at(e.out.at("y"), {n, c}), (at(x, {n, c}) - mean) * rstd * at(g, {c}) + at(b, {c})));
  }
  CHECK(e.out.at("mean").dtype == DType::F32);

  auto rms = evaluate(*r, "rmsnorm", "N=3,C=4", 11);
  const HostTensor &rx = rms.in.at("x"), &w = rms.in.at("weight");
  for (int64_t n = 0; n < 3; ++n) {
    double ms = 0;
    for (int64_t c = 0; c < 4; ++c) ms += at(rx, {n, c}) * at(rx, {n, c}) / 4;
    for (int64_t c = 0; c < 4; ++c)
      CHECK(close(at(rms.out.at("y"), {n, c}), at(rx, {n, c}) / std::sqrt(ms + 1e-6) * at(w, {c})));
  }
}

TEST_CASE("reference: sdpa, sdpa_explicit, sdpa_causal and sdpa_gqa match hand-written attention") {
  auto r = load("import std.nn;\n");
  auto e = evaluate(*r, "sdpa", "B=1,H=2,S=5,T=4,D=3,E=2");
  CHECK(e.out.at("o").shape == std::vector<int64_t>{1, 2, 5, 2});
  check_close(e.out.at("o").data, hand_attention(e.in, 1, 2, 2, 5, 4, 3, 2, false));

  // The online-softmax monoid (vector field o[E], slices v[b, h, j, :]) gives the same.
  const CheckedOp& explicit_op = r->program->ops.at("sdpa_explicit");
  TensorMap out = evaluate_reference(*r->program, explicit_op, bind(explicit_op, "B=1,H=2,S=5,T=4,D=3,E=2"), e.in);
  check_close(out.at("o").data, e.out.at("o").data, 1e-12);

  auto c = evaluate(*r, "sdpa_causal", "B=2,H=1,S=5,D=3,E=2", 3);
  check_close(c.out.at("o").data, hand_attention(c.in, 2, 1, 1, 5, 5, 3, 2, true));
  // Row 0 attends to key 0 only: its output is v[b, h, 0, :].
  CHECK(close(at(c.out.at("o"), {1, 0, 0, 1}), at(c.in.at("v"), {1, 0, 0, 1})));

  auto g = evaluate(*r, "sdpa_gqa", "B=1,H=4,KH=2,S=3,T=4,D=3,E=2", 5);
  check_close(g.out.at("o").data, hand_attention(g.in, 1, 4, 2, 3, 4, 3, 2, false));
}

TEST_CASE("reference: logsumexp (two passes) equals logsumexp_online (the monoid)") {
  auto r = load("import std.nn;\n");
  auto two = evaluate(*r, "logsumexp", "N=3,C=7", 21);
  auto one = evaluate(*r, "logsumexp_online", "N=3,C=7", 21);
  REQUIRE(two.in.at("x").data == one.in.at("x").data);
  check_close(one.out.at("y").data, two.out.at("y").data);
  for (int64_t n = 0; n < 3; ++n) {
    double s = 0;
    for (int64_t c = 0; c < 7; ++c) s += std::exp(at(two.in.at("x"), {n, c}));
    CHECK(close(at(two.out.at("y"), {n}), std::log(s)));
  }
}

TEST_CASE("reference: cross_entropy and cross_entropy_mean (an op call) match a hand loop") {
  auto r = load("import std.nn;\n");
  for (const char* op : {"cross_entropy", "cross_entropy_mean"}) {
    CAPTURE(op);
    auto e = evaluate(*r, op, "N=6,C=3", 9);
    const HostTensor &logits = e.in.at("logits"), &target = e.in.at("target");
    CHECK(target.dtype == DType::I64);
    std::set<double> classes;
    for (double t : target.data) {
      CHECK(t >= 0);  // class indices in [0, C), found through the op call too
      CHECK(t < 3);
      CHECK(t == std::trunc(t));
      classes.insert(t);
    }
    CHECK(classes.size() > 1);
    std::vector<double> loss;
    for (int64_t n = 0; n < 6; ++n) {
      double m = -INFINITY, l = 0;
      for (int64_t c = 0; c < 3; ++c) m = std::max(m, at(logits, {n, c}));
      for (int64_t c = 0; c < 3; ++c) l += std::exp(at(logits, {n, c}) - m);
      loss.push_back(m + std::log(l) - at(logits, {n, static_cast<int64_t>(at(target, {n}))}));
    }
    const HostTensor& got = e.out.at("loss");
    if (std::string(op) == "cross_entropy") {
      check_close(got.data, loss);
    } else {
      CHECK(got.shape.empty());
      double mean = 0;
      for (double x : loss) mean += x / 6;
      check_close(got.data, {mean});
    }
  }
}

TEST_CASE("reference: argmax and argmin take the first of tied values; empty reductions give the identity") {
  auto r = load(R"(
op picks(x: f32[N, V], keep: bool[N, V]) -> (hi: i64[N], lo: i64[N], masked: i64[N], none: f32[N], count: f32[N], some: bool[N], every: bool[N]) {
  hi[n] = argmax(v: x[n, v]);
  lo[n] = argmin(v: x[n, v]);
  masked[n] = argmax(v where keep[n, v]: x[n, v]);
  none[n] = max(v where v >= V: x[n, v]);
  count[n] = sum(v where keep[n, v]: x[n, v] * 0 + 1);
  some[n] = any(v: keep[n, v]);
  every[n] = all(v: keep[n, v]);
}
)");
  TensorMap in;
  in["x"] = tensor(DType::F32, {3, 4}, {1, 3, 3, 0, 2, 2, 2, 2, -1, 5, -1, 5});
  in["keep"] = tensor(DType::Bool, {3, 4}, {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1});
  auto e = evaluate(*r, "picks", "N=3,V=4", 1, in);
  CHECK(e.out.at("hi").data == std::vector<double>{1, 0, 1});
  CHECK(e.out.at("lo").data == std::vector<double>{3, 0, 0});
  CHECK(e.out.at("masked").data == std::vector<double>{2, 0, 1});  // row 1 keeps nothing: index 0
  CHECK(e.out.at("none").data == std::vector<double>(3, -INFINITY));
  CHECK(e.out.at("count").data == std::vector<double>{3, 0, 4});
  CHECK(e.out.at("some").data == std::vector<double>{1, 0, 1});
  CHECK(e.out.at("every").data == std::vector<double>{0, 0, 1});
  CHECK(e.out.at("hi").dtype == DType::I64);
}

TEST_CASE("reference: a user monoid with a vector field, lets, a where mask and record fields") {
  auto r = load(R"(
monoid moments(n: f32, s: f32[E], q: f32[E]) {
  identity = (0, 0, 0);
  lift(v: f32[E]) = (1, v, v * v);
  combine(a, b) {
    let n = a.n + b.n;
    let s = a.s + b.s;
    yield (n, s, a.q + b.q);
  }
}

op col_moments(x: f32[B, T, E], len: i64[B]) -> (mean: f32[B, E], sq: f32[B, E], count: f32[B]) {
  r[b] = moments(t where t < len[b]: x[b, t, :]);
  mean[b, e] = r.s[e] / max(r.n, 1);
  sq[b, e] = r[b].q[e];
  count[b] = r.n;
}
)");
  TensorMap len;
  len["len"] = tensor(DType::I64, {3}, {2, 0, 4});
  auto e = evaluate(*r, "col_moments", "B=3,T=4,E=3", 4, len);
  const HostTensor& x = e.in.at("x");
  CHECK(e.out.at("count").data == std::vector<double>{2, 0, 4});
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 3; ++c) {
      double s = 0, q = 0;
      int64_t n = static_cast<int64_t>(at(len.at("len"), {b}));
      for (int64_t t = 0; t < n; ++t) {
        s += at(x, {b, t, c});
        q += at(x, {b, t, c}) * at(x, {b, t, c});
      }
      CHECK(close(at(e.out.at("mean"), {b, c}), s / std::max<double>(static_cast<double>(n), 1)));
      CHECK(close(at(e.out.at("sq"), {b, c}), q));
    }

  // Random lengths come from their use: t < len[b] allows [0, T].
  auto rnd = evaluate(*r, "col_moments", "B=40,T=2,E=1", 8);
  std::set<double> lens(rnd.in.at("len").data.begin(), rnd.in.at("len").data.end());
  CHECK(lens == std::set<double>{0, 1, 2});
}

TEST_CASE("reference: welford (std.monoids, lets and select) matches two-pass moments") {
  auto r = load(R"(
import std.monoids;
op moments(x: f32[N, C]) -> (mean: f32[N], var: f32[N], count: f32[N]) {
  w[n] = welford(c: x[n, c]);
  mean[n] = w.u;
  var[n] = w[n].q / w.n;
  count[n] = welford(c: x[n, c] * 2.0).n + welford(c where c < 2: x[n, c]).n;
}
)");
  auto e = evaluate(*r, "moments", "N=2,C=7", 13);
  const HostTensor& x = e.in.at("x");
  for (int64_t n = 0; n < 2; ++n) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < 7; ++c) mean += at(x, {n, c}) / 7;
    for (int64_t c = 0; c < 7; ++c) var += (at(x, {n, c}) - mean) * (at(x, {n, c}) - mean) / 7;
    CHECK(close(at(e.out.at("mean"), {n}), mean));
    CHECK(close(at(e.out.at("var"), {n}), var));
    CHECK(at(e.out.at("count"), {n}) == 7 + 2);  // a field of a reduction read directly
  }
}

TEST_CASE("reference: integer division, remainder, casts, comparisons and dims as values") {
  auto r = load(R"(
op ints(a: i64[N], x: f32[N]) -> (q: i64[N], m: i64[N], t: i32[N], c: bool[N], h: f32[N], g: i64[N], k: f32[N]) {
  let G = N / 2;
  q[n] = (a[n] - 7) / 2;
  m[n] = (a[n] - 7) % 3;
  t[n] = i32(x[n] * 10.0);
  c[n] = x[n] > 0.0;
  h[n] = f16(x[n] / 3.0);
  g[n] = n / G + N;
  k[n] = a[n] / 4 + x[n];
}
)");
  TensorMap in;
  in["a"] = tensor(DType::I64, {5}, {0, 3, 4, 10, 12});
  in["x"] = tensor(DType::F32, {5}, {-0.27, 0.31, -1.0, 2.55, 0.1});
  auto e = evaluate(*r, "ints", "N=5", 1, in);
  CHECK(e.out.at("q").data == std::vector<double>{-3, -2, -1, 1, 2});  // truncation toward zero, as in C
  CHECK(e.out.at("m").data == std::vector<double>{-1, -1, 0, 0, 2});
  CHECK(e.out.at("t").data == std::vector<double>{-2, 3, -10, 25, 1});
  CHECK(e.out.at("c").data == std::vector<double>{0, 1, 0, 1, 1});
  for (int64_t n = 0; n < 5; ++n)  // an explicit f16() rounds to f16, as the kernels do
    CHECK(at(e.out.at("h"), {n}) == kir::round_to(kir::ScalarType::F16, at(in.at("x"), {n}) / 3.0));
  CHECK(at(e.out.at("h"), {0}) != at(in.at("x"), {0}) / 3.0);
  CHECK(e.out.at("g").data == std::vector<double>{5, 5, 6, 6, 7});
  CHECK(e.out.at("k").data == std::vector<double>{-0.27, 0.31, 0.0, 2 + 2.55, 3 + 0.1});
}

TEST_CASE("reference: bind_sizes parses bindings and explains every mistake in one line") {
  auto r = load(
      "import std.nn;\nop mqa(q: f16[B, 2, S, D], k: f16[B, 1, S, D]) -> (o: f16[B, 2, S]) {\n"
      "  o[b, h, i] = sum(d: q[b, h, i, d] * k[b, 0, i, d]);\n}\n");
  const CheckedOp& sdpa = r->program->ops.at("sdpa");
  SizeBindings ok = bind(sdpa, " B = 1, H=2 ,S=64,T=32,D=16,E=8 ");
  CHECK(ok == SizeBindings{{"B", 1}, {"H", 2}, {"S", 64}, {"T", 32}, {"D", 16}, {"E", 8}});

  std::string unknown = bind_error(sdpa, "B=1,H=2,SS=64,T=32,D=16,E=8");
  CHECK(unknown.find("unknown size 'SS'") != std::string::npos);
  CHECK(unknown.find("did you mean 'S'?") != std::string::npos);
  std::string missing = bind_error(sdpa, "B=1,H=2,S=4,D=16");
  CHECK(missing.find("missing sizes T, E") != std::string::npos);
  CHECK(bind_error(sdpa, "B=1,B=2,H=2,S=4,T=4,D=16,E=8").find("B is bound twice") != std::string::npos);
  CHECK(bind_error(sdpa, "B=0,H=2,S=4,T=4,D=16,E=8").find("B must be positive") != std::string::npos);
  CHECK(bind_error(sdpa, "B=-3,H=2,S=4,T=4,D=16,E=8").find("must be positive, got -3") != std::string::npos);
  CHECK(bind_error(sdpa, "B1,H=2").find("malformed size binding 'B1'") != std::string::npos);
  CHECK(bind_error(sdpa, "B=x,H=2").find("malformed value 'x' for size B") != std::string::npos);
  CHECK(bind_error(sdpa, "B=1,,H=2").find("malformed") != std::string::npos);
  for (const std::string& err : {unknown, missing}) CHECK(err.find('\n') == std::string::npos);

  // Literal dims need no binding; shapes resolve through the bindings.
  const CheckedOp& mqa = r->program->ops.at("mqa");
  SizeBindings s = bind(mqa, "B=2,S=3,D=4");
  CHECK(tensor_shape(*mqa.find("k"), s) == std::vector<int64_t>{2, 1, 3, 4});
  auto e = evaluate(*r, "mqa", "B=2,S=3,D=4");
  CHECK(e.out.at("o").shape == std::vector<int64_t>{2, 2, 3});
  CHECK_THROWS_AS(tensor_shape(*mqa.find("k"), SizeBindings{{"B", 2}}), std::runtime_error);
}

TEST_CASE("reference: random inputs are never zero, rounded to their dtype and deterministic") {
  auto r = load(
      "import std.nn;\nop mix(a: bf16[N], b: f32[N], c: bool[N], s: f32) -> (y: f32[N]) {\n"
      "  y[n] = select(c[n], a[n], b[n]) * s;\n}\n");
  const CheckedOp& sdpa = r->program->ops.at("sdpa");
  SizeBindings sizes = bind(sdpa, "B=2,H=3,S=16,T=16,D=8,E=8");
  TensorMap one = random_inputs(sdpa, sizes, 42);
  TensorMap two = random_inputs(sdpa, sizes, 42);
  TensorMap other = random_inputs(sdpa, sizes, 43);
  for (const char* name : {"q", "k", "v"}) {
    CAPTURE(name);
    const HostTensor& t = one.at(name);
    CHECK(t.dtype == DType::F16);
    CHECK(t.data == two.at(name).data);
    CHECK(t.data != other.at(name).data);
    int negative = 0;
    for (double x : t.data) {
      CHECK(x != 0);
      CHECK(std::fabs(x) >= 0.0999);
      CHECK(std::fabs(x) <= 1.0);
      double scaled = std::ldexp(x, 14);  // f16 values in [2^-4, 1] are multiples of 2^-14
      CHECK(scaled == std::trunc(scaled));
      negative += x < 0;
    }
    CHECK(negative > static_cast<int>(t.size()) / 4);
    CHECK(negative < 3 * static_cast<int>(t.size()) / 4);
  }
  CHECK(one.at("q").shape == std::vector<int64_t>{2, 3, 16, 8});

  const CheckedOp& mix = r->program->ops.at("mix");
  TensorMap m = random_inputs(mix, bind(mix, "N=64"), 5);
  bool some_inexact_f32 = false;
  for (double x : m.at("a").data) {
    double scaled = std::ldexp(x, 11);  // bf16: 8 significant bits
    CHECK(scaled == std::trunc(scaled));
  }
  for (double x : m.at("b").data) {
    CHECK(x == static_cast<double>(static_cast<float>(x)));
    some_inexact_f32 |= std::ldexp(x, 11) != std::trunc(std::ldexp(x, 11));
  }
  CHECK(some_inexact_f32);
  std::set<double> bools(m.at("c").data.begin(), m.at("c").data.end());
  CHECK(bools == std::set<double>{0, 1});
  CHECK(m.at("s").shape.empty());
  CHECK(m.at("s").data.size() == 1);
}

TEST_CASE("reference: compare measures the relative L2 error and flags NaN and shape mismatches") {
  HostTensor ref = tensor(DType::F32, {2, 2}, {1, 2, 3, 4});
  HostTensor near = tensor(DType::F32, {2, 2}, {1, 2, 3, 4.001});
  Comparison c = compare(near, ref, {1e-3, 2e-3, 0});
  CHECK(c.ok);
  CHECK(c.rel_l2 == doctest::Approx(0.001 / std::sqrt(30.0)));
  CHECK(c.max_abs == doctest::Approx(0.001));
  CHECK(c.worst == 3);
  CHECK(c.off == 0);
  CHECK(c.elements == 4);
  CHECK_FALSE(compare(near, ref, {1e-5, 2e-3, 0}).ok);  // the L2 figure is still required
  // And so is the elementwise bound: 1e-3 > 4e-4 + 2e-4 * rms (2.74).
  const Comparison elementwise = compare(near, ref, {2e-4, 4e-4, 0});
  CHECK(elementwise.rel_l2 <= 2e-4);
  CHECK(elementwise.off == 1);
  CHECK_FALSE(elementwise.ok);

  HostTensor nan = tensor(DType::F32, {2, 2}, {1, std::nan(""), 3, 4});
  Comparison n = compare(nan, ref, {1.0, 1.0, 0});
  CHECK_FALSE(n.ok);
  CHECK(n.non_finite == 1);
  CHECK(n.off == 1);
  CHECK(n.worst == 1);
  CHECK(std::isnan(n.worst_got));
  CHECK(n.worst_want == 2);

  HostTensor wide = tensor(DType::F32, {4}, {1, 2, 3, 4});
  Comparison s = compare(wide, ref, {1.0, 1.0, 1.0});
  CHECK_FALSE(s.ok);
  CHECK(s.shape_error.find("[4]") != std::string::npos);

  const double inf = std::numeric_limits<double>::infinity();
  HostTensor ref_inf = tensor(DType::F32, {2}, {-inf, 1});
  Comparison exact_inf = compare(tensor(DType::F32, {2}, {-inf, 1}), ref_inf, {0, 0, 0, 1.0});
  CHECK(exact_inf.ok);
  CHECK(exact_inf.reference_inf == 1);
  CHECK_FALSE(compare(tensor(DType::F32, {2}, {0, 1}), ref_inf, {1.0, 1.0, 1.0, 1.0}).ok);
  CHECK_FALSE(compare(tensor(DType::F32, {2}, {inf, 1}), ref_inf, {1.0, 1.0, 1.0, 1.0}).ok);  // the other infinity

  HostTensor ints = tensor(DType::I64, {3}, {0, 1, 2});
  CHECK(compare(ints, ints, tolerance_for(DType::I64)).ok);
  Comparison off_by_one = compare(tensor(DType::I64, {3}, {0, 1, 3}), ints, tolerance_for(DType::I64));
  CHECK_FALSE(off_by_one.ok);
  CHECK(off_by_one.off == 1);
  CHECK(off_by_one.worst == 2);
}

TEST_CASE("reference: the tolerance table, and an op's tolerance is its least precise float's") {
  struct Row {
    DType dtype;
    double rel_l2, atol, rtol;
  };
  for (const Row& r : {Row{DType::F16, 5e-3, 5e-3, 1e-2}, Row{DType::BF16, 3e-2, 3e-2, 6e-2},
                       Row{DType::F32, 1e-5, 1e-5, 1e-4}, Row{DType::F64, 1e-12, 1e-12, 1e-10},
                       Row{DType::Bool, 0, 0, 0}, Row{DType::I32, 0, 0, 0}, Row{DType::I64, 0, 0, 0}}) {
    CAPTURE(dtype_name(r.dtype));
    const Tolerance t = tolerance_for(r.dtype);
    CHECK(t.rel_l2 == r.rel_l2);
    CHECK(t.atol == r.atol);
    CHECK(t.rtol == r.rtol);
    CHECK(t.max_non_finite_reference == kMaxNonFiniteReference);
  }
  auto r =
      load("op mix(x: f16[N], y: f32[N]) -> (o: f32[N], i: i64[N]) { o[n] = f32(x[n]) + y[n]; i[n] = i64(y[n]); }");
  REQUIRE(!r->diags->has_errors());
  const CheckedOp& mix = r->program->ops.at("mix");
  CHECK(tolerance_for(mix, DType::F32).rtol == tolerance_for(DType::F16).rtol);
  CHECK(tolerance_for(mix, DType::I64).rel_l2 == 0);
}

TEST_CASE("reference: compare bounds every element: one element off fails though the L2 figure is fine") {
  // 1000 elements of 1; one is off by 2e-4, past f32's 1e-5 + 1e-4 * 1 but an L2 error of only
  // 2e-4 / sqrt(1000) = 6.3e-6, within f32's 1e-5.
  std::vector<double> ones(1000, 1.0), near = ones;
  near[617] = 1.0002;
  const Tolerance f32 = tolerance_for(DType::F32);
  const Comparison c = compare(tensor(DType::F32, {10, 100}, near), tensor(DType::F32, {10, 100}, ones), f32);
  CHECK(c.rel_l2 < f32.rel_l2);
  CHECK_FALSE(c.ok);
  CHECK(c.off == 1);
  CHECK(c.worst == 617);
  CHECK(c.worst_got == 1.0002);
  CHECK(c.worst_want == 1.0);
  const std::string why = failure_reason("o", c, f32, {10, 100});
  CHECK(why ==
        "1 of 1000 elements off, worst o[6, 17]: got 1.0002, want 1 (bound 1.0e-05 + 1.0e-04*|want| + 1.0e-05*rms, rms "
        "1)");
  // Within the bound it passes: 1e-5 + 1e-4 * 1 + 1e-5 * 1 = 1.2e-4.
  near[617] = 1.0001;
  CHECK(compare(tensor(DType::F32, {10, 100}, near), tensor(DType::F32, {10, 100}, ones), f32).ok);
  // atol where the reference is 0; rtol scales with |ref|; rel_l2 (1e-9 here) with the RMS (707).
  const Tolerance t{1e-9, 1e-5, 1e-4};
  const HostTensor zero_and_large = tensor(DType::F32, {2}, {0, 1000});
  CHECK(compare(tensor(DType::F32, {2}, {9e-6, 1000.09}), zero_and_large, t).off == 0);
  CHECK(compare(tensor(DType::F32, {2}, {2e-5, 1000}), zero_and_large, t).off == 1);
  CHECK(compare(tensor(DType::F32, {2}, {0, 1000.2}), zero_and_large, t).off == 1);
}

TEST_CASE("reference: an element where a sum's terms cancel is judged against the output's RMS") {
  // y = 0.01 is a sum whose terms are of the size of its neighbours (100): a kernel that rounds
  // the terms to f16 is off by the terms' rounding there, not by 1% of 0.01.
  const HostTensor want = tensor(DType::F16, {4}, {100, -100, 0.01, 100});
  const Tolerance f16 = tolerance_for(DType::F16);
  const Comparison near = compare(tensor(DType::F16, {4}, {100, -100, 0.3, 100}), want, f16);
  CHECK(near.reference_rms == doctest::Approx(std::sqrt(30000.0001 / 4)));
  CHECK(near.off == 0);  // 0.29 <= 5e-3 + 1e-2 * 0.01 + 5e-3 * 86.6 = 0.438
  CHECK(near.ok);
  const Comparison far = compare(tensor(DType::F16, {4}, {100, -100, 0.5, 100}), want, f16);
  CHECK(far.off == 1);  // 0.49 > 0.438
  CHECK_FALSE(far.ok);
  CHECK(failure_reason("y", far, f16, {4}) ==
        "1 of 4 elements off, worst y[2]: got 0.5, want 0.01 (bound 5.0e-03 + 1.0e-02*|want| + 5.0e-03*rms, rms "
        "86.6)");
  // Non-finite reference elements do not count in the RMS.
  const double inf = std::numeric_limits<double>::infinity();
  const Comparison with_inf = compare(tensor(DType::F16, {3}, {inf, 3, 4}), tensor(DType::F16, {3}, {inf, 3, 4}), f16);
  CHECK(with_inf.reference_rms == doctest::Approx(std::sqrt(12.5)));
}

TEST_CASE("reference: NaN matches NaN at the same place; a reference mostly NaN or infinite fails the check") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const Tolerance loose{1, 1, 1, 1.0};  // any fraction of non-finite reference allowed
  HostTensor ref = tensor(DType::F32, {4}, {1, nan, 3, inf});
  CHECK(compare(tensor(DType::F32, {4}, {1, nan, 3, inf}), ref, loose).ok);
  Comparison moved = compare(tensor(DType::F32, {4}, {nan, 2, 3, inf}), ref, loose);
  CHECK_FALSE(moved.ok);
  CHECK(moved.off == 2);  // NaN where the reference is 1, 2 where it is NaN
  CHECK(moved.worst == 0);
  CHECK(moved.non_finite == 1);

  // All NaN on both sides: equal, but the check tests nothing, so it fails and says why.
  std::vector<double> all_nan(512, nan);
  const Comparison c =
      compare(tensor(DType::F16, {8, 64}, all_nan), tensor(DType::F16, {8, 64}, all_nan), tolerance_for(DType::F16));
  CHECK(c.rel_l2 == 0);
  CHECK(c.off == 0);
  CHECK(c.reference_nan == 512);
  CHECK_FALSE(c.ok);
  CHECK(c.reference_error ==
        "the reference is NaN in 100% of the elements (512 of 512; at most 1% allowed): these inputs check nothing");
  CHECK(failure_reason("o", c, tolerance_for(DType::F16), {8, 64}) == c.reference_error);

  // The rule's edge: 1% of the elements may be non-finite (5 of 500), 6 of 500 may not.
  std::vector<double> some(500, 0.5);
  for (size_t i = 0; i < 5; ++i) some[i * 100] = -inf;
  CHECK(compare(tensor(DType::F32, {500}, some), tensor(DType::F32, {500}, some), tolerance_for(DType::F32)).ok);
  some[1] = nan;
  const Comparison six =
      compare(tensor(DType::F32, {500}, some), tensor(DType::F32, {500}, some), tolerance_for(DType::F32));
  CHECK_FALSE(six.ok);
  CHECK(six.reference_error.find("NaN or infinite in 1.2%") != std::string::npos);
}

TEST_CASE("reference: hostile inputs change the float inputs as their kind says, deterministically") {
  auto r =
      load("op f(x: f16[N, C], w: f32[C], t: i64[N]) -> (y: f32[N, C]) { y[n, c] = f32(x[n, c]) * w[c] + f32(t[n]); }");
  REQUIRE(!r->diags->has_errors());
  const CheckedOp& f = r->program->ops.at("f");
  const SizeBindings sizes = bind(f, "N=4,C=8");
  const TensorMap base = random_inputs(f, sizes, 9);
  for (HostileKind kind : kHostileKinds) {
    CAPTURE(hostile_kind_name(kind));
    const TensorMap h = hostile_inputs(f, sizes, 9, kind);
    CHECK(h.at("t").data == base.at("t").data);  // integers are left alone
    const std::vector<double>& x = h.at("x").data;
    REQUIRE(x.size() == 32);
    if (kind != HostileKind::NaN) CHECK(hostile_inputs(f, sizes, 9, kind).at("x").data == x);  // deterministic
    switch (kind) {
      case HostileKind::Large:
        for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i]) >= 1.19);
        CHECK(h.at("w").data == base.at("w").data);  // f32 keeps its magnitudes
        break;
      case HostileKind::NegInfRows:
        for (size_t i = 0; i < x.size(); ++i) CHECK((i < 8) == (x[i] == -std::numeric_limits<double>::infinity()));
        CHECK(h.at("w").data == base.at("w").data);  // rank 1: no rows
        break;
      case HostileKind::LeadingNegInf:
        for (size_t i = 0; i < x.size(); ++i) CHECK((i % 8 == 0) == (x[i] == -std::numeric_limits<double>::infinity()));
        break;
      case HostileKind::TrailingNegInf:
        for (size_t i = 0; i < x.size(); ++i) CHECK((i % 8 == 7) == (x[i] == -std::numeric_limits<double>::infinity()));
        break;
      case HostileKind::NegInfPrefix:
        for (size_t i = 0; i < x.size(); ++i) CHECK((i % 8 < 4) == (x[i] == -std::numeric_limits<double>::infinity()));
        CHECK(h.at("w").data == base.at("w").data);
        break;
      case HostileKind::NaN:
        for (size_t i = 0; i < x.size(); ++i) CHECK((i % 7 == 3) == std::isnan(x[i]));
        CHECK(std::isnan(h.at("w").data[3]));
        break;
      case HostileKind::Denormal:
        for (size_t i = 0; i < x.size(); i += 2) CHECK((x[i] != 0 && std::fabs(x[i]) < std::ldexp(1.0, -14)));
        CHECK(std::fabs(h.at("w").data[0]) < std::ldexp(1.0, -126));
        break;
    }
  }
}

TEST_CASE("reference: compare over many chunks (threads) agrees with one sequential pass") {
  // 3.5 chunks of 2^20: the largest error twice, in chunks 1 and 3 (the first one is reported),
  // NaNs in two chunks, a non-finite reference matched.
  const size_t n = (size_t{7} << 20) / 2;
  HostTensor ref, got;
  ref.dtype = got.dtype = DType::F32;
  ref.shape = got.shape = {static_cast<int64_t>(n)};
  ref.data.resize(n);
  got.data.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ref.data[i] = 1.0 + static_cast<double>(i % 1000) / 1000;
    got.data[i] = ref.data[i] + ((i * 2654435761u) % 1001) * 1e-9;
  }
  const size_t first_worst = (size_t{1} << 20) + 12345, second_worst = (size_t{3} << 20) + 7;
  got.data[first_worst] = ref.data[first_worst] + 0.5;
  got.data[second_worst] = ref.data[second_worst] + 0.5;
  got.data[17] = std::nan("");
  got.data[(size_t{2} << 20) + 1] = std::nan("");
  ref.data[n - 1] = got.data[n - 1] = std::numeric_limits<double>::infinity();
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i + 1 < n; ++i)
    if (std::isfinite(got.data[i])) {
      err2 += (got.data[i] - ref.data[i]) * (got.data[i] - ref.data[i]);
      ref2 += ref.data[i] * ref.data[i];
    }
  const Comparison c = compare(got, ref, {1.0, 1.0, 0, 1.0});
  CHECK(c.non_finite == 2);
  CHECK_FALSE(c.ok);     // the NaNs
  CHECK(c.worst == 17);  // a NaN's error is infinite: the first one
  CHECK(c.rel_l2 == doctest::Approx(std::sqrt(err2 / ref2)).epsilon(1e-12));
  got.data[17] = ref.data[17];
  got.data[(size_t{2} << 20) + 1] = ref.data[(size_t{2} << 20) + 1];
  const Comparison d = compare(got, ref, {1.0, 1.0, 0, 1.0});
  CHECK(d.ok);
  CHECK(d.non_finite == 0);
  CHECK(d.worst == first_worst);
  CHECK(d.max_abs == doctest::Approx(0.5));
}

TEST_CASE("reference: bad inputs and out-of-range reads are errors, not crashes") {
  auto r = load(R"(
op shift(x: f32[N]) -> (y: f32[N]) {
  y[i] = x[i + 1];
}
op div(a: i64[N]) -> (y: i64[N]) {
  y[n] = a[n] / (a[n] - a[n]);
}
op guarded(x: f32[N]) -> (y: f32[N]) {
  y[i] = select(i + 1 < N, x[i + 1], 0.0) + select(i > 0 && x[i - 1] > 0.0, 1.0, 0.0);
}
)");
  const CheckedOp& shift = r->program->ops.at("shift");
  SizeBindings n4 = bind(shift, "N=4");
  TensorMap in = random_inputs(shift, n4, 1);
  CHECK_THROWS_WITH_AS(evaluate_reference(*r->program, shift, n4, in),
                       doctest::Contains("out of range for dim 0 of 'x'"), std::runtime_error);
  try {  // located at the read (E068, rendered by the driver)
    evaluate_reference(*r->program, shift, n4, in);
  } catch (const ReferenceRangeError& e) {
    CHECK(e.range.valid());
    CHECK(e.message.find("index 4 is out of range") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(evaluate_reference(*r->program, shift, n4, TensorMap{}), doctest::Contains("no input 'x'"),
                       std::runtime_error);
  TensorMap wrong;
  wrong["x"] = tensor(DType::F32, {3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(evaluate_reference(*r->program, shift, n4, wrong), doctest::Contains("has shape [3]"),
                       std::runtime_error);
  CHECK_THROWS_AS(evaluate_reference(*r->program, shift, SizeBindings{}, in), std::runtime_error);
  const CheckedOp& div = r->program->ops.at("div");
  try {
    evaluate_reference(*r->program, div, n4, random_inputs(div, n4, 1));
    FAIL("no error");
  } catch (const ReferenceRangeError& e) {  // located, E069
    CHECK(e.range.valid());
    CHECK(e.code == "E069");
    CHECK(e.message.find("by zero") != std::string::npos);
  }

  // select evaluates only the branch it takes, and && stops early: guarded reads stay in range.
  TensorMap g;
  g["x"] = tensor(DType::F32, {4}, {0.5, -0.5, 0.25, 1});
  auto e = evaluate(*r, "guarded", "N=4", 1, g);
  CHECK(e.out.at("y").data == std::vector<double>{-0.5, 1.25, 1, 1});
}

TEST_CASE("reference: every op of the standard library and the examples evaluates to finite values") {
  std::string sources = "import std.nn;\nimport std.linalg;\n";
  auto r = load(sources);
  std::vector<std::pair<std::string, std::unique_ptr<test::Run>>> programs;
  programs.emplace_back("stdlib", std::move(r));
  for (const auto& entry : std::filesystem::directory_iterator(std::string(EMMY_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".emmy") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    programs.emplace_back(entry.path().filename().string(), load(text.str()));
  }
  int evaluated = 0;
  for (const auto& [file, run] : programs) {
    for (const auto& [name, op] : run->program->ops) {
      CAPTURE(file);
      CAPTURE(name);
      SizeBindings sizes;
      for (const TensorInfo& t : op.tensors)
        for (const Size& s : t.shape)
          if (!s.symbol.empty()) sizes[s.symbol] = 3;
      TensorMap in = random_inputs(op, sizes, 17);
      TensorMap out;
      REQUIRE_NOTHROW(out = evaluate_reference(*run->program, op, sizes, in));
      for (const TensorInfo& t : op.tensors) {
        if (t.role != TensorInfo::Role::Output) continue;
        REQUIRE(out.count(t.name));
        CHECK(out.at(t.name).shape == tensor_shape(t, sizes));
        for (double v : out.at(t.name).data) CHECK(std::isfinite(v));
      }
      ++evaluated;
    }
  }
  CHECK(evaluated > 40);
}

TEST_CASE("bind_scalars: --set values checked against each scalar parameter's dtype") {
  auto r = load("op f(x: f32[N], w: i32, h: f16, on: bool) -> (y: f32[N]) {\n  y[n] = x[n] * h;\n}\n");
  const CheckedOp& op = r->program->ops.at("f");
  auto ok = bind_scalars(op, {"w=3, h=0.1", "on=true"});
  REQUIRE(std::holds_alternative<ScalarValues>(ok));
  const ScalarValues& v = std::get<ScalarValues>(ok);
  CHECK(v.at("w") == 3);
  CHECK(v.at("on") == 1);
  CHECK(v.at("h") != 0.1);  // rounded to f16, as inputs are
  CHECK(std::abs(v.at("h") - 0.1) < 1e-4);
  CHECK(scalars_text(v) == fmt::format("h={},on=1,w=3", v.at("h")));
  TensorMap in = random_inputs(op, bind(op, "N=4"), 1);
  set_scalars(in, v);
  CHECK(in.at("w").data == std::vector<double>{3});
  CHECK(in.at("x").data.size() == 4);  // tensors keep their random values

  auto error = [&](const std::string& text) {
    auto b = bind_scalars(op, {text});
    REQUIRE(std::holds_alternative<std::string>(b));
    return std::get<std::string>(b);
  };
  CHECK(error("ww=3").find("did you mean 'w'?") != std::string::npos);
  CHECK(error("x=3").find("'x' is a tensor parameter of f (f32[N])") != std::string::npos);
  CHECK(error("N=3").find("'N' is a size of f: give it in --shape") != std::string::npos);
  CHECK(error("w=2.5") == "w is an i32 parameter, and 2.5 is not an integer: write e.g. w=2");
  CHECK(error("on=2").find("out of bool's range") != std::string::npos);
  CHECK(error("h=70000").find("out of f16's range (-65504 to 65504)") != std::string::npos);
  CHECK(error("w=inf").find("not a finite number") != std::string::npos);
  CHECK(error("w=x").find("not a number") != std::string::npos);
  CHECK(error("w=1,w=2") == "w is set twice: give each parameter once");
  CHECK(error("=3").find("malformed entry") != std::string::npos);
}

namespace {

// examples/causal_attention.emmy's attention block at C = 512: its projections' explicit f16
// casts round arguments of ~8, and scores of +-70 carry a neighbouring f16 value far.
struct Block {
  std::unique_ptr<test::Run> run = test::check_file(std::string(EMMY_SOURCE_DIR) + "/examples/causal_attention.emmy");
  const CheckedOp& op = run->program->ops.at("causal_self_attention");
  SizeBindings sizes{{"B", 1}, {"S", 128}, {"C", 512}, {"H", 4}, {"D", 64}};
  TensorMap in = random_inputs(op, sizes, 1);
  HostTensor y(const ReferenceOptions& options = {}) const {
    return evaluate_reference(*run->program, op, sizes, in, {}, options).at("y");
  }
};

}  // namespace

TEST_CASE("reference: cast jitter moves a narrowing cast's argument, reproducibly, and nothing else") {
  const Block block;
  REQUIRE(!block.run->diags->has_errors());
  const HostTensor plain = block.y();
  CHECK(block.y({0.0, 7}).data == plain.data);
  const HostTensor a = block.y({kCastJitter, 7});
  CHECK(block.y({kCastJitter, 7}).data == a.data);
  CHECK(block.y({kCastJitter, 8}).data != a.data);
  CHECK(a.data != plain.data);
  // A cast whose argument is already of its type (x * 2 of an f16 x) never moves.
  auto r = load("op exact(x: f16[N, C]) -> (y: f16[N, C]) { y[n, c] = f16(x[n, c] * 2.0); }\n");
  REQUIRE(!r->diags->has_errors());
  const CheckedOp& exact = r->program->ops.at("exact");
  const SizeBindings small{{"N", 8}, {"C", 16}};
  const TensorMap xin = random_inputs(exact, small, 3);
  CHECK(evaluate_reference(*r->program, exact, small, xin, {}, {0x1p-4, 7}).at("y").data ==
        evaluate_reference(*r->program, exact, small, xin).at("y").data);
}

TEST_CASE("checks: a run whose casts round elsewhere is within its peers; a run worse than them is not") {
  const Block block;
  REQUIRE(!block.run->diags->has_errors());
  const HostTensor ref = block.y();
  const Tolerance tol = tolerance_for(block.op, DType::F16);
  std::vector<Comparison> peers;
  for (uint64_t seed = 1; seed <= kJitteredReferences; ++seed)
    peers.push_back(compare(block.y({kCastJitter, seed}), ref, tol));
  // A run that rounds its casts elsewhere (another seed) is off elementwise: the op is that
  // ill-conditioned at these inputs, and so are its peers (18-31 of 32,768 elements each).
  const Comparison run = compare(block.y({kCastJitter, 202}), ref, tol);
  CHECK_FALSE(run.ok);
  CHECK(run.rel_l2 <= tol.rel_l2);
  CHECK(std::any_of(peers.begin(), peers.end(), [](const Comparison& p) { return p.worst_excess > 1; }));
  CHECK(within_peers(run, peers, tol));
  // The tuner's gate, with the peers made on its first miss (cast_jittered_references).
  const TensorMap want{{"y", ref}}, got{{"y", block.y({kCastJitter, 202})}};
  CHECK_FALSE(tune::first_wrong_output(block.op, got, want).empty());
  std::optional<std::vector<TensorMap>> made;
  const tune::Peers lazily = [&]() -> const std::vector<TensorMap>& {
    if (!made) made = cast_jittered_references(*block.run->program, block.op, block.sizes, block.in, 0);
    return *made;
  };
  CHECK(tune::first_wrong_output(block.op, got, want, lazily).empty());
  CHECK(made.has_value());
  CHECK(tune::first_wrong_output(block.op, want, want, lazily).empty());
  // The rule on its own: up to kPeerFactor times the worst peer's excess, not past it.
  Comparison worst_peer;
  worst_peer.worst_excess = 1.5;
  Comparison kernel = run;
  kernel.ok = false;
  kernel.worst_excess = 0.99 * kPeerFactor * 1.5;
  CHECK(within_peers(kernel, {worst_peer}, tol));
  kernel.worst_excess = 1.01 * kPeerFactor * 1.5;  // a wrong element, not a rounding
  CHECK_FALSE(within_peers(kernel, {worst_peer}, tol));
  kernel.worst_excess = 1.2;
  kernel.rel_l2 = 2 * tol.rel_l2;
  CHECK_FALSE(within_peers(kernel, {worst_peer}, tol));
  // Peers that are not off (an op without casts: they equal the reference) excuse nothing.
  std::vector<Comparison> exact(kJitteredReferences, compare(ref, ref, tol));
  CHECK_FALSE(within_peers(run, exact, tol));
  // Nor do peers excuse a non-finite element.
  HostTensor nan = block.y({kCastJitter, 202});
  nan.data[3] = std::nan("");
  CHECK_FALSE(within_peers(compare(nan, ref, tol), peers, tol));
}

TEST_CASE("reference: the work estimate counts each statement's points times its value's nodes") {
  auto r = test::check_source(R"(
op rows(x: f32[N, C], g: f32[C]) -> (y: f32[N, C]) {
  m[n] = sum(c: x[n, c]);
  y[n, c] = (x[n, c] - m[n]) * g[c];
}
op twice(x: f32[N, C], g: f32[C]) -> (z: f32[N, C]) {
  z[n, c] = rows(x, g)[n, c] * 2.0;
}
)");
  REQUIRE_MESSAGE(r->codes().empty(), r->rendered());
  const SizeBindings sizes{{"N", 3}, {"C", 50257}};
  const double rows = emmy::work_estimate(*r->program, r->program->ops.at("rows"), sizes);
  // Linear in the elements (a pass a statement), not points x reduction extent (7.6e9).
  CHECK(rows > 3.0 * 50257 * 2);
  CHECK(rows < 3.0 * 50257 * 30);
  const double twice = emmy::work_estimate(*r->program, r->program->ops.at("twice"), sizes);
  CHECK(twice > rows);
  CHECK(twice < rows * 2);  // the callee counted once, not once a point
}

TEST_CASE("reference: in f32 arithmetic every f32 value is rounded after each operation, as f32 kernels compute") {
  auto r = test::check_source(R"(
op gelu_slope(x: f32[N]) -> (y: f32[N]) {
  y[n] = 1.0 + tanh(x[n]);
}
op cancel(x: f32[N]) -> (s: f32) {
  s = sum(n: x[n]);
}
)");
  REQUIRE_MESSAGE(r->codes().empty(), r->rendered());
  ReferenceOptions f32;
  f32.f32_arithmetic = true;
  // 1 + tanh(z) at z = -9: f64 keeps 3.0e-8 of it, f32 rounds tanh to -1 and gets 0.
  TensorMap in;
  in["x"] = tensor(DType::F32, {2}, {-9, 0.5});
  const SizeBindings n2{{"N", 2}};
  const CheckedOp& slope = r->program->ops.at("gelu_slope");
  const HostTensor exact = evaluate_reference(*r->program, slope, n2, in).at("y");
  const HostTensor rounded = evaluate_reference(*r->program, slope, n2, in, {}, f32).at("y");
  CHECK(exact.data[0] == doctest::Approx(1 + std::tanh(-9.0)).epsilon(1e-12));
  CHECK(exact.data[0] > 1e-8);
  for (size_t i = 0; i < 2; ++i)
    CHECK(rounded.data[i] == static_cast<double>(1.0f + static_cast<float>(std::tanh(in["x"].data[i]))));
  // A sum's steps stay exact (1e8 + 1 - 1e8 is 1, not f32's serial 0): a long f32 run would be
  // farther off than the kernels' trees and widen the peers' bounds; its result is rounded once.
  TensorMap big;
  big["x"] = tensor(DType::F32, {3}, {1e8, 1, -1e8});
  const SizeBindings n3{{"N", 3}};
  const CheckedOp& cancel = r->program->ops.at("cancel");
  CHECK(evaluate_reference(*r->program, cancel, n3, big).at("s").data[0] == 1);
  CHECK(evaluate_reference(*r->program, cancel, n3, big, {}, f32).at("s").data[0] == 1);
  big["x"] = tensor(DType::F32, {3}, {0.1, 0.2, 0});
  CHECK(evaluate_reference(*r->program, cancel, n3, big, {}, f32).at("s").data[0] ==
        static_cast<double>(static_cast<float>(static_cast<double>(0.1f) + static_cast<double>(0.2f))));
  // The peers include it: kJitteredReferences jittered ones and the f32 one.
  CHECK(cast_jittered_references(*r->program, cancel, n3, big, 1).size() == kJitteredReferences + 1);
}

TEST_CASE("checks: an L2 figure past the tolerance is excused only by peers past it too, up to kPeerFactor") {
  const Tolerance tol = tolerance_for(DType::F32);
  Comparison kernel;
  kernel.rel_l2 = 3 * tol.rel_l2;
  kernel.worst_excess = 0.5;  // every element within its bound
  Comparison peer;
  peer.rel_l2 = 2 * tol.rel_l2;
  CHECK(within_peers(kernel, {peer}, tol));
  kernel.rel_l2 = 4.1 * tol.rel_l2;  // past twice the peer's
  CHECK_FALSE(within_peers(kernel, {peer}, tol));
  kernel.rel_l2 = 3 * tol.rel_l2;
  peer.rel_l2 = tol.rel_l2;  // a peer within the tolerance excuses nothing
  CHECK_FALSE(within_peers(kernel, {peer}, tol));
  // Both figures must hold: an element far past the peers' fails whatever L2 says.
  peer.rel_l2 = 2 * tol.rel_l2;
  peer.worst_excess = 1.5;
  kernel.worst_excess = 3.5;
  CHECK_FALSE(within_peers(kernel, {peer}, tol));
  kernel.worst_excess = 2.5;
  CHECK(within_peers(kernel, {peer}, tol));
}
