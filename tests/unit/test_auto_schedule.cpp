// The auto-scheduler: every stdlib and example op's auto-schedule at ragged sizes, lowered and
// interpreted against the float64 reference on sm_90a (ordinary inputs and one hostile kind an op,
// in turn) and sm_80 (ordinary);
// the time a decision takes (printed); what the cost model must order; its constants' parser.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "autosched/auto_schedule.hpp"
#include "autosched/op_class.hpp"
#include "hostile_matrix.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/launch_expr.hpp"
#include "ir/print_kernel.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/law_memo.hpp"
#include "lower/passes.hpp"
#include "schedule_matrix.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

// The interpreter's run of `low` at `sizes` on ordinary inputs, or inputs of `kind`: why outputs
// differ from the reference ("" when none does; skipped when the op rejects the sizes).
std::string interpreted_failures(const CheckedProgram& program, const CheckedOp& op, const kir::Program& kernels,
                                 const SizeBindings& sizes, std::optional<HostileKind> kind) {
  TensorMap inputs = kind ? hostile_inputs(op, sizes, 7, *kind) : random_inputs(op, sizes, 7);
  TensorMap ref;
  try {
    ref = evaluate_reference(program, op, sizes, inputs);
  } catch (const std::exception&) {
    return "";  // sizes the op rejects (H not a multiple of KH)
  }
  if (kind && !test::reference_meaningful(ref, *kind)) return "";
  TensorMap buffers = inputs;
  SimtOptions so;
  so.shuffle_blocks = true;
  so.seed = 3;
  try {
    run_simt(kernels, sizes, buffers, so);
  } catch (const std::exception& e) {
    return std::string("interpreter: ") + e.what();
  }
  return test::output_failures(op, buffers, ref, kind);
}

// The terms of `sum` over one f32 field, as the prover reads a monoid.
algebra::MonoidTerms sum_terms() {
  algebra::MonoidTerms sum;
  sum.name = "sum";
  sum.fields = {"x"};
  sum.identity = {algebra::Term::constant(algebra::Rational::of(0))};
  sum.combine = {algebra::Term::make(algebra::TermOp::Add, {algebra::Term::var("a.x"), algebra::Term::var("b.x")})};
  return sum;
}

}  // namespace

