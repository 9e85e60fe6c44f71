// The SIMT interpreter on hand-built kernels: guarded elementwise, register arrays, shared-memory
// reductions, divergence, rounding, every checked error, bank conflicts and the intrinsics.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "interp/simt.hpp"
#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"
#include "ir/print_kernel.hpp"
#include "ir/verify_kernel.hpp"
#include "simt_builders.hpp"

using namespace simt_test;  // emmy, and the kernel IR's names

namespace {

// y[i] = exp(x[i]) * 2 + 1 for i < N, over ceil(N / 128) blocks.
kir::Program elementwise(bool guarded) {
  Stmt body = gstore("y", reg("i", I64),
                     add(mul(kir::unary(kir::UnOp::Exp, gload("x", reg("i", I64))), kir::cf(2)), kir::cf(1)));
  std::vector<Stmt> stmts{kir::decl("i", I64, global_index(128))};
  stmts.push_back(guarded ? kir::if_then(lt(reg("i", I64), n_param()), {body}) : body);
  return program({buffer("x", In, F32, {"N"}), buffer("y", Out, F32, {"N"})}, 128, blocks_over_n(128),
                 std::move(stmts));
}

}  // namespace

TEST_CASE("simt: guarded elementwise kernel over a ragged size") {
  const int64_t n = 1000;
  TensorMap io{{"x", tensor(DType::F32, {n}, values(n, 1))}};
  SimtReport report = run_simt(elementwise(true), {{"N", n}}, io);
  CHECK(report.blocks == 8);
  CHECK(report.threads == 1024);
  const HostTensor& y = io.at("y");
  REQUIRE(y.shape == std::vector<int64_t>{n});
  CHECK(y.dtype == DType::F32);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float x = static_cast<float>(io.at("x").data[static_cast<size_t>(i)]);
    float e = std::exp(x) * 2.0f + 1.0f;
    if (y.data[static_cast<size_t>(i)] != static_cast<double>(e)) ++wrong;
  }
  CHECK(wrong == 0);
}

TEST_CASE("simt: per-thread loop with a register-array carrier") {
  const int64_t rows = 100, k = 7;
  std::vector<Stmt> loop_body{
      kir::decl("xv", F32, gload("x", add(mul(reg("i", I64), kir::ci(k, I64)), reg("j", I64))))};
  for (int e = 0; e < 4; ++e)
    loop_body.push_back(
        kir::assign(kir::Reg{"acc", e}, add(reg("acc", F32, e), mul(reg("xv", F32), kir::cf(e + 1.5)))));
  std::vector<Stmt> guarded{kir::decl("acc", F32, kir::cf(0), 4),
                            kir::for_loop("j", I64, kir::ci(0, I64), kir::ci(k, I64), loop_body)};
  for (int e = 0; e < 4; ++e)
    guarded.push_back(gstore("y", add(mul(reg("i", I64), kir::ci(4, I64)), kir::ci(e, I64)), reg("acc", F32, e)));
  kir::Program p =
      program({buffer("x", In, F32, {"N", "7"}), buffer("y", Out, F32, {"N", "4"})}, 64, blocks_over_n(64),
              {kir::decl("i", I64, global_index(64)), kir::if_then(lt(reg("i", I64), n_param()), guarded)});
  TensorMap io{{"x", tensor(DType::F32, {rows, k}, values(rows * k, 2))}};
  run_simt(p, {{"N", rows}}, io);
  const std::vector<double>& x = io.at("x").data;
  const std::vector<double>& y = io.at("y").data;
  int64_t wrong = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int e = 0; e < 4; ++e) {
      float acc = 0;
      for (int64_t j = 0; j < k; ++j)
        acc += static_cast<float>(x[static_cast<size_t>(i * k + j)]) * static_cast<float>(e + 1.5);
      if (y[static_cast<size_t>(i * 4 + e)] != static_cast<double>(acc)) ++wrong;
    }
  CHECK(wrong == 0);
}

TEST_CASE("simt: block sum through shared memory with barriers") {
  const int64_t n = 1000;
  const int threads = 256;
  Expr t = tid();
  std::vector<Stmt> step{kir::decl("stride", I32, bin(BinOp::Shr, kir::ci(128), reg("k", I32))),
                         kir::if_then(lt(t, reg("stride", I32)),
                                      {sstore("s", t, add(sload("s", t), sload("s", add(t, reg("stride", I32)))))}),
                         kir::barrier()};
  std::vector<Stmt> body{
      kir::decl("i", I64, global_index(threads)),
      // The select keeps the load off the lanes past N (C's ?: evaluates one side).
      sstore("s", t, kir::select(lt(reg("i", I64), n_param()), gload("x", reg("i", I64)), kir::cf(0))),
      kir::barrier(),
      kir::for_loop("k", I32, kir::ci(0), kir::ci(8), step),
      kir::if_then(eq(t, kir::ci(0)), {gstore("out", i64(kir::special(Special::BlockIdx)), sload("s", kir::ci(0)))}),
  };
  kir::Program p = program({buffer("x", In, F32, {"N"}), buffer("out", Out, F32, {"4"})}, threads,
                           blocks_over_n(threads), body, {shared("s", F32, threads)});
  TensorMap io{{"x", tensor(DType::F32, {n}, values(n, 3))}};
  SimtReport report = run_simt(p, {{"N", n}}, io);
  const std::vector<double>& x = io.at("x").data;
  for (int64_t b = 0; b < 4; ++b) {
    std::vector<float> s(threads);
    for (int64_t i = 0; i < threads; ++i)
      s[static_cast<size_t>(i)] =
          b * threads + i < n ? static_cast<float>(x[static_cast<size_t>(b * threads + i)]) : 0.0f;
    for (int stride = 128; stride > 0; stride >>= 1)
      for (int i = 0; i < stride; ++i) s[static_cast<size_t>(i)] += s[static_cast<size_t>(i + stride)];
    CHECK(io.at("out").data[static_cast<size_t>(b)] == static_cast<double>(s[0]));
  }
  CHECK(report.blocks == 4);
  CHECK(report.bank_conflicts == 0);
  // Per block: the first store (8 warps), then per step k the loads and store of the warps
  // with a thread below the stride, and the final load.
  int64_t per_block = 8;
  for (int stride = 128; stride > 0; stride >>= 1) per_block += 3 * ((stride + 31) / 32);
  CHECK(report.shared_accesses == 4 * (per_block + 1));
}

