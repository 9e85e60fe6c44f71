// Sema rules: promotion, shapes of index variables, reductions, monoids, schedules.
#include <doctest/doctest.h>

#include "sema/types.hpp"
#include "test_helpers.hpp"

using namespace emmy;
using emmy::test::check_source;

namespace {

const TensorInfo& tensor(const test::Run& r, const std::string& op, const std::string& name) {
  const TensorInfo* t = r.program->ops.at(op).find(name);
  REQUIRE(t != nullptr);
  return *t;
}

std::string shape(const TensorInfo& t) {
  std::string s;
  for (const Size& x : t.shape) {
    if (!s.empty()) s += ',';
    s += x.str();
  }
  return s;
}

}  // namespace

TEST_CASE("promotion table") {
  auto s = [](DType d) { return Type::scalar(d); };
  auto weak_int = Type::scalar(DType::I64, true);
  auto weak_float = Type::scalar(DType::F32, true);
  CHECK(promote(s(DType::F16), s(DType::F16)).dtype == DType::F16);
  CHECK(promote(s(DType::F16), s(DType::BF16)).dtype == DType::F32);
  CHECK(promote(s(DType::F16), s(DType::F32)).dtype == DType::F32);
  CHECK(promote(s(DType::F32), s(DType::F64)).dtype == DType::F64);
  CHECK(promote(s(DType::I32), s(DType::I64)).dtype == DType::I64);
  CHECK(promote(s(DType::I32), s(DType::F16)).dtype == DType::F16);
  CHECK(promote(s(DType::F16), weak_int).dtype == DType::F16);
  CHECK(promote(s(DType::BF16), weak_float).dtype == DType::BF16);
  CHECK(promote(s(DType::I32), weak_float).dtype == DType::F32);
  CHECK(promote(s(DType::I32), weak_int).dtype == DType::I32);
  CHECK(promote(weak_int, weak_float).weak);
  CHECK(materialize(promote(weak_int, weak_float)) == DType::F32);
  CHECK(materialize(weak_int) == DType::I64);
  CHECK(storable(s(DType::F32), DType::F16));
  CHECK(storable(s(DType::I32), DType::F16));
  CHECK_FALSE(storable(s(DType::F32), DType::I32));
  CHECK_FALSE(storable(s(DType::Bool), DType::F32));
  CHECK(storable(s(DType::Bool), DType::Bool));
  CHECK(parse_dtype("bf16") == DType::BF16);
  CHECK_FALSE(parse_dtype("f8").has_value());
}

TEST_CASE("shapes and dtypes of intermediates are inferred") {
  auto r = check_source(R"(
op f(x: f16[N, C], w: bf16[C, K]) -> (y: f32[N, K]) {
  h[n, k] = sum(c: x[n, c] * w[c, k]);
  m[n] = max(k: h[n, k]);
  a[n] = argmax(k: h[n, k]);
  z[n] = any(k: h[n, k] > 0.0);
  y[n, k] = h[n, k] - m;
}
)");
  CHECK(r->codes() == "");
  CHECK(tensor(*r, "f", "h").elem.str() == "f32");  // f16*bf16 -> f32
  CHECK(shape(tensor(*r, "f", "h")) == "N,K");
  CHECK(shape(tensor(*r, "f", "m")) == "N");
  CHECK(tensor(*r, "f", "a").elem.str() == "i64");
  CHECK(tensor(*r, "f", "z").elem.str() == "bool");
  const auto& reds = r->program->ops.at("f").reductions;
  REQUIRE(reds.size() == 4);
  CHECK(reds[0].axes == std::vector<std::string>{"c"});
  CHECK(reds[0].axis_sizes[0].str() == "C");
  CHECK(reds[1].axis_sizes[0].str() == "K");
}

TEST_CASE("half sums accumulate in f32, max keeps the dtype") {
  auto r = check_source("op f(x: f16[N]) -> (s: f32, m: f16) { s = sum(i: x[i]); m = max(i: x[i]); }");
  CHECK(r->codes() == "");
  const auto& reds = r->program->ops.at("f").reductions;
  CHECK(r->program->ops.at("f").expr_types.at(reds[0].expr_id).str() == "f32");
  CHECK(r->program->ops.at("f").expr_types.at(reds[1].expr_id).str() == "f16");
}

