// The tuner's write-back: where the tuned block goes, what happens to hand-written ones, and the errors.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "lower/passes.hpp"
#include "syntax/format.hpp"
#include "test_helpers.hpp"
#include "tune/write_back.hpp"

using namespace emmy;

namespace {

const std::vector<std::string> kStdlib = {std::string(EMMY_SOURCE_DIR) + "/stdlib"};

const std::string kRows =
    "import std.monoids;\n"
    "\n"
    "/// Row softmax.\n"
    "op softmax(x: f16[N, C]) -> (y: f16[N, C]) {\n"
    "  m[n] = max(c: x[n, c]);\n"
    "  e[n, c] = exp(f32(x[n, c]) - m[n]);\n"
    "  l[n] = sum(c: e[n, c]);\n"
    "  y[n, c] = e / l;\n"
    "}\n"
    "\n"
    "op twice(x: f16[N]) -> (y: f16[N]) {\n"
    "  y[n] = x[n] * 2.0;\n"
    "}\n";

tune::TunedBlock softmax_block() {
  return {"softmax",
          "sm_90",
          {{"COOP", "t128/v8"}, {"PLACE@m", "cut"}, {"FAST_EXP", "1"}},
          {"NVIDIA H200, N=4096,C=8192 f16: 21.4 us", "2026-11-30, 37 candidates in 1 m 12 s"}};
}

const std::string kSoftmaxBlock =
    "/// emmyc tune: NVIDIA H200, N=4096,C=8192 f16: 21.4 us\n"
    "/// 2026-11-30, 37 candidates in 1 m 12 s\n"
    "schedule softmax for sm_90 {\n"
    "  COOP = t128/v8;\n"
    "  PLACE@m = cut;\n"
    "  FAST_EXP = 1;\n"
    "}\n";

tune::WriteBack write(const std::string& text, const tune::TunedBlock& block, const std::string& file = "rows.emmy") {
  return tune::write_tuned_block(file, text, block, kStdlib);
}

std::string error_of(const std::string& text, const tune::TunedBlock& block) {
  try {
    write(text, block);
  } catch (const tune::WriteBackError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The doc's first line and label of the block `emmyc run` picks for op on target ("" = unnamed).
std::string picked(const std::string& text, const std::string& op, const std::string& target,
                   const std::string& label = "") {
  auto run = test::check_source(text);
  REQUIRE_MESSAGE(!run->diags->has_errors(), run->rendered());
  auto s = lower::select_schedule(*run->program, op, *find_target(target), label);
  REQUIRE(std::holds_alternative<const CheckedSchedule*>(s));
  const CheckedSchedule* sched = std::get<const CheckedSchedule*>(s);
  REQUIRE(sched != nullptr);
  std::string doc = sched->decl->doc.empty() ? "" : sched->decl->doc.front();
  return doc + " | " + (sched->decl->label ? sched->decl->label->name : "(unnamed)");
}

}  // namespace

TEST_CASE("tune write-back: the block text is what emmyc fmt writes") {
  CHECK(tune::tuned_block_text(softmax_block()) == kSoftmaxBlock);
  CHECK(format_source(kSoftmaxBlock) == kSoftmaxBlock);
  tune::TunedBlock b = softmax_block();
  b.comment = {};
  b.knobs = {{"REDUCE", ""}, {"STAGE", " d2/cp "}};
  CHECK(tune::tuned_block_text(b) ==
        "/// emmyc tune:\nschedule softmax for sm_90 {\n  REDUCE = ;\n  STAGE = d2/cp;\n}\n");
  b.comment = {"", "two\nthree  ", ""};
  CHECK(tune::tuned_block_text(b) ==
        "/// emmyc tune:\n/// two\n/// three\n///\nschedule softmax for sm_90 {\n  REDUCE = ;\n  STAGE = d2/cp;\n}\n");
}

TEST_CASE("tune write-back: an op without schedules gets the block right after it") {
  tune::WriteBack w = write(kRows, softmax_block());
  size_t after_op = kRows.find("}\n") + 2;
  CHECK(w.text == kRows.substr(0, after_op) + "\n" + kSoftmaxBlock + kRows.substr(after_op));
  CHECK(w.action == "added the tuned block of softmax for sm_90 after op softmax (line 13)");
  CHECK(picked(w.text, "softmax", "sm_90") == "emmyc tune: NVIDIA H200, N=4096,C=8192 f16: 21.4 us | (unnamed)");

  // The last op of a file: the block ends the file.
  tune::TunedBlock t{"twice", "sm_90", {{"COOP", "t32/v8"}}, {"x"}};
  CHECK(write(kRows, t).text == kRows + "\n/// emmyc tune: x\nschedule twice for sm_90 {\n  COOP = t32/v8;\n}\n");
}

TEST_CASE("tune write-back: the block follows the op's last schedule block, of any target") {
  std::string text = kRows +
                     "\n"
                     "schedule softmax for sm_80 {\n  COOP = t32/v8;\n}\n"
                     "\n"
                     "/// Warp rows.\n"
                     "schedule softmax for sm_90 as \"warp-row\" {\n  COOP = t32/v8;\n}\n"
                     "schedule twice for sm_90 {\n  COOP = ;\n}\n";
  tune::WriteBack w = write(text, softmax_block());
  size_t at = text.find("schedule twice");
  CHECK(w.text == text.substr(0, at) + "\n" + kSoftmaxBlock + "\n" + text.substr(at));
  CHECK(w.action ==
        "added the tuned block of softmax for sm_90 after the last schedule of softmax (for sm_90 as \"warp-row\") "
        "(line 26)");
  CHECK(picked(w.text, "softmax", "sm_90") == "emmyc tune: NVIDIA H200, N=4096,C=8192 f16: 21.4 us | (unnamed)");
  CHECK(picked(w.text, "softmax", "sm_90", "warp-row") == "Warp rows. | warp-row");
  CHECK(picked(w.text, "softmax", "sm_80") == " | (unnamed)");
}

TEST_CASE("tune write-back: a tuned block is replaced in place, and writing twice is writing once") {
  tune::TunedBlock first = softmax_block();
  tune::TunedBlock second{"softmax", "sm_90", {{"COOP", "t256/v8"}}, {"NVIDIA H200: 19.0 us"}};
  std::string once = write(kRows, first).text;
  tune::WriteBack replaced = write(once, second);
  CHECK(replaced.text == write(kRows, second).text);
  CHECK(replaced.action == "replaced the tuned block of softmax for sm_90 (line 12)");
  size_t at = once.find("/// emmyc tune:");
  CHECK(replaced.text ==
        once.substr(0, at) +
            "/// emmyc tune: NVIDIA H200: 19.0 us\nschedule softmax for sm_90 {\n  COOP = t256/v8;\n}" +
            once.substr(once.find("}\n", at) + 1));
  tune::WriteBack again = write(replaced.text, second);
  CHECK(again.text == replaced.text);
  CHECK(again.action == "the tuned block of softmax for sm_90 is already this one (line 12)");
  CHECK(picked(again.text, "softmax", "sm_90") == "emmyc tune: NVIDIA H200: 19.0 us | (unnamed)");

  // A tuned block that was given a name is replaced too, by the unnamed one; the unnamed
  // hand-written block then needs a name.
  std::string named = kRows +
                      "\n"
                      "schedule softmax for sm_90 {\n  COOP = t32/v8;\n}\n"
                      "\n"
                      "/// emmyc tune: old\n/// 2026-01-01\n"
                      "schedule softmax for sm_90 as \"tuned-old\" {\n  COOP = t512/v8;\n}\n";
  tune::WriteBack w = write(named, second);
  CHECK(w.text == kRows +
                      "\n"
                      "schedule softmax for sm_90 as \"hand\" {\n  COOP = t32/v8;\n}\n"
                      "\n"
                      "/// emmyc tune: NVIDIA H200: 19.0 us\n"
                      "schedule softmax for sm_90 {\n  COOP = t256/v8;\n}\n");
  CHECK(w.action ==
        "replaced the tuned block \"tuned-old\" of softmax for sm_90 (line 20); kept the hand-written block of softmax "
        "for sm_90 as \"hand\" (line 15)");
  CHECK(picked(w.text, "softmax", "sm_90") == "emmyc tune: NVIDIA H200: 19.0 us | (unnamed)");
  CHECK(picked(w.text, "softmax", "sm_90", "hand") == " | hand");
}

TEST_CASE("tune write-back: the unnamed hand-written block is kept as \"hand\", or \"hand-2\" when taken") {
  std::string hand = "/// Mine.\nschedule softmax for sm_90 {\n  COOP = t32/v8;\n}\n";
  std::string other = "schedule softmax for sm_80 as \"hand\" {\n  COOP = t32/v8;\n}\n";  // another target
  std::string text = kRows + "\n" + hand + "\n" + other;
  tune::WriteBack w = write(text, softmax_block());
  CHECK(w.text == kRows + "\n/// Mine.\nschedule softmax for sm_90 as \"hand\" {\n  COOP = t32/v8;\n}\n\n" +
                      kSoftmaxBlock + "\n" + other);
  CHECK(w.action ==
        "kept the hand-written block of softmax for sm_90 as \"hand\" (line 16) and added the tuned one after it "
        "(line 22)");
  CHECK(picked(w.text, "softmax", "sm_90") == "emmyc tune: NVIDIA H200, N=4096,C=8192 f16: 21.4 us | (unnamed)");
  CHECK(picked(w.text, "softmax", "sm_90", "hand") == "Mine. | hand");

  std::string taken = "schedule softmax for sm_90 as \"hand\" {\n  COOP = t1024/v8;\n}\n";
  text = kRows + "\n" + taken + "\n" + hand;
  w = write(text, softmax_block());
  CHECK(w.text == kRows + "\n" + taken +
                      "\n/// Mine.\nschedule softmax for sm_90 as \"hand-2\" {\n  COOP = t32/v8;\n}\n\n" +
                      kSoftmaxBlock);
  CHECK(w.action ==
        "kept the hand-written block of softmax for sm_90 as \"hand-2\" (line 20) and added the tuned one after it "
        "(line 26)");
  CHECK(picked(w.text, "softmax", "sm_90", "hand-2") == "Mine. | hand-2");
  CHECK(picked(w.text, "softmax", "sm_90", "hand") == " | hand");

  // Writing again replaces the tuned block and leaves the renamed one alone.
  CHECK(write(w.text, softmax_block()).text == w.text);
}

TEST_CASE("tune write-back: the text outside the edits is kept byte for byte") {
  // Not formatted, comments everywhere: none of it moves.
  std::string text =
      "import   std.monoids ;  // the monoids\n"
      "op softmax(x:f16[N,C])->(y:f16[N,C]){m[n]=max(c:x[n,c]);\n"
      "   e[n,c]=exp(f32(x[n,c])-m[n]); l[n]=sum(c:e[n,c]); y[n,c]=e/l; }   // trailing\n"
      "/* between */\n"
      "schedule  softmax  for  sm_90{COOP=t32/v8;}op twice(x: f16[N]) -> (y: f16[N]) { y[n] = x[n]; }\n"
      "   // the end";
  tune::WriteBack w = write(text, softmax_block());
  size_t label_at = text.find("sm_90{") + 5;
  size_t block_at = text.find("}op twice") + 1;
  CHECK(w.text == text.substr(0, label_at) + " as \"hand\"" + text.substr(label_at, block_at - label_at) + "\n\n" +
                      kSoftmaxBlock + "\n" + text.substr(block_at));
  CHECK(picked(w.text, "softmax", "sm_90") == "emmyc tune: NVIDIA H200, N=4096,C=8192 f16: 21.4 us | (unnamed)");

  // After the op, past its line's trailing comment; a block comment on the `}` line stays in place.
  text = kRows.substr(0, kRows.find("}\n") + 1) +
         "  // softmax ends\nop twice(x: f16[N]) -> (y: f16[N]) {\n  y[n] = x[n];\n} /* a\nb */\n";
  w = write(text, softmax_block());
  size_t eol = text.find("ends\n") + 5;
  CHECK(w.text == text.substr(0, eol) + "\n" + kSoftmaxBlock + "\n" + text.substr(eol));
  tune::TunedBlock t{"twice", "sm_90", {{"COOP", "t32/v8"}}, {"x"}};
  size_t close = text.rfind("} /* a") + 1;
  CHECK(write(text, t).text == text.substr(0, close) +
                                   "\n\n/// emmyc tune: x\nschedule twice for sm_90 {\n  COOP = t32/v8;\n}\n\n" +
                                   text.substr(close));

  // Windows line ends stay Windows line ends.
  std::string crlf = "op twice(x: f16[N]) -> (y: f16[N]) {\r\n  y[n] = x[n];\r\n}\r\n";
  CHECK(write(crlf, t).text ==
        crlf + "\r\n/// emmyc tune: x\r\nschedule twice for sm_90 {\r\n  COOP = t32/v8;\r\n}\r\n");
}

TEST_CASE("tune write-back: formatted files stay formatted (stdlib copies)") {
  struct Case {
    const char* file;
    tune::TunedBlock block;
    const char* action;
  };
  std::vector<std::pair<std::string, std::string>> sdpa_knobs = {
      {"PLACE", "fuse"}, {"TILE", "a:mma_m16n8k16_f16/w4x1/f2x8/k4"}, {"TILE@e", "f64"}, {"STAGE", "d2/tma/ring"}};
  std::vector<std::string> comment = {"NVIDIA H200, B=1,H=8,S=4096,D=64 f16: 99.1 us (FA-2 122.9 us)",
                                      "2026-11-30, 412 candidates in 9 m 40 s"};
  Case cases[] = {
      {"nn.emmy",
       {"sdpa", "sm_90", sdpa_knobs, comment},
       "kept the hand-written block of sdpa for sm_90 as \"hand\" (line 135) and added the tuned one after it (line "
       "144)"},
      {"nn.emmy",
       {"sdpa_explicit", "sm_90a", sdpa_knobs, comment},
       "added the tuned block of sdpa_explicit for sm_90a after the last schedule of sdpa_explicit (for sm_90 as "
       "\"scalar-baseline\") (line 509)"},
      {"nn.emmy",
       {"logsumexp", "sm_90", {{"COOP", "t128/v8"}}, comment},
       "added the tuned block of logsumexp for sm_90 after op logsumexp (line 28)"},
      {"linalg.emmy",
       {"matmul", "sm_90a", {{"TILE", "a:wgmma_m64n128k16_f16/w8x1/k4"}, {"STAGE", "d3/tma/ring"}}, comment},
       "kept the hand-written block of matmul for sm_90a as \"hand\" (line 129) and added the tuned one after it (line "
       "140)"},
      {"linalg.emmy",
       {"matmul_bias", "sm_90", {{"TILE", "a:mma_m16n8k16_f16/w2x2/f4x4/k2"}}, comment},
       "added the tuned block of matmul_bias for sm_90 after op matmul_bias (line 33)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    CAPTURE(c.block.op);
    std::string text = read(std::string(EMMY_SOURCE_DIR) + "/stdlib/" + c.file);
    REQUIRE(format_source(text) == text);
    tune::WriteBack w = write(text, c.block, c.file);
    CHECK(w.action == c.action);
    CHECK(format_source(w.text) == w.text);
    CHECK(write(w.text, c.block, c.file).text == w.text);
    CHECK(picked(w.text, c.block.op, c.block.target) == "emmyc tune: " + comment[0] + " | (unnamed)");
  }
}

TEST_CASE("tune write-back: a file that does not parse is refused") {
  CHECK(error_of("op softmax(x: f16[N]) -> (y: f16[N]) {\n  y[n] = x[n] +;\n}\n", softmax_block()) ==
        "rows.emmy does not parse, so the tuned schedule was not written; fix it first:\n"
        "rows.emmy:2:16: error[E002]: unexpected ';'; expected an expression\n"
        " 2 |   y[n] = x[n] +;\n"
        "   |                ^\n"
        "  help: an operand is a name, a number, x[i], f(x), sum(j: ...) or (expression)");
}

TEST_CASE("tune write-back: an op the file does not declare is refused") {
  tune::TunedBlock b = softmax_block();
  b.op = "sofmax";
  CHECK(error_of(kRows, b) ==
        "rows.emmy: no op 'sofmax' is declared in this file (it declares softmax, twice); the tuned schedule goes "
        "beside its op");
  CHECK(
      error_of("import std.monoids;\n", b) ==
      "rows.emmy: no op 'sofmax' is declared in this file (it declares no ops); the tuned schedule goes beside its op");
}

TEST_CASE("tune write-back: knobs the codec refuses are refused") {
  auto with = [](std::string name, std::string value) {
    tune::TunedBlock b = softmax_block();
    b.knobs.emplace_back(std::move(name), std::move(value));
    return error_of(kRows, b);
  };
  const std::string bad = "rows.emmy: the tuned schedule of softmax for sm_90 has a bad knob ";
  CHECK(with("TIEL", "f64") == bad +
                                   "TIEL=f64: unknown knob 'TIEL'; knobs are PLACE, TILE, STAGE, REDUCE, WSPEC, "
                                   "RASTER, FAST_EXP, COOP, OVERLAP, PINGPONG, PERSIST, CLUSTER (did you mean TILE?)");
  CHECK(with("STAGE", "d2/tma/rung") == bad +
                                            "STAGE=d2/tma/rung: unknown STAGE field 'rung': STAGE takes, in order, "
                                            "d<depth> (1..8), cp|tma|reg, ring (optional) (did you mean 'ring'?)");
  CHECK(with("RASTER", "gx8") ==
        bad + "RASTER=gx8: unknown RASTER value 'gx8': RASTER takes gm<G>|gn<G> (1..64) (write e.g. RASTER=gm8)");
  CHECK(with("TILE@q", "f64") ==
        bad + "TILE@q=f64: op softmax has no statement or index variable 'q' (sites of softmax are: c, e, l, m, n, y)");
  CHECK(with("COOP", "t64/v8") == bad + "COOP=t64/v8: COOP is set twice (keep one of them)");
  tune::TunedBlock b = softmax_block();
  b.target = "sm_80";
  b.knobs = {{"STAGE", "d2/tma/ring"}};
  CHECK(error_of(kRows, b) ==
        "rows.emmy: the tuned schedule of softmax for sm_80 has a bad knob STAGE=d2/tma/ring: STAGE transport 'tma' "
        "needs sm_90 or newer (TMA); target sm_80 supports: cp, reg (write STAGE=d2/cp/ring for sm_80, or compile for "
        "sm_90 or newer (TMA))");
  b.target = "sm_91";
  CHECK(error_of(kRows, b) ==
        "rows.emmy: unknown target 'sm_91' for the tuned schedule of softmax (targets are: sm_80, sm_90, sm_90a, "
        "sm_120)");
}

TEST_CASE("tune write-back: a file that does not check is refused") {
  std::string text =
      kRows + "\nschedule twice for sm_90 {\n  COOP = t32/v8;\n}\nschedule twice for sm_90 {\n  COOP = ;\n}\n";
  CHECK(error_of(text, softmax_block()) ==
        "rows.emmy does not check, so the tuned schedule was not written; fix it first:\n"
        "rows.emmy:18:10: error[E061]: op twice already has an unnamed schedule for sm_90\n"
        " 18 | schedule twice for sm_90 {\n"
        "    |          ^~~~~\n"
        "rows.emmy:15:10: note: the other one is here\n"
        " 15 | schedule twice for sm_90 {\n"
        "    |          ^~~~~\n"
        "  help: name one of them: schedule twice for sm_90 as \"NAME\" { ... }");
}

TEST_CASE("tune write-back: a shape class's block is named and guarded, replaced by name, and left alone otherwise") {
  tune::TunedBlock small{"softmax", "sm_90", {{"COOP", "t32/v8"}}, {"NVIDIA H200, C=1000,N=4097 f16: 9.9 us"}};
  small.name = "tuned C~1024,N~4096";
  small.guard = "C < 8192";
  tune::TunedBlock large{"softmax", "sm_90", {{"COOP", "t512/v8/c13"}}, {"NVIDIA H200, C=50257,N=8192 f16: 500 us"}};
  large.name = "tuned C~65536,N~8192";
  large.guard = "C >= 8192";
  tune::WriteBack one = write(kRows, small);
  CHECK(one.action == "added the tuned block of softmax for sm_90 \"tuned C~1024,N~4096\" after op softmax (line 12)");
  CHECK(
      one.text.find("schedule softmax for sm_90 as \"tuned C~1024,N~4096\" where C < 8192 {\n  COOP = t32/v8;\n}\n") !=
      std::string::npos);
  tune::WriteBack two = write(one.text, large);
  // The unnamed tuned block goes in beside them; neither class block is replaced by it.
  tune::WriteBack three = write(two.text, softmax_block());
  CHECK(three.text.find("as \"tuned C~1024,N~4096\" where C < 8192") != std::string::npos);
  CHECK(three.text.find("as \"tuned C~65536,N~8192\" where C >= 8192") != std::string::npos);
  auto at = [&](int64_t c) {
    auto run = test::check_source(three.text);
    REQUIRE_MESSAGE(!run->diags->has_errors(), run->rendered());
    const std::map<std::string, int64_t> sizes{{"C", c}, {"N", 4096}};
    auto s = lower::select_schedule(*run->program, "softmax", *find_target("sm_90"), "", &sizes);
    REQUIRE(std::holds_alternative<const CheckedSchedule*>(s));
    return std::get<const CheckedSchedule*>(s)->decl->label->name;
  };
  CHECK(at(1000) == "tuned C~1024,N~4096");
  CHECK(at(50257) == "tuned C~65536,N~8192");
  // Tuning a class again replaces its block in place.
  tune::TunedBlock again = small;
  again.knobs = {{"COOP", "t64/v8"}};
  tune::WriteBack four = write(three.text, again);
  CHECK(four.action == "replaced the tuned block of softmax for sm_90 \"tuned C~1024,N~4096\" (line 12)");
  CHECK(four.text.find("where C < 8192 {\n  COOP = t64/v8;\n}") != std::string::npos);
  CHECK(four.text.find("COOP = t32/v8;") == std::string::npos);
  // A hand-written block of that name is not overwritten.
  const std::string hand = kRows + "\nschedule softmax for sm_90 as \"tuned C~1024,N~4096\" {\n  COOP = t32;\n}\n";
  CHECK(error_of(hand, small).find("a hand-written block of softmax for sm_90 is named \"tuned C~1024,N~4096\"") !=
        std::string::npos);
}