TEST_CASE("auto-schedule: every stdlib and example op at ragged sizes, interpreted against the reference") {
  // (and its kernels specialized to the sizes' class: verified, and interpreted to the same outputs)
  constexpr double kMaxWork = 2e7;
  std::vector<std::string> skipped;
  int runs = 0, refused = 0;
  size_t ops = 0;
  double slowest = 0;
  std::string slowest_op;
  std::map<std::string, int> tiers;
  for (const char* target_name : {"sm_90a", "sm_80"}) {
    const TargetInfo& target = *find_target(target_name);
    for (const std::string& file : test::program_files(EMMY_SOURCE_DIR)) {
      auto l = test::check_file(file);
      REQUIRE(!l->diags->has_errors());
      for (const CheckedOp* op : test::main_ops(*l->program)) {
        const std::string name = op->decl->name.name;
        // Ragged everywhere on sm_80; on sm_90a sizes whose rows TMA can copy (multiples of 8
        // elements), none a multiple of a tile.
        const SizeBindings sizes = target.tma ? test::cycled_sizes(*op, {2, 3, 24, 40, 16, 56, 8, 48})
                                              : test::cycled_sizes(*op, {2, 3, 13, 17, 11, 9, 7, 5});
        CAPTURE(file);
        CAPTURE(name);
        CAPTURE(target_name);
        CAPTURE(test::shape_text(sizes));
        autosched::AutoSchedule choice = autosched::auto_schedule(*l->program, *op, target, &sizes, nullptr);
        CAPTURE(autosched::explain(choice));
        REQUIRE_FALSE(choice.ranked.empty());
        CHECK(choice.knobs == choice.ranked.front().knobs);
        CHECK(std::is_sorted(choice.ranked.begin(), choice.ranked.end(),
                             [](const autosched::Ranked& a, const autosched::Ranked& b) { return a.us < b.us; }));
        if (choice.seconds > slowest) {
          slowest = choice.seconds;
          slowest_op = fmt::format("{} on {}", name, target_name);
        }
        lower::Lowered low = lower::lower_op(*l->program, *op, {nullptr, "", "", choice.knobs}, target);
        CHECK(low.kernels.warnings.empty());
        CHECK_FALSE(kir::check_limits(low.kernels, sizes));
        std::vector<std::string> problems = verify_program(low.kernels);
        CHECK_MESSAGE(problems.empty(), fmt::format("{}", fmt::join(problems, "\n")));
        // What a run at these sizes launches: the kernels specialized to their size class.
        const kir::Program specialized = lower::specialize_sizes(low.kernels, sizes);
        problems = verify_program(specialized);
        CHECK_MESSAGE(problems.empty(), fmt::format("specialized: {}", fmt::join(problems, "\n")));
        for (const lower::KernelPlan& p : low.plans) ++tiers[lower::tier_name(p.tier)];
        // Sizes at which a divisor computed from them is 0 (H < KH of the GQA ops: G = H / KH):
        // the launchers refuse them (zero_size_divisor) where the reference evaluator does (E069).
        if (std::optional<std::string> divisor = kir::zero_size_divisor(low.kernels, sizes)) {
          std::string code;
          try {
            evaluate_reference(*l->program, *op, sizes, random_inputs(*op, sizes, 7));
          } catch (const ReferenceRangeError& e) {
            code = e.code;
          }
          CHECK_MESSAGE(code == "E069", *divisor);
          ++refused;
          continue;
        }
        // The interpreter runs a thread at a time: past kMaxWork element operations (a fused op
        // that recomputes its projections per output element) the run is left to the GPU tests.
        double work = 0;
        for (const autosched::KernelCost& k : autosched::estimate_cost(low, sizes, target).kernels)
          work += k.flops > 0 ? k.flops / 2 : k.work;
        if (work > kMaxWork) {
          skipped.push_back(fmt::format("{} on {} ({:.2g} operations)", name, target_name, work));
          continue;
        }
        // Ordinary inputs on both targets; on sm_90a also one hostile kind an op, in turn (every
        // kind over the ops; the full product is the GPU's, tests/gpu/).
        std::vector<std::optional<HostileKind>> kinds{std::nullopt};
        if (target.wgmma) kinds.push_back(test::kMatrixHostileKinds[ops++ % std::size(test::kMatrixHostileKinds)]);
        for (const std::optional<HostileKind>& kind : kinds) {
          CAPTURE((kind ? hostile_kind_name(*kind) : "ordinary"));
          const std::string failures = interpreted_failures(*l->program, *op, low.kernels, sizes, kind);
          // The specialized kernels compute what the generic ones do, bit for bit: the same verdict.
          if (!kind) CHECK(interpreted_failures(*l->program, *op, specialized, sizes, kind) == failures);
          if (kind && test::known_divergence(name, choice.knobs, *kind))
            CHECK_MESSAGE(!failures.empty(), "fixed: " << name);
          else if (!kind && test::known_rounding(name, choice.knobs))
            MESSAGE(name << ": " << test::known_rounding(name, choice.knobs)
                         << (failures.empty() ? " (within bound here)" : ""));
          else
            CHECK_MESSAGE(failures.empty(), failures);
          ++runs;
        }
      }
    }
  }
  std::vector<std::string> counts;
  for (const auto& [tier, n] : tiers) counts.push_back(fmt::format("{} {}", n, tier));
  MESSAGE(
      fmt::format("{} interpreted runs; {} refused (a divisor of the sizes 0); kernels by tier: {}; slowest decision "
                  "{:.0f} ms ({}); not interpreted (too much work for it): {}",
                  runs, refused, fmt::join(counts, ", "), slowest * 1e3, slowest_op, fmt::join(skipped, ", ")));
  CHECK(refused > 0);                                      // the GQA ops at H < KH
  CHECK(skipped.size() * 10 < static_cast<size_t>(runs));  // a few, not most
  CHECK(tiers["tensor-core fold"] > 0);
  CHECK(tiers["tensor-core contraction"] > 0);
  CHECK(tiers["cooperative rows"] > 0);
}

