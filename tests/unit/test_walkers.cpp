// The IR walkers of the three levels: visit reaches every node parents first (predicates
// and nested statements too), map_children and map_stmts rebuild one level at a time.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/kernel.hpp"
#include "ir/loop_ir.hpp"
#include "ir/tensor_ir.hpp"

using namespace emmy;

namespace {

tir::Expr tnode(tir::Expr::Kind kind, std::string name, std::vector<tir::Expr> args = {}) {
  tir::Expr e;
  e.kind = kind;
  e.name = std::move(name);
  e.args = std::move(args);
  return e;
}

// sum(k<K where k < i: x[i, k]): a reduction with a predicate.
tir::Expr masked_sum() {
  using K = tir::Expr::Kind;
  tir::Expr r = tnode(K::Reduce, "", {tnode(K::Read, "x", {tnode(K::Index, "i"), tnode(K::Index, "k")})});
  r.op = "sum";
  r.axes = {{"k", "K"}};
  tir::Expr lt = tnode(K::Binary, "", {tnode(K::Index, "k"), tnode(K::Index, "i")});
  lt.op = std::string(1, '<');  // (GCC 12's -Wrestrict misreads an assignment of "<")
  r.where = {lt};
  return r;
}

}  // namespace

TEST_CASE("walkers: tensor IR visit reaches predicates, parents first; map_children keeps the node") {
  const tir::Expr e = masked_sum();
  std::vector<std::string> order;
  tir::visit(e, [&](const tir::Expr& x) {
    order.push_back(x.kind == tir::Expr::Kind::Reduce ? "reduce" : x.name.empty() ? x.op : x.name);
  });
  CHECK(order == std::vector<std::string>{"reduce", "x", "i", "k", "<", "k", "i"});
  CHECK(tir::any_node(e, [](const tir::Expr& x) { return x.kind == tir::Expr::Kind::Binary; }));
  CHECK_FALSE(tir::any_node(e, [](const tir::Expr& x) { return x.kind == tir::Expr::Kind::Slice; }));
  CHECK(tir::has_reduce(e));
  // Renaming one index everywhere, the predicate included.
  std::function<tir::Expr(const tir::Expr&)> rename = [&](const tir::Expr& x) {
    if (x.kind == tir::Expr::Kind::Index && x.name == "i") return tnode(tir::Expr::Kind::Index, "row");
    return tir::map_children(x, rename);
  };
  const tir::Expr r = rename(e);
  CHECK(r.op == "sum");
  CHECK(r.axes.size() == 1);
  CHECK(r.where.size() == 1);
  CHECK(tir::uses_index(r.where[0], "row"));
  CHECK(tir::uses_index(r, "row"));
  CHECK_FALSE(tir::uses_index(r, "i"));
}

TEST_CASE("walkers: tensor IR substitute respects a reduction's axes: shadowed, and renamed before a capture") {
  using K = tir::Expr::Kind;
  const tir::Expr e = masked_sum();  // sum(k<K where k < i: x[i, k])
  // i -> k (a read at the reduction's own axis name): the axis is renamed first, so the result
  // still reads x at the substituted k and the reduction's own variable apart.
  const tir::Expr r = tir::substitute(e, {{"i", tnode(K::Index, "k")}});
  CHECK(tir::print_expr(r) == "sum(k_1<K where (k_1 < k): x[k, k_1])");
  // k -> 0: the axis shadows it, nothing changes.
  CHECK(tir::print_expr(tir::substitute(e, {{"k", tnode(K::Index, "zero")}})) == tir::print_expr(e));
  // The axis k_1 renamed again where the value reads k_1 (its fresh name from its own).
  const tir::Expr r2 = tir::substitute(r, {{"k", tnode(K::Read, "y", {tnode(K::Index, "k_1")})}});
  CHECK(tir::print_expr(r2) == "sum(k_1_1<K where (k_1_1 < y[k_1]): x[y[k_1], k_1_1])");
}

