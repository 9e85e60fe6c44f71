// The parser builds the AST the grammar promises, with source ranges; syntax errors are
// reported, several per file, without building a tree.
#include <doctest/doctest.h>

#include <algorithm>

#include "syntax/parse.hpp"
#include "syntax/print_ast.hpp"

using namespace emmy;

namespace {

struct Parsed {
  SourceManager sources;
  std::unique_ptr<Diagnostics> diags;
  ast::Module module;
  uint32_t file = 0;
};

std::unique_ptr<Parsed> parse(const std::string& text) {
  auto p = std::make_unique<Parsed>();
  p->diags = std::make_unique<Diagnostics>(p->sources);
  p->file = p->sources.add("t.emmy", text);
  p->module = parse_module(p->sources, p->file, *p->diags);
  return p;
}

std::string at(const Parsed& p, SourceRange r) {
  LineCol lc = p.sources.file(r.file).line_col(r.begin);
  return std::to_string(lc.line) + ":" + std::to_string(lc.column) + ":" + std::string(p.sources.text(r));
}

}  // namespace

TEST_CASE("an op parses into params, outputs and statements with ranges") {
  auto p = parse(
      "/// doc line\nop f(x: f16[N, 64], s: f32) -> (y: f32[N]) {\n  let c = 2.5e-1;\n  y[i] = sum(j where j < i: x[i, "
      "j]) * c;\n}\n");
  REQUIRE_FALSE(p->diags->has_errors());
  REQUIRE(p->module.items.size() == 1);
  const auto& op = std::get<ast::OpDecl>(p->module.items[0]);
  CHECK(op.doc == std::vector<std::string>{"doc line"});
  CHECK(op.name.name == "f");
  REQUIRE(op.params.size() == 2);
  CHECK(op.params[0].dims.size() == 2);
  CHECK(op.params[0].dims[0].name == "N");
  CHECK(op.params[0].dims[1].is_literal());
  CHECK(op.params[0].dims[1].value == 64);
  CHECK_FALSE(op.params[1].has_shape);
  CHECK(at(*p, op.outputs[0].name.range) == "2:33:y");
  REQUIRE(op.body.size() == 2);
  const auto& let = std::get<ast::LetStmt>(op.body[0]);
  CHECK(let.value.kind == ast::ExprKind::Float);
  CHECK(let.value.float_value == doctest::Approx(0.25));
  const auto& a = std::get<ast::AssignStmt>(op.body[1]);
  CHECK(a.bracketed);
  CHECK(print_expr(a.value) == "(* (sum [j] where (< j i) x[i, j]) c)");
  CHECK(at(*p, a.value.args[0].range) == "4:10:sum(j where j < i: x[i, j])");
  CHECK(at(*p, a.value.args[0].axes[0].range) == "4:14:j");
}

TEST_CASE("operator precedence and associativity") {
  auto p = parse("op f(a: f32, b: f32, c: f32) -> (y: f32) { y = a - b - c * -a / 2 % 3 < 1 && !(a == b) || c >= 0; }");
  REQUIRE_FALSE(p->diags->has_errors());
  const auto& a = std::get<ast::AssignStmt>(std::get<ast::OpDecl>(p->module.items[0]).body[0]);
  CHECK_FALSE(a.bracketed);
  CHECK(print_expr(a.value) == "(|| (&& (< (- (- a b) (% (/ (* c (neg a)) 2) 3)) 1) (! (== a b))) (>= c 0))");
}

TEST_CASE("monoids: fields, identity, lift, combine, assume") {
  auto p = parse(
      "monoid pv(m: f32, o: f32[E]) {\n  identity = (-inf, 0);\n  lift(s: f32, v: f32[E]) = (s, v);\n"
      "  combine(a, b) { let n = max(a.m, b.m); yield (n, a.o * exp(a.m - n) + b.o); }\n  assume commutative;\n}\n");
  REQUIRE_FALSE(p->diags->has_errors());
  const auto& m = std::get<ast::MonoidDecl>(p->module.items[0]);
  CHECK(m.fields.size() == 2);
  REQUIRE(m.fields[1].vector_dim);
  CHECK(m.fields[1].vector_dim->name == "E");
  CHECK(print_expr(*m.identity) == "(tuple (neg inf) 0)");
  REQUIRE(m.lift_params);
  CHECK(m.lift_params->size() == 2);
  CHECK(m.combine_lhs.name == "a");
  CHECK(m.combine_lets.size() == 1);
  CHECK(print_expr(*m.combine_yield) == "(tuple n (+ (* a.o (exp (- a.m n))) b.o))");
  REQUIRE(m.assumes.size() == 1);
  CHECK(m.assumes[0].name == "commutative");
}

