// Unit tests of Emmy's PTX printer (codegen/ptx): every stdlib op's kernels print as PTX that
// ptxas (through nvJitLink) compiles; the integer division by constants (shifts, magic numbers,
// checked against C's division) and the 64-bit one's 32-bit path; a masked load
// behind a select.
#include <doctest/doctest.h>

#include <climits>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/ptx/print_ptx.hpp"
#include "codegen/ptx/ptx_divide.hpp"
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

TEST_CASE(
    "ptx: integer division and remainder by constants print without div or rem; 64-bit ones by registers "
    "go through 32 bits where they fit") {
  using kir::BinOp;
  using ST = kir::ScalarType;
  for (ST t : {ST::I32, ST::I64, ST::U32}) {
    for (const char* d : {"64", "8", "48", "3", "-7"}) {
      if (t == ST::U32 && d[0] == '-') continue;
      Lines q, r;
      ptx::math_binary(q, BinOp::Div, {"%x", t}, {d, t});
      ptx::math_binary(r, BinOp::Rem, {"%x", t}, {d, t});
      CAPTURE(q.text);
      CAPTURE(r.text);
      CHECK(q.text.find("div.") == std::string::npos);
      CHECK(r.text.find("rem.") == std::string::npos);
    }
    // Signed quotients by a power of two round toward zero: the sign's bias before the shift.
    Lines q;
    ptx::math_binary(q, BinOp::Div, {"%x", t}, {"64", t});
    if (t != ST::U32) CHECK(q.text.find(t == ST::I64 ? "shr.u64" : "shr.u32") != std::string::npos);
  }
  Lines wide, narrow;
  ptx::math_binary(wide, BinOp::Rem, {"%x", ST::I64}, {"%y", ST::I64});
  ptx::math_binary(narrow, BinOp::Div, {"%x", ST::I32}, {"%y", ST::I32});
  CHECK(wide.text.find("rem.u32") != std::string::npos);    // the fast path
  CHECK(wide.text.find("rem.s64") != std::string::npos);    // the wide one
  CHECK(narrow.text.find("div.s32") != std::string::npos);  // ptxas inlines it
  Lines large;  // a u32 remainder by a divisor past 2^31: unsigned throughout
  ptx::math_binary(large, BinOp::Rem, {"%x", ST::U32}, {"4294967291", ST::U32});
  CHECK(large.text.find("mul.lo.u32") != std::string::npos);
  CHECK(large.text.find(".s32") == std::string::npos);
}

// The instruction sequences of ptx_divide, evaluated in C++ at `width` bits.
int64_t wrap(__int128 v, int width) {
  return width == 64 ? static_cast<int64_t>(static_cast<uint64_t>(v)) : static_cast<int32_t>(static_cast<uint32_t>(v));
}

int64_t signed_quotient(int64_t n, int64_t d, int width) {
  const ptx::SignedMagic m = ptx::signed_magic(d, width);
  int64_t q = wrap((static_cast<__int128>(n) * m.multiplier) >> width, width);
  if (d > 0 && m.multiplier < 0) q = wrap(static_cast<__int128>(q) + n, width);
  if (d < 0 && m.multiplier > 0) q = wrap(static_cast<__int128>(q) - n, width);
  q >>= m.shift;
  return q + (q < 0 ? 1 : 0);
}

uint64_t unsigned_quotient(uint64_t n, uint64_t d, int width) {
  const ptx::UnsignedMagic m = ptx::unsigned_magic(d, width);
  const uint64_t hi = static_cast<uint64_t>((static_cast<unsigned __int128>(n) * m.multiplier) >> width);
  if (!m.add) return hi >> m.shift;
  return (((n - hi) >> 1) + hi) >> (m.shift - 1);
}

TEST_CASE("ptx: the magic numbers give C's quotient for every divisor tried, at the extremes of the dividend") {
  std::vector<int64_t> divisors;
  for (int64_t d = 2; d <= 1000; ++d) divisors.insert(divisors.end(), {d, -d});
  for (int64_t d : {int64_t{641}, int64_t{6700417}, int64_t{1} << 31, (int64_t{1} << 31) - 1, int64_t{1000000007},
                    int64_t{3} << 40, (int64_t{1} << 62) + 1, INT64_MAX, INT64_MIN})
    divisors.push_back(d);
  uint64_t seed = 42;
  const auto next = [&] { return seed = seed * 6364136223846793005ull + 1442695040888963407ull; };
  int checked = 0;
  for (int width : {32, 64}) {
    const int64_t lo = width == 64 ? INT64_MIN : INT32_MIN, hi = width == 64 ? INT64_MAX : INT32_MAX;
    for (int64_t d : divisors) {
      if (d < lo || d > hi) continue;
      std::vector<int64_t> ns = {0, 1, -1, lo, hi, lo + 1, hi - 1, d, d - 1, d + 1, -d};
      for (int k = 0; k < 40; ++k) ns.push_back(wrap(static_cast<__int128>(static_cast<int64_t>(next())), width));
      for (int64_t n : ns) {
        if (n < lo || n > hi) continue;
        CAPTURE(width);
        CAPTURE(d);
        CAPTURE(n);
        REQUIRE(signed_quotient(n, d, width) == n / d);
        if (d > 1) {
          const uint64_t mask = width == 64 ? ~uint64_t{0} : 0xffffffffull;
          const uint64_t un = static_cast<uint64_t>(n) & mask;
          REQUIRE(unsigned_quotient(un, static_cast<uint64_t>(d), width) == un / static_cast<uint64_t>(d));
        }
        ++checked;
      }
    }
  }
  CHECK(checked > 100000);
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
