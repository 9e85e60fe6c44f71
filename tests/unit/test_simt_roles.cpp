// The SIMT interpreter with warps that run apart: a producer warp and consumer warps over a ring
// of mbarriers, named barriers passing a turn, setmaxnreg's register budget, and the deadlocks
// and races of each when the ordering is wrong.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "interp/simt.hpp"
#include "ir/intrinsics.hpp"
#include "lower/kernel/specialize_warps.hpp"
#include "simt_builders.hpp"

using namespace simt_test;

namespace {

Expr c(int v) { return kir::ci(v); }
Expr u(int v) { return kir::ci(v, U32); }
Expr warp() { return kir::special(Special::WarpId); }
Stmt call(IntrinsicId id, std::vector<Expr> ins, std::vector<int64_t> imm = {}) {
  return kir::intrinsic(id, {}, std::move(ins), std::move(imm));
}
Expr bar(const std::string& ring, Expr slot) { return kir::shared_addr(ring, std::move(slot)); }

// How the consumers of the ring below misbehave, if they do.
enum class Flaw { None, ReleaseBeforeRead, WrongParity, NoProducerWait };

// A ring of two 32-float slots. Warp 0 produces T tiles: it waits until slot t % 2 is empty,
// stores x[t * 32 + lane] into it and arrives on the slot's full mbarrier (32 arrivals). Warps 1
// and 2 consume: they wait until the slot is full, add slot[lane] into their sum and arrive on
// its empty mbarrier (64 arrivals). y[c * 32 + lane] is consumer c's sum. The producer fills
// slot 0 again only after the consumers released it: run in lockstep, it would wait forever.
kir::Program ring(Flaw flaw) {
  const Expr t = reg("t", I32), slot = bin(BinOp::Rem, t, c(2));
  const Expr phase = kir::cast(bin(BinOp::BitAnd, bin(BinOp::Div, t, c(2)), c(1)), U32);
  const Expr t_end = kir::cast(n_param(), I32);
  std::vector<Stmt> produce;
  if (flaw != Flaw::NoProducerWait)  // parity 1 first: a fresh mbarrier's phase -1 counts as done
    produce.push_back(call(IntrinsicId::MbarrierTryWait, {bar("empty", slot), bin(BinOp::BitXor, phase, u(1))}));
  produce.push_back(sstore("slot", add(mul(slot, c(32)), lane()), gload("x", i64(add(mul(t, c(32)), lane())))));
  produce.push_back(call(IntrinsicId::MbarrierArrive, {bar("full", slot)}));
  std::vector<Stmt> consume{
      call(IntrinsicId::MbarrierTryWait,
           {bar("full", slot), flaw == Flaw::WrongParity ? bin(BinOp::BitXor, phase, u(1)) : phase})};
  Stmt read = kir::assign(kir::Reg{"sum"}, add(reg("sum", F32), sload("slot", add(mul(slot, c(32)), lane()))));
  Stmt release = call(IntrinsicId::MbarrierArrive, {bar("empty", slot)});
  if (flaw == Flaw::ReleaseBeforeRead) {
    consume.push_back(release);
    consume.push_back(read);
  } else {
    consume.push_back(read);
    consume.push_back(release);
  }
  std::vector<Stmt> body{
      kir::if_then(eq(tid(), c(0)), {call(IntrinsicId::MbarrierInit, {bar("full", c(0))}, {32}),
                                     call(IntrinsicId::MbarrierInit, {bar("full", c(1))}, {32}),
                                     call(IntrinsicId::MbarrierInit, {bar("empty", c(0))}, {64}),
                                     call(IntrinsicId::MbarrierInit, {bar("empty", c(1))}, {64})}),
      kir::barrier(),
      kir::if_then(eq(warp(), c(0)), {kir::for_loop("t", I32, c(0), t_end, produce)},
                   {kir::decl("sum", F32, kir::cf(0)), kir::for_loop("t", I32, c(0), t_end, consume),
                    gstore("y", i64(add(mul(add(warp(), c(-1)), c(32)), lane())), reg("sum", F32))}),
  };
  return program({buffer("x", In, F32, {"N", "32"}), buffer("y", Out, F32, {"64"})}, 96, kir::ci(1, I64), body,
                 {shared("slot", F32, 64), shared("full", I64, 2, 8), shared("empty", I64, 2, 8)});
}

// Two warps take turns through named barriers: warp w waits on barrier 1 + w for its turn,
// appends w to the log (lane 0, a shared counter) and passes the turn with bar.arrive on the
// other's barrier; warp 1 first passes warp 0 its first turn. `turns` turns each.
kir::Program turns(int turns, bool pass) {
  const Expr w = warp();
  std::vector<Stmt> mine{sstore("log", sload("count", c(0), I32), w),
                         sstore("count", c(0), add(sload("count", c(0), I32), c(1)))};
  auto turn = [&](int id, int next) {
    std::vector<Stmt> s{kir::intrinsic(IntrinsicId::BarSync, {}, {c(id)}, {64}), kir::if_then(eq(lane(), c(0)), mine)};
    if (pass) s.push_back(kir::intrinsic(IntrinsicId::BarArrive, {}, {c(next)}, {64}));
    return s;
  };
  std::vector<Stmt> body{
      kir::if_then(eq(tid(), c(0)), {sstore("count", c(0), c(0))}),
      kir::barrier(),
      kir::if_then(eq(warp(), c(0)), {kir::for_loop("k", I32, c(0), c(turns), turn(1, 2))},
                   {kir::intrinsic(IntrinsicId::BarArrive, {}, {c(1)}, {64}),
                    kir::for_loop("k", I32, c(0), c(turns), turn(2, 1))}),
      kir::barrier(),
      kir::if_then(lt(tid(), c(2 * turns)), {gstore("y", i64(tid()), kir::cast(sload("log", tid(), I32), F32))}),
  };
  return program({buffer("y", Out, F32, {"16"})}, 64, kir::ci(1, I64), body,
                 {shared("log", I32, 16), shared("count", I32, 1)});
}

// Two warpgroups take turns in one loop, as ping-pong does: warpgroup g waits on barrier 2 + g
// (256 threads: its own and the other's arrival), appends g to the log and passes the turn on
// barrier 3 - g; warpgroup 1 gives warpgroup 0 the first turn, warpgroup 0 takes the last
// arrival after the loop. The interpreter runs the loop a warpgroup at a time, apart.
kir::Program ping_pong(int turns) {
  const Expr wg = bin(BinOp::Div, warp(), c(4));
  std::vector<Stmt> turn{
      kir::intrinsic(IntrinsicId::BarSync, {}, {add(c(2), wg)}, {256}),
      kir::if_then(eq(tid(), mul(wg, c(128))), {sstore("log", sload("count", c(0), I32), wg),
                                                sstore("count", c(0), add(sload("count", c(0), I32), c(1)))}),
      kir::intrinsic(IntrinsicId::BarArrive, {}, {bin(BinOp::Sub, c(3), wg)}, {256})};
  std::vector<Stmt> body{
      kir::if_then(eq(tid(), c(0)), {sstore("count", c(0), c(0))}),
      kir::barrier(),
      kir::if_then(eq(wg, c(1)), {kir::intrinsic(IntrinsicId::BarArrive, {}, {c(2)}, {256})}),
      kir::for_loop("k", I32, c(0), c(turns), turn),
      kir::if_then(eq(wg, c(0)), {kir::intrinsic(IntrinsicId::BarSync, {}, {c(2)}, {256})}),
      kir::barrier(),
      kir::if_then(lt(tid(), c(2 * turns)), {gstore("y", i64(tid()), kir::cast(sload("log", tid(), I32), F32))}),
  };
  return program({buffer("y", Out, F32, {"16"})}, 256, kir::ci(1, I64), body,
                 {shared("log", I32, 16), shared("count", I32, 1)});
}

// Warpgroup 0 of three gives registers back (setmaxnreg.dec to `down`), the others take
// `up` each; the taking side runs first and must wait for the giving one.
kir::Program budgets(int down, int up) {
  Expr wg = bin(BinOp::Div, tid(), c(128));
  std::vector<Stmt> body{
      kir::if_then(lt(c(0), wg), {kir::intrinsic(IntrinsicId::SetmaxnregInc, {}, {}, {up})},
                   {kir::intrinsic(IntrinsicId::SetmaxnregDec, {}, {}, {down})}),
      gstore("y", i64(tid()), kir::cast(wg, F32)),
  };
  return program({buffer("y", Out, F32, {"384"})}, 384, kir::ci(1, I64), body);
}

}  // namespace