TEST_CASE("simt: if/else divergence") {
  Expr t = tid();
  std::vector<Stmt> body{
      kir::decl("v", I32),
      kir::if_then(eq(bin(BinOp::Rem, t, kir::ci(3)), kir::ci(0)), {kir::assign(kir::Reg{"v"}, mul(t, kir::ci(10)))},
                   {kir::if_then(lt(t, kir::ci(40)), {kir::assign(kir::Reg{"v"}, kir::unary(kir::UnOp::Neg, t))},
                                 {kir::assign(kir::Reg{"v"}, kir::ci(7))})}),
      gstore("y", i64(t), reg("v", I32)),
  };
  kir::Program p = program({buffer("y", Out, I32, {"64"})}, 64, kir::ci(1, I64), body);
  TensorMap io;
  run_simt(p, {{"N", 1}}, io);
  CHECK(io.at("y").dtype == DType::I32);
  for (int i = 0; i < 64; ++i) {
    int want = i % 3 == 0 ? i * 10 : i < 40 ? -i : 7;
    CHECK(io.at("y").data[static_cast<size_t>(i)] == want);
  }
}

TEST_CASE("simt: loops with thread-varying trip counts") {
  Expr t = tid();
  Stmt stepped = kir::for_loop("j", I32, bin(BinOp::Rem, t, kir::ci(5)), kir::ci(50),
                               {kir::assign(kir::Reg{"count"}, add(reg("count", I32), kir::ci(1)))});
  stepped.step = 3;
  std::vector<Stmt> body{
      kir::decl("acc", I64, kir::ci(0, I64)),
      kir::decl("count", I32, kir::ci(0)),
      // A register declared in the body is a fresh one every iteration.
      kir::for_loop("j", I32, kir::ci(0), t,
                    {kir::decl("sq", I64, i64(mul(reg("j", I32), reg("j", I32)))),
                     kir::assign(kir::Reg{"acc"}, add(reg("acc", I64), reg("sq", I64)))}),
      stepped,
      gstore("y", i64(t), reg("acc", I64)),
      gstore("z", i64(t), reg("count", I32)),
  };
  kir::Program p = program({buffer("y", Out, I64, {"96"}), buffer("z", Out, I32, {"96"})}, 96, kir::ci(1, I64), body);
  TensorMap io;
  run_simt(p, {{"N", 1}}, io);
  for (int i = 0; i < 96; ++i) {
    int64_t sum = 0;
    for (int64_t j = 0; j < i; ++j) sum += j * j;
    CHECK(io.at("y").data[static_cast<size_t>(i)] == static_cast<double>(sum));
    CHECK(io.at("z").data[static_cast<size_t>(i)] == (50 - i % 5 + 2) / 3);
  }
}

TEST_CASE("simt: f16 stores and f16 arithmetic round to nearest even") {
  const std::vector<double> in{1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65520.0, 65519.0, 0.1, -2.5, 1e-8, 3e-8};
  const std::vector<double> want{1.0, 1.0 + 0x1p-9, INFINITY, 65504.0, 0.0999755859375, -2.5, 0.0, 0x1p-24};
  Expr t = i64(tid());
  std::vector<Stmt> body{
      gstore("h", t, gload("x", t)),  // f32 -> f16 at the store
      kir::decl("v", F16, gload("x", t)),
      gstore("sq", t, mul(reg("v", F16), reg("v", F16))),  // an f16 product, rounded to f16
  };
  kir::Program p = program({buffer("x", In, F32, {"8"}), buffer("h", Out, F16, {"8"}), buffer("sq", Out, F32, {"8"})},
                           8, kir::ci(1, I64), body);
  std::vector<double> x(in.size());
  for (size_t i = 0; i < in.size(); ++i) x[i] = kir::round_to(F32, in[i]);
  TensorMap io{{"x", tensor(DType::F32, {8}, x)}};
  run_simt(p, {{"N", 1}}, io);
  CHECK(io.at("h").dtype == DType::F16);
  for (size_t i = 0; i < in.size(); ++i) {
    CHECK(io.at("h").data[i] == want[i]);
    float h = static_cast<float>(want[i]);
    CHECK(io.at("sq").data[i] == kir::round_to(F16, static_cast<double>(h * h)));
  }
}

TEST_CASE("simt: an out-of-bounds global load is an error naming the buffer") {
  TensorMap io{{"x", tensor(DType::F32, {1000}, values(1000, 4))}};
  std::string err = simt_error(elementwise(false), {{"N", 1000}}, io);
  CHECK(contains(err, "k_test"));
  CHECK(contains(err, "buffer x index 1000"));
  CHECK(contains(err, "block 7"));
  CHECK(contains(err, "thread 104"));
}

TEST_CASE("simt: a barrier inside divergent code is an error") {
  kir::Program p =
      program({buffer("y", Out, F32, {"64"})}, 64, kir::ci(1, I64),
              {kir::if_then(lt(tid(), kir::ci(16)), {kir::barrier()}), gstore("y", i64(tid()), kir::cf(1))});
  CHECK(contains(simt_error(p, {{"N", 1}}, {}), "barrier divergence"));
  // Every thread taking the branch is not divergence.
  p.kernels[0].body[0] = kir::if_then(lt(tid(), kir::ci(64)), {kir::barrier()});
  CHECK(simt_error(p, {{"N", 1}}, {}) == "(no error)");
}

TEST_CASE("simt: reading an uninitialized register is an error") {
  kir::Program p =
      program({buffer("y", Out, F32, {"64"})}, 64, kir::ci(1, I64),
              {kir::decl("r", F32), kir::if_then(lt(tid(), kir::ci(4)), {kir::assign(kir::Reg{"r"}, kir::cf(1))}),
               gstore("y", i64(tid()), reg("r", F32))});
  std::string err = simt_error(p, {{"N", 1}}, {});
  CHECK(contains(err, "uninitialized register r"));
  CHECK(contains(err, "thread 4"));
}

TEST_CASE("simt: shuffled block order gives the same result for an order-independent kernel") {
  const int64_t n = 5000;
  TensorMap plain{{"x", tensor(DType::F32, {n}, values(n, 5))}}, shuffled = plain;
  run_simt(elementwise(true), {{"N", n}}, plain);
  SimtOptions o;
  o.shuffle_blocks = true;
  o.seed = 42;
  run_simt(elementwise(true), {{"N", n}}, shuffled, o);
  CHECK(plain.at("y").data == shuffled.at("y").data);

  // A kernel whose result depends on the order: the last block to run wins.
  kir::Program racy = program(
      {buffer("last", Out, I32, {"1"})}, 32, kir::ci(40, I64),
      {kir::if_then(eq(tid(), kir::ci(0)), {gstore("last", kir::ci(0, I64), kir::special(Special::BlockIdx))})});
  TensorMap io;
  run_simt(racy, {{"N", 1}}, io);
  CHECK(io.at("last").data[0] == 39);
  bool exposed = false;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    o.seed = seed;
    run_simt(racy, {{"N", 1}}, io, o);
    exposed = exposed || io.at("last").data[0] != 39;
  }
  CHECK(exposed);
}