TEST_CASE("walkers: loop IR visit goes into loop bodies and fold results; visit_exprs is one statement's own") {
  lir::Stmt fold;
  fold.kind = lir::Stmt::Kind::Fold;
  fold.value = masked_sum();
  fold.where = {tnode(tir::Expr::Kind::Index, "w")};
  fold.fields = {{"acc", DType::F32, tnode(tir::Expr::Kind::Read, "lift"), true}};
  lir::Stmt result;
  result.kind = lir::Stmt::Kind::Compute;
  result.reg = "r";
  fold.results = {result};
  lir::Stmt loop;
  loop.kind = lir::Stmt::Kind::Loop;
  loop.body = {fold};
  std::vector<lir::Stmt> body{loop};

  std::vector<lir::Stmt::Kind> kinds;
  lir::visit(std::as_const(body), [&](const lir::Stmt& s) { kinds.push_back(s.kind); });
  CHECK(kinds == std::vector<lir::Stmt::Kind>{lir::Stmt::Kind::Loop, lir::Stmt::Kind::Fold, lir::Stmt::Kind::Compute});

  lir::visit(body, [](lir::Stmt& s) {
    for (lir::CarrierField& f : s.fields) f.per_tile = false;
  });
  CHECK_FALSE(body[0].body[0].fields[0].per_tile);

  int exprs = 0;
  lir::visit_exprs(body[0].body[0], [&](const tir::Expr&) { ++exprs; });
  CHECK(exprs == 3);  // value, one where, one lift
}

TEST_CASE("walkers: kernel IR visit, visit_exprs, map_children and map_stmts") {
  using namespace kir;
  const Expr sum = binary(BinOp::Add, var({"a"}, ScalarType::F32), unary(UnOp::Exp, var({"b"}, ScalarType::F32)));
  int vars = 0, nodes = 0;
  visit(sum, [&](const Expr& e) {
    ++nodes;
    vars += e.kind == Expr::Kind::Var;
  });
  CHECK(nodes == 4);
  CHECK(vars == 2);

  std::function<Expr(const Expr&)> swap = [&](const Expr& e) {
    if (e.kind == Expr::Kind::Var && e.reg.name == "b") return var({"c"}, ScalarType::F32);
    return map_children(e, swap);
  };
  const Expr swapped = swap(sum);
  CHECK(swapped.kind == Expr::Kind::Binary);
  CHECK(swapped.args[1].args[0].reg.name == "c");
  CHECK(sum.args[1].args[0].reg.name == "b");  // the original is untouched

  std::vector<Stmt> body{decl("a", ScalarType::F32, cf(0)),
                         for_loop("i", ScalarType::I32, ci(0), ci(4),
                                  {if_then(binary(BinOp::Lt, var({"i"}, ScalarType::I32), ci(2)), {assign({"a"}, sum)},
                                           {comment("odd")})})};
  std::vector<Stmt::Kind> kinds;
  visit(body, [&](const Stmt& s) { kinds.push_back(s.kind); });
  CHECK(kinds == std::vector<Stmt::Kind>{Stmt::Kind::Decl, Stmt::Kind::For, Stmt::Kind::If, Stmt::Kind::Assign,
                                         Stmt::Kind::Comment});
  int exp_nodes = 0;
  visit_exprs(body, [&](const Expr& e) { exp_nodes += e.kind == Expr::Kind::Unary && e.un == UnOp::Exp; });
  CHECK(exp_nodes == 1);

  // Comments dropped, each assignment doubled: nested lists are mapped before their parent.
  const std::vector<Stmt> mapped = map_stmts(body, [](Stmt s) -> std::vector<Stmt> {
    if (s.kind == Stmt::Kind::Comment) return {};
    if (s.kind == Stmt::Kind::Assign) return {s, s};
    return {std::move(s)};
  });
  REQUIRE(mapped.size() == 2);
  const Stmt& branch = mapped[1].body.at(0);
  CHECK(branch.body.size() == 2);
  CHECK(branch.orelse.empty());
  CHECK(body[1].body[0].orelse.size() == 1);
}
