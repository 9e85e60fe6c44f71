// The REPL's pieces without a terminal: when a definition is complete, what a definition
// replaces, and a session fed line by line.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "repl/repl.hpp"
#include "repl/session.hpp"

namespace emmy {

TEST_CASE("repl: open braces skip comments and strings") {
  CHECK(repl::open_braces("op f(x: f32[N]) -> (y: f32[N]) {") == 1);
  CHECK(repl::open_braces("op f(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n];\n}") == 0);
  CHECK(repl::open_braces("schedule f for sm_90 { // a brace in a comment: {\n") == 1);
  CHECK(repl::open_braces("schedule f for sm_90 as \"{\" {") == 1);
  CHECK(repl::open_braces("}") == -1);
  CHECK(repl::open_braces("") == 0);
}

TEST_CASE("repl: a redefinition replaces; a failed one leaves the session as it was") {
  repl::Session s({std::string(EMMY_SOURCE_DIR) + "/stdlib"});
  std::ostringstream err;
  auto a = s.define("<input 1>",
                    "op f(x: f32[N]) -> (y: f32[N]) { y[n] = x[n]; }\n"
                    "schedule f for sm_90 { COOP = t64; }\n",
                    err, false);
  REQUIRE(a);
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].key == "op f");
  CHECK((*a)[1].key == "schedule f for sm_90");
  CHECK_FALSE((*a)[0].redefined);
  // An import entered later still comes first in the session's source.
  REQUIRE(s.define("<input 2>", "import std.monoids;", err, false));
  CHECK(s.source().rfind("import std.monoids;\nop f", 0) == 0);
  auto b = s.define("<input 3>", "/// Twice.\nop f(x: f32[N]) -> (y: f32[N]) { y[n] = 2 * x[n]; }", err, false);
  REQUIRE(b);
  CHECK((*b)[0].redefined);
  CHECK(s.definitions().size() == 3);
  CHECK(s.source().find("/// Twice.\nop f") != std::string::npos);
  CHECK(s.source().find("y[n] = x[n]") == std::string::npos);
  // An error: rendered against the input, nothing changes.
  const std::string before = s.source();
  CHECK_FALSE(s.define("<input 4>", "op g(x: f32[N]) -> (y: f32[N]) {\n  y[n] = zz[n];\n}", err, false));
  CHECK(err.str().find("<input 4>:2:10: error[E012]: unknown name 'zz'") != std::string::npos);
  CHECK(s.source() == before);
  // A schedule for an op of the session checks against it; one for an unknown op does not.
  CHECK(s.define("<input 5>", "schedule f for sm_90 as \"wide\" { COOP = t128; }", err, false));
  CHECK_FALSE(s.define("<input 6>", "schedule nope for sm_90 { COOP = t128; }", err, false));
  const std::unique_ptr<repl::CheckedSession> c = s.check();
  CHECK_FALSE(c->diags->has_errors());
  CHECK(c->program->schedules.size() == 2);
}

TEST_CASE("repl: fed line by line, a definition waits for its braces; the status counts failures") {
  std::ostringstream out, err;
  repl::Repl r({{std::string(EMMY_SOURCE_DIR) + "/stdlib"}, false, false, "sm_90", "", ""}, out, err);
  CHECK(r.feed("// a comment"));
  CHECK_FALSE(r.in_definition());
  CHECK(r.feed("op f(x: f32[N]) -> (y: f32[N]) {"));
  CHECK(r.in_definition());
  CHECK(r.feed("  y[n] = x[n];"));
  CHECK(r.feed("}"));
  CHECK_FALSE(r.in_definition());
  CHECK(out.str() == "defined op f\n");
  CHECK(r.status() == 0);
  CHECK(r.feed(":target sm_77"));
  CHECK(r.status() == 1);
  CHECK(err.str().find("unknown target 'sm_77'") != std::string::npos);
  const std::vector<std::string> words = r.completions();
  for (const char* w : {":help", ":run", "f", "PLACE", "sm_90a", "cuda", "ring", "a:mma_m16n8k16_f16", "a:wgmma_m64n"})
    CHECK(std::find(words.begin(), words.end(), w) != words.end());
  CHECK_FALSE(r.feed(":q"));
}

