// The autotuner without a GPU: the search's rungs and budget on a fake clock, stored points,
// the space of real ops (enumeration, pruning), the interpreter as the correctness gate, the
// worker protocol against scripted workers (answers, hangs, crashes), durations.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "driver/tune.hpp"
#include "runtime/nvrtc.hpp"
#include "test_helpers.hpp"
#include "tune/build_ahead.hpp"
#include "tune/measure_gpu.hpp"
#include "tune/measure_in_turns.hpp"
#include "tune/measure_interp.hpp"
#include "tune/search.hpp"
#include "tune/space.hpp"

namespace emmy {
namespace {

// Candidates named by their knobs only (the search reads nothing else).
std::vector<tune::Candidate> named(int n) {
  std::vector<tune::Candidate> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)].knobs = fmt::format("c{:03}", i);
  return out;
}

// A measurer with a table of true times, noise that shrinks with the launches, and wrong
// outputs for some; each launch advances the fake clock by 1 ms, and a candidate slower than
// the cut-off stops after one.
class TableMeasurer : public tune::Measurer {
 public:
  TableMeasurer(std::map<std::string, double> times, std::set<std::string> wrong, tune::FakeClock& clock)
      : times_(std::move(times)), wrong_(std::move(wrong)), clock_(clock) {}
  tune::Measurement measure(const tune::Candidate& c, int reps, double cutoff_us) override {
    ++calls;
    if (cutoff_us > 0 && times_.at(c.knobs) > cutoff_us) {
      launches += 1;
      clock_.advance(0.001);
      return {false, times_.at(c.knobs), "cut off", 0, true};
    }
    launches += reps;
    clock_.advance(0.001 * reps);
    if (wrong_.count(c.knobs)) return {false, 0, "wrong output", 0};
    // Deterministic "noise": +-20% / reps, alternating by name.
    const double sign = (c.knobs.back() % 2) ? 1 : -1;
    return {true, times_.at(c.knobs) * (1 + sign * 0.2 / reps), "", 0.5};
  }
  std::string device() const override { return "table"; }
  int calls = 0, launches = 0;

 private:
  std::map<std::string, double> times_;
  std::set<std::string> wrong_;
  tune::FakeClock& clock_;
};

// An op of stdlib/nn.emmy and its space on sm_90 at `sizes`, pruned without NVRTC.
struct NnSpace {
  std::unique_ptr<test::Run> l;
  const CheckedOp* op = nullptr;
  tune::Space space;
};
NnSpace nn_space(const std::string& op_name, const SizeBindings& sizes) {
  NnSpace s{test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy"), nullptr, {}};
  REQUIRE(!s.l->diags->has_errors());
  s.op = &s.l->program->ops.at(op_name);
  const TargetInfo& target = *find_target("sm_90");
  s.space = tune::prune_space(*s.l->program, *s.op, target, sizes,
                              tune::enumerate_knobs(*s.l->program, *s.op, target, nullptr), nullptr, 2);
  return s;
}

std::map<std::string, double> linear_times(const std::vector<tune::Candidate>& cs) {
  std::map<std::string, double> t;
  for (size_t i = 0; i < cs.size(); ++i) t[cs[i].knobs] = 100.0 + static_cast<double>((i * 37) % cs.size());
  return t;
}

}  // namespace

TEST_CASE("tune: the rungs of successive halving, and one rung for a small space") {
  tune::SearchOptions o;
  o.exhaustive_below = 48;
  std::vector<tune::Rung> small = tune::plan_rungs(40, o);
  REQUIRE(small.size() == 1);
  CHECK(small[0].candidates == 40);
  CHECK(small[0].reps == 48);
  std::vector<tune::Rung> big = tune::plan_rungs(851, o);
  std::vector<int> sizes, reps;
  for (const tune::Rung& r : big) sizes.push_back(r.candidates), reps.push_back(r.reps);
  CHECK(sizes == std::vector<int>{851, 213, 54, 14, 4});
  CHECK(reps == std::vector<int>{3, 12, 48, 50, 50});
}

TEST_CASE("tune: the search finds the fastest correct candidate; a faster wrong one never wins") {
  std::vector<tune::Candidate> cs = named(300);
  std::map<std::string, double> times = linear_times(cs);
  times["c100"] = 10;  // the fastest, but wrong
  times["c201"] = 50;  // the fastest correct one
  tune::FakeClock clock;
  TableMeasurer m(times, {"c100", "c007"}, clock);
  tune::SearchOptions o;
  int progress_calls = 0;
  o.on_progress = [&](const tune::Progress& p) {
    ++progress_calls;
    CHECK(p.done <= p.total);
  };
  tune::SearchResult r = tune::search(cs, m, clock, o);
  REQUIRE(r.best() != nullptr);
  CHECK(r.best()->candidate->knobs == "c201");
  CHECK(r.best()->rung == r.rungs - 1);
  CHECK_FALSE(r.out_of_budget);
  CHECK(r.measured == m.calls);
  CHECK(progress_calls == m.calls);
  // Every candidate once in rung 0; 300 -> 75 -> 19 -> 5 -> 4 after (failed ones drop out).
  CHECK(m.calls == 300 + 75 + 19 + 5 + 4);
  // The failed ones rank last, with why.
  CHECK_FALSE(r.ranked.back().measurement.ok);
  CHECK(r.ranked.back().measurement.error == "wrong output");
  for (size_t i = 1; i < r.ranked.size(); ++i)
    if (r.ranked[i].measurement.ok && r.ranked[i - 1].measurement.ok && r.ranked[i].rung == r.ranked[i - 1].rung)
      CHECK(r.ranked[i - 1].measurement.time_us <= r.ranked[i].measurement.time_us);
}