TEST_CASE("simt roles: a producer warp and two consumer warps over a ring of full and empty mbarriers") {
  const int tiles = 5;  // odd: the ring wraps, and ends half-way through a second parity
  std::vector<double> x = values(static_cast<size_t>(tiles) * 32, 21);
  TensorMap io{{"x", tensor(DType::F32, {tiles, 32}, x)}};
  run_simt(ring(Flaw::None), {{"N", tiles}}, io);
  for (int lane = 0; lane < 32; ++lane) {
    double want = 0;
    for (int t = 0; t < tiles; ++t) want += x[static_cast<size_t>(t * 32 + lane)];
    CHECK(io.at("y").data[static_cast<size_t>(lane)] == want);
    CHECK(io.at("y").data[static_cast<size_t>(32 + lane)] == want);
  }
}

TEST_CASE("simt roles: a consumer releasing its slot before reading it races with the producer") {
  TensorMap io{{"x", tensor(DType::F32, {5, 32}, values(160, 22))}};
  std::string err = simt_error(ring(Flaw::ReleaseBeforeRead), {{"N", 5}}, io);
  CHECK(contains(err, "shared-memory race"));
  CHECK(contains(err, "slot["));
  CHECK(contains(err, "overwritten after warp"));
}

TEST_CASE("simt roles: a wait on the wrong phase, or a producer that never waits, is a deadlock naming each wait") {
  TensorMap io{{"x", tensor(DType::F32, {5, 32}, values(160, 23))}};
  std::string err = simt_error(ring(Flaw::WrongParity), {{"N", 5}}, io);
  CHECK(contains(err, "deadlock, no warp can go on"));
  CHECK(contains(err, "threads 32-95: mbarrier wait never returns"));  // each wait says whose it is
  CHECK(contains(err, "threads 0-31: mbarrier wait never returns"));
  CHECK(contains(err, "mbarrier at shared full["));
  CHECK(contains(err, "mbarrier at shared empty["));
  CHECK(contains(err, "block 0"));
  // Overrunning the ring: the full mbarrier's phases run ahead of the consumers' waits.
  CHECK(contains(simt_error(ring(Flaw::NoProducerWait), {{"N", 5}}, io), "mbarrier wait never returns"));
}