TEST_CASE("schedule knob values are taken verbatim, empty values allowed") {
  auto p = parse(
      "schedule sdpa for sm_90 as \"fast\" {\n  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4;\n  TILE@e = f64;\n  REDUCE = "
      ";\n}\n");
  REQUIRE_FALSE(p->diags->has_errors());
  const auto& s = std::get<ast::ScheduleDecl>(p->module.items[0]);
  CHECK(s.op.name == "sdpa");
  CHECK(s.target.name == "sm_90");
  REQUIRE(s.label);
  CHECK(s.label->name == "fast");
  REQUIRE(s.entries.size() == 3);
  CHECK(s.entries[0].value == "a:mma_m16n8k16_f16/w4x1/f2x8/k4");
  CHECK(at(*p, s.entries[0].value_range) == "2:10:a:mma_m16n8k16_f16/w4x1/f2x8/k4");
  REQUIRE(s.entries[1].site);
  CHECK(s.entries[1].site->name == "e");
  CHECK(s.entries[1].value == "f64");
  CHECK(s.entries[2].value.empty());
  CHECK(s.entries[2].value_range.begin == s.entries[2].value_range.end);
}

TEST_CASE("imports, slices and fields") {
  auto p = parse("import std.nn;\nop f(v: f32[T, E]) -> (o: f32[E]) { r = g(j: v[j, :]); o[e] = r.o[e]; }");
  REQUIRE_FALSE(p->diags->has_errors());
  CHECK(std::get<ast::ImportDecl>(p->module.items[0]).dotted() == "std.nn");
  const auto& op = std::get<ast::OpDecl>(p->module.items[1]);
  CHECK(print_expr(std::get<ast::AssignStmt>(op.body[0]).value) == "(g [j] v[j, :])");
  CHECK(print_expr(std::get<ast::AssignStmt>(op.body[1]).value) == "r.o[e]");
}

TEST_CASE("syntax errors: several per file, E002, no tree") {
  auto p = parse("op f(x: f32) -> (y: f32) {\n  y = x +;\n}\nop g(x: f32) -> (y: f32) {\n  y = (x;\n}\n");
  CHECK(p->module.items.empty());
  REQUIRE(p->diags->error_count() >= 2);
  for (const Diagnostic& d : p->diags->all()) CHECK(d.code == "E002");
  CHECK(at(*p, p->diags->all()[0].range) == "2:10:;");
}

TEST_CASE("a missing semicolon is reported after the previous token") {
  auto p = parse("op f(x: f32) -> (y: f32) {\n  let a = x\n  y = a;\n}\n");
  REQUIRE(p->diags->error_count() >= 1);
  const Diagnostic& d = p->diags->all()[0];
  CHECK(d.code == "E002");
  CHECK(d.message == "expected ';' after this");
  LineCol lc = p->sources.file(p->file).line_col(d.range.begin);
  CHECK(lc.line == 2);
  CHECK(lc.column == 12);
}

TEST_CASE("lexical errors: bad characters, unclosed comments, invalid UTF-8, deep nesting") {
  auto a = parse("op f(x: f32) -> (y: f32) { y = x $ 1; }");
  REQUIRE(a->diags->error_count() >= 1);
  CHECK(a->diags->all()[0].code == "E001");
  CHECK(at(*a, a->diags->all()[0].range) == "1:34:$");

  auto b = parse("op f(x: f32) -> (y: f32) { y = x; }\n/* never closed");
  REQUIRE(b->diags->error_count() == 1);
  CHECK(b->diags->all()[0].message == "block comment is never closed");

  auto c = parse(std::string("op f() -> () {}\n// \xff\xfe bad"));
  REQUIRE(c->diags->error_count() == 1);
  CHECK(c->diags->all()[0].message == "source is not valid UTF-8");

  auto d = parse("op f(x: f32) -> (y: f32) { y = " + std::string(500, '(') + "x" + std::string(500, ')') + "; }");
  REQUIRE(d->diags->error_count() == 1);
  CHECK(d->diags->all()[0].code == "E004");

  auto e = parse("op f(x: f32) -> (y: f32) { y = x + 99999999999999999999; }");
  REQUIRE(e->diags->error_count() == 1);
  CHECK(e->diags->all()[0].code == "E003");
}

TEST_CASE("non-ASCII text in comments keeps byte columns right") {
  auto p = parse("// ∑ über alles\nop f(x: f32) -> (y: f32) { y = x $ 1; } // é\n");
  REQUIRE(p->diags->error_count() >= 1);
  CHECK(at(*p, p->diags->all()[0].range) == "2:34:$");
}

TEST_CASE("keywords come from the grammar") {
  const auto& k = keywords();
  for (const char* w : {"op", "let", "monoid", "identity", "lift", "combine", "yield", "assume", "schedule", "for",
                        "as", "import", "where", "inf", "true", "false"})
    CHECK(std::find(k.begin(), k.end(), std::string(w)) != k.end());
  CHECK(std::find(k.begin(), k.end(), std::string("(")) == k.end());
}

namespace {

std::string chain(const std::string& op, size_t terms) {
  std::string out = "x";
  for (size_t i = 1; i < terms; ++i) out += " " + op + " x";
  return out;
}

}  // namespace