TEST_CASE("tune: a cut-short sample is refined around its best: field distance, and the optimum found") {
  CHECK(tune::field_distance("TILE=a:m/w4x2/f4x8/k8,STAGE=d2/tma/ring", "TILE=a:m/w4x2/f4x8/k8,STAGE=d2/tma/ring") ==
        0);
  CHECK(tune::field_distance("TILE=a:m/w4x2/f4x8/k8,STAGE=d2/tma/ring", "TILE=a:m/w4x2/f4x8/k4,STAGE=d2/tma/ring") ==
        1);
  CHECK(tune::field_distance("TILE=a:m/w4x2/f4x8/k8,STAGE=d2/tma/ring", "TILE=a:m/w2x2/f4x8/k4,STAGE=d2/tma/ring") ==
        2);
  CHECK(tune::field_distance("STAGE=d2/tma/ring", "STAGE=d1/tma") == 1);  // d2 -> d1, the ring with it
  CHECK(tune::field_distance("STAGE=d2/tma/ring", "STAGE=") == 1);
  CHECK(tune::field_distance("COOP=t128/v8,FAST_EXP=1", "COOP=t128/v8") == 1);
  CHECK(tune::field_distance("PLACE@m=cut,COOP=t128", "PLACE=fuse,COOP=t128") == 2);
  // A 512-point grid whose time grows with the distance from one optimum, field by field.
  std::vector<tune::Candidate> cs;
  std::map<std::string, double> times;
  for (int w = 1; w <= 8; ++w)
    for (int f = 1; f <= 8; ++f)
      for (int k = 1; k <= 4; ++k)
        for (int d = 1; d <= 2; ++d) {
          tune::Candidate c;
          c.knobs = fmt::format("TILE=a:x/w{}/f{}/k{},STAGE=d{}/ring", w, f, k, d);
          times[c.knobs] = 100 + 10 * std::abs(w - 6) + 7 * std::abs(f - 3) + 5 * std::abs(k - 2) + 3 * (2 - d);
          cs.push_back(std::move(c));
        }
  const std::string optimum = "TILE=a:x/w6/f3/k2,STAGE=d2/ring";
  tune::FakeClock clock;
  TableMeasurer m(times, {}, clock);
  tune::SearchOptions o;
  o.budget_s = 0.4;  // a sample of 0.18 s = 60 of 512 candidates, then refinement to 0.24 s (20 more)
  o.sample_share = 0.45;
  o.first_rung_share = 0.6;
  std::vector<std::string> order;
  o.on_measured = [&](const tune::Candidate& c, const tune::Measurement&, int) { order.push_back(c.knobs); };
  tune::SearchResult r = tune::search(cs, m, clock, o);
  CHECK(r.refined == 20);
  CHECK(r.unmeasured == 512 - 60 - 20);
  REQUIRE(r.best() != nullptr);
  // Each refined point is a neighbour of a point measured before it; the walk reaches the optimum.
  for (size_t i = 60; i < 80; ++i) {
    bool near = false;
    for (size_t j = 0; j < i; ++j) near = near || tune::field_distance(order[i], order[j]) == 1;
    CHECK(near);
  }
  CHECK(std::find(order.begin(), order.begin() + 60, optimum) == order.begin() + 60);  // not in the sample
  CHECK(r.best()->candidate->knobs == optimum);
}

TEST_CASE("tune: a candidate far slower than the best so far is cut off after one launch and never ranks") {
  std::vector<tune::Candidate> cs = named(200);
  std::map<std::string, double> times = linear_times(cs);  // 100..299 us
  std::set<std::string> slow;
  for (int i = 0; i < 200; i += 10) {
    times[cs[static_cast<size_t>(i)].knobs] = 40000;  // the scalar tier beside tensor cores
    slow.insert(cs[static_cast<size_t>(i)].knobs);
  }
  times["c005"] = 900;  // 9x the best, under the floor: timed in full
  tune::FakeClock clock;
  TableMeasurer m(times, {}, clock);
  tune::SearchOptions o;
  CHECK(tune::cutoff_us(0, o) == 0);         // nothing measured yet: no cut-off
  CHECK(tune::cutoff_us(100, o) == 10000);   // 8 x 100 us, raised to the floor
  CHECK(tune::cutoff_us(5000, o) == 40000);  // 8 x 5 ms
  o.cutoff_factor = 0;
  CHECK(tune::cutoff_us(5000, o) == 0);  // off
  o.cutoff_factor = 8;
  std::map<std::string, tune::Measurement> seen;
  o.on_measured = [&](const tune::Candidate& c, const tune::Measurement& x, int) { seen[c.knobs] = x; };
  tune::SearchResult r = tune::search(cs, m, clock, o);
  REQUIRE(r.best() != nullptr);
  CHECK(r.best()->measurement.time_us < 120);
  // Each slow one measured after the first correct candidate stopped after one launch.
  int cut = 0;
  for (const std::string& k : slow) {
    REQUIRE(seen.count(k));
    if (seen[k].cut_off) {
      ++cut;
      CHECK_FALSE(seen[k].ok);
      CHECK(seen[k].time_us == 40000);
    }
  }
  CHECK(cut >= static_cast<int>(slow.size()) - 1);  // at most the very first measurement is timed in full
  CHECK(r.cut_off == cut);
  CHECK(seen["c005"].ok);
  CHECK_FALSE(seen["c005"].cut_off);
  for (const tune::Scored& s : r.ranked)
    if (s.measurement.ok && times[s.candidate->knobs] == 40000) CHECK(s.rung == 0);  // none of the slow ones survives
  // Launches: 3 a candidate in rung 0, save the cut-off ones (1 each).
  CHECK(m.launches == 3 * 200 - 2 * cut + 12 * 50 + 48 * 13 + 50 * 4);
}

