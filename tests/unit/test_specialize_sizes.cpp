// lower::specialize_sizes: a program's kernels with every test that reads only sizes decided at
// a launch's sizes. The specialized kernels compute exactly what the generic ones compute there
// (the interpreter's outputs equal bit for bit) at each class the row ops' sizes fall in (a row
// cache's capacity held or not, the row length a multiple of the vector width or not, shorter
// than a row's threads); their CUDA is smaller, and NVRTC builds them (sm_80, sm_90a) without
// spills, in no more registers and a smaller CUBIN; tests that read registers stay; sizes of one
// class name the same class.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "runtime/nvrtc.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

// Ifs of `program` whose test reads a register (a thread's row, a loop's index): never decided.
int register_tests(const kir::Program& program) {
  int n = 0;
  for (const kir::Kernel& k : program.kernels)
    kir::visit(k.body, [&](const kir::Stmt& s) {
      if (s.kind != kir::Stmt::Kind::If) return;
      bool reads = false;
      kir::visit(s.args[0], [&](const kir::Expr& e) {
        reads |= e.kind == kir::Expr::Kind::Var || e.kind == kir::Expr::Kind::Special;
      });
      n += reads;
    });
  return n;
}

}  // namespace

TEST_CASE("specialize_sizes: the row ops' kernels at each size class compute what the generic ones do, bit for bit") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  // r4 holds 32 x 8 x 4 = 1024 elements a row in registers, c2 64 x 8 x 2 = 1024 in shared memory;
  // the walk's k2 slices of up to 128 x 8 x 1 = 1024 (rows up to 2048), with the weights kept.
  const std::pair<int64_t, int64_t> shapes[] = {{37, 1000}, {5, 77}, {9, 2048}, {4, 1025}, {3, 5}};
  for (const char* name : {"softmax", "layernorm", "rmsnorm"})
    for (const char* knobs : {"COOP=t32/v8/r4", "COOP=t64/v8/c2", "COOP=t128/v8", "COOP=t128/v8/c1/k2,PERSIST=1"})
      for (const auto& [n, c] : shapes) {
        const std::string at = fmt::format("{} {} C={}", name, knobs, c);
        CAPTURE(at);
        const CheckedOp& op = l->program->ops.at(name);
        const lower::Lowered low = lower::lower_op(*l->program, op, {nullptr, "", knobs}, *find_target("sm_90"));
        const SizeBindings sizes{{"N", n}, {"C", c}};
        const kir::Program spec = lower::specialize_sizes(low.kernels, sizes);
        const std::vector<std::string> problems = verify_program(spec);
        CHECK_MESSAGE(problems.empty(), fmt::format("{}", fmt::join(problems, "\n")));
        CHECK_FALSE(lower::size_class(low.kernels, sizes).empty());  // the vector path's test at least
        CHECK(print_cuda(spec).size() < print_cuda(low.kernels).size());
        // Every test of a register kept, unless it sat in a branch not taken.
        CHECK(register_tests(spec) > 0);
        CHECK(register_tests(spec) <= register_tests(low.kernels));
        const TensorMap inputs = random_inputs(op, sizes, 3);
        TensorMap generic = inputs, special = inputs;
        run_simt(low.kernels, sizes, generic, SimtOptions{});
        run_simt(spec, sizes, special, SimtOptions{});
        for (const TensorInfo& t : op.tensors)
          if (t.role == TensorInfo::Role::Output) CHECK(generic.at(t.name).data == special.at(t.name).data);
      }
}

TEST_CASE("specialize_sizes: sizes of one class share it; a size that decides a test otherwise does not") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  const lower::Lowered low = lower::lower_op(*l->program, l->program->ops.at("rmsnorm"),
                                             {nullptr, "", "COOP=t32/v8/r4"}, *find_target("sm_90"));
  auto cls = [&](int64_t n, int64_t c) { return lower::size_class(low.kernels, {{"N", n}, {"C", c}}); };
  CHECK(cls(4097, 1000) == cls(3, 512));      // a multiple of 8, within the registers' 1024
  CHECK(cls(4097, 1000) != cls(4097, 1001));  // the peeled path
  CHECK(cls(4097, 1000) != cls(4097, 2048));  // past the row cache: streamed
  CHECK(cls(4097, 1000).find("C % 8") != std::string::npos);
  CHECK(cls(4097, 1001).find("not ") != std::string::npos);
  // Without every size bound nothing is decided.
  CHECK(lower::size_class(low.kernels, {{"N", 5}}).empty());
}