TEST_CASE("E004: the AST is at most 1000 operators deep; a chain nests one level per operator") {
  for (const char* op : {"+", "*", "&&", "-"}) {
    CAPTURE(op);
    auto ok = parse("op f(x: f32) -> (y: f32) { y = " + chain(op, 1001) + "; }");  // 1000 operators
    CHECK_FALSE(ok->diags->has_errors());
    auto deep = parse("op f(x: f32) -> (y: f32) { y = " + chain(op, 1002) + "; }");
    REQUIRE(deep->diags->error_count() == 1);
    const Diagnostic& d = deep->diags->all()[0];
    CHECK(d.code == "E004");
    CHECK(d.message == "expression nested more than 1000 levels deep");
    CHECK(d.help.find("'let'") != std::string::npos);
    const size_t column = 32 + (std::string(op).size() + 3) * 1000 + 2;  // the 1001st operator
    CHECK(at(*deep, d.range) == "1:" + std::to_string(column) + ":" + op);
    CHECK(deep->module.items.empty());
  }
  // A chain as deep inside brackets adds to the depth of the chain around it.
  std::string inner = chain("+", 600);
  inner.insert(0, 1, '(');
  inner += ')';
  CHECK(parse("op f(x: f32) -> (y: f32) { y = " + inner + " * " + inner + "; }")->diags->error_count() == 0);
  CHECK(parse("op f(x: f32) -> (y: f32) { y = " + inner + " * " + chain("+", 500) + "; }")->diags->error_count() == 1);
  // Postfix chains count too; the builder stops at the limit (100,000 of them are cheap).
  std::string fields;
  for (int i = 0; i < 100000; ++i) fields += ".f";
  auto postfix = parse("op f(x: f32[N]) -> (y: f32[N]) { y[i] = x[i]" + fields + "; }");
  REQUIRE(postfix->diags->error_count() == 1);
  CHECK(postfix->diags->all()[0].code == "E004");
}

TEST_CASE("E004 nesting counts brackets and unary operators, not binary minus") {
  CHECK_FALSE(parse("op f(x: f32) -> (y: f32) { y = " + chain("-", 400) + "; }")->diags->has_errors());
  std::string unary;
  for (int i = 0; i < 201; ++i) unary += "- ";
  auto u = parse("op f(x: f32) -> (y: f32) { y = " + unary + "x; }");
  REQUIRE(u->diags->error_count() == 1);
  CHECK(u->diags->all()[0].message == "expression nested more than 200 levels deep");
  // Unary operators end with their operand: 300 of them, one per term, nest one level.
  CHECK_FALSE(parse("op f(x: f32) -> (y: f32) { y = " + chain("- -", 300) + "; }")->diags->has_errors());
  std::string mixed;
  for (int i = 0; i < 101; ++i) mixed += "-(";
  auto m = parse("op f(x: f32) -> (y: f32) { y = " + mixed + "x" + std::string(101, ')') + "; }");
  REQUIRE(m->diags->error_count() == 1);
  CHECK(m->diags->all()[0].code == "E004");
}

TEST_CASE("E005: names have at most 255 characters") {
  CHECK_FALSE(parse("op " + std::string(255, 'f') + "(x: f32) -> (y: f32) { y = x; }")->diags->has_errors());
  auto p = parse("op " + std::string(100000, 'f') + "(x: f32) -> (" + std::string(300, 'y') + ": f32) { y = x; }");
  REQUIRE(p->diags->error_count() == 2);
  CHECK(p->diags->all()[0].code == "E005");
  CHECK(p->diags->all()[0].message == "name 'ffffffffffffffff...' is 100000 characters long; names have at most 255");
  CHECK(at(*p, p->diags->all()[0].range) == "1:4:f");
  CHECK(p->diags->all()[1].message == "name 'yyyyyyyyyyyyyyyy...' is 300 characters long; names have at most 255");
  CHECK(p->module.items.empty());
}

TEST_CASE("an op without inputs: its one parameter list is the outputs") {
  auto p = parse("op ramp() -> (y: f32[8]) {\n  y[i] = 1.0;\n}\nop sink(x: f32[N]) -> () {\n}\n");
  REQUIRE_FALSE(p->diags->has_errors());
  REQUIRE(p->module.items.size() == 2);
  const auto& ramp = std::get<ast::OpDecl>(p->module.items[0]);
  CHECK(ramp.params.empty());
  REQUIRE(ramp.outputs.size() == 1);
  CHECK(ramp.outputs[0].name.name == "y");
  const auto& sink = std::get<ast::OpDecl>(p->module.items[1]);
  REQUIRE(sink.params.size() == 1);
  CHECK(sink.params[0].name.name == "x");
  CHECK(sink.outputs.empty());
}

TEST_CASE("a source over kMaxSourceBytes is one located error (E006), not parsed") {
  auto p = parse(std::string(kMaxSourceBytes + 1, ' '));
  REQUIRE(p->diags->error_count() == 1);
  CHECK(p->diags->all()[0].code == "E006");
  CHECK(p->diags->all()[0].range.begin == 0);
  CHECK(p->module.items.empty());
}