TEST_CASE("tune: candidates the admit hook refuses (NVRTC alongside) are never measured and never rank") {
  std::vector<tune::Candidate> cs = named(100);
  cs[7].origin = "schedule x for sm_90";
  std::map<std::string, double> times = linear_times(cs);
  times["c013"] = 1;  // the fastest, but it spills
  tune::FakeClock clock;
  TableMeasurer m(times, {}, clock);
  tune::SearchOptions o;
  std::vector<std::string> asked, measured;
  o.admit = [&](const tune::Candidate& c) -> std::string {
    asked.push_back(c.knobs);
    return c.knobs == "c013" || c.knobs == "c050" ? "spills: 128 B" : "";
  };
  o.on_measured = [&](const tune::Candidate& c, const tune::Measurement&, int) { measured.push_back(c.knobs); };
  tune::SearchResult r = tune::search(cs, m, clock, o);
  CHECK(r.left_out == 2);
  REQUIRE(r.best() != nullptr);
  CHECK(r.best()->candidate->knobs != "c013");
  for (const tune::Scored& s : r.ranked) CHECK((s.candidate->knobs != "c013" && s.candidate->knobs != "c050"));
  CHECK(std::find(measured.begin(), measured.end(), "c013") == measured.end());
  // Asked once each, in the first rung's order (what BuildAhead builds in).
  const std::vector<size_t> order = tune::first_rung_order(cs, o.seed);
  REQUIRE(asked.size() == 100);
  CHECK(asked[0] == "c007");
  for (size_t i = 0; i < asked.size(); ++i) CHECK(asked[i] == cs[order[i]].knobs);
}

TEST_CASE("tune: the first rung measures the seeds, then the enumerated points fastest first by the cost model") {
  std::vector<tune::Candidate> cs = named(40);
  for (size_t i = 0; i < cs.size(); ++i) cs[i].predicted_us = 1000.0 - 10.0 * static_cast<double>(i / 2);  // pairs tie
  cs[30].origin = "auto-schedule";
  cs[3].origin = "schedule x for sm_90";
  for (uint64_t seed : {1u, 2u, 3u}) {
    const std::vector<size_t> order = tune::first_rung_order(cs, seed);
    REQUIRE(order.size() == cs.size());
    CHECK(order[0] == 3);  // the seeds in their given order, whatever their prediction
    CHECK(order[1] == 30);
    for (size_t i = 3; i < order.size(); ++i) CHECK(cs[order[i - 1]].predicted_us <= cs[order[i]].predicted_us);
    CHECK(std::set<size_t>(order.begin(), order.end()).size() == cs.size());
  }
  // A tie is broken by the seed: some seed puts the pair (38, 39) the other way round.
  bool flipped = false, kept = false;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    const std::vector<size_t> order = tune::first_rung_order(cs, seed);
    const bool before = std::find(order.begin(), order.end(), 38) < std::find(order.begin(), order.end(), 39);
    (before ? kept : flipped) = true;
  }
  CHECK(flipped);
  CHECK(kept);
}