TEST_CASE("simt: bank conflicts of strided shared accesses") {
  auto run_stride = [](int stride, ScalarType type) {
    kir::Program p = program({}, 64, kir::ci(1, I64), {sstore("s", mul(tid(), kir::ci(stride)), kir::cf(1, type))},
                             {shared("s", type, 64 * 32)});
    TensorMap io;
    return run_simt(p, {{"N", 1}}, io);
  };
  SimtReport strided = run_stride(32, F32);
  CHECK(strided.shared_accesses == 2);
  CHECK(strided.bank_conflicts == 62);  // 31 extra wavefronts per warp
  SimtReport dense = run_stride(1, F32);
  CHECK(dense.shared_accesses == 2);
  CHECK(dense.bank_conflicts == 0);
  CHECK(run_stride(1, F16).bank_conflicts == 0);  // two lanes share a word
  CHECK(run_stride(2, F32).bank_conflicts == 2);  // two words per bank
}

TEST_CASE("simt: shared-memory races between warps need a barrier") {
  Expr t = tid();
  Expr other = bin(BinOp::Rem, add(t, kir::ci(32)), kir::ci(64));
  std::vector<Stmt> body{sstore("s", t, kir::cast(t, F32)), gstore("y", i64(t), sload("s", other))};
  kir::Program p = program({buffer("y", Out, F32, {"64"})}, 64, kir::ci(1, I64), body, {shared("s", F32, 64)});
  std::string err = simt_error(p, {{"N", 1}}, {});
  CHECK(contains(err, "race"));
  CHECK(contains(err, "s[32]"));
  SimtOptions unchecked;
  unchecked.race_check = false;
  CHECK(simt_error(p, {{"N", 1}}, {}, unchecked) == "(no error)");
  p.kernels[0].body.insert(p.kernels[0].body.begin() + 1, kir::barrier());
  TensorMap io;
  run_simt(p, {{"N", 1}}, io);
  for (int i = 0; i < 64; ++i) CHECK(io.at("y").data[static_cast<size_t>(i)] == (i + 32) % 64);
  // Overwriting what another warp read, without a barrier between, is a race too.
  p.kernels[0].body.push_back(sstore("s", t, kir::cf(0)));
  CHECK(contains(simt_error(p, {{"N", 1}}, {}), "overwritten after"));
}

TEST_CASE("simt: 10^6 statement-lanes run well under a second") {
  std::vector<Stmt> loop{
      kir::decl("xv", F32, mul(kir::cast(reg("j", I32), F32), kir::cf(0.5))),
      kir::assign(kir::Reg{"acc"}, add(reg("acc", F32), reg("xv", F32))),
      kir::if_then(eq(bin(BinOp::BitAnd, reg("j", I32), kir::ci(1)), kir::ci(1)),
                   {kir::assign(kir::Reg{"acc"}, mul(reg("acc", F32), kir::cf(0.999)))}),
  };
  kir::Program p = program({buffer("y", Out, F32, {"256"})}, 256, kir::ci(1, I64),
                           {kir::decl("acc", F32, kir::cf(0)), kir::for_loop("j", I32, kir::ci(0), kir::ci(1000), loop),
                            gstore("y", i64(tid()), reg("acc", F32))});
  TensorMap io;
  auto start = std::chrono::steady_clock::now();
  run_simt(p, {{"N", 1}}, io);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 1.0);
  float acc = 0;
  for (int j = 0; j < 1000; ++j) {
    acc += static_cast<float>(j) * 0.5f;
    if (j & 1) acc *= 0.999f;
  }
  CHECK(io.at("y").data[255] == static_cast<double>(acc));
}

// ---- intrinsics ------------------------------------------------------------------------------------

namespace {

Expr group() { return bin(BinOp::Shr, lane(), kir::ci(2)); }    // lane / 4
Expr quad() { return bin(BinOp::BitAnd, lane(), kir::ci(3)); }  // lane % 4
Expr c(int v) { return kir::ci(v); }

// mma.m16n8k16 fragment coordinates as IR expressions of the lane (PTX ISA figures).
Expr a_index(int e) {  // A 16x16 row-major
  Expr row = add(group(), c(8 * ((e >> 1) & 1)));
  Expr col = add(add(mul(quad(), c(2)), c(e & 1)), c(8 * ((e >> 2) & 1)));
  return i64(add(mul(row, c(16)), col));
}
Expr b_index(int e) {  // B 16x8 (k, n) row-major
  Expr k = add(add(mul(quad(), c(2)), c(e & 1)), c(8 * (e >> 1)));
  return i64(add(mul(k, c(8)), group()));
}
Expr c_index(int e) {  // C 16x8 row-major
  Expr row = add(group(), c(e >= 2 ? 8 : 0));
  Expr col = add(mul(quad(), c(2)), c(e & 1));
  return i64(add(mul(row, c(8)), col));
}

}  // namespace