TEST_CASE("auto-schedule: the tensor cores for products and attention, cooperative rows for row ops") {
  const TargetInfo& sm90a = *find_target("sm_90a");
  auto nn = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  auto la = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  REQUIRE(!nn->diags->has_errors());
  REQUIRE(!la->diags->has_errors());
  struct Case {
    const CheckedProgram* program;
    const char* op;
    SizeBindings sizes;
    const char* expect;  // in the chosen knobs
  };
  const Case cases[] = {
      {la->program.get(), "matmul", {{"M", 4096}, {"N", 4096}, {"K", 4096}}, "TILE=a:wgmma_"},
      {la->program.get(), "matmul", {{"M", 1000}, {"N", 777}, {"K", 1023}}, "TILE=a:wgmma_"},
      {nn->program.get(), "sdpa", {{"B", 1}, {"H", 8}, {"S", 4096}, {"T", 4096}, {"D", 64}, {"E", 64}}, "/k4"},
      {nn->program.get(), "sdpa", {{"B", 2}, {"H", 16}, {"S", 2048}, {"T", 2048}, {"D", 128}, {"E", 128}}, "/k8"},
      {nn->program.get(), "sdpa", {{"B", 2}, {"H", 16}, {"S", 2048}, {"T", 2048}, {"D", 256}, {"E", 256}}, "/k16"},
      {nn->program.get(), "softmax", {{"N", 4097}, {"C", 1000}}, "COOP=t"},
      {nn->program.get(), "layernorm", {{"N", 32768}, {"C", 8192}}, "COOP=t"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.op);
    CAPTURE(test::shape_text(c.sizes));
    const CheckedOp& op = c.program->ops.at(c.op);
    autosched::AutoSchedule choice = autosched::auto_schedule(*c.program, op, sm90a, &c.sizes, nullptr);
    CAPTURE(autosched::explain(choice));
    CHECK(choice.knobs.find(c.expect) != std::string::npos);
    // The naive kernel is predicted far slower than the choice.
    lower::Lowered naive = lower::lower_op(*c.program, op, {nullptr, "", "PLACE=cut,TILE=a:scalar"}, sm90a);
    CHECK(autosched::estimate_cost(naive, c.sizes, sm90a).us > 3 * choice.predicted_us);
  }
}

TEST_CASE("cost model: more work takes longer; a run at nominal sizes says so") {
  const TargetInfo& sm90a = *find_target("sm_90a");
  auto la = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  REQUIRE(!la->diags->has_errors());
  const CheckedOp& op = la->program->ops.at("matmul");
  lower::Lowered low = lower::lower_op(*la->program, op,
                                       {nullptr, "",
                                        "TILE=a:wgmma_m64n256k16_f16/w8x1/k4,"
                                        "STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1"},
                                       sm90a);
  double last = 0;
  for (int64_t n : {512, 1024, 2048, 4096, 8192}) {
    const double us = autosched::estimate_cost(low, {{"M", n}, {"N", n}, {"K", n}}, sm90a).us;
    CHECK(us > last);
    last = us;
  }
  autosched::AutoSchedule nominal = autosched::auto_schedule(*la->program, op, sm90a, nullptr, nullptr);
  CHECK(nominal.nominal);
  CHECK(nominal.at.at("M") == autosched::kNominalSize);
  CHECK(autosched::explain(nominal).find("every size taken as 1024") != std::string::npos);
}