TEST_CASE("tune: BuildAhead reaches the verdicts prune_by_ptxas reaches, built in order or on demand") {
  std::string why;
  if (!runtime::nvrtc_available(&why)) {
    MESSAGE("NVRTC is not available: " << why);
    return;
  }
  const NnSpace rmsnorm = nn_space("rmsnorm", {{"N", 64}, {"C", 256}});
  const tune::Space& all = rmsnorm.space;
  const TargetInfo& target = *find_target("sm_90");
  REQUIRE(all.candidates.size() > 8);
  tune::Space upfront = all;
  REQUIRE(tune::prune_by_ptxas(upfront, target, 2, &why, 0));  // no spill allowed: some are ruled out
  std::vector<tune::Candidate> cs = all.candidates;
  std::vector<size_t> order(cs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;  // last first
  std::set<std::string> refused;
  {
    tune::BuildAhead ahead(cs, target, 1, order, 0);
    CHECK(ahead.verdict(0).knobs == cs[0].knobs);  // the last in its order: built on this thread
    for (size_t i = 0; i < cs.size(); ++i)
      if (!ahead.verdict(i).kind.empty()) refused.insert(cs[i].knobs);
    CHECK(ahead.built() == static_cast<int>(cs.size()));
    CHECK(ahead.pruned().size() == refused.size());
  }
  std::set<std::string> refused_upfront;
  for (const tune::Pruned& p : upfront.pruned)
    if (p.kind == "spills" || p.kind == "registers" || p.kind == "NVRTC") refused_upfront.insert(p.knobs);
  CHECK(refused == refused_upfront);
  for (size_t i = 0; i < cs.size(); ++i) CHECK(cs[i].registers > 0);  // recorded by the build
  // Destroyed with builds queued: it returns (the queue is dropped).
  std::vector<tune::Candidate> more = all.candidates;
  { tune::BuildAhead early(more, target, 1, order); }
}

TEST_CASE("tune: the budget cuts the first rung short and stops the search; the best of the last rung wins") {
  std::vector<tune::Candidate> cs = named(300);
  cs[42].origin = "schedule x for sm_90";  // a hand-written block: measured first
  std::map<std::string, double> times = linear_times(cs);
  tune::FakeClock clock;
  TableMeasurer m(times, {}, clock);
  tune::SearchOptions o;
  o.budget_s = 0.5;  // the first rung may take 0.3 s: 3 launches = 3 ms a candidate, 100 of 300
  o.sample_share = o.first_rung_share = 0.6;  // no refinement (these names have no neighbours anyway)
  std::vector<std::string> order;
  o.on_measured = [&](const tune::Candidate& c, const tune::Measurement&, int) { order.push_back(c.knobs); };
  tune::SearchResult r = tune::search(cs, m, clock, o);
  REQUIRE(order.size() > 101);
  CHECK(order[0] == "c042");
  CHECK(order[1] != "c000");  // the rest shuffled
  const int first = 300 - r.unmeasured;
  CHECK(first >= 100);
  CHECK(first <= 102);
  CHECK(r.out_of_budget);
  CHECK(r.rungs == 2);
  // The second rung: the first's best 25 at 12 launches, until the budget ran out (about 0.2 s).
  CHECK(m.calls - first >= 16);
  CHECK(m.calls - first <= 18);
  REQUIRE(r.best() != nullptr);
  CHECK(r.best()->rung == 1);
  for (const tune::Scored& s : r.ranked)
    if (s.rung == 1) CHECK(r.best()->measurement.time_us <= s.measurement.time_us);
}

TEST_CASE("tune: stored points stand for their candidates; only the new ones are measured") {
  std::vector<tune::Candidate> cs = named(30);
  std::map<std::string, double> times = linear_times(cs);
  tune::FakeClock clock;
  TableMeasurer m(times, {}, clock);
  tune::SearchOptions o;
  o.known = [&](const tune::Candidate& c) -> std::optional<tune::Measurement> {
    if (c.knobs == "c029") return std::nullopt;
    return tune::Measurement{true, times.at(c.knobs), "", 0};
  };
  std::vector<std::string> recorded;
  o.on_measured = [&](const tune::Candidate& c, const tune::Measurement&, int reps) {
    recorded.push_back(c.knobs);
    CHECK(reps == 48);
  };
  tune::SearchResult r = tune::search(cs, m, clock, o);
  CHECK(r.measured == 1);
  CHECK(recorded == std::vector<std::string>{"c029"});
  REQUIRE(r.best() != nullptr);
  CHECK(r.best()->stored);
  // Everything stored: nothing measured at all.
  o.known = [&](const tune::Candidate& c) -> std::optional<tune::Measurement> {
    return tune::Measurement{true, times.at(c.knobs), "", 0};
  };
  TableMeasurer none(times, {}, clock);
  CHECK(tune::search(cs, none, clock, o).measured == 0);
  CHECK(none.calls == 0);
}

TEST_CASE("tune: the space of matmul on sm_90: the hand-written blocks first, tiers enumerated, pruned with reasons") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/linalg.emmy");
  REQUIRE(!l->diags->has_errors());
  const CheckedOp& op = l->program->ops.at("matmul");
  const TargetInfo& target = *find_target("sm_90");
  std::vector<tune::Enumerated> points = tune::enumerate_knobs(*l->program, op, target, nullptr);
  REQUIRE(points.size() > 500);
  CHECK(points[0].knobs == "TILE=a:mma_m16n8k16_f16/w4x2/f4x8/k8,STAGE=d2/tma/ring");
  CHECK(points[0].origin == "schedule matmul for sm_90");
  CHECK(points[1].origin == "schedule matmul for sm_90 as \"k4-d3\"");
  std::set<std::string> unique;
  bool wgmma = false, tma = false, coop = false;
  for (const tune::Enumerated& p : points) {
    CHECK(unique.insert(p.knobs).second);
    wgmma = wgmma || p.knobs.find("wgmma") != std::string::npos;
    tma = tma || p.knobs.find("/tma") != std::string::npos;
    coop = coop || p.knobs.find("COOP=") != std::string::npos;
  }
  CHECK_FALSE(wgmma);  // sm_90 has no wgmma
  // Without the blocks (--blocks reference): the tables alone; the default's knob list is one of them.
  const std::vector<tune::Enumerated> blocks = tune::block_knobs(*l->program, op, target);
  CHECK(blocks.size() == 8);
  std::vector<tune::Enumerated> bare = tune::enumerate_knobs(*l->program, op, target, nullptr, false);
  CHECK(bare.size() < points.size());
  for (const tune::Enumerated& p : bare) CHECK(p.origin == "enumerated");
  CHECK(std::any_of(bare.begin(), bare.end(), [&](const tune::Enumerated& p) { return p.knobs == blocks[0].knobs; }));
  CHECK(tma);
  CHECK(coop);
  // Prune a slice (every 8th point and the blocks) at a ragged shape.
  std::vector<tune::Enumerated> slice(points.begin(), points.begin() + 8);
  for (size_t i = 8; i < points.size(); i += 8) slice.push_back(points[i]);
  slice.push_back({"TILE=a:mma_m16n8k16_f16/w2x2/f2x8/k2,STAGE=d3/tma/ring", "enumerated"});  // k2: no TMA box
  tune::Space s = tune::prune_space(*l->program, op, target, {{"M", 300}, {"N", 200}, {"K", 333}}, slice, nullptr, 2);
  CHECK(s.enumerated == static_cast<int>(slice.size()));
  CHECK(s.candidates.size() + s.pruned.size() == slice.size());
  REQUIRE(s.candidates.size() > 20);
  CHECK(s.candidates[0].origin == "schedule matmul for sm_90");
  std::set<uint64_t> hashes;
  for (const tune::Candidate& c : s.candidates) {
    CHECK(hashes.insert(c.cuda_hash).second);
    CHECK(c.smem_bytes <= target.smem_per_block_bytes);
    CHECK(c.block_threads > 0);
    CHECK(c.cuda.find("__global__") != std::string::npos);
  }
  std::set<std::string> kinds;
  for (const tune::Pruned& p : s.pruned) {
    kinds.insert(p.kind);
    CHECK_FALSE(p.reason.empty());
  }
  CHECK(kinds == std::set<std::string>{"duplicate", "not honoured", "shared memory"});
  CHECK(s.pruned.back().knobs == slice.back().knobs);
  CHECK(s.pruned.back().kind == "not honoured");
  CHECK(s.pruned.back().reason.find("copied with cp.async") != std::string::npos);
}