TEST_CASE("simt: mma.sync m16n8k16 equals a CPU matmul of the tile") {
  std::vector<Stmt> body{kir::decl("a", U32, 4), kir::decl("b", U32, 2), kir::decl("acc", F32, kir::cf(0), 4),
                         kir::decl("d", F32, 4)};
  // cvt.rn.f16x2.f32 puts its first operand in the upper half: element 2r + 1.
  for (int r = 0; r < 4; ++r)
    body.push_back(intrinsic(
        IntrinsicId::CvtRnF16x2F32, {kir::Reg{"a", r}},
        {kir::cast(gload("A", a_index(2 * r + 1), F16), F32), kir::cast(gload("A", a_index(2 * r), F16), F32)}));
  for (int r = 0; r < 2; ++r)
    body.push_back(intrinsic(
        IntrinsicId::CvtRnF16x2F32, {kir::Reg{"b", r}},
        {kir::cast(gload("B", b_index(2 * r + 1), F16), F32), kir::cast(gload("B", b_index(2 * r), F16), F32)}));
  std::vector<Expr> args;
  for (int r = 0; r < 4; ++r) args.push_back(reg("a", U32, r));
  for (int r = 0; r < 2; ++r) args.push_back(reg("b", U32, r));
  for (int r = 0; r < 4; ++r) args.push_back(reg("acc", F32, r));
  body.push_back(intrinsic(IntrinsicId::MmaF16F32, {{"d", 0}, {"d", 1}, {"d", 2}, {"d", 3}}, args));
  for (int e = 0; e < 4; ++e) body.push_back(gstore("C", c_index(e), reg("d", F32, e)));
  kir::Program p = program(
      {buffer("A", In, F16, {"16", "16"}), buffer("B", In, F16, {"16", "8"}), buffer("C", Out, F32, {"16", "8"})}, 32,
      kir::ci(1, I64), body);
  TensorMap io{{"A", tensor(DType::F16, {16, 16}, values(256, 6))}, {"B", tensor(DType::F16, {16, 8}, values(128, 7))}};
  run_simt(p, {{"N", 1}}, io);
  const std::vector<double>&a = io.at("A").data, &b = io.at("B").data, &out = io.at("C").data;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double want = 0;
      for (int k = 0; k < 16; ++k) want += a[static_cast<size_t>(m * 16 + k)] * b[static_cast<size_t>(k * 8 + n)];
      CHECK(out[static_cast<size_t>(m * 8 + n)] == want);
    }
}

TEST_CASE("simt: shfl.bfly butterfly sums each warp") {
  std::vector<Stmt> body{kir::decl("v", F32, kir::cast(tid(), F32)), kir::decl("o", F32)};
  for (int mask : {16, 8, 4, 2, 1}) {
    body.push_back(intrinsic(IntrinsicId::ShflBfly, {kir::Reg{"o"}}, {reg("v", F32)}, {mask}));
    body.push_back(kir::assign(kir::Reg{"v"}, add(reg("v", F32), reg("o", F32))));
  }
  body.push_back(gstore("y", i64(tid()), reg("v", F32)));
  kir::Program p = program({buffer("y", Out, F32, {"64"})}, 64, kir::ci(1, I64), body);
  TensorMap io;
  run_simt(p, {{"N", 1}}, io);
  for (int i = 0; i < 64; ++i) CHECK(io.at("y").data[static_cast<size_t>(i)] == (i < 32 ? 496 : 1520));
  // A warp-collective with half a warp active is an error.
  p.kernels[0].body[2] = kir::if_then(lt(tid(), kir::ci(16)), {p.kernels[0].body[2]});
  CHECK(contains(simt_error(p, {{"N", 1}}, {}), "divergent"));
}

namespace {

// Each of 64 threads cp.asyncs chunk `tid` (4 floats) of x, and chunk 64 + tid in a second
// group when `second`; then wait_group(wait) if wait >= 0, a barrier if `sync`, and y[4 tid + j]
// = s[4 read_chunk + j].
kir::Program cp_async_kernel(bool second, int wait, bool sync, Expr read_chunk) {
  auto copy = [](Expr chunk) {
    return intrinsic(IntrinsicId::CpAsync16, {}, {kir::shared_addr("s", mul(chunk, c(4))), i64(mul(chunk, c(4)))}, {},
                     "x");
  };
  std::vector<Stmt> body{copy(tid()), intrinsic(IntrinsicId::CpAsyncCommit, {}, {})};
  if (second) {
    body.push_back(copy(add(tid(), c(64))));
    body.push_back(intrinsic(IntrinsicId::CpAsyncCommit, {}, {}));
  }
  if (wait >= 0) body.push_back(intrinsic(IntrinsicId::CpAsyncWait, {}, {}, {wait}));
  if (sync) body.push_back(kir::barrier());
  for (int j = 0; j < 4; ++j)
    body.push_back(gstore("y", i64(add(mul(tid(), c(4)), c(j))), sload("s", add(mul(read_chunk, c(4)), c(j)))));
  return program({buffer("x", In, F32, {"512"}), buffer("y", Out, F32, {"256"})}, 64, kir::ci(1, I64), body,
                 {shared("s", F32, 512)});
}

}  // namespace

TEST_CASE("simt: cp.async lands at wait_group") {
  TensorMap io{{"x", tensor(DType::F32, {512}, values(512, 8))}};
  Expr other = bin(BinOp::Rem, add(tid(), c(32)), c(64));  // another warp's chunk
  run_simt(cp_async_kernel(false, 0, true, other), {{"N", 1}}, io);
  for (int i = 0; i < 256; ++i)
    CHECK(io.at("y").data[static_cast<size_t>(i)] ==
          io.at("x").data[static_cast<size_t>(((i / 4 + 32) % 64) * 4 + i % 4)]);
  // wait_group(1) lands the older group only.
  run_simt(cp_async_kernel(true, 1, false, tid()), {{"N", 1}}, io);
  CHECK(io.at("y").data[5] == io.at("x").data[5]);
}

TEST_CASE("simt: reading a cp.async destination before its wait is an error") {
  TensorMap io{{"x", tensor(DType::F32, {512}, values(512, 9))}};
  std::string err = simt_error(cp_async_kernel(false, -1, true, tid()), {{"N", 1}}, io);
  CHECK(contains(err, "read before cp.async.wait_group"));
  CHECK(contains(err, "s[0]"));
  CHECK(contains(simt_error(cp_async_kernel(true, 1, false, add(tid(), c(64))), {{"N", 1}}, io),
                 "read before cp.async.wait_group"));
  // Waiting makes a thread's own copies visible to it; another warp needs a barrier too.
  CHECK(contains(
      simt_error(cp_async_kernel(false, 0, false, bin(BinOp::Rem, add(tid(), c(32)), c(64))), {{"N", 1}}, io), "race"));
}

