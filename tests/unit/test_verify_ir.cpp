// The tensor and loop IR verifiers accept what the pipeline builds (every stdlib and example
// op, with --verify-each) and catch each kind of broken IR; --print-after prints each level.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/verify_loop.hpp"
#include "ir/verify_tensor.hpp"
#include "lower/passes.hpp"
#include "schedule/targets.hpp"
#include "test_helpers.hpp"

using namespace emmy;

namespace {

tir::Expr index(const std::string& name) {
  tir::Expr e;
  e.kind = tir::Expr::Kind::Index;
  e.name = name;
  return e;
}

tir::Expr read(const std::string& tensor, std::vector<tir::Expr> at) {
  tir::Expr e;
  e.kind = tir::Expr::Kind::Read;
  e.name = tensor;
  e.args = std::move(at);
  return e;
}

// y[i<N] = x[i]: an elementwise op's tensor IR, well formed.
tir::Program copy_op() {
  tir::Program p;
  p.op = "copy";
  p.sizes = {"N"};
  p.tensors = {{"x", tir::Tensor::Role::Input, DType::F32, "", {"N"}},
               {"y", tir::Tensor::Role::Output, DType::F32, "", {"N"}}};
  p.stmts = {{"y", {{"i", "N"}}, read("x", {index("i")})}};
  return p;
}

std::string problems(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += s + "\n";
  return out;
}

}  // namespace

TEST_CASE("the tensor IR verifier accepts a well-formed program and names each problem") {
  CHECK(tir::verify_program(copy_op()).empty());
  struct Broken {
    const char* what;
    void (*breaks)(tir::Program&);
    const char* expect;
  };
  const Broken cases[] = {
      {"unknown read", [](tir::Program& p) { p.stmts[0].value.name = "z"; }, "reads 'z', which is no tensor of the op"},
      {"rank", [](tir::Program& p) { p.stmts[0].value.args.push_back(index("i")); },
       "reads 'x' with 2 indices; it has rank 1"},
      {"unbound index", [](tir::Program& p) { p.stmts[0].value.args[0].name = "j"; },
       "index variable 'j' is not bound here"},
      {"writes an input", [](tir::Program& p) { p.stmts[0].name = "x"; }, "writes an input"},
      {"unknown size", [](tir::Program& p) { p.stmts[0].vars[0].size = "M"; }, "size 'M' is not one of the op's"},
      {"duplicate tensor", [](tir::Program& p) { p.tensors.push_back(p.tensors[0]); }, "declared twice"},
      {"read before write",
       [](tir::Program& p) {
         p.tensors.push_back({"t", tir::Tensor::Role::Intermediate, DType::F32, "", {"N"}});
         p.stmts[0].value = read("t", {index("i")});
         p.stmts.push_back({"t", {{"i", "N"}}, read("x", {index("i")})});
       },
       "reads intermediate 't' before a statement writes it"},
  };
  for (const Broken& b : cases) {
    CAPTURE(b.what);
    tir::Program p = copy_op();
    b.breaks(p);
    const std::string got = problems(tir::verify_program(p));
    CHECK(got.find(b.expect) != std::string::npos);
  }
}

TEST_CASE("the loop IR verifier checks scopes, stores, folds and loops") {
  auto program = [] {
    lir::Program p;
    p.tensors = copy_op();
    lir::Kernel k;
    k.threads = {{"i", "N"}};
    lir::Stmt store;
    store.kind = lir::Stmt::Kind::Store;
    store.tensor = "y";
    store.vars = {{"i", "N"}};
    store.value = read("x", {index("i")});
    k.body.push_back(store);
    p.kernels.push_back(k);
    return p;
  };
  CHECK(lir::verify_program(program()).empty());
  lir::Program unbound = program();
  unbound.kernels[0].threads[0].name = "n";
  CHECK(problems(lir::verify_program(unbound)).find("index variable 'i' is not bound here") != std::string::npos);
  lir::Program to_input = program();
  to_input.kernels[0].body[0].tensor = "x";
  CHECK(problems(lir::verify_program(to_input)).find("stores to an input") != std::string::npos);
  lir::Program atomic = program();
  atomic.kernels[0].body[0].atomic = "prod";
  CHECK(problems(lir::verify_program(atomic)).find("no atomic combines with 'prod'") != std::string::npos);
  lir::Program twice = program();
  twice.kernels.push_back(twice.kernels[0]);
  CHECK(problems(lir::verify_program(twice)).find("two kernels of this name") != std::string::npos);
  lir::Program fold = program();
  lir::Stmt f;
  f.kind = lir::Stmt::Kind::Fold;
  f.axis = {"j", "N"};
  f.range = {index("i")};
  fold.kernels[0].body.insert(fold.kernels[0].body.begin(), f);
  const std::string got = problems(lir::verify_program(fold));
  CHECK(got.find("a fold without a monoid") != std::string::npos);
  CHECK(got.find("a fold without carrier fields") != std::string::npos);
  CHECK(got.find("a fold range of 1 bounds") != std::string::npos);
}

TEST_CASE("every stdlib and example op lowers with every level verified after every pass") {
  const TargetInfo& target = *find_target("sm_90a");
  size_t ops = 0;
  for (const char* dir : {"stdlib", "examples"})
    for (const auto& entry : std::filesystem::directory_iterator(std::string(EMMY_SOURCE_DIR) + "/" + dir)) {
      if (entry.path().extension() != ".emmy") continue;
      auto r = test::check_file(entry.path().string());
      REQUIRE_MESSAGE(!r->diags->has_errors(), entry.path().string());
      for (const std::string& name : lower::main_ops(*r->program)) {
        CAPTURE(name);
        lower::PipelineOptions po;
        po.verify_each = true;
        try {
          lower::lower_op(*r->program, r->program->ops.at(name), {}, target, nullptr, po);
          ++ops;
        } catch (const lower::LowerError&) {
          // a refusal is the op's (needs knobs it does not have); a verifier's complaint is not
        }
      }
    }
  CHECK(ops > 40);
}

TEST_CASE("--print-after prints the level each pass leaves, in pipeline order") {
  auto r = test::check_source("op f(x: f32[N]) -> (y: f32) { y = sum(i: x[i]); }");
  REQUIRE(!r->diags->has_errors());
  std::ostringstream out;
  lower::PipelineOptions po;
  po.print_after = {"all"};
  po.out = &out;
  lower::lower_op(*r->program, r->program->ops.at("f"), {}, *find_target("sm_90"), nullptr, po);
  const std::string text = out.str();
  size_t at = 0;
  for (const std::string& pass : lower::pass_names()) {
    CAPTURE(pass);
    const size_t found = text.find(" IR after " + pass + " -----", at);
    REQUIRE(found != std::string::npos);
    at = found;
  }
  CHECK(text.find("// ----- kernel IR after to-kernel -----\nprogram f") != std::string::npos);
}