// The hand-written block `origin` of `op` is in the enumerated space at `sizes`: appended after
// the enumerated points, it lowers to the same kernels as one of them (a duplicate).
void check_block_in_space(const std::string& file, const std::string& op_name, const std::string& block_label,
                          const SizeBindings& sizes, const std::string& family, const char* target_name = "sm_90") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/" + file);
  REQUIRE(!l->diags->has_errors());
  const CheckedOp& op = l->program->ops.at(op_name);
  const TargetInfo& target = *find_target(target_name);
  std::vector<tune::Enumerated> points;
  for (tune::Enumerated& p : tune::enumerate_knobs(*l->program, op, target, nullptr, false))
    if (p.knobs.find(family) != std::string::npos) points.push_back(std::move(p));
  std::optional<tune::Enumerated> block;
  for (tune::Enumerated& b : tune::block_knobs(*l->program, op, target))
    if (b.origin == fmt::format("schedule {} for {}{}", op_name, target_name, block_label)) block = b;
  REQUIRE_MESSAGE(block, op_name << block_label);
  points.push_back(*block);
  tune::Space s = tune::prune_space(*l->program, op, target, sizes, points, nullptr, 2);
  REQUIRE(!s.pruned.empty());
  const tune::Pruned& last = s.pruned.back();
  CHECK_MESSAGE(last.knobs == block->knobs,
                op_name << block_label << ": " << block->knobs << " is a candidate of its own");
  CHECK_MESSAGE(last.kind == "duplicate", op_name << block_label << ": " << last.kind << ": " << last.reason);
}

TEST_CASE("tune: the tensor-core families carry the operand cuts the auto-scheduler finds (an MLP's hidden layer)") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/examples/matmul_epilogue.emmy");
  REQUIRE(!l->diags->has_errors());
  const CheckedOp& op = l->program->ops.at("mlp");
  for (const char* name : {"sm_80", "sm_90a"}) {
    CAPTURE(name);
    const std::vector<tune::Enumerated> points = tune::enumerate_knobs(*l->program, op, *find_target(name), nullptr);
    // Fused, the hidden layer makes the second product a fold no tier takes: every tensor-core
    // candidate cuts the call's GELU, the product under it computed in that kernel.
    size_t tensor_cores = 0;
    for (const tune::Enumerated& p : points)
      if (p.origin == "enumerated" && p.knobs.find("TILE=a:") != std::string::npos &&
          p.knobs.find("TILE=a:scalar") == std::string::npos) {
        ++tensor_cores;
        CHECK(p.knobs.rfind("PLACE@matmul_bias_gelu1_c=cut,", 0) == 0);
      }
    CHECK(tensor_cores > 100);
  }
}

TEST_CASE("tune: the stdlib's hand-written schedules are points of the enumerated space") {
  // What --blocks reference relies on: the search can reach the hand-picked schedule.
  const SizeBindings rows{{"N", 32768}, {"C", 8192}};
  // (Their default for sm_90 is the auto-schedule, `auto;`: the former defaults are named.)
  for (const char* op : {"softmax", "layernorm", "rmsnorm"})
    for (const char* label : {" as \"t256\"", " as \"warp-row\"", " as \"t128\"", " as \"t512\"", " as \"t1024\""})
      check_block_in_space("nn.emmy", op, label, rows, "COOP=t");
  check_block_in_space("nn.emmy", "softmax", " as \"two-pass\"", rows, "COOP=t");
  check_block_in_space("nn.emmy", "sdpa", "", {{"B", 1}, {"H", 8}, {"S", 4096}, {"T", 4096}, {"D", 64}, {"E", 64}},
                       "w4x1/f2x8");
  check_block_in_space("nn.emmy", "sdpa", " as \"tc-hd128\"",
                       {{"B", 4}, {"H", 16}, {"S", 4096}, {"T", 4096}, {"D", 128}, {"E", 128}}, "w4x1/f2x4");
  check_block_in_space("linalg.emmy", "matmul", "", {{"M", 4096}, {"N", 4096}, {"K", 4096}}, "w4x2/f4x8");
  // Hopper's blocks (sm_90a): the warpgroups taking turns with producers, three consumer
  // warpgroups, 128 x 256 contraction tiles.
  const SizeBindings hd128{{"B", 4}, {"H", 16}, {"S", 4096}, {"T", 4096}, {"D", 128}, {"E", 128}};
  const SizeBindings hd64{{"B", 4}, {"H", 16}, {"S", 4096}, {"T", 4096}, {"D", 64}, {"E", 64}};
  check_block_in_space("nn.emmy", "sdpa", " as \"hd128-pingpong\"", hd128,
                       "n128k16_f16/w8x1/k8,TILE@e=f128,STAGE=d3/tma", "sm_90a");
  check_block_in_space("nn.emmy", "sdpa", " as \"hd64-w12\"", hd64, "n128k16_f16/w12x1/k4,TILE@e=f64,STAGE=d3/tma",
                       "sm_90a");
  check_block_in_space("nn.emmy", "sdpa_causal", "", hd64, "n128k16_f16/w8x1/k4,TILE@e=f64,STAGE=d3/tma", "sm_90a");
  check_block_in_space("linalg.emmy", "matmul", "", {{"M", 4096}, {"N", 4096}, {"K", 4096}},
                       "n256k16_f16/w8x1/k4,STAGE=d3/tma", "sm_90a");
  check_block_in_space("linalg.emmy", "matmul", " as \"n256-d4\"", {{"M", 4096}, {"N", 4096}, {"K", 4096}},
                       "n256k16_f16/w8x1/k4,STAGE=d4/tma", "sm_90a");
}