namespace {

kir::Param map_param(std::string name, std::string map_of, std::vector<int> box, kir::Swizzle swizzle) {
  return {kir::Param::Kind::TensorMap, std::move(name), F16, true, std::move(map_of), std::move(box), swizzle};
}

// TMA: thread 0 inits the mbarrier, expects 256 bytes and loads the 8x16 f16 box at row 8 of
// x (32 x E); everyone waits on parity `parity` (if wait) and copies the tile to y. The map
// parameter describes a box of 16 x 8 over `map_of`.
kir::Program tma_kernel(bool wait, int parity, std::string map_of = "x") {
  Expr bar = kir::shared_addr("bar", c(0));
  std::vector<Stmt> body{
      kir::if_then(eq(tid(), c(0)), {intrinsic(IntrinsicId::MbarrierInit, {}, {bar}, {1})}),
      kir::barrier(),
      kir::if_then(eq(tid(), c(0)), {intrinsic(IntrinsicId::MbarrierExpectTx, {}, {bar, kir::ci(256, U32)}),
                                     intrinsic(IntrinsicId::TmaLoad2d, {},
                                               {kir::shared_addr("tile", c(0)), bar, c(0), c(8)}, {0}, "xmap")}),
  };
  if (wait) body.push_back(intrinsic(IntrinsicId::MbarrierTryWait, {}, {bar, kir::ci(parity, U32)}));
  for (int h = 0; h < 2; ++h)
    body.push_back(gstore("y", i64(add(tid(), c(64 * h))), sload("tile", add(tid(), c(64 * h)), F16)));
  kir::Param map = map_param("xmap", std::move(map_of), {16, 8}, kir::Swizzle::None);
  return program({buffer("x", In, F16, {"32", "E"}), buffer("y", Out, F16, {"128"})}, 64, kir::ci(1, I64), body,
                 {shared("tile", F16, 128, 128), shared("bar", I64, 1, 8)}, {map});
}

SimtOptions tma_options() {
  SimtOptions o;
  kir::TmaMap m;
  m.buffer = 0;  // x, the program's first buffer
  m.dims = {16, 32};
  m.strides = {2, 32};
  m.box = {16, 8};
  m.elem_bytes = 2;
  o.tensor_maps["xmap"] = m;
  return o;
}

}  // namespace

TEST_CASE("simt: a TMA box lands when the mbarrier phase is waited on") {
  TensorMap io{{"x", tensor(DType::F16, {32, 16}, values(512, 10))}};
  const SizeBindings sizes{{"N", 1}, {"E", 16}};
  run_simt(tma_kernel(true, 0), sizes, io, tma_options());
  for (int k = 0; k < 128; ++k)
    CHECK(io.at("y").data[static_cast<size_t>(k)] == io.at("x").data[static_cast<size_t>(128 + k)]);
  CHECK(contains(simt_error(tma_kernel(false, 0), sizes, io, tma_options()), "TMA copy still in flight"));
  CHECK(contains(simt_error(tma_kernel(true, 1), sizes, io, tma_options()), "mbarrier wait never returns"));
}

namespace {

// A cluster of two CTAs of 64 threads (CLUSTER): CTA 0's thread 0 multicasts the 8 x 16 box at
// row 8 of x into both CTAs' tiles (each CTA's thread 0 expecting its bytes), every thread copies
// its CTA's tile to y; then (with `peers`) every thread of both arrives on CTA 0's free mbarrier,
// on which CTA 0's thread 0 waits before it multicasts the box at row 16 over the same tiles
// (phase 2, copied after). `sync_init`: a cluster barrier between the mbarriers' init and
// their first use by the other CTA.
kir::Program cluster_kernel(bool peers, bool sync_init, int64_t ctas = 3) {
  Expr bar = kir::shared_addr("bar", c(0)), free = kir::shared_addr("free", c(0));
  Expr rank = kir::special(Special::BlockIdx);
  auto phase = [&](int row, int parity) {
    std::vector<Stmt> out{
        kir::if_then(eq(tid(), c(0)), {intrinsic(IntrinsicId::MbarrierExpectTx, {}, {bar, kir::ci(256, U32)})}),
        kir::if_then(bin(BinOp::And, eq(tid(), c(0)), eq(rank, c(0))),
                     {intrinsic(IntrinsicId::TmaLoad2d, {}, {kir::shared_addr("tile", c(0)), bar, c(0), c(row)}, {ctas},
                                "xmap")}),
        intrinsic(IntrinsicId::MbarrierTryWait, {}, {bar, kir::ci(parity, U32)})};
    for (int h = 0; h < 2; ++h)
      out.push_back(gstore("y", i64(add(add(mul(rank, c(256)), c(128 * parity)), add(tid(), c(64 * h)))),
                           sload("tile", add(tid(), c(64 * h)), F16)));
    return out;
  };
  std::vector<Stmt> body{kir::if_then(eq(tid(), c(0)), {intrinsic(IntrinsicId::MbarrierInit, {}, {bar}, {1}),
                                                        intrinsic(IntrinsicId::MbarrierInit, {}, {free}, {128})}),
                         sync_init ? intrinsic(IntrinsicId::ClusterSync, {}, {}) : kir::barrier()};
  for (Stmt& st : phase(8, 0)) body.push_back(std::move(st));
  if (peers) {
    body.push_back(intrinsic(IntrinsicId::MbarrierArrivePeer, {}, {free, kir::ci(0, U32)}));
    body.push_back(kir::if_then(bin(BinOp::And, eq(tid(), c(0)), eq(rank, c(0))),
                                {intrinsic(IntrinsicId::MbarrierTryWait, {}, {free, kir::ci(0, U32)})}));
  }
  for (Stmt& st : phase(16, 1)) body.push_back(std::move(st));
  body.push_back(intrinsic(IntrinsicId::ClusterSync, {}, {}));
  kir::Param map = map_param("xmap", "x", {16, 8}, kir::Swizzle::None);
  kir::Program p =
      program({buffer("x", In, F16, {"32", "E"}), buffer("y", Out, F16, {"512"})}, 64, kir::ci(2, I64), body,
              {shared("tile", F16, 128, 128), shared("bar", I64, 1, 8), shared("free", I64, 1, 8)}, {map});
  p.kernels[0].cluster = 2;
  return p;
}

}  // namespace

TEST_CASE("simt: a cluster's CTAs share a multicast box, and a refill waits for every CTA's arrival") {
  TensorMap io{{"x", tensor(DType::F16, {32, 16}, values(512, 10))}};
  const SizeBindings sizes{{"N", 1}, {"E", 16}};
  SimtReport r = run_simt(cluster_kernel(true, true), sizes, io, tma_options());
  CHECK(r.blocks == 2);
  for (int cta = 0; cta < 2; ++cta)
    for (int k = 0; k < 128; ++k) {
      CAPTURE(cta);
      CAPTURE(k);
      CHECK(io.at("y").data[static_cast<size_t>(cta * 256 + k)] == io.at("x").data[static_cast<size_t>(128 + k)]);
      CHECK(io.at("y").data[static_cast<size_t>(cta * 256 + 128 + k)] == io.at("x").data[static_cast<size_t>(256 + k)]);
    }
  // Refilled with no arrival from the CTAs that read the tiles: the multicast overwrites what
  // their warps read, with nothing ordering it after the reads.
  CHECK(contains(simt_error(cluster_kernel(false, true), sizes, io, tma_options()), "race"));
  // The other CTA's mbarrier used with only each CTA's own barrier after its init.
  CHECK(contains(simt_error(cluster_kernel(true, false), sizes, io, tma_options()),
                 "before a cluster barrier ordered its mbarrier.init"));
  // Multicast to a CTA the cluster does not have.
  CHECK(contains(simt_error(cluster_kernel(true, true, 7), sizes, io, tma_options()), "of a cluster of 2"));
}