TEST_CASE("simt roles: named barriers pass a turn between two warps") {
  TensorMap io;
  run_simt(turns(4, true), {{"N", 1}}, io);
  for (int k = 0; k < 8; ++k) CHECK(io.at("y").data[static_cast<size_t>(k)] == k % 2);
  std::string err = simt_error(turns(4, false), {{"N", 1}}, {});
  CHECK(contains(err, "barrier 2 never completes: 32 of its 64 threads arrive"));
}

TEST_CASE("simt roles: two warpgroups take turns in one loop at named barriers named by their index") {
  TensorMap io;
  run_simt(ping_pong(5), {{"N", 1}}, io);
  for (int k = 0; k < 10; ++k) CHECK(io.at("y").data[static_cast<size_t>(k)] == k % 2);
}

TEST_CASE("simt roles: setmaxnreg moves registers between warpgroups, waiting for them") {
  TensorMap io;
  run_simt(budgets(24, 240), {{"N", 1}}, io);  // 384 threads start at 168: 18,432 freed, 18,432 taken
  for (int t = 0; t < 384; ++t) CHECK(io.at("y").data[static_cast<size_t>(t)] == t / 128);
  std::string err = simt_error(budgets(24, 248), {{"N", 1}}, {});
  CHECK(contains(err, "setmaxnreg_inc 248 of warpgroup 2 waits for 10240 registers"));
  // Only what a setmaxnreg.dec released is free: the rest of the register file (1,024) is not.
  CHECK(contains(simt_error(budgets(32, 240), {{"N", 1}}, {}),
                 "setmaxnreg_inc 240 of warpgroup 2 waits for 9216 registers, 8192 of them are free"));
  CHECK(contains(simt_error(budgets(200, 240), {{"N", 1}}, {}), "is above the warpgroup's 168"));
  CHECK(contains(simt_error(budgets(24, 250), {{"N", 1}}, {}), "a multiple of 8 in [24, 256]"));
}