TEST_CASE("repl: a definition is checked beside what it uses and what uses it, not beside everything") {
  repl::Session s({std::string(EMMY_SOURCE_DIR) + "/stdlib"});
  std::ostringstream err;
  REQUIRE(s.define("<input 1>", "op f(x: f32[N]) -> (y: f32[N]) {\n  t[n] = x[n];\n  y[n] = t[n];\n}", err, false));
  REQUIRE(s.define("<input 2>", "op g(x: f32[N]) -> (y: f32[N]) { y[n] = f(x)[n] + 1.0; }", err, false));
  REQUIRE(s.define("<input 3>", "schedule f for sm_90 { PLACE@t = cut; }", err, false));
  REQUIRE(s.define("<input 4>", "op unrelated(x: f32[N]) -> (y: f32[N]) { y[n] = x[n]; }", err, false));
  // A caller of a redefined op is checked again: f's new signature breaks g's call.
  CHECK_FALSE(s.define("<input 5>", "op f(x: f32[N], z: f32[N]) -> (y: f32[N]) { y[n] = x[n] + z[n]; }", err, false));
  CHECK(err.str().find("<input 2>:1:") != std::string::npos);
  CHECK(err.str().find("error[E032]") != std::string::npos);
  // So is a schedule block of it: t is gone, PLACE@t names nothing.
  err.str("");
  CHECK_FALSE(s.define("<input 6>", "op f(x: f32[N]) -> (y: f32[N]) { y[n] = x[n]; }", err, false));
  CHECK(err.str().find("error[E058]") != std::string::npos);
  // A new op sees the ops it calls, through the ops they call.
  err.str("");
  CHECK(s.define("<input 7>", "op h(x: f32[N]) -> (y: f32[N]) { y[n] = g(x)[n]; }", err, false));
  CHECK(err.str().empty());
  // A name clash with an earlier definition of another kind is still seen.
  CHECK(s.define("<input 8>", "monoid unrelated(v: f32) { identity = 0; combine(a, b) { yield a.v + b.v; } }", err,
                 false));
  CHECK(s.definitions().size() == 6);
  const std::unique_ptr<repl::CheckedSession> c = s.check();
  CHECK_FALSE(c->diags->has_errors());
}

TEST_CASE("repl: a command or a blank line ends an unfinished definition instead of swallowing what follows") {
  std::ostringstream out, err;
  repl::Repl r({{std::string(EMMY_SOURCE_DIR) + "/stdlib"}, false, false, "sm_90", "", ""}, out, err);
  CHECK(r.feed("import std.monoids"));  // no ';'
  CHECK(r.in_definition());
  CHECK(r.feed(""));  // balanced braces and a blank line: checked as it is
  CHECK_FALSE(r.in_definition());
  CHECK(err.str().find("<input 1>:") != std::string::npos);
  CHECK(err.str().find("error[E002]") != std::string::npos);
  CHECK(r.status() == 1);
  CHECK(r.feed("op f(x: f32[N]) -> (y: f32[N]) {"));
  CHECK(r.feed(""));  // a blank line inside braces continues the definition
  CHECK(r.in_definition());
  CHECK(r.feed(":list"));  // a command ends it: an error, then the command runs
  CHECK_FALSE(r.in_definition());
  CHECK(err.str().find("error: a command (:list) came inside a definition (1 brace still open); it was not added") !=
        std::string::npos);
  CHECK(out.str().find("no definitions yet") != std::string::npos);
  CHECK(r.feed("op g(x: f32[N]) -> (y: f32[N]) { y[n] = x[n]; }"));
  CHECK(out.str().find("defined op g") != std::string::npos);
  // Doc comments alone at the end document nothing: not an error.
  CHECK(r.feed("/// dangling"));
  r.end_of_input();
  CHECK(r.status() == 1);  // only the two failures above
}

}  // namespace emmy