TEST_CASE("tune: Hopper's space has persistent CTAs where producers feed the ring, and a contraction's clusters") {
  for (const auto& [file, op_name] : {std::pair{"nn.emmy", "sdpa"}, std::pair{"linalg.emmy", "matmul"}}) {
    CAPTURE(op_name);
    auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/" + file);
    REQUIRE(!l->diags->has_errors());
    int persistent = 0, clusters = 0;
    for (const tune::Enumerated& p :
         tune::enumerate_knobs(*l->program, l->program->ops.at(op_name), *find_target("sm_90a"), nullptr, false)) {
      if (p.knobs.find("PERSIST=1") == std::string::npos) continue;
      ++persistent;
      CAPTURE(p.knobs);
      CHECK(p.knobs.find("WSPEC=p1") != std::string::npos);
      CHECK(p.knobs.find("/tma/") != std::string::npos);
      // Clusters on the contraction alone, where B's tile splits in two runs of 64-column boxes.
      if (p.knobs.find("CLUSTER=m2") == std::string::npos) continue;
      ++clusters;
      CHECK(op_name == std::string("matmul"));
      CHECK((p.knobs.find("n128k16") != std::string::npos || p.knobs.find("n256k16") != std::string::npos));
    }
    CHECK(persistent > 0);
    CHECK((clusters > 0) == (op_name == std::string("matmul")));
  }
}