TEST_CASE("monoid reductions with vector slices bind the monoid's dims") {
  auto r = check_source(R"(
import std.monoids;
op att(s: f32[S, T], v: f16[T, E]) -> (o: f16[S, E]) {
  r[i] = softmax_pv(j: s[i, j], v[j, :]);
  o[i, e] = r.o[e] / r.d;
}
)");
  CHECK(r->codes() == "");
  const TensorInfo& t = tensor(*r, "att", "r");
  CHECK(t.elem.kind == Type::Kind::Record);
  CHECK(t.elem.monoid == "softmax_pv");
  REQUIRE(t.elem.vector_dims.size() == 1);
  CHECK(t.elem.vector_dims[0].first == "E");
  CHECK(t.elem.vector_dims[0].second.str() == "E");
  CHECK(shape(t) == "S");
}

TEST_CASE("op calls unify dims and are recorded for inlining") {
  auto r = check_source(R"(
op scale2(x: f32[R, C]) -> (y: f32[R, C]) { y[i, j] = x[i, j] * 2.0; }
op g(a: f32[N, 8]) -> (b: f32[N, 8]) { b[n, c] = scale2(a)[n, c] + 1.0; }
)");
  CHECK(r->codes() == "");
  REQUIRE(r->program->ops.at("g").calls.size() == 1);
  CHECK(r->program->ops.at("g").calls[0].first == "scale2");
}

TEST_CASE("op arguments convert like stores; an op and a monoid may share a name") {
  auto r = check_source(R"(
import std.monoids;
op twice(x: f16[N]) -> (y: f16[N]) { y[i] = x[i] * 2.0; }
op logsumexp(x: f32[N, C]) -> (y: f32[N]) { r[n] = logsumexp(c: x[n, c]); y[n] = r.m + log(r.s); }
op g(a: f32[N], b: i32[N], m: f32[N, C]) -> (c: f32[N], d: f32[N], e: f32[N]) {
  c[n] = twice(a)[n];
  d[n] = twice(b)[n];
  e[n] = logsumexp(m)[n];
}
)");
  CHECK(r->rendered() == "");
  CHECK(r->program->ops.count("logsumexp") == 1);
  CHECK(r->program->monoids.count("logsumexp") == 1);
}

TEST_CASE("doc comments attach only to the item right below them") {
  auto r = check_source(
      "/// File header.\n\n/// Doc of f.\nop f(x: f32) -> (y: f32) { y = x; }\n/// Doc of g.\n// a plain comment\nop "
      "g(x: f32) -> (y: f32) { y = x; }\n");
  CHECK(r->rendered() == "");
  CHECK(r->program->ops.at("f").decl->doc == std::vector<std::string>{"Doc of f."});
  CHECK(r->program->ops.at("g").decl->doc.empty());
}

TEST_CASE("grouped-query index arithmetic and where predicates") {
  auto r = check_source(R"(
op gqa(q: f16[H, S, D], k: f16[KH, T, D]) -> (s: f32[H, S, T]) {
  s[h, i, j] = sum(d where d < D: q[h, i, d] * k[h / 2, j, d]);
}
)");
  CHECK(r->codes() == "");
}