TEST_CASE("auto-schedule: what the H200 taught it (tests/bench/RESULTS.md, Step 11 runs 2-5)") {
  const TargetInfo& sm90a = *find_target("sm_90a");
  const TargetInfo& sm90 = *find_target("sm_90");
  auto nn = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  REQUIRE(!nn->diags->has_errors());
  const SizeBindings hd128{{"B", 4}, {"H", 16}, {"S", 4096}, {"T", 4096}, {"D", 128}, {"E", 128}};
  // Head dim 128: four consumer warpgroups' accumulators would spill (ptxas: 460 bytes), so the
  // tile is two warpgroups with every value column in one CTA (the keys folded once).
  autosched::AutoSchedule sdpa =
      autosched::auto_schedule(*nn->program, nn->program->ops.at("sdpa"), sm90a, &hd128, nullptr);
  CAPTURE(autosched::explain(sdpa, 30));
  CHECK(sdpa.knobs.find("TILE@e=f128") != std::string::npos);
  CHECK(sdpa.knobs.find("/w16x1/") == std::string::npos);
  CHECK(autosched::explain(sdpa, 30).find("would spill") != std::string::npos);
  // Causal folds are not persistent (740 us against 477 on the H200).
  SizeBindings causal_sizes = hd128;
  causal_sizes.erase("T");
  autosched::AutoSchedule causal =
      autosched::auto_schedule(*nn->program, nn->program->ops.at("sdpa_causal"), sm90a, &causal_sizes, nullptr);
  CAPTURE(autosched::explain(causal, 30));
  CHECK(causal.knobs.find("TILE@e=f128") != std::string::npos);
  for (const autosched::Ranked& r : causal.ranked) CHECK(r.knobs.find("PERSIST=1") == std::string::npos);
  // Layernorm's fused mean and variance become Welford's pass, whose divisions ran 2.8x slower.
  const SizeBindings rows{{"N", 32768}, {"C", 8192}};
  autosched::AutoSchedule ln =
      autosched::auto_schedule(*nn->program, nn->program->ops.at("layernorm"), sm90, &rows, nullptr);
  CAPTURE(autosched::explain(ln, 30));
  CHECK(ln.knobs.find("PLACE=fuse") == std::string::npos);
}

TEST_CASE("auto-schedule: a tie in predicted time goes to the least compute (RESULTS.md, the row choices, H100)") {
  auto nn = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  REQUIRE(!nn->diags->has_errors());
  // rmsnorm at (32768, 8192): the row kept in registers (r8) and in shared memory (c8) move the
  // same bytes at the same predicted time; r8, with no shared-memory re-read, ran 362 us to 376.
  const SizeBindings rows{{"N", 32768}, {"C", 8192}};
  autosched::AutoSchedule rms =
      autosched::auto_schedule(*nn->program, nn->program->ops.at("rmsnorm"), *find_target("sm_90a"), &rows, nullptr);
  CAPTURE(autosched::explain(rms, 30));
  CHECK(rms.knobs.find("COOP=t128/v8/r8") != std::string::npos);
  int ties = 0;
  for (size_t i = 1; i < rms.ranked.size(); ++i) {
    const autosched::Ranked &a = rms.ranked[i - 1], &b = rms.ranked[i];
    CHECK(a.us <= b.us);
    if (a.us == b.us) {
      ++ties;
      CHECK(a.compute_us <= b.compute_us);
    }
  }
  CHECK(ties > 0);
}

TEST_CASE("auto-schedule: the derived attention backward at head dim 128 (RESULTS.md, Step 12, H100)") {
  const TargetInfo& sm90a = *find_target("sm_90a");
  auto p = test::check_source("import std.nn;\nop bwd = grad(sdpa) saving o, m, l;\n");
  REQUIRE(!p->diags->has_errors());
  const SizeBindings hd128{{"B", 4}, {"H", 16}, {"S", 4096}, {"T", 4096}, {"D", 128}, {"E", 128}};
  autosched::AutoSchedule bwd =
      autosched::auto_schedule(*p->program, p->program->ops.at("bwd"), sm90a, &hd128, nullptr);
  CAPTURE(autosched::explain(bwd, 30));
  // dk's and dv's value columns both in one pass over the queries (12.8 ms against 31.5 ms for
  // two passes of 64), at 32-key blocks: at 64 the accumulators spill (ptxas: 532 bytes).
  CHECK(bwd.knobs.find("TILE@d=f128") != std::string::npos);
  CHECK(bwd.knobs.find("TILE@e=f128") != std::string::npos);
  CHECK(bwd.knobs.find("/f1x4/") != std::string::npos);
  // dl = rowsum(dO * O) / l on cooperative rows: a thread a row reads a sector an element (1.8 ms).
  CHECK(bwd.knobs.find("COOP=t") != std::string::npos);
  // sm_80: every tile's three-stage ring overflows shared memory at head dim 128; two stages take
  // the tensor cores (before, the rows: a cut of ds and 2 s predicted).
  autosched::AutoSchedule a100 =
      autosched::auto_schedule(*p->program, p->program->ops.at("bwd"), *find_target("sm_80"), &hd128, nullptr);
  CAPTURE(autosched::explain(a100, 30));
  CHECK(a100.knobs.find("TILE=a:mma_m16n8k16_f16") != std::string::npos);
  CHECK(a100.knobs.find("STAGE=d2/cp/ring") != std::string::npos);
}