TEST_CASE("specialize_warps: the producers' slice, and the slices that cannot run apart") {
  // Setup: t0 from the block index, per from the thread's index. The rest: a loop whose
  // thread-64 statement (the producers' first thread) stores t0 + k; the consumers' store.
  auto kernel = [](Expr producer_value) {
    kir::Program p =
        program({buffer("y", Out, F32, {"64"})}, 64, kir::ci(1, I64),
                {kir::decl("t0", I32, kir::cast(kir::special(Special::BlockIdx), I32)), kir::decl("per", I32, tid()),
                 kir::for_loop(
                     "k", I32, c(0), c(4),
                     {kir::decl("x", I32, add(reg("t0", I32), reg("k", I32))),
                      kir::if_then(eq(tid(), c(64)), {gstore("y", i64(reg("k", I32)), kir::cast(producer_value, F32))}),
                      gstore("y", i64(add(tid(), c(0))), kir::cf(1))})});
    return p.kernels[0];
  };
  kir::Kernel k = kernel(reg("x", I32));
  REQUIRE_FALSE(lower::specialize_warps(k, 2, {.consumers = 64, .producers = 32}));
  CHECK(k.block_threads == 96);
  REQUIRE(k.body.size() == 3);
  const Stmt& split = k.body[2];
  REQUIRE(split.kind == Stmt::Kind::If);
  // The producers keep the loop, x and the thread-64 store; not the consumers' store.
  std::vector<Stmt> producers = split.orelse;
  REQUIRE(producers.size() == 2);  // the comment, the loop
  REQUIRE(producers[1].kind == Stmt::Kind::For);
  CHECK(producers[1].body.size() == 2);
  kir::Kernel per_thread = kernel(reg("per", I32));
  CHECK(lower::specialize_warps(per_thread, 2, {.consumers = 64, .producers = 32}).value_or("") ==
        "the copies read register per, which differs from thread to thread");
  kir::Kernel loads = kernel(kir::cast(gload("y", kir::ci(0, I64)), I32));
  CHECK(lower::specialize_warps(loads, 2, {.consumers = 64, .producers = 32}).value_or("").find("global memory") ==
        std::string::npos);  // a load inside the copies themselves is theirs; only their control is checked
  // A branch on a per-thread value whose two sides issue the same copies (a masked and an
  // unmasked block) splits: the producers take one side, whatever their own value.
  kir::Kernel both = kernel(reg("x", I32));
  Stmt issue = both.body[2].body[1];
  both.body[2].body[1] = kir::if_then(eq(reg("per", I32), c(0)), {issue}, {issue});
  REQUIRE_FALSE(lower::specialize_warps(both, 2, {.consumers = 64, .producers = 32}));
  kir::Kernel none = kernel(reg("x", I32));
  none.body[2].body[1].args[0] = eq(tid(), c(0));  // thread 0 is a consumer: nothing to split off
  CHECK(lower::specialize_warps(none, 2, {.consumers = 64, .producers = 32}).value_or("") ==
        "no statement issues the ring's copies from the producers' thread");
}