TEST_CASE("each rule's error code") {
  struct Case {
    const char* src;
    const char* codes;
  };
  const Case cases[] = {
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[j]; }", "E021"},
      {"op f(x: f32[N, M]) -> (y: f32[N]) { y[i] = sum(i: x[i, i]); }", "E022"},
      {"op f(x: f32[N], z: f32[M]) -> (y: f32[N]) { y[i] = x[i] + z[i]; }", "E023"},
      {"op f(x: f32[N]) -> (y: f32[N]) { t[i, k] = x[i]; y[i] = x[i]; }", "E024"},
      {"op f(x: f32[N, N]) -> (y: f32[N, N]) { y[i, i] = x[i, i]; }", "E025"},
      {"op f(x: f32[N]) -> (y: f32[N, N]) { y[i] = x[i]; }", "E026"},
      {"op f(x: f32[N]) -> (y: f32) { y = total(i: x[i]); }", "E027"},
      {"op f(x: f32[N]) -> (y: f32) { y = sum(i, k: x[i]); }", "E028"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i + 1] = x[i]; }", "E029"},
      {"op f(x: bool[N]) -> (y: f32[N]) { y[i] = x[i] + 1.0; }", "E030"},
      {"op f(x: f32[N]) -> (y: f32) { y = sum(i where x[i]: x[i]); }", "E031"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = exp(x[i], 2.0); }", "E032"},
      {"op f(x: f32[N]) -> (y: i32[N]) { y[i] = x[i]; }", "E033"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[x[i]]; }", "E034"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[:]; }", "E035"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i].m; }", "E036"},
      {"op f(x: f32[0]) -> (y: f32) { y = sum(i: x[i]); }", "E037"},
      {"op f(x: f32) -> (y: f32) { y = (x, x); }", "E038"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = g(x)[i]; }\nop g(x: f32[N]) -> (y: f32[N]) { y[i] = f(x)[i]; }",
       "E039"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }\nop f(x: f32) -> (y: f32) { y = x; }", "E011"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = z[i]; }", "E012"},
      {"op f(x: f32[N], x: f32[N]) -> (y: f32[N]) { y[i] = x[i]; }", "E013"},
      {"op f(x: f17[N]) -> (y: f32[N]) { y[i] = x[i]; }", "E014"},
      {"op f(x: f32[N]) -> (y: f32[N]) { t[i] = x[i]; t[i] = x[i]; y[i] = t[i]; }", "E015"},
      {"op f(x: f32[N]) -> (y: f32[N]) { x[i] = 1.0; y[i] = x[i]; }", "E016"},
      {"op f(x: f32[N]) -> (y: f32[N], z: f32[N]) { y[i] = x[i]; }", "E017"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = t[i]; t[i] = x[i]; }", "E018"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[N] = x[N]; }", "E019"},
      {"op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i, i]; }", "E020"},
      {"op f(x: f32[N]) -> (y: f32[N]) { t[k] = x[k]; y[i] = t + x[i]; }", "E045"},
      {"import std.nothing;\nop f(x: f32) -> (y: f32) { y = x; }", "E010"},
      {"monoid m(x: f32) { combine(a, b) { yield a.x + b.x; } }", "E040"},
      {"monoid m(x: f32, y: f32) { identity = 0; combine(a, b) { yield (a.x, b.y); } }", "E041"},
      {"monoid m(x: f32) { identity = 0; combine(a, a) { yield a.x; } }", "E042"},
      {"monoid m(x: f32) { identity = 0; combine(a, b) { yield a.x; } assume distributive; }", "E043"},
      {"monoid m(x: f32) { identity = 0; combine(a, b) { yield a.x + b.x; } }\nop f(v: f32[N]) -> (y: f32) { r = m(i: "
       "v[i], v[i]); y = r.x; }",
       "E044"},
      {"monoid sum(x: f32) { identity = 0; combine(a, b) { yield a.x + b.x; } }", "E011"},
  };
  for (const Case& c : cases) {
    std::string src = c.src;
    CAPTURE(src);
    auto r = check_source(c.src);
    CHECK(r->codes() == c.codes);
  }
}

TEST_CASE("schedules: codec, sites, targets, duplicates") {
  const std::string op = "op f(x: f32[N]) -> (y: f32[N]) { t[i] = x[i] * 2.0; y[i] = t[i]; }\n";
  struct Case {
    const char* schedule;
    const char* codes;
  };
  const Case cases[] = {
      {"schedule f for sm_90 { PLACE@t = cut; TILE = a:scalar; TILE@i = f64; STAGE = d2/tma/ring; }", ""},
      {"schedule f for sm_80 { STAGE = d2/tma; }", "E055"},
      {"schedule f for sm_90 { TILEZ = a:scalar; }", "E050"},
      {"schedule f for sm_90 { STAGE = tma/d2; }", "E052"},
      {"schedule f for sm_90 { PLACE@zz = cut; }", "E058"},
      {"schedule f for sm_91 { PLACE = cut; }", "E059"},
      {"schedule g for sm_90 { PLACE = cut; }", "E060"},
      {"schedule f for sm_90 { PLACE = cut; PLACE = fuse; }", "E057"},
      {"schedule f for sm_90 { PLACE = cut; }\nschedule f for sm_90 { PLACE = fuse; }", "E061"},
      {"schedule f for sm_90 as \"a\" { PLACE = cut; }\nschedule f for sm_90 as \"b\" { PLACE = fuse; }", ""},
  };
  for (const Case& c : cases) {
    std::string schedule = c.schedule;
    CAPTURE(schedule);
    auto r = check_source(op + c.schedule);
    CHECK(r->codes() == c.codes);
  }
  auto ok = check_source(op + cases[0].schedule);
  REQUIRE(ok->program->schedules.size() == 1);
  CHECK(ok->program->schedules[0].knobs.size() == 4);
  CHECK(ok->program->schedules[0].target->name == "sm_90");
}

TEST_CASE("several independent errors are reported in one run") {
  auto r = check_source("op f(x: f32[N]) -> (y: f32[N]) {\n  a[i] = x[j];\n  b[i] = q[i];\n  y[i] = x[i] + true;\n}\n");
  CHECK(r->codes() == "E021 E012 E030");
}

TEST_CASE("the stdlib modules check clean") {
  for (const char* m : {"monoids", "nn", "linalg"}) {
    CAPTURE(m);
    auto r = check_source(std::string("import std.") + m + ";\n");
    CHECK(r->rendered() == "");
    CHECK(r->program->modules.size() >= 2);
  }
}