// What a ranking reads of a lowering, kernel by kernel: its name, launch shape, buffers, the
// alignment-free bytes of its shared arrays, and the program's limits and warnings.
std::string ranked_view(const lower::Lowered& l) {
  std::string out;
  for (const kir::Kernel& k : l.kernels.kernels) {
    std::set<std::string> buffers;
    for (const kir::Param& p : k.params)
      if (p.kind == kir::Param::Kind::Buffer || p.kind == kir::Param::Kind::TensorMap)
        buffers.insert(p.kind == kir::Param::Kind::Buffer ? p.name : p.map_of);
    out += fmt::format("{} threads {} grid {} persistent {} cluster {} buffers {}\n", k.name, k.block_threads,
                       print_expr(k.grid_x), k.persistent, k.cluster, fmt::join(buffers, " "));
  }
  for (const kir::SizeLimit& limit : l.kernels.limits) out += fmt::format("limit {} <= {}\n", limit.size, limit.max);
  std::set<std::string> warnings;
  for (const Warning& w : l.kernels.warnings) warnings.insert(w.code + " " + w.text);
  return out + fmt::format("warnings {}\n", fmt::join(warnings, "; ")) + lower::print_plans(l.plans);
}

TEST_CASE("lowering: a ranking's kernel headers are what the whole kernels' would be, and cost the same; floors hold") {
  // Every tensor-core and row-cache candidate the auto-schedule ranks for every stdlib and example
  // op (nominal sizes; and sdpa and its backward at head dim 128), lowered with and without the
  // bodies headers leave out: the same kernels, launches, buffers, limits, warnings and plans, the
  // same shared bytes and predicted time.
  struct Program {
    std::unique_ptr<test::Run> run;
    std::vector<std::pair<const CheckedOp*, std::optional<SizeBindings>>> ops;
  };
  std::vector<Program> programs;
  for (const std::string& file : test::program_files(EMMY_SOURCE_DIR)) {
    Program p{test::check_file(file), {}};
    REQUIRE(!p.run->diags->has_errors());
    for (const CheckedOp* op : test::main_ops(*p.run->program)) p.ops.emplace_back(op, std::nullopt);
    programs.push_back(std::move(p));
  }
  const SizeBindings hd128{{"B", 1}, {"H", 16}, {"S", 4096}, {"T", 4096}, {"D", 128}, {"E", 128}};
  for (Program& p : programs)
    if (p.run->program->ops.count("sdpa")) p.ops.emplace_back(&p.run->program->ops.at("sdpa"), hd128);
  Program bwd{test::check_source("import std.nn;\nop bwd = grad(sdpa, q, k, v);\n"), {}};
  REQUIRE(!bwd.run->diags->has_errors());
  bwd.ops = {{&bwd.run->program->ops.at("bwd"), hd128}};
  programs.push_back(std::move(bwd));
  int compared = 0, floors = 0, moot = 0, row_caches = 0;
  for (const char* target_name : {"sm_90a", "sm_80"}) {
    const TargetInfo& target = *find_target(target_name);
    for (const Program& p : programs)
      for (const auto& [op, sizes] : p.ops) {
        autosched::AutoSchedule choice =
            autosched::auto_schedule(*p.run->program, *op, target, sizes ? &*sizes : nullptr, nullptr);
        // Each candidate the search left out by its floor: the floor never above its time.
        for (const std::string& knobs : choice.pruned) {
          CAPTURE(target_name);
          CAPTURE(op->decl->name.name);
          CAPTURE(knobs);
          lower::PipelineOptions plans_only;
          plans_only.verify_kernel = false;
          plans_only.bodies = lower::KernelBodies::None;
          const lower::Lowered none =
              lower::lower_op(*p.run->program, *op, {nullptr, "", knobs}, target, nullptr, plans_only);
          const lower::Lowered whole = lower::lower_op(*p.run->program, *op, {nullptr, "", knobs}, target);
          const double us = autosched::estimate_cost(whole, choice.at, target).us;
          CHECK(autosched::cost_floor(none, choice.at, target) <= us * (1 + 1e-9));
          ++floors;
          // A moot row cache left out: its time at least that of the same knobs without it.
          if (autosched::row_cache_moot(none) && knobs.find("COOP=") != std::string::npos) {
            const size_t coop = knobs.find("COOP=");
            const size_t cache = std::min(knobs.find("/c", coop), knobs.find("/r", coop));  // c<R> or r<R>
            if (cache == std::string::npos || cache > knobs.find(',', knobs.find("COOP="))) continue;
            const std::string twin =
                knobs.substr(0, cache) + knobs.substr(std::min(knobs.find(',', cache), knobs.size()));
            CAPTURE(twin);
            CHECK(us >= autosched::estimate_cost(lower::lower_op(*p.run->program, *op, {nullptr, "", twin}, target),
                                                 choice.at, target)
                            .us);
            ++moot;
          }
        }
        for (const autosched::Ranked& r : choice.ranked) {
          CAPTURE(target_name);
          CAPTURE(op->decl->name.name);
          CAPTURE(r.knobs);
          // Every candidate: the floor from its plans alone never above its predicted time, and its
          // kernels' buffers (from the loop kernels) as emission passes them.
          lower::PipelineOptions plans_only;
          plans_only.verify_kernel = false;
          plans_only.bodies = lower::KernelBodies::None;
          const lower::Lowered none =
              lower::lower_op(*p.run->program, *op, {nullptr, "", r.knobs}, target, nullptr, plans_only);
          CHECK(autosched::cost_floor(none, choice.at, target) <= r.us * (1 + 1e-9));
          ++floors;
          // Where headers leave something out: the tensor-core kernels' bodies, a row cache's.
          const bool tensor_cores =
              r.knobs.find("TILE=a:") != std::string::npos && r.knobs.find("TILE=a:scalar") == std::string::npos;
          const size_t coop = r.knobs.find("COOP=");
          const bool row_cache = coop != std::string::npos &&
                                 std::min(r.knobs.find("/c", coop), r.knobs.find("/r", coop)) < r.knobs.find(',', coop);
          if (!tensor_cores && !row_cache) continue;
          row_caches += row_cache ? 1 : 0;
          lower::PipelineOptions headers;
          headers.verify_kernel = false;
          headers.bodies = lower::KernelBodies::Headers;
          const lower::Lowered h =
              lower::lower_op(*p.run->program, *op, {nullptr, "", r.knobs}, target, nullptr, headers);
          const lower::Lowered whole = lower::lower_op(*p.run->program, *op, {nullptr, "", r.knobs}, target);
          CHECK(ranked_view(h) == ranked_view(whole));
          REQUIRE(h.kernels.kernels.size() == whole.kernels.kernels.size());
          for (size_t i = 0; i < h.kernels.kernels.size(); ++i) {
            const int64_t a = kir::shared_bytes(h.kernels.kernels[i]), b = kir::shared_bytes(whole.kernels.kernels[i]);
            CHECK(a == b);
          }
          CHECK(autosched::estimate_cost(h, choice.at, target).us ==
                doctest::Approx(autosched::estimate_cost(whole, choice.at, target).us).epsilon(1e-12));
          CHECK(autosched::estimate_cost(h, choice.at, target).us == doctest::Approx(r.us).epsilon(1e-12));
          ++compared;
        }
      }
  }
  MESSAGE(fmt::format("{} candidates compared ({} with a row cache), {} floors, {} moot row caches", compared,
                      row_caches, floors, moot));
  CHECK(compared - row_caches > 100);
  CHECK(row_caches > 10);
}