TEST_CASE("tune: sdpa's space at head dim 64 keeps the fold's geometries and drops oversized chunks and tiles") {
  auto l = test::check_file(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  REQUIRE(!l->diags->has_errors());
  const CheckedOp& op = l->program->ops.at("sdpa");
  const TargetInfo& target = *find_target("sm_90");
  std::vector<tune::Enumerated> all = tune::enumerate_knobs(*l->program, op, target, nullptr), some;
  for (const tune::Enumerated& p : all) {
    // The fold: w<M>x1 only, FAST_EXP=1 on the tensor cores.
    if (p.origin == "enumerated" && p.knobs.find("mma_m16n8k16") != std::string::npos) {
      CHECK(p.knobs.find("x1/f") != std::string::npos);
      CHECK(p.knobs.find("FAST_EXP=1") != std::string::npos);
    }
    if (p.knobs.find("w4x1/f2x8/") != std::string::npos && p.knobs.find("FAST_EXP=1") != std::string::npos &&
        p.knobs.find("REDUCE") == std::string::npos)
      some.push_back({p.knobs, "enumerated"});  // the hand-written ones among them too, under the enumerated rules
  }
  REQUIRE(some.size() == 72);  // k2, k4, k8 x 8 stages x 3 value tiles
  const SizeBindings sizes{{"B", 1}, {"H", 2}, {"S", 256}, {"T", 256}, {"D", 64}, {"E", 64}};
  tune::Space s = tune::prune_space(*l->program, op, target, sizes, some, nullptr, 2);
  CHECK(s.candidates.size() + s.pruned.size() == 72);
  std::map<std::string, int> kinds;
  for (const tune::Pruned& p : s.pruned) {
    ++kinds[p.kind];
    CAPTURE(p.knobs);
    // k2 covers 32 < D (or is no TMA box); k8 holds 128 >= 2 D; f128 is twice E.
    if (p.knobs.find("/k2,") != std::string::npos) CHECK((p.kind == "sizes" || p.kind == "not honoured"));
    if (p.knobs.find("/k8,") != std::string::npos) CHECK((p.kind == "oversized" || p.kind == "not honoured"));
  }
  CHECK(kinds["sizes"] >= 12);
  CHECK(kinds["oversized"] >= 20);
  REQUIRE_FALSE(s.candidates.empty());
  for (const tune::Candidate& c : s.candidates) {
    CHECK(c.knobs.find("/k4,") != std::string::npos);
    CHECK(c.knobs.find("TILE@e=f128") == std::string::npos);
  }
}

TEST_CASE(
    "tune: the interpreter gates correctness; the search over softmax's pruned space picks the cheapest correct one") {
  const SizeBindings sizes{{"N", 5}, {"C", 37}};
  NnSpace softmax = nn_space("softmax", sizes);
  const auto& l = softmax.l;
  const CheckedOp& op = *softmax.op;
  const TargetInfo& target = *find_target("sm_90");
  tune::Space& s = softmax.space;
  REQUIRE(s.candidates.size() >= 10);
  tune::FakeClock clock;
  // The "cost": fewer threads a block is cheaper, a made-up model only the search's choice is checked against.
  auto cost = [](const tune::Candidate& c) {
    return 1.0 + c.block_threads + 0.001 * static_cast<double>(c.knobs.size());
  };
  tune::InterpreterMeasurer m(*l->program, op, target, sizes, cost, clock, 0.01);
  tune::SearchResult r = tune::search(s.candidates, m, clock, {});
  CHECK(m.runs() == r.measured);
  REQUIRE(r.best() != nullptr);
  double cheapest = 1e30;
  for (const tune::Candidate& c : s.candidates) cheapest = std::min(cheapest, cost(c));
  CHECK(r.best()->measurement.time_us == doctest::Approx(cheapest));
  int ok = 0;
  for (const tune::Scored& x : r.ranked) ok += x.measurement.ok ? 1 : 0;
  CHECK(ok == static_cast<int>(r.ranked.size()));  // every pruned candidate of softmax is correct
  // A candidate the lowering refuses fails with why, never ranks.
  tune::Candidate bad;
  bad.knobs = "TILE=a:bogus";
  tune::Measurement b = m.measure(bad, 1, 0);
  CHECK_FALSE(b.ok);
  CHECK(b.error.find("unknown TILE atom 'bogus'") != std::string::npos);
}

TEST_CASE("tune: every candidate of layernorm's and rmsnorm's spaces is correct on the interpreter") {
  // The space cuts each intermediate alone: layernorm's d reads mean, so cutting d must write
  // mean first (the H200 run of 2026-11-30 found PLACE@d=cut reading mean before it was written).
  const SizeBindings sizes{{"N", 3}, {"C", 40}};
  for (const char* name : {"layernorm", "rmsnorm"}) {
    CAPTURE(name);
    NnSpace ns = nn_space(name, sizes);
    REQUIRE(ns.space.candidates.size() >= 10);
    tune::FakeClock clock;
    tune::InterpreterMeasurer m(
        *ns.l->program, *ns.op, *find_target("sm_90"), sizes, [](const tune::Candidate&) { return 1.0; }, clock, 0.01);
    bool cut_d = false;
    for (const tune::Candidate& c : ns.space.candidates) {
      CAPTURE(c.knobs);
      const tune::Measurement r = m.measure(c, 1, 0);
      CHECK_MESSAGE(r.ok, r.error);
      cut_d = cut_d || c.knobs.find("PLACE@d=cut") != std::string::npos;
    }
    CHECK(cut_d == (std::string(name) == "layernorm"));
  }
}

TEST_CASE("tune: the worker measurer reads answers, kills a hung worker, reports a crashed one, and restarts") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("emmy-tune-worker-{}", getpid());
  fs::create_directories(dir);
  const fs::path script = dir / "worker.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                           "echo '{\"ready\": true, \"device\": \"scripted\", \"reference\": \"none\"}'\n"
                           "while read -r line; do\n"
                           "  case \"$line\" in\n"
                           "    *hang*) sleep 30 ;;\n"
                           "    *slow*) echo '{\"launching\": true}'; sleep 30 ;;\n"
                           "    *longcompare*) echo '{\"launching\": true}'; echo '{\"launched\": true}'; sleep 2;"
                           " echo '{\"ok\": true, \"time_us\": 7.5}' ;;\n"
                           "    *crash*) kill -SEGV $$ ;;\n"
                           "    *wrong*) echo '{\"ok\": false, \"error\": \"wrong output: o\"}' ;;\n"
                           "    *) echo '{\"ok\": true, \"time_us\": 12.5, \"occupancy\": 0.25}' ;;\n"
                           "  esac\n"
                           "done\n";
  fs::permissions(script, fs::perms::owner_all);
  tune::WorkerMeasurer m({script.string()}, 1.0, (dir / "worker.log").string());
  m.start();
  CHECK(m.device() == "scripted");
  tune::Candidate c;
  c.knobs = "fine";
  tune::Measurement a = m.measure(c, 5, 0);
  CHECK(a.ok);
  CHECK(a.time_us == 12.5);
  CHECK(a.occupancy == 0.25);
  c.knobs = "wrong";
  tune::Measurement w = m.measure(c, 5, 0);
  CHECK_FALSE(w.ok);
  CHECK(w.error == "wrong output: o");
  c.knobs = "hang";
  tune::Measurement h = m.measure(c, 5, 0);
  CHECK_FALSE(h.ok);
  CHECK(h.error.find("no answer within 1 s") != std::string::npos);
  c.knobs = "fine";
  CHECK(m.measure(c, 5, 0).ok);  // a fresh worker
  CHECK(m.restarts() == 1);
  c.knobs = "crash";
  tune::Measurement x = m.measure(c, 5, 0);
  CHECK_FALSE(x.ok);
  CHECK(x.error.find("the worker died (killed by signal 11") != std::string::npos);
  c.knobs = "fine";
  CHECK(m.measure(c, 5, 0).ok);
  CHECK(m.restarts() == 2);
  // With a cut-off, a kernel that runs on is killed after the cut-off and a grace of 1 s from
  // the worker's "launching" line, long before the timeout, and counts as cut off, not failed.
  tune::WorkerMeasurer patient({script.string()}, 20.0, (dir / "worker.log").string());
  c.knobs = "slow";
  const auto t0 = std::chrono::steady_clock::now();
  tune::Measurement cut = patient.measure(c, 5, 200000);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_FALSE(cut.ok);
  CHECK(cut.cut_off);
  CHECK(cut.time_us == doctest::Approx(1.2e6));
  CHECK(cut.error.find("cut off: no answer within 1.2 s") != std::string::npos);
  CHECK(waited < 10);
  c.knobs = "fine";
  CHECK(patient.measure(c, 5, 200000).ok);  // a fresh worker; an answer in time is not cut off
  c.knobs = "longcompare";                  // a long check after a fast launch: the cut-off holds to the launch only
  tune::Measurement checked = patient.measure(c, 5, 200000);
  CHECK(checked.ok);
  CHECK(checked.time_us == 7.5);
  CHECK(patient.restarts() == 2);  // the first start, and the one after the kill
  // A worker that takes 2 s to start: a running kernel is given as long before the kill.
  const fs::path slow_start = dir / "slow_start.sh";
  std::ofstream(slow_start) << "#!/bin/sh\nsleep 2\nexec " << script.string() << "\n";
  fs::permissions(slow_start, fs::perms::owner_all);
  tune::WorkerMeasurer costly({slow_start.string()}, 20.0, (dir / "worker.log").string());
  c.knobs = "slow";
  tune::Measurement waited_longer = costly.measure(c, 5, 200000);
  CHECK(waited_longer.cut_off);
  CHECK(waited_longer.time_us > 2.1e6);
  CHECK(waited_longer.time_us < 3.5e6);
  // A worker that never launches (slow lowering, loading) is waited for up to the timeout.
  tune::WorkerMeasurer short_timeout({script.string()}, 2.0, (dir / "worker.log").string());
  c.knobs = "hang";
  tune::Measurement hung = short_timeout.measure(c, 5, 200000);
  CHECK_FALSE(hung.cut_off);
  CHECK(hung.error.find("no answer within 2 s") != std::string::npos);
  // A worker that never says it is ready: start() fails with its last words.
  const fs::path mute = dir / "mute.sh";
  std::ofstream(mute) << "#!/bin/sh\necho 'no GPU here' >&2\nexit 3\n";
  fs::permissions(mute, fs::perms::owner_all);
  tune::WorkerMeasurer dead({mute.string()}, 1.0, (dir / "mute.log").string());
  CHECK_THROWS_WITH_AS(dead.start(), doctest::Contains("no GPU here"), std::runtime_error);
  // ... and a measurement that needs a fresh worker fails with the same words instead of throwing.
  tune::Measurement none = dead.measure(c, 1, 0);
  CHECK_FALSE(none.ok);
  CHECK(none.error.find("no GPU here") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("tune: --budget durations") {
  CHECK(parse_duration("90s") == 90.0);
  CHECK(parse_duration("10m") == 600.0);
  CHECK(parse_duration("1.5h") == 5400.0);
  CHECK(parse_duration("600") == 600.0);
  for (const char* bad : {"", "m", "-5m", "0", "ten", "5x", "5 m"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_duration(bad).has_value());
  }
}

namespace {

// A GPU whose clocks drop under load: each measurement is 1% slower than the one before it.
class DriftingMeasurer : public tune::Measurer {
 public:
  explicit DriftingMeasurer(std::map<std::string, double> times) : times_(std::move(times)) {}
  tune::Measurement measure(const tune::Candidate& c, int, double cutoff_us) override {
    order.push_back(c.knobs);
    const double t = times_.at(c.knobs) * (1 + 0.01 * static_cast<double>(order.size() - 1));
    if (cutoff_us > 0 && t > cutoff_us) return {false, t, "cut off", 0, true};
    if (c.knobs == "wrong") return {false, 0, "wrong output", 0};
    return {true, t, "", 0.5};
  }
  std::string device() const override { return "drifting"; }
  std::vector<std::string> order;

 private:
  std::map<std::string, double> times_;
};

}  // namespace

TEST_CASE("tune: measured in turns, two equal kernels on a drifting GPU come out within one turn's drift") {
  std::vector<tune::Candidate> cs(4);
  cs[0].knobs = "a", cs[1].knobs = "b", cs[2].knobs = "slow", cs[3].knobs = "wrong";
  DriftingMeasurer m({{"a", 100}, {"b", 100}, {"slow", 1000}, {"wrong", 90}});
  const std::vector<tune::Measurement> r = tune::measure_in_turns({&cs[0], &cs[1], &cs[2], &cs[3]}, m, 50, 5, 800);
  // Turns: a b slow wrong (the first turn with the cut-off), then a b four more times.
  CHECK(m.order == std::vector<std::string>{"a", "b", "slow", "wrong", "a", "b", "a", "b", "a", "b", "a", "b"});
  REQUIRE(r[0].ok);
  REQUIRE(r[1].ok);
  // Medians of the turns: a at calls 0,4,6,8,10 -> call 6; b at 1,5,7,9,11 -> call 7.
  CHECK(r[0].time_us == doctest::Approx(106));
  CHECK(r[1].time_us == doctest::Approx(107));
  // One after the other (a five times, then b), they would be 102 and 107: 5% apart.
  CHECK(!r[2].ok);
  CHECK(r[2].cut_off);
  CHECK(r[2].time_us == doctest::Approx(1020));
  CHECK(!r[3].ok);
  CHECK(r[3].error == "wrong output");
  CHECK(tune::measure_in_turns({}, m, 50, 5, 0).empty());
}

}  // namespace emmy

namespace emmy {

TEST_CASE("tune: prune_space lowers a 10,000-deep fused expression on its worker threads") {
  // Ten statements of 1,000 terms, fused into one expression: about 10 MB of stack to lower, past
  // a std::thread's 8 MB (the workers crashed); each worker runs on a large stack.
  std::string src = "op f(x: f32[N]) -> (y: f32[N]) {\n  t0[i] = x[i];\n";
  for (int k = 1; k <= 10; ++k) {
    src += fmt::format("  t{}[i] = t{}[i]", k, k - 1);
    for (int j = 0; j < 998; ++j) src += " + x[i]";
    src += ";\n";
  }
  src += "  y[i] = t10[i];\n}\n";
  std::unique_ptr<test::Run> l = test::check_source(src);
  REQUIRE_FALSE(l->diags->has_errors());
  const CheckedOp& op = l->program->ops.at("f");
  std::vector<tune::Enumerated> points(4, tune::Enumerated{"", "enumerated"});  // one per worker
  tune::Space s = tune::prune_space(*l->program, op, *find_target("sm_90"), {{"N", 64}}, points, nullptr, 4);
  CHECK(s.enumerated == 4);
  REQUIRE(s.candidates.size() == 1);  // the other three are its duplicates
  CHECK(s.candidates[0].cuda.find("__global__") != std::string::npos);
}

TEST_CASE("tune: a block is written only where it beats the auto-schedule measured in the same search") {
  auto candidate = [](const char* knobs, const char* origin) {
    tune::Candidate c;
    c.knobs = knobs;
    c.origin = origin;
    return c;
  };
  const tune::Candidate autos = candidate("COOP=t512/v8/c13", "auto-schedule"),
                        block = candidate("COOP=t128/v8", "schedule softmax for sm_90"),
                        found = candidate("COOP=t256/v8/c7", "enumerated");
  auto scored = [](const tune::Candidate& c, double us, bool ok = true) {
    tune::Scored s;
    s.candidate = &c;
    s.measurement.ok = ok;
    s.measurement.time_us = us;
    return s;
  };
  // The budget ran out before the auto-schedule (the 2026-12-07 H100 run: six slow blocks first).
  CHECK(tune::why_not_written(scored(block, 521), {scored(block, 521)}).find("not measured") != std::string::npos);
  CHECK(tune::why_not_written(scored(block, 521), {scored(block, 521), scored(autos, 0, false)}).find("not measured") !=
        std::string::npos);
  // The auto-schedule won: a run without a block gets it.
  CHECK(tune::why_not_written(scored(autos, 360), {scored(autos, 360), scored(block, 521)}).find("is the best") !=
        std::string::npos);
  // Within 2%: no block needed; faster by more: written.
  CHECK(tune::why_not_written(scored(found, 353), {scored(found, 353), scored(autos, 360)}).find("within 2%") !=
        std::string::npos);
  CHECK(tune::why_not_written(scored(found, 350), {scored(found, 350), scored(autos, 360)}).empty());
}

}  // namespace emmy
