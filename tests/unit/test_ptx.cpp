// Unit tests of Emmy's PTX printer (codegen/ptx): every stdlib op's kernels print as PTX that
// ptxas (through nvJitLink) compiles; the integer division by powers of two; a masked load
// behind a select.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <fmt/format.h>

#include "codegen/ptx/print_ptx.hpp"
#include "codegen/ptx/ptx_math.hpp"
#include "driver/lowering.hpp"
#include "runtime/ptx_link.hpp"
#include "schedule/targets.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

bool ptx_link_or_skip() {
  std::string why;
  if (runtime::ptx_link_available(&why)) return true;
  MESSAGE("skipped: " << why);
  return false;
}

// What the math tables print, collected.
class Lines final : public ptx::Emitter {
 public:
  std::string text;
  std::string temp(kir::ScalarType type) override { return fmt::format("%t{}_{}", ptx::reg_prefix(type), n_++); }
  std::string label() override { return fmt::format("$L{}", n_++); }
  void line(std::string_view s) override { text += std::string(s) + "\n"; }
  void place(std::string_view s) override { text += std::string(s) + ":\n"; }

 private:
  int n_ = 0;
};

TEST_CASE("ptx: integer division and remainder by a power of two print as shifts, other divisors as div") {
  using kir::BinOp;
  using ST = kir::ScalarType;
  for (ST t : {ST::I32, ST::I64, ST::U32}) {
    Lines q, r, other;
    ptx::math_binary(q, BinOp::Div, {"%x", t}, {"64", t});
    ptx::math_binary(r, BinOp::Rem, {"%x", t}, {"8", t});
    ptx::math_binary(other, BinOp::Div, {"%x", t}, {"48", t});
    CAPTURE(q.text);
    CHECK(q.text.find("div.") == std::string::npos);
    CHECK(r.text.find("rem.") == std::string::npos);
    CHECK(other.text.find("div.") != std::string::npos);
    // Signed quotients round toward zero: the sign's bias before the arithmetic shift.
    if (t != ST::U32) CHECK(q.text.find(t == ST::I64 ? "shr.u64" : "shr.u32") != std::string::npos);
  }
}

TEST_CASE("ptx: a select whose branch loads reads memory only on its own side") {
  using namespace kir;
  Kernel k;
  k.name = "k_masked";
  k.params = {{Param::Kind::Buffer, "x", ScalarType::F32, true, {}, {}},
              {Param::Kind::Buffer, "y", ScalarType::F32, false, {}, {}},
              {Param::Kind::Scalar, "n", ScalarType::I64, true, {}, {}}};
  k.grid_x = ci(1, ScalarType::I64);
  Expr i = cast(special(Special::ThreadIdx), ScalarType::I64);
  Expr ok = binary(BinOp::Lt, i, param("n", ScalarType::I64));
  k.body = {
      store(Space::Global, "y", i, select(ok, load(Space::Global, "x", i, ScalarType::F32), cf(0.0, ScalarType::F32)))};
  Program p;
  p.op = "masked";
  p.kernels = {k};
  PtxPrint printed = print_ptx(p, "sm_90a");
  REQUIRE(printed.unsupported.empty());
  // The load sits after a branch on the mask, not before a selp.
  const size_t branch = printed.ptx.find("bra"), read = printed.ptx.find("ld.global.nc.f32");
  CHECK(branch < read);
  CHECK(printed.ptx.find("selp.f32") == std::string::npos);
  if (!ptx_link_or_skip()) return;
  runtime::CompileOptions co;
  co.target = find_target("sm_90a");
  runtime::CompileResult r = runtime::compile_ptx(printed.ptx, co);
  CHECK_MESSAGE(r.ok, r.log);
}

// Every op of the stdlib's files as `emmyc compile` lowers it (its schedule block for the
// target, else the auto-schedule): printed, compiled by ptxas, one report an entry. erf has no
// PTX sequence yet: those kernels report it.
TEST_CASE("ptx: the stdlib's kernels print as PTX that ptxas compiles for sm_90a and sm_80") {
  if (!ptx_link_or_skip()) return;
  for (const char* file : {"/stdlib/nn.emmy", "/stdlib/linalg.emmy"}) {
    auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + file);
    REQUIRE(l->program);
    for (const auto& [name, op] : l->program->ops) {
      for (const char* target : {"sm_90a", "sm_80"}) {
        const std::string at = fmt::format("{} {} {}", file, name, target);
        CAPTURE(at);
        LowerOptions lo;
        lo.op = name;
        lo.target = target;
        std::ostringstream err;
        std::optional<lower::Lowered> lowered = lower_for_driver(*l->program, lo, err);
        REQUIRE_MESSAGE(lowered, err.str());
        const TargetInfo& t = *find_target(target);
        PtxPrint printed = print_ptx(lowered->kernels, t.name);
        if (!printed.unsupported.empty()) {
          CHECK_MESSAGE(printed.unsupported.find("erf of f32") == 0, printed.unsupported);
          continue;
        }
        runtime::CompileOptions co;
        co.target = &t;
        runtime::CompileResult r = runtime::compile_ptx(printed.ptx, co);
        REQUIRE_MESSAGE(r.ok, r.log);
        CHECK(r.resources.size() == lowered->kernels.kernels.size());
      }
    }
  }
}

}  // namespace
}  // namespace emmy