TEST_CASE("lowering: a law memo gives the prover's own reports; statements copy without children") {
  const algebra::MonoidTerms sum = sum_terms();
  const lower::LawMemo memo;
  const algebra::MonoidReport direct = algebra::check_laws(sum);
  for (int i = 0; i < 2; ++i) {
    const algebra::MonoidReport memoized = memo.check(sum);
    CHECK(memoized.associative.outcome == direct.associative.outcome);
    CHECK(memoized.commutative.outcome == direct.commutative.outcome);
    CHECK(memoized.identity.outcome == direct.identity.outcome);
  }
  kir::Stmt loop =
      kir::for_loop("i", kir::ScalarType::I32, kir::ci(0), kir::ci(8), {kir::comment("inner")}, kir::Unroll::Full);
  loop.step = 4;
  loop.orelse = {kir::comment("other")};
  const kir::Stmt head = kir::without_children(loop);
  CHECK(head.body.empty());
  CHECK(head.orelse.empty());
  kir::Stmt rebuilt = head;
  rebuilt.body = loop.body;
  rebuilt.orelse = loop.orelse;
  CHECK(print_stmt_line(rebuilt) == print_stmt_line(loop));
  CHECK(rebuilt.step == 4);
  CHECK(rebuilt.text == loop.text);
}