TEST_CASE("simt: a TensorMap parameter's map is the one its buffer, box and the sizes describe") {
  TensorMap io{{"x", tensor(DType::F16, {32, 16}, values(512, 10))}};
  run_simt(tma_kernel(true, 0), {{"N", 1}, {"E", 16}}, io);  // no map given: built from the parameter
  for (int k = 0; k < 128; ++k)
    CHECK(io.at("y").data[static_cast<size_t>(k)] == io.at("x").data[static_cast<size_t>(128 + k)]);
  CHECK(contains(simt_error(tma_kernel(true, 0, "w"), {{"N", 1}, {"E", 16}}, io),
                 "tensor map xmap is over w, not a buffer"));
  // Rows of 15 f16 (30 bytes) go through a staged copy at a pitch of 32 bytes: the same box,
  // its 16th column past the rows' end reading zero.
  TensorMap odd{{"x", tensor(DType::F16, {32, 15}, values(480, 10))}};
  run_simt(tma_kernel(true, 0), {{"N", 1}, {"E", 15}}, odd);
  for (size_t r = 0; r < 8; ++r)
    for (size_t col = 0; col < 16; ++col)
      CHECK(odd.at("y").data[r * 16 + col] == (col < 15 ? odd.at("x").data[(r + 8) * 15 + col] : 0.0));
  // An empty tensor is no TMA tensor: a copy through that map is the kernel's bug.
  TensorMap empty{{"x", tensor(DType::F16, {32, 0}, {})}};
  CHECK(contains(simt_error(tma_kernel(true, 0), {{"N", 1}, {"E", 0}}, empty), "which the sizes do not allow"));
}

TEST_CASE("TMA map of a parameter: the hardware's rules, each with its reason") {
  const kir::Param p = map_param("m", "k", {64, 32, 1, 1}, kir::Swizzle::B128);
  const std::vector<int64_t> shape{2, 3, 100, 64};  // (B, H, S, D)
  auto ok = kir::tma_map_of(p, F16, shape, 4);
  REQUIRE(std::holds_alternative<kir::TmaMap>(ok));
  const kir::TmaMap& m = std::get<kir::TmaMap>(ok);
  CHECK(m.rank == 4);
  CHECK(m.buffer == 4);
  CHECK(m.dims == std::array<uint64_t, 5>{64, 100, 3, 2, 0});
  CHECK(m.strides == std::array<uint64_t, 5>{2, 128, 12800, 38400, 0});
  CHECK(m.box == std::array<uint32_t, 5>{64, 32, 1, 1, 0});
  auto why = [&](const kir::Param& q, std::vector<int64_t> s) {
    auto r = kir::tma_map_of(q, F16, s, 0);
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : std::string("(a map)");
  };
  CHECK(m.staged_pitch == 0);
  // Rows of 120 and 122 bytes: maps over a copy of the rows at a pitch of 128 bytes.
  for (int64_t d : {60, 61}) {
    const std::vector<int64_t> rows{2, 3, 100, d};
    auto staged = kir::tma_map_of(p, F16, rows, 0);
    REQUIRE(std::holds_alternative<kir::TmaMap>(staged));
    const kir::TmaMap& s = std::get<kir::TmaMap>(staged);
    CHECK(s.staged_pitch == 128);
    CHECK(s.strides == std::array<uint64_t, 5>{2, 128, 12800, 38400, 0});
    CHECK(kir::tma_staged_rows(s) == 600);
    CHECK(kir::tma_row_bytes(s) == static_cast<uint64_t>(2 * d));
  }
  CHECK(contains(why(p, {2, 3, 0, 64}), "TMA takes 1 to 2^32"));
  CHECK(contains(why(p, {3, 100, 64}), "a box of 4 dimensions"));
  kir::Param wide = p;
  wide.box = {128, 32, 1, 1};  // 256-byte rows under the 128-byte swizzle
  CHECK(contains(why(wide, {2, 3, 100, 128}), "at most 128"));
  wide.swizzle = kir::Swizzle::None;
  CHECK(why(wide, {2, 3, 100, 128}) == "(a map)");
  kir::Param big = p;
  big.box = {64, 300, 1, 1};
  CHECK(contains(why(big, {2, 3, 100, 64}), "TMA takes 1 to 256"));
}

TEST_CASE("simt: integer arithmetic wraps and truncates like C") {
  Expr t = tid();
  Expr at = i64(t);
  std::vector<Stmt> body{
      gstore("wrap", at, add(kir::ci(2147483647), t)),                                      // i32 wraps
      gstore("quot", at, bin(BinOp::Div, kir::unary(kir::UnOp::Neg, add(t, c(7))), c(2))),  // truncates
      gstore("rem", at, bin(BinOp::Rem, kir::unary(kir::UnOp::Neg, add(t, c(7))), c(2))),
      gstore("u", at, bin(BinOp::Shr, kir::binary(BinOp::Sub, kir::ci(0, U32), kir::cast(t, U32)), c(1))),
      gstore("shl", at, bin(BinOp::Shl, c(1), add(t, c(24)))),
      gstore("trunc", at, kir::cast(mul(kir::cast(t, F32), kir::cf(-0.7)), I32)),
      gstore("wide", at, mul(at, kir::ci(4000000000LL, I64))),
  };
  std::vector<kir::Buffer> outs;
  for (const char* name : {"wrap", "quot", "rem", "u", "shl", "trunc", "wide"})
    outs.push_back(buffer(name, Out, I64, {"8"}));
  kir::Program p = program(outs, 8, kir::ci(1, I64), body);
  TensorMap io;
  run_simt(p, {{"N", 1}}, io);
  for (int i = 0; i < 8; ++i) {
    auto at_i = static_cast<size_t>(i);
    CHECK(io.at("wrap").data[at_i] ==
          static_cast<int32_t>(static_cast<uint32_t>(2147483647u + static_cast<uint32_t>(i))));
    CHECK(io.at("quot").data[at_i] == -(i + 7) / 2);
    CHECK(io.at("rem").data[at_i] == -(i + 7) % 2);
    CHECK(io.at("u").data[at_i] == (0u - static_cast<uint32_t>(i)) >> 1);
    CHECK(io.at("shl").data[at_i] == static_cast<int32_t>(1u << (i + 24)));
    CHECK(io.at("trunc").data[at_i] == static_cast<int>(static_cast<float>(i) * -0.7f));
    CHECK(io.at("wide").data[at_i] == static_cast<double>(i * 4000000000LL));
  }
  // Division by zero, and operand types CUDA would convert differently from the IR's type.
  p.kernels[0].body = {gstore("quot", at, bin(BinOp::Div, c(5), kir::binary(BinOp::Sub, t, c(3))))};
  std::string err = simt_error(p, {{"N", 1}}, {});
  CHECK(contains(err, "division by zero"));
  CHECK(contains(err, "thread 3"));
  p.kernels[0].body = {gstore("quot", at, add(t, kir::ci(1, I64)))};
  CHECK(contains(simt_error(p, {{"N", 1}}, {}), "is i64 in CUDA, the IR says i32"));
  p.kernels[0].body = {gstore("quot", at, kir::cast(add(kir::cf(1, F16), c(1)), I32))};
  CHECK(contains(simt_error(p, {{"N", 1}}, {}), "no common type"));
}

