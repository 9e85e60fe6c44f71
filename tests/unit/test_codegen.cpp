// Unit tests of the kernel-IR printer, the kernel verifier and the CUDA printer, on kernels
// built by hand: exact text, one broken kernel per verifier rule, NVRTC on the printed CUDA.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "codegen/cuda/print_cuda.hpp"
#include "ir/expr_facts.hpp"
#include "ir/intrinsics.hpp"
#include "ir/print_kernel.hpp"
#include "ir/verify_kernel.hpp"
#include "runtime/nvrtc.hpp"
#include "schedule/targets.hpp"
#include "test_helpers.hpp"

using namespace emmy;
using namespace emmy::kir;

namespace {

using ST = ScalarType;
constexpr ST F16 = ST::F16, F32 = ST::F32, I32 = ST::I32, I64 = ST::I64, U32 = ST::U32;

Param buffer(std::string name, ST type, bool is_const = true) {
  return {Param::Kind::Buffer, std::move(name), type, is_const, {}, {}};
}
Param size_param(std::string name) { return {Param::Kind::Scalar, std::move(name), I64, true, {}, {}}; }
Reg R(std::string name, int elem = -1) { return {std::move(name), elem}; }
Expr v(std::string name, ST type, int elem = -1) { return var(R(std::move(name), elem), type); }
Expr add(Expr a, Expr b) { return binary(BinOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return binary(BinOp::Mul, std::move(a), std::move(b)); }
Expr lt(Expr a, Expr b) { return binary(BinOp::Lt, std::move(a), std::move(b)); }
Expr tid() { return special(Special::ThreadIdx); }
Expr gload(std::string buf, Expr index, ST type) { return load(Space::Global, std::move(buf), std::move(index), type); }
Stmt gstore(std::string buf, Expr index, Expr value) {
  return store(Space::Global, std::move(buf), std::move(index), std::move(value));
}

Expr ceil_div(const std::string& n, int64_t d) {
  return binary(BinOp::Div, add(param(n, I64), ci(d - 1, I64)), ci(d, I64));
}

// A guarded elementwise kernel: out[i] = x[i] + f32(y[i]) for i < n.
Kernel elementwise_kernel() {
  Kernel k;
  k.name = "k_add_1a2b";
  k.doc = {"out = x + y, one element per thread."};
  k.params = {buffer("x", F32), buffer("y", F16), buffer("out", F32, false), size_param("n")};
  k.block_threads = 128;
  k.grid_x = ceil_div("n", 128);
  Expr i = v("i", I64);
  k.body = {
      decl("i", I64, add(mul(cast(special(Special::BlockIdx), I64), ci(128, I64)), cast(tid(), I64))),
      comment("the tail block has threads past n"),
      if_then(lt(i, param("n", I64)), {gstore("out", i, add(gload("x", i, F32), cast(gload("y", i, F16), F32)))}),
  };
  return k;
}

// One row per thread, a register-array carrier o[2] and a running max m over the row.
Kernel carrier_kernel() {
  Kernel k;
  k.name = "k_rowstat_3c4d";
  k.params = {buffer("x", F32), buffer("out", F16, false), size_param("R"), size_param("S")};
  k.block_threads = 64;
  k.grid_x = ceil_div("R", 64);
  Expr row = v("row", I64), s = v("s", F32), m = v("m", F32);
  k.body = {
      decl("row", I64, add(mul(cast(special(Special::BlockIdx), I64), ci(64, I64)), cast(tid(), I64))),
      if_then(
          binary(BinOp::Ge, row, param("R", I64)), {comment("past the last row")},
          {
              decl("m", F32, cf(-INFINITY)),
              decl("o", F32, cf(0.0), 2),
              comment("stream the row"),
              for_loop(
                  "j", I64, ci(0, I64), param("S", I64),
                  {
                      decl("s", F32, gload("x", add(mul(row, param("S", I64)), v("j", I64)), F32)),
                      decl("mn", F32, binary(BinOp::Max, m, s)),
                      assign(R("o", 0), add(mul(v("o", F32, 0), unary(UnOp::Exp, binary(BinOp::Sub, m, v("mn", F32)))),
                                            unary(UnOp::Exp, binary(BinOp::Sub, s, v("mn", F32))))),
                      assign(R("o", 1), add(v("o", F32, 1), mul(s, s))),
                      assign(R("m"), v("mn", F32)),
                  }),
              for_loop("c", I32, ci(0), ci(2),
                       {gstore("out", add(mul(row, ci(2, I64)), cast(v("c", I32), I64)), cast(v("o", F32, 0), F16))},
                       kir::Unroll::Full),
              assign(R("o", 1), binary(BinOp::Div, v("o", F32, 1), cast(param("S", I64), F32))),
          }),
  };
  return k;
}

// Shared memory and a barrier: each block reverses a tile of 128 elements.
Kernel shared_kernel() {
  Kernel k;
  k.name = "k_reverse_5e6f";
  k.params = {buffer("x", F32), buffer("out", F32, false), size_param("n")};
  k.block_threads = 128;
  k.grid_x = binary(BinOp::Div, param("n", I64), ci(128, I64));
  k.shared = {{"tile", F32, 128, 16}};
  Expr base = mul(cast(special(Special::BlockIdx), I64), ci(128, I64)), t = v("t", I32);
  k.body = {
      decl("t", I32, tid()),
      store(Space::Shared, "tile", t, gload("x", add(base, cast(t, I64)), F32)),
      barrier(),
      gstore("out", add(base, cast(t, I64)),
             mul(load(Space::Shared, "tile", binary(BinOp::Sub, ci(127), t), F32), cf(2.0))),
  };
  return k;
}

// One warp: cp.async a 16x16 f16 tile into shared memory, ldmatrix the A and B fragments,
// one mma, a butterfly shuffle, then store.
Kernel mma_kernel() {
  using enum IntrinsicId;
  Kernel k;
  k.name = "k_mma_7a8b";
  k.params = {buffer("x", F16), buffer("out", F32, false)};
  k.block_threads = 32;
  k.grid_x = ci(1, I64);
  k.shared = {{"xs", F16, 256, 16}};
  Expr lane = v("lane", I32);
  auto regs = [](const std::string& name, int n) {
    std::vector<Reg> r;
    for (int e = 0; e < n; ++e) r.push_back(R(name, e));
    return r;
  };
  std::vector<Expr> mma_in;
  for (int e = 0; e < 4; ++e) mma_in.push_back(v("a", U32, e));
  for (int e = 0; e < 2; ++e) mma_in.push_back(v("b", U32, e));
  for (int e = 0; e < 4; ++e) mma_in.push_back(v("d", F32, e));
  k.body = {
      decl("lane", I32, special(Special::LaneId)),
      comment("stage the tile: 8 halves (16 bytes) per lane"),
      intrinsic(CpAsync16, {}, {shared_addr("xs", mul(lane, ci(8))), cast(mul(lane, ci(8)), I64)}, {}, "x"),
      intrinsic(CpAsyncCommit, {}, {}),
      intrinsic(CpAsyncWait, {}, {}, {0}),
      barrier(),
      decl("a", U32, 4),
      intrinsic(LdmatrixX4, regs("a", 4), {shared_addr("xs", mul(lane, ci(8)))}),
      decl("b", U32, 2),
      intrinsic(LdmatrixX2, regs("b", 2), {shared_addr("xs", mul(binary(BinOp::Rem, lane, ci(16)), ci(8)))}),
      decl("d", F32, cf(0.0), 4),
      intrinsic(MmaF16F32, regs("d", 4), mma_in),
      decl("p", F32),
      intrinsic(ShflBfly, {R("p")}, {v("d", F32, 0)}, {1}),
      gstore("out", cast(lane, I64), add(v("d", F32, 0), v("p", F32))),
  };
  return k;
}

// TMA into shared memory, completed through an mbarrier (thread-scope intrinsics, one issuing thread).
Kernel tma_kernel() {
  using enum IntrinsicId;
  Kernel k;
  k.name = "k_tma_9c0d";
  k.params = {{Param::Kind::TensorMap, "tm", F16, true, "x", {64, 64}}, buffer("out", F16, false)};
  k.block_threads = 128;
  k.grid_x = ci(1, I64);
  k.shared = {{"xs", F16, 1024, 128}, {"bar", I64, 1, 8}};
  Expr bar = shared_addr("bar", ci(0));
  k.body = {
      if_then(binary(BinOp::Eq, tid(), ci(0)),
              {intrinsic(MbarrierInit, {}, {bar}, {1}), intrinsic(MbarrierExpectTx, {}, {bar, ci(2048, U32)}),
               intrinsic(TmaLoad2d, {}, {shared_addr("xs", ci(0)), bar, ci(0), ci(0)}, {0}, "tm")}),
      intrinsic(MbarrierTryWait, {}, {bar, ci(0, U32)}),
      gstore("out", cast(tid(), I64), load(Space::Shared, "xs", tid(), F16)),
  };
  return k;
}

Program program_of(std::string op, std::vector<std::string> sizes, std::vector<Buffer> buffers,
                   std::vector<Kernel> kernels) {
  Program p;
  p.op = std::move(op);
  p.knobs = "TILE=a:scalar";
  p.sizes = std::move(sizes);
  p.buffers = std::move(buffers);
  p.kernels = std::move(kernels);
  return p;
}

Program elementwise_program() {
  return program_of("add", {"n"},
                    {{"x", Buffer::Role::Input, F32, {"n"}},
                     {"y", Buffer::Role::Input, F16, {"n"}},
                     {"out", Buffer::Role::Output, F32, {"n"}}},
                    {elementwise_kernel()});
}

Program carrier_program() {
  return program_of("rowstat", {"R", "S"},
                    {{"x", Buffer::Role::Input, F32, {"R", "S"}}, {"out", Buffer::Role::Output, F16, {"R", "2"}}},
                    {carrier_kernel()});
}

Program shared_program() {
  return program_of("reverse", {"n"},
                    {{"x", Buffer::Role::Input, F32, {"n"}}, {"out", Buffer::Role::Output, F32, {"n"}}},
                    {shared_kernel()});
}

Program mma_program() {
  return program_of("mma", {}, {{"x", Buffer::Role::Input, F16, {"256"}}, {"out", Buffer::Role::Output, F32, {"32"}}},
                    {mma_kernel()});
}

// Every operator, conversion and literal kind of the CUDA printer, for NVRTC to compile.
Program tma_program() { return program_of("tma", {}, {{"out", Buffer::Role::Output, F16, {"128"}}}, {tma_kernel()}); }

Program coverage_program() {
  constexpr std::array<ST, 8> kTypes{ST::Pred, I32, I64, U32, F16, ST::BF16, F32, ST::F64};
  Kernel k;
  k.name = "k_coverage";
  k.block_threads = 32;
  k.grid_x = ci(1, I64);
  for (ST t : kTypes) k.body.push_back(decl(std::string("r_") + std::string(type_name(t)), t, ci(1, t)));
  auto r = [](ST t) { return v(std::string("r_") + std::string(type_name(t)), t); };
  for (ST from : kTypes)
    for (ST to : kTypes)
      if (from != to) k.body.push_back(assign(R(std::string("r_") + std::string(type_name(to))), cast(r(from), to)));
  for (ST t : kTypes) {
    if (is_float(t))
      for (int op = 0; op <= static_cast<int>(UnOp::Ceil); ++op)
        if (static_cast<UnOp>(op) != UnOp::Not)
          k.body.push_back(assign(R(r(t).reg.name), unary(static_cast<UnOp>(op), r(t))));
    if (t == I32 || t == I64) k.body.push_back(assign(R(r(t).reg.name), unary(UnOp::Abs, unary(UnOp::Neg, r(t)))));
    for (int op = 0; op <= static_cast<int>(BinOp::BitXor); ++op) {
      BinOp b = static_cast<BinOp>(op);
      bool ints = t == I32 || t == I64 || t == U32;
      bool ok = is_comparison(b) ? (b == BinOp::And || b == BinOp::Or ? t == ST::Pred : t != ST::Pred || b >= BinOp::Eq)
                : b >= BinOp::Shl ? ints
                : b == BinOp::Pow ? is_float(t)
                                  : t != ST::Pred;
      if (!ok) continue;
      Expr e = binary(b, r(t), r(t));
      k.body.push_back(e.type == ST::Pred ? assign(R("r_pred"), e) : assign(R(r(t).reg.name), e));
    }
    k.body.push_back(assign(R(r(t).reg.name), select(r(ST::Pred), r(t), r(t))));
  }
  for (double c : std::array<double, 7>{-INFINITY, INFINITY, NAN, 0.1, -1e30, 65504.0, 1e-45})
    for (ST t : {F16, ST::BF16, F32, ST::F64}) k.body.push_back(assign(R(r(t).reg.name), cf(c, t)));
  k.body.push_back(assign(R("r_i32"), ci(std::numeric_limits<int32_t>::min())));
  k.body.push_back(assign(R("r_i64"), ci(std::numeric_limits<int64_t>::min(), I64)));
  k.body.push_back(assign(R("r_u32"), ci(4294967295LL, U32)));
  k.body.push_back(assign(R("r_i32"), add(unary(UnOp::Neg, ci(-3)), unary(UnOp::Neg, unary(UnOp::Neg, r(I32))))));
  for (int s = 0; s <= static_cast<int>(Special::WarpId); ++s)
    k.body.push_back(
        assign(R("r_i64"), add(r(I64), cast(binary(BinOp::Sub, special(static_cast<Special>(s)), ci(1)), I64))));
  return program_of("coverage", {}, {}, {k});
}

std::vector<std::string> verify(const Kernel& k) { return verify_kernel(k); }

// A kernel with the given body, params x (const f32), out (f32), y (const f16), n (i64), tile[64] f32.
Kernel with_body(std::vector<Stmt> body, int threads = 128) {
  Kernel k;
  k.name = "k_bad";
  k.params = {buffer("x", F32), buffer("out", F32, false), buffer("y", F16), size_param("n")};
  k.block_threads = threads;
  k.grid_x = ci(1, I64);
  k.shared = {{"tile", F32, 64, 16}};
  k.body = std::move(body);
  return k;
}

// The only message verify_kernel gives for `body`.
std::string only_error(std::vector<Stmt> body, int threads = 128) {
  std::vector<std::string> errors = verify(with_body(std::move(body), threads));
  std::string all;
  for (const std::string& e : errors) all += e + "\n";
  INFO(all);
  REQUIRE(errors.size() == 1);
  return errors[0];
}

}  // namespace

// ---- kernel printer ---------------------------------------------------------------------------

TEST_CASE("kernel printer: a guarded elementwise kernel and its program") {
  CHECK(print_program(elementwise_program()) == R"(program add
  knobs TILE=a:scalar
  sizes n
  buffer x: input f32[n]
  buffer y: input f16[n]
  buffer out: output f32[n]

kernel k_add_1a2b threads=128 grid=(n + 127i64) / 128i64
  // out = x + y, one element per thread.
  param x: buffer const f32
  param y: buffer const f16
  param out: buffer f32
  param n: scalar i64
{
  reg i: i64 = i64(blockIdx.x) * 128i64 + i64(threadIdx.x)
  // the tail block has threads past n
  if i < n {
    out[i] = x[i] + f32(y[i])
  }
}
)");
}

TEST_CASE("cuda printer: EMMY_DUMP_CUDA=<dir> writes the sample programs' CUDA and kernel text (for nvcc by hand)") {
  const char* dir = std::getenv("EMMY_DUMP_CUDA");
  if (!dir) return;
  std::vector<std::pair<std::string, Program>> samples{{"elementwise", elementwise_program()},
                                                       {"carrier", carrier_program()},
                                                       {"shared", shared_program()},
                                                       {"mma", mma_program()},
                                                       {"tma", tma_program()},
                                                       {"coverage", coverage_program()}};
  for (const auto& [name, prog] : samples) {
    std::ofstream(std::string(dir) + "/" + name + ".cu") << print_cuda(prog);
    std::ofstream(std::string(dir) + "/" + name + ".kir") << print_program(prog);
  }
}

TEST_CASE("kernel printer: a register-array carrier, loops with unroll, if/else") {
  CHECK(print_kernel(carrier_kernel()) == R"(kernel k_rowstat_3c4d threads=64 grid=(R + 63i64) / 64i64
  param x: buffer const f32
  param out: buffer f16
  param R: scalar i64
  param S: scalar i64
{
  reg row: i64 = i64(blockIdx.x) * 64i64 + i64(threadIdx.x)
  if row >= R {
    // past the last row
  } else {
    reg m: f32 = -inf
    reg o: f32[2] = 0.0
    // stream the row
    for j: i64 in [0, S) {
      reg s: f32 = x[row * S + j]
      reg mn: f32 = max(m, s)
      o[0] = o[0] * exp(m - mn) + exp(s - mn)
      o[1] = o[1] + s * s
      m = mn
    }
    for c: i32 in [0, 2) unroll {
      out[row * 2i64 + i64(c)] = f16(o[0])
    }
    o[1] = o[1] / f32(S)
  }
}
)");
}

TEST_CASE("kernel printer: shared arrays, barriers and intrinsic calls") {
  CHECK(print_kernel(shared_kernel()) == R"(kernel k_reverse_5e6f threads=128 grid=n / 128i64
  param x: buffer const f32
  param out: buffer f32
  param n: scalar i64
  shared tile: f32[128] align 16
{
  reg t: i32 = threadIdx.x
  tile[t] = x[i64(blockIdx.x) * 128i64 + i64(t)]
  barrier
  out[i64(blockIdx.x) * 128i64 + i64(t)] = tile[127 - t] * 2.0
}
)");
  const std::string mma = print_kernel(mma_kernel());
  CHECK(
      mma.find(
          "  cp_async_16(&xs[lane * 8], &x[i64(lane * 8)])\n  cp_async_commit()\n  cp_async_wait<0>()\n  barrier\n") !=
      std::string::npos);
  CHECK(mma.find("  a[0], a[1], a[2], a[3] = ldmatrix_x4(&xs[lane * 8])\n") != std::string::npos);
  CHECK(mma.find("  d[0], d[1], d[2], d[3] = mma_m16n8k16_f16_f32(a[0], a[1], a[2], a[3], b[0], b[1], d[0], d[1], "
                 "d[2], d[3])\n") != std::string::npos);
  CHECK(mma.find("  p = shfl_bfly<1>(d[0])\n") != std::string::npos);
  CHECK(print_kernel(tma_kernel()).find("    tma_load_2d<0>(&tm, &xs[0], &bar[0], 0, 0)\n") != std::string::npos);
  CHECK(print_kernel(tma_kernel()).find("  param tm: tensormap of x box [64, 64] swizzle none\n") != std::string::npos);
}

TEST_CASE("kernel printer: literals, casts and parentheses") {
  Expr a = v("a", F32), b = v("b", F32), i = v("i", I32);
  CHECK(print_expr(mul(add(a, b), a)) == "(a + b) * a");
  CHECK(print_expr(binary(BinOp::Sub, a, binary(BinOp::Sub, b, a))) == "a - (b - a)");
  CHECK(print_expr(binary(BinOp::Sub, binary(BinOp::Sub, a, b), a)) == "a - b - a");
  CHECK(print_expr(binary(BinOp::And, lt(a, b), lt(b, a))) == "a < b && b < a");
  CHECK(print_expr(binary(BinOp::Or, binary(BinOp::And, lt(a, b), lt(b, a)), lt(a, a))) == "(a < b && b < a) || a < a");
  CHECK(print_expr(binary(BinOp::Eq, binary(BinOp::BitAnd, i, ci(1)), ci(0))) == "(i & 1) == 0");
  CHECK(print_expr(binary(BinOp::Shl, add(i, ci(1)), ci(2))) == "(i + 1) << 2");
  CHECK(print_expr(unary(UnOp::Neg, ci(-3))) == "-(-3)");
  CHECK(print_expr(unary(UnOp::Neg, add(a, b))) == "-(a + b)");
  CHECK(print_expr(select(lt(a, b), a, select(lt(b, a), b, a))) == "a < b ? a : (b < a ? b : a)");
  CHECK(print_expr(unary(UnOp::Sigmoid, a)) == "sigmoid(a)");
  CHECK(print_expr(cast(i, ST::BF16)) == "bf16(i)");
  CHECK(print_expr(cf(0.1)) == "0.1");
  CHECK(print_expr(cf(0.1, ST::F64)) == "0.1f64");
  CHECK(print_expr(cf(0.1, F16)) == "0.099975586f16");
  CHECK(print_expr(cf(3, ST::F64)) == "3.0f64");
  CHECK(print_expr(cf(-INFINITY, ST::F64)) == "f64(-inf)");
  CHECK(print_expr(cf(NAN)) == "nan");
  CHECK(print_expr(ci(7, U32)) == "7u32");
  CHECK(print_expr(ci(1, ST::Pred)) == "true");
  CHECK(print_expr(shared_addr("xs", i)) == "&xs[i]");
  CHECK(print_expr(special(Special::WarpId)) == "warp");
}

// ---- verifier ---------------------------------------------------------------------------------

TEST_CASE("kernel IR: a copy shares its operands until one side writes them") {
  Expr a = binary(BinOp::Add, var({"x"}, ST::F32), binary(BinOp::Mul, cf(2), var({"y"}, ST::F32)));
  Expr b = a;
  CHECK(&a.args[1] == &b.args[1]);  // one array for both
  b.args.mut(1).args.mut(0) = cf(3);
  CHECK(&a.args[1] != &b.args[1]);
  CHECK(a.args[1].args[0].fval == 2);  // the original keeps its operand
  CHECK(b.args[1].args[0].fval == 3);
  CHECK(a.args[0].reg.name == "x");
  CHECK(b.args[0].reg.name == "x");
  Expr c = b;
  c.args.push_back(cf(4));  // a third operand on c alone
  CHECK(c.args.size() == 3);
  CHECK(b.args.size() == 2);
  c.args.pop_back();
  CHECK(c.args.size() == 2);
  CHECK(c.args[1].args[0].fval == 3);
  int n = 0;
  for (Expr& e : c.args.mut()) e = cf(++n);
  CHECK(c.args[0].fval == 1);
  CHECK(c.args[1].fval == 2);
  CHECK(b.args[1].kind == Expr::Kind::Binary);
}

TEST_CASE("verifier: the sample kernels and programs are well formed") {
  for (const Program& p :
       {elementwise_program(), carrier_program(), shared_program(), mma_program(), tma_program(), coverage_program()}) {
    CAPTURE(p.op);
    std::vector<std::string> errors = verify_program(p);
    std::string all;
    for (const std::string& e : errors) all += e + "\n";
    CHECK_MESSAGE(errors.empty(), all);
  }
}

TEST_CASE("verifier: registers are declared before use, in scope, once per scope") {
  CHECK(only_error({assign(R("acc"), cf(1))}) == "k_bad: `acc = 1.0`: register 'acc' is not declared in this scope");
  CHECK(only_error({for_loop("j", I32, ci(0), ci(4), {}), decl("z", I32, v("j", I32))}) ==
        "k_bad: `reg z: i32 = j`: register 'j' is not declared in this scope");
  CHECK(only_error({if_then(ci(1, ST::Pred), {decl("t", F32)}), assign(R("t"), cf(0))}) ==
        "k_bad: `t = 0.0`: register 't' is not declared in this scope");
  CHECK(only_error({decl("a", F32), decl("a", F32)}) ==
        "k_bad: `reg a: f32`: redeclares register 'a' in the same scope");
  CHECK(only_error({decl("x", F32)}) ==
        "k_bad: `reg x: f32`: register 'x' has the name of a parameter or shared array");
  // The same name in an inner scope or in sibling scopes is fine.
  CHECK(verify(with_body({decl("a", F32), for_loop("j", I32, ci(0), ci(4), {decl("a", F32)}),
                          for_loop("j", I32, ci(0), ci(4), {})}))
            .empty());
}

TEST_CASE("verifier: assignments and stores convert nothing") {
  CHECK(only_error({decl("acc", F32), assign(R("acc"), cf(1, ST::F64))}) ==
        "k_bad: `acc = 1.0f64`: assigns f64 to f32 register 'acc'");
  CHECK(only_error({gstore("out", ci(0, I64), cf(1, ST::F64))}) ==
        "k_bad: `out[0i64] = 1.0f64`: 'out' holds f32, stored as f64");
  CHECK(only_error({decl("z", F32, gload("y", ci(0, I64), F32))}) ==
        "k_bad: `reg z: f32 = y[0i64]`: 'y' holds f16, loaded as f32");
  Stmt d = decl("h", F16);
  d.args.push_back(cf(0));
  CHECK(only_error({d}) == "k_bad: `reg h: f16 = 0.0`: initial value has type f32, register 'h' is f16");
}

TEST_CASE("verifier: register arrays are indexed by constants in range, scalars never") {
  CHECK(only_error({decl("o", F32, 4), assign(R("o", 4), cf(0))}) ==
        "k_bad: `o[4] = 0.0`: index 4 outside [0, 4) of register array 'o'");
  CHECK(only_error({decl("s", F32), assign(R("s", 0), cf(0))}) ==
        "k_bad: `s[0] = 0.0`: scalar register 's' is indexed");
  CHECK(only_error({decl("o", F32, 4), decl("z", F32, v("o", F32))}) ==
        "k_bad: `reg z: f32 = o`: register array 'o' is used without an index");
}

TEST_CASE("verifier: loads and stores name buffers of their space, const buffers are read only") {
  CHECK(only_error({decl("z", F32, gload("nope", ci(0, I64), F32))}) ==
        "k_bad: `reg z: f32 = nope[0i64]`: 'nope' is not a buffer parameter");
  CHECK(only_error({decl("z", F32, gload("tile", ci(0, I64), F32))}) ==
        "k_bad: `reg z: f32 = tile[0i64]`: 'tile' is not a buffer parameter");
  CHECK(only_error({decl("z", F32, load(Space::Shared, "x", ci(0), F32))}) ==
        "k_bad: `reg z: f32 = x[0]`: 'x' is not a shared array");
  CHECK(only_error({gstore("x", ci(0, I64), cf(0))}) == "k_bad: `x[0i64] = 0.0`: stores to const buffer 'x'");
  CHECK(only_error({decl("z", F32, gload("x", ci(0), F32))}) ==
        "k_bad: `reg z: f32 = x[0]`: global index has type i32, not i64");
  CHECK(only_error({decl("z", F32, load(Space::Shared, "tile", ci(64), F32))}) ==
        "k_bad: `reg z: f32 = tile[64]`: index 64 outside [0, 64) of shared array 'tile'");
}

TEST_CASE("verifier: operator types") {
  CHECK(only_error({decl("z", F32, add(cf(1), cf(1, ST::F64)))}) ==
        "k_bad: `reg z: f32 = 1.0 + 1.0f64`: operands of '+' have types f32 and f64");
  CHECK(only_error({decl("z", F32, select(cf(1), cf(1), cf(2)))}) ==
        "k_bad: `reg z: f32 = 1.0 ? 1.0 : 2.0`: select condition has type f32, not pred");
  CHECK(only_error({decl("z", I32, unary(UnOp::Exp, ci(1)))}) ==
        "k_bad: `reg z: i32 = exp(1)`: 'exp' does not apply to i32");
  CHECK(only_error({decl("z", F32, binary(BinOp::BitAnd, cf(1), cf(1)))}) ==
        "k_bad: `reg z: f32 = 1.0 & 1.0`: '&' does not apply to f32");
  CHECK(only_error({decl("z", I32, ci(int64_t{1} << 40))}) ==
        "k_bad: `reg z: i32 = 1099511627776`: constant 1099511627776 does not fit i32");
  CHECK(only_error({decl("z", F32, param("x", F32))}) == "k_bad: `reg z: f32 = x`: 'x' is not a scalar parameter");
}

TEST_CASE("verifier: loop bounds have the loop variable's type, which the body does not assign") {
  CHECK(only_error({for_loop("j", I64, ci(0), param("n", I64), {})}) ==
        "k_bad: `for j: i64 in [0, n)`: loop bound '0' has type i32, the loop variable i64");
  CHECK(only_error({for_loop("j", I32, ci(0), ci(4), {assign(R("j"), ci(5))})}) ==
        "k_bad: `j = 5`: assigns the loop variable 'j'");
  CHECK(only_error({for_loop("j", F32, cf(0), cf(4), {})}) ==
        "k_bad: `for j: f32 in [0.0, 4.0)`: loop variable 'j' has type f32 (i32 or i64 required)");
}

TEST_CASE("verifier: intrinsic operands match the table") {
  using enum IntrinsicId;
  std::vector<Stmt> pre{decl("p", F32), decl("q", I32)};
  auto with = [&](Stmt s) {
    std::vector<Stmt> body = pre;
    body.push_back(std::move(s));
    return only_error(body);
  };
  CHECK(with(intrinsic(ShflBfly, {R("p")}, {cf(1), cf(2)}, {1})) ==
        "k_bad: `p = shfl_bfly<1>(1.0, 2.0)`: 2 operands, 'shfl_bfly' takes 1");
  CHECK(with(intrinsic(ShflBfly, {R("p")}, {ci(1)}, {1})) ==
        "k_bad: `p = shfl_bfly<1>(1)`: operand 0 of 'shfl_bfly' has type i32, expected f32");
  CHECK(with(intrinsic(ShflBfly, {R("q")}, {cf(1)}, {1})) ==
        "k_bad: `q = shfl_bfly<1>(1.0)`: register 'q' is i32, used as f32");
  CHECK(with(intrinsic(ShflBfly, {R("p")}, {cf(1)})) ==
        "k_bad: `p = shfl_bfly(1.0)`: 0 immediates, 'shfl_bfly' takes 1");
  CHECK(with(intrinsic(ShflBfly, {}, {cf(1)}, {1})) == "k_bad: `shfl_bfly<1>(1.0)`: 0 results, 'shfl_bfly' gives 1");
  CHECK(with(intrinsic(CpAsync16, {}, {shared_addr("tile", ci(0)), ci(0, I64)})) ==
        "k_bad: `cp_async_16(&tile[0], 0i64)`: 'cp_async_16' needs the global buffer it reads");
  CHECK(only_error({decl("p", F32), intrinsic(ShflBfly, {R("p")}, {cf(1)}, {1})}, 100) ==
        "k_bad: `p = shfl_bfly<1>(1.0)`: warp-collective 'shfl_bfly' in a block of 100 threads (not whole warps)");
  Stmt bad;
  bad.kind = Stmt::Kind::Intrinsic;
  bad.intrinsic = 200;
  CHECK(only_error({bad}) == "k_bad: `intrinsic#200()`: no intrinsic #200");
}

TEST_CASE("verifier: no barrier or collective under thread-dependent control") {
  using enum IntrinsicId;
  Expr lane = special(Special::LaneId), warp = special(Special::WarpId);
  CHECK(only_error({if_then(lt(tid(), ci(16)), {barrier()})}) ==
        "k_bad: `barrier`: barrier under `if threadIdx.x < 16`, whose condition differs between the threads of a warp");
  CHECK(only_error({if_then(binary(BinOp::Eq, warp, ci(0)), {}, {barrier()})}) ==
        "k_bad: `barrier`: barrier under `if warp == 0`, whose condition differs between warps");
  CHECK(only_error({for_loop("j", I32, ci(0), tid(), {barrier()})}) ==
        "k_bad: `barrier`: barrier under `for j: i32 in [0, threadIdx.x)`, whose bounds differ between the threads of "
        "a warp");
  // Through registers: r = lane + 1; q = r < 4; if q { ... }.
  CHECK(only_error({decl("r", I32, add(lane, ci(1))), decl("q", ST::Pred, lt(v("r", I32), ci(4))),
                    if_then(v("q", ST::Pred), {barrier()})}) ==
        "k_bad: `barrier`: barrier under `if q`, whose condition differs between the threads of a warp");
  // Through control: a is assigned under a thread-dependent if.
  CHECK(only_error({decl("a", I32, ci(0)), if_then(lt(tid(), ci(3)), {assign(R("a"), ci(1))}),
                    if_then(binary(BinOp::Eq, v("a", I32), ci(1)), {barrier()})}) ==
        "k_bad: `barrier`: barrier under `if a == 1`, whose condition differs between the threads of a warp");
  // Around a loop: a becomes thread-dependent only at the end of the first iteration.
  CHECK(only_error(
            {decl("a", I32, ci(0)), for_loop("j", I32, ci(0), ci(4),
                                             {if_then(lt(v("a", I32), ci(1)), {barrier()}), assign(R("a"), tid())})}) ==
        "k_bad: `barrier`: barrier under `if a < 1`, whose condition differs between the threads of a warp");
  // Warp collectives may run under warp-uniform control, not under lane-dependent control.
  std::vector<Stmt> shfl{decl("p", F32), intrinsic(ShflBfly, {R("p")}, {cf(1)}, {16})};
  CHECK(verify(with_body({if_then(binary(BinOp::Eq, warp, ci(0)), shfl)})).empty());
  CHECK(only_error({if_then(lt(lane, ci(16)), shfl)}) ==
        "k_bad: `p = shfl_bfly<16>(1.0)`: warp-collective 'shfl_bfly' under `if lane < 16`, whose condition differs "
        "between the threads of a warp");
  // Block-uniform control and uniform loads are fine.
  CHECK(verify(with_body({if_then(lt(special(Special::BlockIdx), ci(4)), {barrier()}),
                          decl("u", F32, gload("x", ci(0, I64), F32)), if_then(lt(v("u", F32), cf(1)), {barrier()}),
                          for_loop("j", I64, ci(0, I64), param("n", I64), {barrier()})}))
            .empty());
}

TEST_CASE("verifier: kernel-level checks (grid, threads, shared memory, malformed nodes)") {
  Kernel k = with_body({});
  k.grid_x = cast(tid(), I64);
  CHECK(verify(k) ==
        std::vector<std::string>{
            "k_bad: `grid=i64(threadIdx.x)`: the grid may use scalar parameters only, not the special 'threadIdx.x'"});
  k.grid_x = ci(1);
  CHECK(verify(k) == std::vector<std::string>{"k_bad: `grid=1`: grid has type i32, not i64"});
  k = with_body({}, 2048);
  CHECK(verify(k) == std::vector<std::string>{"k_bad: 2048 threads per block (1 to 1024)"});
  k = with_body({});
  k.shared.push_back({"big", ST::F64, 8192, 16});
  CHECK(verify(k).empty());  // past 48 KB: the dynamic shared window (print_cuda carves it up)
  CHECK(uses_dynamic_shared(k));
  CHECK(shared_bytes(k) == 65792);
  k.shared.push_back({"huge", ST::F64, 30000, 16});
  CHECK(verify(k) == std::vector<std::string>{"k_bad: 305792 bytes of shared arrays (a block holds at most 232448)"});
  k = with_body({});
  k.shared.push_back({"x", F32, 4, 2});
  CHECK(verify(k) ==
        std::vector<std::string>{"k_bad: shared array 'x' has the name of another parameter or shared array",
                                 "k_bad: shared array 'x': alignment 2 is not a power of two >= 4"});
  Expr broken = add(cf(1), cf(2));
  broken.args.pop_back();
  CHECK(only_error({decl("z", F32, broken)}) == "k_bad: malformed decl statement");
}

TEST_CASE("verifier: program bindings") {
  Program p = elementwise_program();
  p.kernels[0].params.push_back(buffer("w", F32));
  p.kernels[0].params.push_back({Param::Kind::Scalar, "m", I32, true, {}, {}});
  p.kernels[0].params[0].is_const = false;
  p.kernels[0].params[1].type = F32;
  p.buffers[2].role = Buffer::Role::Temp;
  p.buffers.push_back({"o2", Buffer::Role::Output, F32, {"n", "k"}});
  CHECK(verify_program(p) == std::vector<std::string>{
                                 "program add: buffer 'o2': dimension 'k' is neither a size nor a number",
                                 "program add: output buffer 'o2' is written by no kernel",
                                 "program add: k_add_1a2b: writable parameter 'x' binds an input buffer",
                                 "program add: k_add_1a2b: parameter 'y' is f32, the buffer f16",
                                 "program add: k_add_1a2b: buffer parameter 'w' names no buffer of the program",
                                 "program add: k_add_1a2b: scalar parameter 'm: i32' is not an i64 size of the program",
                                 "k_add_1a2b: `out[i] = x[i] + f32(y[i])`: 'y' holds f32, loaded as f16",
                             });
}

// ---- CUDA printer -----------------------------------------------------------------------------

TEST_CASE("cuda printer: a guarded elementwise kernel") {
  CHECK(print_cuda(elementwise_program()) == R"(// Emmy: op `add`, knobs `TILE=a:scalar`.
// One translation unit, generated by emmyc: do not edit.

#include <cuda_fp16.h>

// out = x + y, one element per thread.
extern "C" __global__ void __launch_bounds__(128) k_add_1a2b(
    const float* __restrict__ x,
    const __half* __restrict__ y,
    float* __restrict__ out,
    long long n)
{
    long long i = (long long)blockIdx.x * 128LL + (long long)threadIdx.x;

    // the tail block has threads past n
    if (i < n) {
        out[i] = x[i] + __half2float(y[i]);
    }
}
)");
}

TEST_CASE("cuda printer: shared arrays, register arrays, unrolled loops, no unused includes") {
  const std::string shared = print_cuda(shared_program());
  CHECK(shared.find("#include") == std::string::npos);
  CHECK(shared.find(R"(extern "C" __global__ void __launch_bounds__(128) k_reverse_5e6f(
    const float* __restrict__ x,
    float* __restrict__ out,
    long long n)
{
    __shared__ __align__(16) float tile[128];

    int t = (int)threadIdx.x;
    tile[t] = x[(long long)blockIdx.x * 128LL + (long long)t];
    __syncthreads();
    out[(long long)blockIdx.x * 128LL + (long long)t] = tile[127 - t] * 2.0f;
}
)") != std::string::npos);
  const std::string carrier = print_cuda(carrier_program());
  CHECK(carrier.find(R"(        float m = -__int_as_float(0x7f800000);
        float o[2];
        #pragma unroll
        for (int _e = 0; _e < 2; ++_e) o[_e] = 0.0f;

        // stream the row
        for (long long j = 0; j < S; j += 1) {
            float s = x[row * S + j];
            float mn = emmy_fmaxf(m, s);
            o[0] = o[0] * expf(m - mn) + expf(s - mn);
            o[1] = o[1] + s * s;
            m = mn;
        }
        #pragma unroll
        for (int c = 0; c < 2; c += 1) {
            out[row * 2LL + (long long)c] = __float2half_rn(o[0]);
        }
        o[1] = o[1] / (float)S;
)") != std::string::npos);
}

TEST_CASE("cuda printer: each used intrinsic's helper once, in table order, called by the convention") {
  Program p = mma_program();
  p.kernels[0].body.push_back(
      intrinsic(IntrinsicId::LdmatrixX4, {R("a", 0), R("a", 1), R("a", 2), R("a", 3)}, {shared_addr("xs", ci(0))}));
  const std::string cuda = print_cuda(p);
  auto count = [&](std::string_view what) {
    size_t n = 0;
    for (size_t at = cuda.find(what); at != std::string::npos; at = cuda.find(what, at + 1)) ++n;
    return n;
  };
  std::vector<size_t> at;
  for (const IntrinsicInfo& info : intrinsic_table()) {
    size_t defs = count(info.helper_source);
    bool used = info.id == IntrinsicId::MmaF16F32 || info.id == IntrinsicId::LdmatrixX4 ||
                info.id == IntrinsicId::LdmatrixX2 || info.id == IntrinsicId::ShflBfly ||
                info.id == IntrinsicId::CpAsync16 || info.id == IntrinsicId::CpAsyncCommit ||
                info.id == IntrinsicId::CpAsyncWait;
    CAPTURE(info.name);
    CHECK(defs == (used ? 1u : 0u));
    if (used) at.push_back(cuda.find(info.helper_source));
  }
  CHECK(std::is_sorted(at.begin(), at.end()));
  CHECK(cuda.find(
            "    emmy_cp_async_16((unsigned)__cvta_generic_to_shared(&xs[lane * 8]), &x[(long long)(lane * 8)]);\n"
            "    emmy_cp_async_commit();\n    emmy_cp_async_wait(0);\n    __syncthreads();\n") != std::string::npos);
  CHECK(cuda.find("    emmy_mma_m16n8k16_f16_f32(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b[0], b[1], d[0], "
                  "d[1], d[2], d[3]);\n") != std::string::npos);
  CHECK(cuda.find("    emmy_shfl_bfly(p, d[0], 1);\n") != std::string::npos);
  const std::string tma = print_cuda(tma_program());
  CHECK(tma.find("typedef struct CUtensorMap_st") != std::string::npos);
  CHECK(tma.find("k_tma_9c0d(\n    const __grid_constant__ CUtensorMap tm,\n    __half* __restrict__ out)\n") !=
        std::string::npos);
  CHECK(tma.find("        emmy_tma_load_2d(&tm, (unsigned)__cvta_generic_to_shared(&xs[0]), "
                 "(unsigned)__cvta_generic_to_shared(&bar[0]), 0, 0, 0);\n") != std::string::npos);
}

TEST_CASE("kernel and cuda printers: __launch_bounds__'s minimum blocks per SM, when given") {
  Program p = shared_program();
  p.kernels[0].min_blocks_per_sm = 1;
  CHECK(print_kernel(p.kernels[0]).starts_with("kernel k_reverse_5e6f threads=128 min_blocks=1 grid=n / 128i64\n"));
  CHECK(print_cuda(p).find("extern \"C\" __global__ void __launch_bounds__(128, 1) k_reverse_5e6f(") !=
        std::string::npos);
  CHECK(verify_program(p).empty());
  p.kernels[0].min_blocks_per_sm = -1;
  CHECK(verify_kernel(p.kernels[0]) == std::vector<std::string>{"k_reverse_5e6f: min_blocks_per_sm -1 (0: not given)"});
}

TEST_CASE("cuda printer: literals, conversions, math and parentheses mean the IR exactly") {
  Expr a = v("a", F32), h = v("h", F16), i = v("i", I32);
  CHECK(print_cuda_expr(cf(0.1)) == "0.1f");
  CHECK(print_cuda_expr(cf(3)) == "3.0f");
  CHECK(print_cuda_expr(cf(0.1, ST::F64)) == "0.1");
  CHECK(print_cuda_expr(cf(16777217.0)) == "16777216.0f");
  CHECK(print_cuda_expr(cf(-INFINITY)) == "-__int_as_float(0x7f800000)");
  CHECK(print_cuda_expr(cf(INFINITY, ST::F64)) == "__longlong_as_double(0x7ff0000000000000LL)");
  CHECK(print_cuda_expr(cf(NAN)) == "__int_as_float(0x7fffffff)");
  CHECK(print_cuda_expr(cf(0.1, F16)) == "__float2half_rn(0.099975586f)");
  CHECK(print_cuda_expr(ci(5, I64)) == "5LL");
  CHECK(print_cuda_expr(ci(5, U32)) == "5u");
  CHECK(print_cuda_expr(ci(std::numeric_limits<int32_t>::min())) == "(-2147483647 - 1)");
  CHECK(print_cuda_expr(special(Special::LaneId)) == "(int)(threadIdx.x & 31)");
  CHECK(print_cuda_expr(cast(special(Special::WarpId), I64)) == "(long long)(threadIdx.x >> 5)");
  CHECK(print_cuda_expr(binary(BinOp::Sub, special(Special::ThreadIdx), ci(1))) == "(int)threadIdx.x - 1");
  CHECK(print_cuda_expr(cast(a, I32)) == "__float2int_rz(a)");  // C casts truncate
  CHECK(print_cuda_expr(cast(h, ST::F64)) == "(double)__half2float(h)");
  CHECK(print_cuda_expr(cast(add(a, a), ST::BF16)) == "__float2bfloat16_rn(a + a)");
  CHECK(print_cuda_expr(cast(add(i, i), ST::Pred)) == "(i + i != 0)");
  CHECK(print_cuda_expr(cast(add(i, i), ST::F32)) == "(float)(i + i)");
  CHECK(print_cuda_expr(unary(UnOp::Sigmoid, a)) == "1.0f / (1.0f + expf(-a))");
  CHECK(print_cuda_expr(mul(unary(UnOp::Sigmoid, a), a)) == "1.0f / (1.0f + expf(-a)) * a");
  CHECK(print_cuda_expr(mul(a, unary(UnOp::Sigmoid, a))) == "a * (1.0f / (1.0f + expf(-a)))");
  CHECK(print_cuda_expr(unary(UnOp::Exp, h)) == "__float2half_rn(expf(__half2float(h)))");
  CHECK(print_cuda_expr(binary(BinOp::Max, h, h)) == "__hmax_nan(h, h)");  // NaN propagates
  CHECK(print_cuda_expr(binary(BinOp::Mul, h, h)) == "h * h");
  CHECK(print_cuda_expr(binary(BinOp::Pow, h, h)) == "__float2half_rn(powf(__half2float(h), __half2float(h)))");
  CHECK(print_cuda_expr(binary(BinOp::Rem, a, a)) == "fmodf(a, a)");
  CHECK(print_cuda_expr(binary(BinOp::Min, i, i)) == "min(i, i)");
  CHECK(print_cuda_expr(unary(UnOp::Neg, cf(-2))) == "-(-2.0f)");
  CHECK(print_cuda_expr(unary(UnOp::Abs, v("l", I64))) == "llabs(l)");
  CHECK(print_cuda_expr(select(lt(a, a), a, cf(0))) == "a < a ? a : 0.0f");
  CHECK(print_cuda_expr(shared_addr("xs", add(i, ci(1)))) == "(unsigned)__cvta_generic_to_shared(&xs[i + 1])");
}

TEST_CASE("cuda printer: NVRTC compiles every sample program for sm_90") {
  if (!test::nvrtc_or_skip()) return;
  Program bounded = shared_program();
  bounded.kernels[0].min_blocks_per_sm = 2;
  for (const Program& p : {elementwise_program(), carrier_program(), shared_program(), bounded, mma_program(),
                           tma_program(), coverage_program()}) {
    CAPTURE(p.op);
    const std::string cuda = print_cuda(p);
    const runtime::CompileResult r =
        runtime::compile_cuda(cuda, p.op + ".cu", runtime::CompileOptions{find_target("sm_90a"), true, {}});
    INFO(r.log);
    CHECK(r.ok);
    CHECK(r.resources.size() == p.kernels.size());
  }
}

TEST_CASE("kernel IR facts: launch invariance and positivity for every launch") {
  const std::vector<std::string> sizes{"D", "T"};
  Expr d = param("D", I64), bias = param("bias_scale", F32);  // a size, and a parameter that is not one
  Expr inv_sqrt_d = binary(BinOp::Div, cf(1), unary(UnOp::Sqrt, cast(d, F32)));
  CHECK(launch_invariant(inv_sqrt_d));
  CHECK(positive_for_every_launch(inv_sqrt_d, sizes));
  CHECK(positive_for_every_launch(binary(BinOp::Mul, cf(0.125), unary(UnOp::Exp, bias)), sizes));
  CHECK(positive_for_every_launch(binary(BinOp::Max, bias, cf(2)), sizes));
  // Not proved: a negative constant, zero, a non-size parameter, a difference, min with one unknown.
  CHECK_FALSE(positive_for_every_launch(cf(-0.5), sizes));
  CHECK_FALSE(positive_for_every_launch(cf(0), sizes));
  CHECK_FALSE(positive_for_every_launch(bias, sizes));
  CHECK_FALSE(positive_for_every_launch(binary(BinOp::Sub, cast(d, F32), cf(1)), sizes));
  CHECK_FALSE(positive_for_every_launch(binary(BinOp::Min, bias, cf(2)), sizes));
  CHECK_FALSE(positive_for_every_launch(unary(UnOp::Sqrt, bias), sizes));
  // Registers, thread indices and loads vary within a launch.
  CHECK_FALSE(launch_invariant(binary(BinOp::Mul, var({"x"}, F32), inv_sqrt_d)));
  CHECK_FALSE(launch_invariant(special(Special::ThreadIdx)));
  CHECK_FALSE(launch_invariant(load(Space::Global, "q", ci(0, I64), F16)));
  CHECK_FALSE(positive_for_every_launch(var({"x"}, F32), sizes));
}