TEST_CASE("auto-schedule: what the pipeline table rules out is not lowered; too-deep rings refused before emission") {
  const TargetInfo& sm90a = *find_target("sm_90a");
  auto nn = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  REQUIRE(!nn->diags->has_errors());
  // Head dim 256: the 3-deep rings overflow shared memory for most tiles. A tile refused at a
  // depth never tries a row as deep (the persistent row is 3 deep too), and a one-warpgroup tile
  // never tries the rows whose warpgroups take turns (W050 otherwise).
  const SizeBindings hd256{{"B", 2}, {"H", 16}, {"S", 2048}, {"T", 2048}, {"D", 256}, {"E", 256}};
  autosched::AutoSchedule sdpa =
      autosched::auto_schedule(*nn->program, nn->program->ops.at("sdpa"), sm90a, &hd256, nullptr);
  CAPTURE(autosched::explain(sdpa, 40));
  CHECK(sdpa.knobs.find("STAGE=d2/tma/ring") != std::string::npos);
  CHECK(!sdpa.refused.empty());
  for (const std::string& r : sdpa.refused) {
    CAPTURE(r);
    CHECK(r.find("W050") == std::string::npos);
    CHECK(r.find("PERSIST=1") == std::string::npos);
    CHECK(r.find("for its staged tiles") != std::string::npos);  // refused before emission
  }
  // The same refusal from a plain lowering, with its help.
  try {
    lower::lower_op(*nn->program, nn->program->ops.at("sdpa"),
                    {nullptr, "", "PLACE=fuse,TILE=a:wgmma_m64n128k16_f16/w8x1/k16,STAGE=d3/tma/ring,WSPEC=p1"}, sm90a,
                    nullptr);
    FAIL("a 3-deep ring of 128 x 256 key and value tiles fits no block");
  } catch (const lower::SharedMemoryError& e) {
    CHECK(std::string(e.what()).find("needs at least") != std::string::npos);
    CHECK(std::string(e.what()).find(lower::kSharedMemoryHelp) != std::string::npos);
  }
}

TEST_CASE("lowering: a law memo started from proved reports answers with them") {
  const algebra::MonoidTerms sum = sum_terms();
  // A report the checker made (here a made-up one, to see that it is what the memo answers: a
  // seeded report is trusted, not proved again).
  algebra::MonoidReport given = algebra::check_laws(sum);
  given.commutative.outcome = algebra::Outcome::Unproved;
  const lower::LawMemo memo(algebra::LawMemo{{algebra::law_memo_key(sum), given}});
  CHECK(memo.check(sum).commutative.outcome == algebra::Outcome::Unproved);
  const lower::LawMemo seeded;
  seeded.seed(sum, given);
  CHECK(seeded.check(sum).commutative.outcome == algebra::Outcome::Unproved);
  CHECK(lower::LawMemo().check(sum).commutative.outcome == algebra::check_laws(sum).commutative.outcome);
}

TEST_CASE("cost model: the fitted constants' parser") {
  CHECK(autosched::parse_fitted(""));
  std::optional<autosched::Fitted> f = autosched::parse_fitted("cta_overhead_us=2.5,sync_us=0.1");
  REQUIRE(f);
  CHECK(f->cta_overhead_us == doctest::Approx(2.5));
  CHECK(f->sync_us == doctest::Approx(0.1));
  CHECK_FALSE(autosched::parse_fitted("nonsense=1"));
  CHECK_FALSE(autosched::parse_fitted("sync_us="));
  CHECK_FALSE(autosched::parse_fitted("sync_us=1x"));
}

}  // namespace emmy