TEST_CASE("simt: ldmatrix reads shared rows; thread-scope intrinsics run on the active lanes") {
  Expr t = tid();
  std::vector<Stmt> body{
      sstore("s", t, gload("x", i64(t), F16)),
      sstore("s", add(t, c(32)), gload("x", i64(add(t, c(32))), F16)),
      kir::barrier(),
      kir::decl("d", U32),
      // Lanes 0-7 give the row addresses (pitch 8 halves = 16 bytes); the others are ignored.
      intrinsic(IntrinsicId::LdmatrixX1, {kir::Reg{"d"}},
                {kir::shared_addr("s", mul(bin(BinOp::BitAnd, lane(), c(7)), c(8)))}),
      gstore("y", i64(t), reg("d", U32)),
      kir::decl("e", F32, kir::cf(-1)),
      kir::if_then(lt(t, c(10)), {intrinsic(IntrinsicId::Ex2Approx, {kir::Reg{"e"}}, {kir::cast(t, F32)})}),
      gstore("z", i64(t), reg("e", F32)),
  };
  kir::Program p = program({buffer("x", In, F16, {"64"}), buffer("y", Out, U32, {"32"}), buffer("z", Out, F32, {"32"})},
                           32, kir::ci(1, I64), body, {shared("s", F16, 64)});
  TensorMap io{{"x", tensor(DType::F16, {64}, values(64, 11))}};
  run_simt(p, {{"N", 1}}, io);
  const std::vector<double>& x = io.at("x").data;
  for (int l = 0; l < 32; ++l) {
    auto half = [&](int col) {
      return kir::f32_to_f16_bits(static_cast<float>(x[static_cast<size_t>((l / 4) * 8 + col)]));
    };
    uint32_t want = half(2 * (l % 4)) | static_cast<uint32_t>(half(2 * (l % 4) + 1)) << 16;
    CHECK(io.at("y").data[static_cast<size_t>(l)] == want);
    CHECK(io.at("z").data[static_cast<size_t>(l)] == (l < 10 ? std::exp2(l) : -1.0));
  }
}

namespace {

// Thread t copies x[8t .. 8t+7] to y[8t + off ..] through one vector load and one vector store
// of 8 f16 (16 bytes each), plus element 3 of the register array doubled into z[t].
kir::Program vector_copy(int64_t off) {
  Expr base = mul(i64(tid()), kir::ci(8, I64));
  std::vector<Stmt> body{
      kir::decl("v", ScalarType::F16, 8), kir::vec_load("v", ScalarType::F16, 8, "x", base),
      kir::vec_store("y", add(base, kir::ci(off, I64)), "v", ScalarType::F16, 8),
      gstore("z", i64(tid()),
             kir::cast(mul(kir::cast(reg("v", ScalarType::F16, 3), F32), kir::cf(2)), ScalarType::F16))};
  return program({buffer("x", In, ScalarType::F16, {"64"}), buffer("y", Out, ScalarType::F16, {"72"}),
                  buffer("z", Out, ScalarType::F16, {"8"})},
                 8, kir::ci(1, I64), std::move(body));
}

}  // namespace

TEST_CASE("simt: vector loads and stores move whole register arrays, aligned to their size") {
  std::vector<double> x = values(64, 9);
  TensorMap io{{"x", tensor(DType::F16, {64}, x)}};
  run_simt(vector_copy(0), {{"N", 1}}, io);
  for (int i = 0; i < 64; ++i) CHECK(io.at("y").data[static_cast<size_t>(i)] == x[static_cast<size_t>(i)]);
  for (int t = 0; t < 8; ++t) CHECK(io.at("z").data[static_cast<size_t>(t)] == 2 * x[static_cast<size_t>(8 * t + 3)]);
  CHECK(fmt::format("{}", fmt::join(verify_kernel(vector_copy(0).kernels[0]), "\n")) == "");
  std::string cuda = print_cuda(vector_copy(0));
  CHECK(contains(cuda, "{ union { uint4 w; __half e[8]; } vec_; vec_.w = *reinterpret_cast<const uint4*>(&x["));
  CHECK(contains(cuda, "v[7] = vec_.e[7]; }"));
  CHECK(contains(cuda, "asm volatile(\"st.global.v4.b32 [%0], {%1, %2, %3, %4};\\n\" :: \"l\"(&y["));
  CHECK(contains(print_program(vector_copy(0)), "v = vload<8> x["));
  CHECK(contains(print_program(vector_copy(0)), "vstore<8> y["));
}

TEST_CASE("simt: a misaligned vector access is an error, as the GPU faults on it") {
  TensorMap io{{"x", tensor(DType::F16, {64}, values(64, 9))}};
  std::string err = simt_error(vector_copy(4), {{"N", 1}}, io);
  CHECK(contains(err, "misaligned vector store: 16 bytes of buffer y at byte 8 (element 4)"));
  CHECK(contains(err, "thread 0"));
  // Past the end of the buffer: out of bounds, element range named.
  kir::Program p = vector_copy(0);
  p.buffers[1].dims = {"60"};
  CHECK(contains(simt_error(p, {{"N", 1}}, io), "global vector store out of bounds: buffer y elements [56, 64)"));
}

