// The formatter: canonical spacing and indentation, comments kept, idempotent.
#include <doctest/doctest.h>

#include "syntax/format.hpp"

using namespace emmy;

namespace {

std::string fmt(const std::string& s) {
  auto r = format_source(s);
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("spacing and indentation are canonical") {
  CHECK(fmt("op  f( x:f16[ N ,C ] )->( y :f32[N] ){\ny[ n ]=sum( c : x[n,c]*-2.0 )/ C ;}") ==
        "op f(x: f16[N, C]) -> (y: f32[N]) {\n  y[n] = sum(c: x[n, c] * -2.0) / C;\n}\n");
}

TEST_CASE("unary operators glue to their operand, binary ones are spaced") {
  CHECK(fmt("op f(a:f32,b:f32)->(y:f32){y=-a- -b*!(a<b)+select(!(a==b),a,-inf);}") ==
        "op f(a: f32, b: f32) -> (y: f32) {\n  y = -a - -b * !(a < b) + select(!(a == b), a, -inf);\n}\n");
}

TEST_CASE("knob values stay glued; sites too") {
  CHECK(
      fmt("schedule f for sm_90 as \"x\" {\nTILE @ e = f64 ;\nTILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4;REDUCE=;}") ==
      "schedule f for sm_90 as \"x\" {\n  TILE@e = f64;\n  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4;\n  REDUCE = ;\n}\n");
}

TEST_CASE("comments are kept; trailing comments align") {
  std::string src =
      "/// Doc.\nop f(x: f32[N]) -> (y: f32[N]) {\n  // lead\n  t[i] = x[i]; // a\n  y[i] = t[i] * 2.0;   // bb\n"
      "  /* block */ \n}\n";
  CHECK(
      fmt(src) ==
      "/// Doc.\nop f(x: f32[N]) -> (y: f32[N]) {\n  // lead\n  t[i] = x[i];        // a\n  y[i] = t[i] * 2.0;  // bb\n"
      "  /* block */\n}\n");
}

TEST_CASE("blank lines collapse to one; none after '{' or before '}'") {
  CHECK(fmt("\n\nop f(x: f32) -> (y: f32) {\n\n\n  y = x;\n\n}\n\n\n\nop g(x: f32) -> (y: f32) {\n  y = x;\n}\n\n") ==
        "op f(x: f32) -> (y: f32) {\n  y = x;\n}\n\nop g(x: f32) -> (y: f32) {\n  y = x;\n}\n");
}

TEST_CASE("slices, fields, monoids") {
  CHECK(fmt("monoid m(x:f32,o:f32[E]){identity=(0,0);lift(s:f32,v:f32[E])=(s,v);combine(a,b){let "
            "n=a.x+b.x;yield(n,a.o);}}") ==
        "monoid m(x: f32, o: f32[E]) {\n  identity = (0, 0);\n  lift(s: f32, v: f32[E]) = (s, v);\n  combine(a, b) {\n"
        "    let n = a.x + b.x;\n    yield (n, a.o);\n  }\n}\n");
  CHECK(fmt("op f(v:f32[T,E])->(o:f32[E]){r=g(j:v[j, :]);o[e]=r.o[e];}") ==
        "op f(v: f32[T, E]) -> (o: f32[E]) {\n  r = g(j: v[j, :]);\n  o[e] = r.o[e];\n}\n");
}

TEST_CASE("continuation lines indent inside brackets") {
  CHECK(fmt("op f(a: f32,\nb: f32) -> (y: f32) {\n  y = max(a,\nb);\n}\n") ==
        "op f(a: f32,\n  b: f32) -> (y: f32) {\n  y = max(a,\n    b);\n}\n");
}

TEST_CASE("formatting is idempotent") {
  const char* inputs[] = {
      "op f(a: f32,\nb: f32) -> (y: f32) { // c\n y = a+b; /* x */ }",
      "import std.nn;\n\n\n/// d\nmonoid m(x: f32) { identity = 0; combine(a, b) { yield a.x + b.x; } }",
      "schedule f for sm_90 { PLACE@m=cut; // why\n TILE=a:scalar; }",
  };
  for (const char* in : inputs) {
    CAPTURE(in);
    std::string once = fmt(in);
    CHECK(fmt(once) == once);
  }
}

TEST_CASE("text that does not lex is refused") {
  CHECK_FALSE(format_source("op f() -> () { $ }").has_value());
  CHECK(format_source("").value() == "");
}