TEST_CASE(
    "specialize_sizes: a test of sizes and logic is decided; one that reads a register, or a size not bound, is not") {
  using namespace kir;
  Kernel k;
  k.name = "k";
  auto param_of = [](const char* name, Param::Kind kind, ScalarType type) {
    Param p;
    p.kind = kind;
    p.name = name;
    p.type = type;
    return p;
  };
  k.params = {param_of("y", Param::Kind::Buffer, ScalarType::F32), param_of("N", Param::Kind::Scalar, ScalarType::I64),
              param_of("C", Param::Kind::Scalar, ScalarType::I64)};
  const Expr C = param("C", ScalarType::I64), N = param("N", ScalarType::I64);
  auto put = [](double v) { return std::vector<Stmt>{store(Space::Global, "y", ci(0, ScalarType::I64), cf(v))}; };
  const Expr sized =
      binary(BinOp::And, binary(BinOp::Eq, binary(BinOp::Rem, C, ci(8, ScalarType::I64)), ci(0, ScalarType::I64)),
             unary(UnOp::Not, binary(BinOp::Lt, N, ci(2, ScalarType::I64))));
  k.body = {decl("r", ScalarType::I64, cast(special(Special::ThreadIdx), ScalarType::I64)),
            if_then(sized, put(1), put(2)), if_then(binary(BinOp::Lt, var({"r"}, ScalarType::I64), C), put(3)),
            if_then(binary(BinOp::Lt, param("M", ScalarType::I64), C), put(4))};
  Program p;
  p.op = "t";
  p.kernels = {k};
  const Program held = lower::specialize_sizes(p, {{"N", 5}, {"C", 16}});
  const Program not_held = lower::specialize_sizes(p, {{"N", 1}, {"C", 16}});
  REQUIRE(held.kernels[0].body.size() == 4);
  for (const auto& [spec, value] : {std::pair{&held, 1.0}, std::pair{&not_held, 2.0}}) {
    const Stmt& decided = spec->kernels[0].body[1];
    CHECK(decided.kind == Stmt::Kind::If);
    CHECK(decided.args[0].kind == Expr::Kind::Const);  // if (true) { the branch taken }
    CHECK(decided.orelse.empty());
    REQUIRE(decided.body.size() == 1);
    CHECK(decided.body[0].args[1].fval == value);
    CHECK(spec->kernels[0].body[2].args[0].kind == Expr::Kind::Binary);  // reads the register r
    CHECK(spec->kernels[0].body[3].args[0].kind == Expr::Kind::Binary);  // M is no size bound here
  }
  CHECK(lower::size_class(p, {{"N", 5}, {"C", 16}}) != lower::size_class(p, {{"N", 1}, {"C", 16}}));
  CHECK(lower::size_class(p, {{"N", 5}, {"C", 16}}) == lower::size_class(p, {{"N", 9}, {"C", 64}}));
  // A test without an else, not taken, goes altogether.
  Kernel only = k;
  only.body = {if_then(binary(BinOp::Lt, C, ci(4, ScalarType::I64)), put(5))};
  p.kernels = {only};
  CHECK(lower::specialize_sizes(p, {{"N", 5}, {"C", 16}}).kernels[0].body.empty());
}

TEST_CASE("specialize_sizes: the specialized row kernels compile with NVRTC, without spills, smaller") {
  if (!test::nvrtc_or_skip()) return;
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  for (const char* target : {"sm_80", "sm_90a"})
    for (const char* name : {"softmax", "layernorm", "rmsnorm"})
      for (const int64_t c : {1000, 1001}) {
        const std::string at = fmt::format("{} {} C={}", target, name, c);
        CAPTURE(at);
        const lower::Lowered low = lower::lower_op(*l->program, l->program->ops.at(name),
                                                   {nullptr, "", "COOP=t32/v8/r4"}, *find_target(target));
        runtime::CompileOptions co;
        co.target = find_target(target);
        const runtime::CompileResult generic = runtime::compile_cuda(print_cuda(low.kernels), "generic.cu", co);
        const runtime::CompileResult spec = runtime::compile_cuda(
            print_cuda(lower::specialize_sizes(low.kernels, {{"N", 37}, {"C", c}})), "spec.cu", co);
        REQUIRE_MESSAGE(spec.ok, spec.log);
        REQUIRE(generic.ok);
        REQUIRE(spec.resources.size() == 1);
        CHECK(spec.resources[0].spill_stores == 0);
        CHECK(spec.resources[0].stack_bytes == 0);
        CHECK(spec.resources[0].registers <= generic.resources[0].registers);
        CHECK(spec.cubin.size() < generic.cubin.size());
      }
}

}  // namespace emmy