namespace {

// `threads` threads: thread t loads x[8t ..] (16 bytes), stores it into shared s at element
// `dst` (an expression of t), then (after a barrier, when `barrier`) loads s[8t ..] back and
// stores it to y[8t ..]; every move one 16-byte access.
kir::Program shared_vector_exchange(int threads, const Expr& dst, bool barrier) {
  Expr chunk = mul(tid(), kir::ci(8));
  std::vector<Stmt> body{kir::decl("v", ScalarType::F16, 8), kir::decl("w", ScalarType::F16, 8),
                         kir::vec_load("v", ScalarType::F16, 8, "x", kir::cast(chunk, I64)),
                         kir::vec_store("s", dst, "v", ScalarType::F16, 8, kir::Space::Shared)};
  if (barrier) body.push_back(kir::barrier());
  body.push_back(kir::vec_load("w", ScalarType::F16, 8, "s", chunk, kir::Space::Shared));
  body.push_back(kir::vec_store("y", kir::cast(chunk, I64), "w", ScalarType::F16, 8));
  const std::string n = std::to_string(8 * threads);
  return program({buffer("x", In, ScalarType::F16, {n}), buffer("y", Out, ScalarType::F16, {n})}, threads,
                 kir::ci(1, I64), std::move(body), {shared("s", ScalarType::F16, 8 * threads + 8)});
}

// Thread t's chunk goes to chunk t ^ 1 (its neighbour in the warp), `off` elements further.
kir::Program shared_vector_swap(int off = 0) {
  return shared_vector_exchange(32, add(mul(kir::binary(BinOp::BitXor, tid(), kir::ci(1)), kir::ci(8)), kir::ci(off)),
                                true);
}

}  // namespace

TEST_CASE("simt: shared vector accesses move 16 bytes, conflict-free when dense, and are race-checked") {
  std::vector<double> x = values(256, 4);
  TensorMap io{{"x", tensor(DType::F16, {256}, x)}};
  SimtReport report = run_simt(shared_vector_swap(), {{"N", 1}}, io);
  for (int t = 0; t < 32; ++t)
    for (int e = 0; e < 8; ++e)
      CHECK(io.at("y").data[static_cast<size_t>(8 * t + e)] == x[static_cast<size_t>(8 * (t ^ 1) + e)]);
  CHECK(report.shared_accesses == 2);
  CHECK(report.bank_conflicts == 0);  // 16-byte lanes: four phases of eight, each a dense 128 bytes
  CHECK(fmt::format("{}", fmt::join(verify_kernel(shared_vector_swap().kernels[0]), "\n")) == "");
  CHECK(contains(print_cuda(shared_vector_swap()), "vec_.w = *reinterpret_cast<const uint4*>(&s["));
  // Four elements off: not 16-byte aligned, which the GPU faults on.
  CHECK(simt_error(shared_vector_swap(4), {{"N", 1}}, io).find("misaligned shared vector store: 16 bytes") !=
        std::string::npos);
}

TEST_CASE("simt: a shared vector read of another warp's write without a barrier is a race") {
  // 64 threads: thread t's chunk goes to the other warp's thread (t + 32) % 64.
  Expr other_warp = mul(kir::binary(BinOp::Rem, add(tid(), kir::ci(32)), kir::ci(64)), kir::ci(8));
  TensorMap io{{"x", tensor(DType::F16, {512}, values(512, 6))}};
  CHECK(contains(simt_error(shared_vector_exchange(64, other_warp, false), {{"N", 1}}, io), "shared-memory race"));
  CHECK(simt_error(shared_vector_exchange(64, other_warp, true), {{"N", 1}}, io) == "(no error)");
}

TEST_CASE("verify: vector accesses need a power-of-two count of 2..16 bytes and a matching register array") {
  kir::Program p = vector_copy(0);
  p.kernels[0].body[0] = kir::decl("v", ScalarType::F16, 4);
  CHECK(
      contains(fmt::format("{}", fmt::join(verify_kernel(p.kernels[0]), "\n")), "through register array 'v' of 4 f16"));
  kir::Program wide = vector_copy(0);
  wide.kernels[0].body[1].count = 16;  // 32 bytes
  CHECK(contains(fmt::format("{}", fmt::join(verify_kernel(wide.kernels[0]), "\n")), "is 32 bytes (2, 4, 8 or 16"));
  kir::Program to_input = vector_copy(0);
  to_input.kernels[0].body[2] = kir::vec_store("x", kir::ci(0, I64), "v", ScalarType::F16, 8);
  CHECK(contains(fmt::format("{}", fmt::join(verify_kernel(to_input.kernels[0]), "\n")), "stores to const buffer 'x'"));
}

TEST_CASE("simt: butterflies of i32 and f64 exchange lanes l and l ^ mask") {
  std::vector<Stmt> body{
      kir::decl("a", ScalarType::I32, kir::binary(BinOp::Mul, tid(), kir::ci(3))),
      kir::decl("b", ScalarType::I32),
      kir::intrinsic(kir::IntrinsicId::ShflBflyI32, {kir::Reg{"b"}}, {reg("a", ScalarType::I32)}, {5}),
      kir::decl("c", ScalarType::F64, kir::cast(tid(), ScalarType::F64)),
      kir::decl("d", ScalarType::F64),
      kir::intrinsic(kir::IntrinsicId::ShflBflyF64, {kir::Reg{"d"}}, {reg("c", ScalarType::F64)}, {16}),
      gstore("y", i64(tid()), kir::cast(reg("b", ScalarType::I32), F32)),
      gstore("z", i64(tid()), kir::cast(reg("d", ScalarType::F64), F32))};
  kir::Program p = program({buffer("y", Out, F32, {"64"}), buffer("z", Out, F32, {"64"})}, 64, kir::ci(1, I64), body);
  CHECK(fmt::format("{}", fmt::join(verify_kernel(p.kernels[0]), "\n")) == "");
  TensorMap io;
  run_simt(p, {{"N", 1}}, io);
  for (int t = 0; t < 64; ++t) {
    CHECK(io.at("y").data[static_cast<size_t>(t)] == 3 * ((t & ~31) | ((t & 31) ^ 5)));
    CHECK(io.at("z").data[static_cast<size_t>(t)] == ((t & ~31) | ((t & 31) ^ 16)));
  }
  std::string cuda = print_cuda(p);
  CHECK(contains(cuda, "emmy_shfl_bfly_i32(b, a, 5);"));
  CHECK(contains(cuda, "emmy_shfl_bfly_f64(d, c, 16);"));
  CHECK(contains(cuda, "d = __hiloint2double(hi, lo);"));
}
