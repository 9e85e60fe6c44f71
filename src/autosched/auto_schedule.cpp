// Derives an op's schedule from its structure and sizes: the candidates of the tables below for
// the tiers its kernel takes, each lowered (on every core) and ranked by the cost model; then,
// where the best one leaves SMs idle, its split-reduction variants.
#include "autosched/auto_schedule.hpp"
#include "autosched/travel.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "autosched/op_class.hpp"
#include "support/large_stack.hpp"
#include "support/paths.hpp"

namespace emmy::autosched {
namespace {

using Sizes = std::map<std::string, int64_t>;

// ---- the candidates: tables, not branches ----------------------------------------------------
enum class Family { Wgmma, MmaTma, MmaCp };

// A tensor-core tile: the atom's shape (its dtype appended), then the warp grid and fragments.
struct TileRow {
  Family family;
  bool fold;
  const char* tile;
};
constexpr TileRow kTiles[] = {
    // wgmma folds: FlashAttention-3's tiles (128 x 64 for head dims to 64, 192 x 128 for long
    // sequences, 128 x 128 to 128, 128 x 80 past it) and a small one for few rows.
    {Family::Wgmma, true, "wgmma_m64n64k16/w16x1"},
    {Family::Wgmma, true, "wgmma_m64n128k16/w12x1"},
    {Family::Wgmma, true, "wgmma_m64n128k16/w8x1"},
    {Family::Wgmma, true, "wgmma_m64n80k16/w8x1"},
    {Family::Wgmma, true, "wgmma_m64n64k16/w4x1"},
    // wgmma contractions: 128 rows a CTA by 256, 192, 128 columns (one warpgroup's 64 rows ran
    // 4x slower than two's on the H200 at every stored shape: none here).
    {Family::Wgmma, false, "wgmma_m64n256k16/w8x1"},
    {Family::Wgmma, false, "wgmma_m64n192k16/w8x1"},
    {Family::Wgmma, false, "wgmma_m64n128k16/w8x1"},
    // mma.sync folds (FlashAttention-2's tiles) and contractions.
    {Family::MmaTma, true, "mma_m16n8k16/w4x1/f2x8"},
    {Family::MmaTma, true, "mma_m16n8k16/w4x1/f1x8"},
    {Family::MmaTma, true, "mma_m16n8k16/w8x1/f2x8"},
    {Family::MmaTma, false, "mma_m16n8k16/w4x2/f4x8"},
    {Family::MmaTma, false, "mma_m16n8k16/w2x2/f4x8"},
    {Family::MmaTma, false, "mma_m16n8k16/w2x2/f4x4"},
};

// The pipeline knobs a tile is tried with, by family and kind: every tile with the first row of
// its family and kind, then the best kTilesRefined tiles with the others.
// Persistent folds are not tried under a key bound: causal sdpa at (4,16,4096,128) with PERSIST
// ran 740 us against 477 without on the H200 (tests/bench/results/step11/2026-12-04-auto2).
// What a row needs, known before lowering: `warpgroups`, the consumer warpgroups its turns take
// (PINGPONG: two; a tile with fewer skips the row, W050 otherwise); `stages`, its ring's depth (a
// ring too deep for shared memory at one row skips the rows as deep or deeper).
struct PipelineRow {
  Family family;
  bool fold;
  const char* knobs;
  bool persistent;
  int warpgroups;
  int stages;
  bool fallback = false;  // tried only by a tile whose deeper ring overflowed shared memory
};
constexpr PipelineRow kPipelines[] = {
    {Family::Wgmma, true, "STAGE=d3/tma/ring,OVERLAP=1,PINGPONG=1,WSPEC=p1", false, 2, 3},
    {Family::Wgmma, true, "STAGE=d2/tma/ring,WSPEC=p1", false, 1, 2},
    {Family::Wgmma, true, "STAGE=d3/tma/ring,OVERLAP=1,PINGPONG=1,WSPEC=p1,PERSIST=1", true, 2, 3},
    {Family::Wgmma, false, "STAGE=d4/tma/ring,WSPEC=p1,OVERLAP=1,RASTER=gm8,PERSIST=1", true, 1, 4},
    {Family::Wgmma, false, "STAGE=d5/tma/ring,WSPEC=p1,OVERLAP=1", false, 1, 5},
    {Family::MmaTma, true, "STAGE=d3/tma/ring", false, 1, 3},
    {Family::MmaTma, true, "STAGE=d3/cp/ring", false, 1, 3},
    {Family::MmaTma, false, "STAGE=d3/tma/ring,RASTER=gm8", false, 1, 3},
    {Family::MmaCp, true, "STAGE=d3/cp/ring", false, 1, 3},
    {Family::MmaCp, true, "STAGE=d2/cp/ring", false, 1, 2, true},  // hd128's backward on sm_80
    {Family::MmaCp, false, "STAGE=d3/cp/ring,RASTER=gm8", false, 1, 3},
};

constexpr size_t kTilesRefined = 2;
// Row schedules: the placements besides PLACE=fuse tried on every COOP choice (the rest on the
// best one for PLACE=fuse only).
constexpr size_t kPlacesRefined = 3;
constexpr int kWgmmaMinChunk = 4;
// The warnings that refuse a pipeline, not a tile: a knob without effect (W050: turns with one
// warpgroup), STAGE's tma taken as cp.async (W055: rows TMA cannot copy).
constexpr std::string_view kPipelineWarnings[] = {"W050", "W055"};
// A fold's value columns a CTA covers at most (TILE@<axis>=f<N>): the atoms' widest.
constexpr int kMaxValueTile = 256;

// Row reductions: threads a row (COOP), with the op's widest vector.
constexpr int kRowThreads[] = {32, 128, 256, 512, 1024};
// The row cache's largest chunk count (COOP's c<R> field); up to kMaxRowRegisterChunks chunks (of
// 16 bytes of the narrowest input, 32 registers a thread) it is kept in registers instead (r<R>):
// r4 ran ahead of c4 at every short row, r8 of c8 at (32768, 8192) f16 and f32, r13 behind c13
// (RESULTS.md, "the row cache in registers" and "the row choices"); one of the two a thread count
// keeps the decision's candidates as many as before.
constexpr int64_t kMaxRowCacheChunks = 64;
constexpr int64_t kMaxRowRegisterChunks = 8;
// Split reductions, tried on the best candidate when its CTAs leave SMs idle.
constexpr int kSplitGroups[] = {4, 8, 16, 32};
// A fold's K chunks: the smallest whose register bound covers the contracted size.
constexpr int kFoldChunks[] = {2, 4, 8, 16};

// One candidate lowered: its cost, or why it is refused.
struct Outcome {
  std::string knobs;
  std::optional<Cost> cost;
  std::string refused;
  std::vector<kir::SizeLimit> limits;
  int64_t ctas = 0;
  std::string cover;      // a fold whose CTA takes part of the value columns at the sizes: TILE@<axis> for all
  bool spilled = false;   // refused: its accumulators need more registers than a thread may hold
  bool siblings = false;  // a fold with sibling register tiles (a backward's dk and dv)
  // Refused for its pipeline, not its tile: its ring overflows shared memory (shared_refused), or
  // the pipeline's knobs are not honoured (kPipelineWarnings); a later pipeline may lower.
  bool pipeline_refused = false;
  bool shared_refused = false;
  bool pruned = false;  // not lowered: its floor is above what the search needed (try_bounded)
};

// TILE@<axis>=f<N> for each value slab (a fold's, and its siblings': dk's d and dv's e) that takes
// fewer of its columns at `at` than there are (up to the widest tile), so one CTA takes them all in
// one pass over the keys: siblings pass in step, so a cover of one alone still folds twice; "" where
// every value slab takes all its columns.
std::string value_cover(const lower::Lowered& l, const Sizes& at) {
  std::vector<std::string> covers;
  for (const lower::KernelPlan& plan : l.plans)
    for (const lower::SlabPlan& slab : plan.slabs) {
      if (slab.role.rfind("value", 0) != 0) continue;
      auto size = at.find(read_axis_size(slab.read, slab.inner, l.loops.tensors));
      if (size == at.end() || size->second <= slab.cols || slab.cols >= kMaxValueTile) continue;
      // In whole slabs: a wgmma slab's rows are its 128-byte swizzle wide (the blocks cover
      // head dim 96 with 128 columns).
      const int64_t whole = (size->second + slab.cols - 1) / slab.cols * slab.cols;
      std::string cover = fmt::format("TILE@{}=f{}", slab.inner, std::min<int64_t>(whole, kMaxValueTile));
      if (std::find(covers.begin(), covers.end(), cover) == covers.end()) covers.push_back(std::move(cover));
    }
  return join_knobs(covers);
}

// A tile's `<tag><M>x<N>` field (`/w4x1`, `/f1x8`): M, N and where N's digits lie in the text.
struct GridField {
  int m = 0, n = 0;
  size_t n_begin = 0, n_end = 0;
};
std::optional<GridField> grid_field(std::string_view tile, std::string_view tag) {
  const size_t at = tile.find(tag);
  if (at == std::string_view::npos) return std::nullopt;
  GridField g;
  const char* end = tile.data() + tile.size();
  auto [x, got_m] = std::from_chars(tile.data() + at + tag.size(), end, g.m);
  if (got_m != std::errc() || x == end || *x != 'x') return std::nullopt;
  auto [y, got_n] = std::from_chars(x + 1, end, g.n);
  if (got_n != std::errc()) return std::nullopt;
  g.n_begin = static_cast<size_t>(x + 1 - tile.data());
  g.n_end = static_cast<size_t>(y - tile.data());
  return g;
}

// The tile with half its fragments along the keys (`/f1x8` -> `/f1x4`), while the key block stays
// a whole k-step of the second contraction (16 keys: two n8 fragments); nullopt where it cannot.
std::optional<std::string> half_key_block(const std::string& tile) {
  std::optional<GridField> f = grid_field(tile, "/f");
  if (!f || f->n % 4 != 0) return std::nullopt;
  return tile.substr(0, f->n_begin) + std::to_string(f->n / 2) + tile.substr(f->n_end);
}

// What every candidate's lowering shares.
struct Context {
  const CheckedProgram& program;
  const CheckedOp& op;
  const TargetInfo& target;
  const std::vector<algebra::DiscoveredChain>* chains;
  const lower::LawMemo& laws;
};

// A candidate's lowering, ranked, never run (the choice is lowered again, whole and verified):
// its tensor-core kernels' headers, not their bodies (what the cost model reads: the plan, launch
// shape, parameters and shared arrays); `bodies` None where only its plans and warnings are read.
lower::Lowered lower_candidate(const Context& cx, const std::string& knobs,
                               lower::KernelBodies bodies = lower::KernelBodies::Headers) {
  lower::PipelineOptions options;
  options.laws = &cx.laws;
  options.verify_kernel = false;
  options.bodies = bodies;
  return lower::lower_op(cx.program, cx.op, {nullptr, "", knobs}, cx.target, cx.chains, options);
}

Outcome try_candidate(const Context& cx, const Sizes& at, bool check_limits, const std::string& knobs) {
  Outcome o;
  o.knobs = knobs;
  try {
    lower::Lowered l = lower_candidate(cx, knobs);
    o.limits = l.kernels.limits;
    std::vector<Warning> warnings = l.knobs.warnings;
    warnings.insert(warnings.end(), l.kernels.warnings.begin(), l.kernels.warnings.end());
    if (!warnings.empty()) {
      o.refused = fmt::format("{} {}", warnings.front().code, warnings.front().text);
      o.pipeline_refused = std::all_of(warnings.begin(), warnings.end(), [](const Warning& w) {
        return std::find(std::begin(kPipelineWarnings), std::end(kPipelineWarnings), w.code) !=
               std::end(kPipelineWarnings);
      });
      return o;
    }
    if (check_limits)
      if (std::optional<std::string> broken = kir::check_limits(l.kernels, at)) {
        o.refused = *broken;
        return o;
      }
    for (const lower::KernelPlan& plan : l.plans)
      for (const lower::SlabPlan& slab : plan.slabs) o.siblings |= lower::is_sibling_value(slab);
    Cost cost = estimate_cost(l, at, cx.target);
    for (const KernelCost& k : cost.kernels)
      if (k.registers > k.register_budget) {
        o.refused =
            fmt::format("kernel {} would spill: its accumulators need about {} registers a thread, it may hold {}",
                        k.kernel, k.registers, k.register_budget);
        o.spilled = true;
        return o;
      }
    o.cost = std::move(cost);
    o.cover = value_cover(l, at);
    for (const KernelCost& k : o.cost->kernels) o.ctas = std::max(o.ctas, k.ctas);
  } catch (const lower::SharedMemoryError& e) {
    const std::string what = e.what();
    o.refused = what.substr(0, what.find('\n'));
    o.pipeline_refused = o.shared_refused = true;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    o.refused = what.substr(0, what.find('\n'));
  }
  return o;
}

// The knob warnings (W050: a knob without effect) of lowering `knobs`, at every level; -1 when it
// does not lower.
int unhonoured(const Context& cx, const std::string& knobs) {
  try {
    lower::Lowered l = lower_candidate(cx, knobs, lower::KernelBodies::None);
    int n = 0;
    for (const std::vector<Warning>* level : {&l.knobs.warnings, &l.loops.warnings, &l.kernels.warnings})
      n += static_cast<int>(
          std::count_if(level->begin(), level->end(), [](const Warning& w) { return w.code == "W050"; }));
    return n;
  } catch (const std::exception&) {
    return -1;
  }
}

// Drops from a travelling block's entries, one at a time, those that do nothing in the caller (a
// seam the callee had that inlining merged away: W050); returns the dropped ones.
std::vector<std::string> drop_unhonoured(const Context& cx, std::vector<std::string>& entries) {
  std::vector<std::string> dropped;
  int warnings = unhonoured(cx, join_knobs(entries));
  for (size_t i = 0; i < entries.size() && warnings > 0;) {
    std::vector<std::string> without = entries;
    without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
    const int fewer = unhonoured(cx, join_knobs(without));
    if (fewer >= 0 && fewer < warnings) {
      dropped.push_back(entries[i]);
      entries = std::move(without);
      warnings = fewer;
    } else {
      ++i;
    }
  }
  return dropped;
}

// The threads a round of lowerings takes: every core, up to kMaxThreads (16 lowerings at once on
// the H200 machine's 16 cores ran each slower than 8 did: a D=256 decision 48 ms against 41).
constexpr size_t kMaxThreads = 8;
size_t round_width() { return std::min<size_t>(kMaxThreads, std::max(1u, std::thread::hardware_concurrency())); }

// Lowers and costs every knob list on round_width() threads, each on a large stack.
std::vector<Outcome> try_all(const Context& cx, const Sizes& at, bool check_limits,
                             const std::vector<std::string>& knobs) {
  std::vector<Outcome> out(knobs.size());
  const int threads = static_cast<int>(std::min(knobs.size(), round_width()));
  for_each_on_large_stacks(knobs.size(), threads,
                           [&](size_t i) { out[i] = try_candidate(cx, at, check_limits, knobs[i]); });
  return out;
}

// A knob list's entries (KNOB=V each), in order.
std::vector<std::string> entries_of(const std::string& knobs) {
  std::vector<std::string> out;
  for (std::string_view e : split_commas(knobs)) out.emplace_back(e);
  return out;
}

// The knob list without its COOP entry: to-kernel alone reads COOP, so candidates alike but for it
// share their loop IR.
std::string without_coop(const std::string& knobs) {
  std::vector<std::string> kept = entries_of(knobs);
  std::erase_if(kept, [](const std::string& e) { return e.rfind("COOP=", 0) == 0; });
  return join_knobs(kept);
}

// A floor under each of `knobs`' predicted time (cost_floor), from lowerings of their plans alone
// (one lowering a loop IR: the others alike but for COOP take it to their kernels' plans), and
// whether a row cache would be moot there (row_cache_moot); 0 (and not moot) where one does not
// lower (its whole lowering then says why).
struct Floor {
  double us = 0;
  bool cache_moot = false;
};
std::vector<Floor> floors_of(const Context& cx, const Sizes& at, const std::vector<std::string>& knobs) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < knobs.size(); ++i) {
    auto [it, added] = group_of.emplace(without_coop(knobs[i]), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::vector<Floor> out(knobs.size());
  const int threads = static_cast<int>(std::min(groups.size(), round_width()));
  for_each_on_large_stacks(groups.size(), threads, [&](size_t g) {
    std::optional<lower::Lowered> l;
    for (size_t i : groups[g]) {
      try {
        if (!l) {
          l = lower_candidate(cx, knobs[i], lower::KernelBodies::None);
        } else {
          l->knobs = lower::resolve_knobs({nullptr, "", knobs[i]}, cx.target);
          l->kernels = lower::to_kernel(l->loops, cx.program, l->knobs, &l->plans, &cx.laws, lower::KernelBodies::None);
        }
        out[i] = {cost_floor(*l, at, cx.target), row_cache_moot(*l)};
      } catch (const std::exception&) {
      }
    }
  });
  return out;
}

// The knobs with COOP's row cache (its last field, /c<R> or /r<R>) dropped, where they have one;
// "" otherwise.
std::string without_row_cache(const std::string& knobs) {
  std::vector<std::string> entries = entries_of(knobs);
  for (std::string& e : entries) {
    const size_t last = e.rfind('/');
    if (e.rfind("COOP=", 0) == 0 && last != std::string::npos && last + 1 < e.size() &&
        (e[last + 1] == 'c' || e[last + 1] == 'r')) {
      e.resize(last);
      return join_knobs(entries);
    }
  }
  return "";
}

// try_all's outcomes where the caller reads the best `k` of those from `from` on, and none past
// `known` (a time already in hand, or infinity): the knobs lowered in the order of their floors,
// round_width() at a time, and each whose floor is above the k-th best time lowered so far (or
// above `known`) left out (Outcome::pruned; its time is at least its floor); so is a row cache
// that would be moot where the same knobs without it come earlier (its time is at least theirs,
// and a tie goes to the earlier). What the caller reads is try_all's: a candidate left out could
// not be among them, ties included (the bar is strict).
std::vector<Outcome> try_bounded(const Context& cx, const Sizes& at, bool check_limits,
                                 const std::vector<std::string>& knobs, size_t from, size_t k, double known) {
  const std::vector<Floor> floors = floors_of(cx, at, knobs);
  std::vector<size_t> order(knobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return floors[a].us < floors[b].us; });
  std::vector<Outcome> out(knobs.size());
  std::vector<bool> done(knobs.size(), false);
  for (size_t i = 0; i < knobs.size(); ++i)
    if (const std::string twin = without_row_cache(knobs[i]); floors[i].cache_moot && !twin.empty())
      if (std::find(knobs.begin(), knobs.begin() + static_cast<std::ptrdiff_t>(i), twin) !=
          knobs.begin() + static_cast<std::ptrdiff_t>(i)) {
        out[i].knobs = knobs[i];
        out[i].pruned = done[i] = true;
      }
  auto bar = [&] {
    std::vector<double> times;
    for (size_t i = from; i < out.size(); ++i)
      if (done[i] && out[i].cost) times.push_back(out[i].cost->us);
    if (times.size() < k) return known;
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(k - 1), times.end());
    return std::min(known, times[k - 1]);
  };
  for (size_t next = 0; next < order.size();) {
    const double limit = bar() * (1 + 1e-9);
    std::vector<size_t> batch;
    for (; next < order.size() && batch.size() < round_width(); ++next) {
      const size_t i = order[next];
      if (done[i]) continue;
      if (floors[i].us > limit) {
        out[i].knobs = knobs[i];
        out[i].pruned = done[i] = true;
      } else {
        batch.push_back(i);
      }
    }
    std::vector<std::string> lowered;
    for (size_t i : batch) lowered.push_back(knobs[i]);
    std::vector<Outcome> got = try_all(cx, at, check_limits, lowered);
    for (size_t b = 0; b < batch.size(); ++b) {
      out[batch[b]] = std::move(got[b]);
      done[batch[b]] = true;
    }
  }
  return out;
}

Family mma_family(const TargetInfo& target) { return target.tma ? Family::MmaTma : Family::MmaCp; }

// The K chunk a fold needs at `at`: the smallest whose register bound (the probe's limit at k4)
// covers the contracted size; k4 without a limit.
int fold_chunk(const std::vector<kir::SizeLimit>& probe_limits, const Sizes& at) {
  for (const kir::SizeLimit& limit : probe_limits) {
    auto it = at.find(limit.size);
    if (it == at.end() || limit.max <= 0) continue;
    const double needed = 4.0 * static_cast<double>(it->second) / static_cast<double>(limit.max);
    for (int k : kFoldChunks)
      if (k >= needed) return k;
    return kFoldChunks[std::size(kFoldChunks) - 1];
  }
  return 4;
}

// A tensor-core candidate: its tile knobs (TILE, and a fold's value columns) and its pipeline's.
struct TileChoice {
  std::string tile, pipeline;
  int too_deep = 0;  // a ring depth (stages) shared memory refused the tile at, 0: none
};

// The pipelines of `family` for the op's kind, in table order.
std::vector<const PipelineRow*> pipelines(Family family, const OpClass& cls) {
  std::vector<const PipelineRow*> out;
  for (const PipelineRow& p : kPipelines)
    if (p.family == family && p.fold == cls.fold && !(p.persistent && cls.key_bounded)) out.push_back(&p);
  return out;
}

// A tile's consumer warpgroups: its warp grid (`/w<M>x<N>`) over 4 warps.
int warpgroups_of(std::string_view tile) {
  std::optional<GridField> w = grid_field(tile, "/w");
  return w ? std::max(w->m * w->n / 4, 1) : 1;
}

// The first of `lines` at or past `from` that a tile of `warpgroups` can take and whose ring is
// shallower than `below` stages (0: any); lines.size() where none is.
size_t next_line(const std::vector<const PipelineRow*>& lines, size_t from, int warpgroups, int below) {
  for (size_t i = from; i < lines.size(); ++i)
    if (lines[i]->warpgroups <= warpgroups && (below == 0 ? !lines[i]->fallback : lines[i]->stages < below)) return i;
  return lines.size();
}

// One family's tiles for the op's kind.
std::vector<std::string> tile_choices(const CheckedOp& op, Family family, const OpClass& cls, const Sizes& at) {
  // The classifying probe's register bound; wgmma reads whole 128-byte swizzled rows (64 f16
  // elements: 4 k-steps), so its chunk is never less (head dim 32 takes k4, as the blocks do).
  int chunk = cls.fold ? fold_chunk(cls.fold_limits, at) : 4;
  if (family == Family::Wgmma) chunk = std::max(chunk, kWgmmaMinChunk);
  std::vector<std::string> out;
  for (const TileRow& t : kTiles) {
    if ((t.family == Family::Wgmma) != (family == Family::Wgmma) || t.fold != cls.fold) continue;
    const std::string tile = t.tile;
    const size_t slash = tile.find('/');
    const std::string atom = mma_atom(op, tile.substr(0, slash));
    const std::string value = fmt::format("TILE=a:{}{}/k{}", atom, tile.substr(slash), chunk);
    out.push_back(value);
  }
  return out;
}

std::string knobs_of(const OpClass& cls, const TileChoice& c) {
  return join_knobs(
      {cls.fold ? "PLACE=fuse" : "", operand_cut_knobs(cls), c.tile, c.pipeline, cls.has_exp ? "FAST_EXP=1" : ""});
}

// The longest row the op reduces at `at` (a literal size, or 0 when none is bound).
int64_t longest_row(const OpClass& cls, const Sizes& at) {
  int64_t out = 0;
  for (const std::string& size : cls.reduced_sizes) {
    if (auto it = at.find(size); it != at.end()) out = std::max(out, it->second);
    if (!size.empty() && std::isdigit(static_cast<unsigned char>(size[0])))
      out = std::max<int64_t>(out, std::stoll(size));
  }
  return out;
}

// Cooperative rows sized by the row: no more threads a row than its vectors (a warp at least),
// each without and with the row cache sized to the row (the smallest R whose N * V * R elements
// hold it: a row read again by a later pass comes from registers, r<R>, for R up to
// kMaxRowRegisterChunks, else from shared memory, c<R>).
std::vector<std::string> coop_choices(const OpClass& cls, const Sizes& at) {
  const std::string vec = cls.widest_vector > 1 ? fmt::format("/v{}", cls.widest_vector) : "";
  const int64_t row = longest_row(cls, at);
  const int64_t most = row > 0 ? std::max<int64_t>(kRowThreads[0], (row + cls.widest_vector - 1) / cls.widest_vector)
                               : kRowThreads[std::size(kRowThreads) - 1];
  const int64_t per_chunk = std::max(cls.widest_vector, 1);
  std::vector<std::string> out;
  for (int t : kRowThreads)
    if (t <= most) {
      out.push_back(fmt::format("COOP=t{}{}", t, vec));
      const int64_t chunks = row > 0 ? (row + t * per_chunk - 1) / (t * per_chunk) : 0;
      if (chunks >= 1 && chunks <= kMaxRowRegisterChunks)
        out.push_back(fmt::format("COOP=t{}{}/r{}", t, vec, chunks));
      else if (chunks >= 1 && chunks <= kMaxRowCacheChunks)
        out.push_back(fmt::format("COOP=t{}{}/c{}", t, vec, chunks));
    }
  return out;
}

// A cost's kernels' compute times (memory-bound kernels' slack).
double compute_us(const Cost& cost) {
  double us = 0;
  for (const KernelCost& k : cost.kernels) us += k.compute_us;
  return us;
}

// Whether time `a` (compute `ca`) ranks before `b` (`cb`): the less time; at the same time (two
// memory-bound rows moving the same bytes), the less compute: its arithmetic and latency have the
// more room under the memory's (at (32768, 8192) f32 the register-held rows that tie c16's time
// with a third less compute ran 10% faster, RESULTS.md "the row choices").
// (Exact: a tie is the same formula over the same bytes, and a lexicographic order is one the
// sorts may take.)
bool ranks_before(double a, double ca, double b, double cb) { return a != b ? a < b : ca < cb; }

// The outcomes of `got` from `from` on that lowered, fastest first (ranks_before; ties in order).
std::vector<size_t> fastest(const std::vector<Outcome>& got, size_t from = 0) {
  std::vector<size_t> order;
  std::vector<double> compute(got.size());
  for (size_t i = from; i < got.size(); ++i)
    if (got[i].cost) {
      order.push_back(i);
      compute[i] = compute_us(*got[i].cost);
    }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranks_before(got[a].cost->us, compute[a], got[b].cost->us, compute[b]);
  });
  return order;
}

// The placements a row schedule may take: every seam fused, every one cut, one intermediate cut.
std::vector<std::string> place_choices(const OpClass& cls) {
  std::vector<std::string> places{"PLACE=fuse"};
  if (!cls.has_carrier) places.push_back("PLACE=cut");
  for (const std::string& name : cls.intermediates) places.push_back(fmt::format("PLACE@{}=cut", name));
  return places;
}

Sizes nominal_sizes(const CheckedProgram& program, const CheckedOp& op) {
  Sizes out;
  for (const std::string& s : lower::to_tensor(program, op).sizes) out[s] = kNominalSize;
  return out;
}

void rank(std::vector<Outcome>& outcomes, AutoSchedule& choice) {
  for (Outcome& o : outcomes) {
    if (o.pruned) {
      choice.pruned.push_back(o.knobs);
      continue;
    }
    if (!o.cost) {
      choice.refused.push_back(fmt::format("{}: {}", o.knobs.empty() ? "(defaults)" : o.knobs, o.refused));
      continue;
    }
    const KernelCost* slowest = nullptr;
    for (const KernelCost& k : o.cost->kernels)
      if (!slowest || k.us > slowest->us) slowest = &k;
    choice.ranked.push_back({o.knobs, o.cost->us, slowest ? slowest->bound : "", compute_us(*o.cost)});
  }
  std::stable_sort(choice.ranked.begin(), choice.ranked.end(), [](const Ranked& a, const Ranked& b) {
    return ranks_before(a.us, a.compute_us, b.us, b.compute_us);
  });
}

}  // namespace

AutoSchedule auto_schedule(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                           const std::map<std::string, int64_t>* sizes,
                           const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo* known) {
  const auto start = std::chrono::steady_clock::now();
  AutoSchedule choice;
  choice.nominal = sizes == nullptr;
  choice.at = sizes ? *sizes : nominal_sizes(program, op);
  const lower::LawMemo own;
  const lower::LawMemo& laws = known ? *known : own;
  // The op's chains and its callees', discovered and proved once for every lowering below.
  const std::vector<algebra::DiscoveredChain> all_chains = lower::with_callee_chains(program, op, chains);
  const Context cx{program, op, target, &all_chains, laws};
  const bool check = sizes != nullptr;
  // A library op's block travels with its call, where it lowers and serves the sizes.
  if (std::optional<Travel> travel = travelling_schedule(program, op, target)) {
    if (const std::vector<std::string> dropped = drop_unhonoured(cx, travel->entries); !dropped.empty())
      travel->from += fmt::format(" without {} (no effect in the caller)", fmt::join(dropped, ", "));
    const std::string knobs = join_knobs(travel->entries);
    std::vector<Outcome> got = try_all(cx, choice.at, check, {knobs});
    if (got.front().cost) {
      rank(got, choice);
      choice.knobs = knobs;
      choice.predicted_us = choice.ranked.front().us;
      choice.travelled = travel->from;
      choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return choice;
    }
    choice.refused.push_back(
        fmt::format("{} ({}, travelling with its call): {}", knobs, travel->from, got.front().refused));
  }
  const OpClass cls = classify_op(program, op, target, &all_chains, &laws);
  // The tensor cores where the op's kernel takes them, wgmma first where the target has it, then
  // mma.sync where no wgmma candidate lowers at these sizes; the scalar tiers otherwise (the
  // knobs' defaults last, ranked like the rest).
  std::vector<Outcome> outcomes;
  auto none_lowered = [&] {
    return std::none_of(outcomes.begin(), outcomes.end(), [](const Outcome& o) { return o.cost.has_value(); });
  };
  std::vector<Family> families{mma_family(target)};
  // (A fold the tier takes on mma.sync only, none of wgmma's tiles: each would be lowered to be refused.)
  if (target.wgmma && (!cls.fold || cls.wgmma_fold)) families.insert(families.begin(), Family::Wgmma);
  // A round lowers the choices not lowered yet and, on cores the round would leave idle, the
  // `ahead` ones a later round may ask for (lowering is pure: an outcome found ahead is the one
  // that round would find, so the choice does not depend on the cores). Only the choices asked
  // for are ranked.
  std::map<std::string, Outcome> lowered;
  auto try_choices = [&](const std::vector<TileChoice>& choices, const std::vector<TileChoice>& ahead) {
    std::vector<std::string> asked, to_lower;
    auto queue = [&](const std::string& k) {  // to lower this round, unless lowered or queued
      if (!lowered.count(k) && std::find(to_lower.begin(), to_lower.end(), k) == to_lower.end()) to_lower.push_back(k);
    };
    for (const TileChoice& c : choices) queue(asked.emplace_back(knobs_of(cls, c)));
    const size_t width = std::max(round_width(), to_lower.size());
    for (size_t a = 0; a < ahead.size() && to_lower.size() < width; ++a) queue(knobs_of(cls, ahead[a]));
    std::vector<Outcome> got = try_all(cx, choice.at, check, to_lower);
    for (size_t t = 0; t < to_lower.size(); ++t) lowered.emplace(to_lower[t], std::move(got[t]));
    std::vector<Outcome> tried;
    for (const std::string& k : asked) tried.push_back(lowered.at(k));
    outcomes.insert(outcomes.end(), tried.begin(), tried.end());
    return tried;
  };
  for (size_t i = 0; i < families.size() && (cls.fold || cls.contraction) && none_lowered(); ++i) {
    // Rounds of lowerings, each on every core, from every tile at the family's first pipeline: a
    // tile refused for its pipeline (a ring too deep for shared memory, turns with one
    // warpgroup: Outcome::pipeline_refused) moves to the next; a fold tile that splits the value
    // columns brings the tile with all of them in one CTA (its cost with them split says little
    // about it without). Then the best tiles with the pipelines not yet tried.
    const std::vector<const PipelineRow*> lines = pipelines(families[i], cls);
    if (lines.empty()) continue;
    std::vector<TileChoice> tiles;  // each tile's first pipeline that lowered, or its last tried
    std::vector<Outcome> tried;
    struct Pending {
      std::string tile;
      size_t line;
      int too_deep;
      bool cover = false;  // the tile with all its value columns in one CTA
    };
    std::vector<Pending> pending;
    for (const std::string& tile : tile_choices(op, families[i], cls, choice.at))
      if (size_t line = next_line(lines, 0, warpgroups_of(tile), 0); line < lines.size())
        pending.push_back({tile, line, 0});
    while (!pending.empty()) {
      std::vector<TileChoice> round, ahead;  // ahead: each tile's later lines, nearest first
      for (const Pending& p : pending) round.push_back({p.tile, lines[p.line]->knobs, p.too_deep});
      for (size_t step = 1; step < lines.size(); ++step)
        for (const Pending& p : pending) {
          size_t line = p.line;
          for (size_t s = 0; s < step && line < lines.size(); ++s)
            line = next_line(lines, line + 1, warpgroups_of(p.tile), p.too_deep);
          if (line < lines.size()) ahead.push_back({p.tile, lines[line]->knobs});
        }
      std::vector<Outcome> got = try_choices(round, ahead);
      std::vector<Pending> next;
      for (size_t c = 0; c < got.size(); ++c) {
        const Pending& p = pending[c];
        const int too_deep = got[c].shared_refused ? lines[p.line]->stages : p.too_deep;
        const size_t retry = next_line(lines, p.line + 1, warpgroups_of(p.tile), too_deep);
        if (!got[c].cost && got[c].pipeline_refused && retry < lines.size()) {
          next.push_back({p.tile, retry, too_deep, p.cover});
          continue;
        }
        // (A cover's wider value slab needs more shared memory, never less: what was too deep stays so.)
        if (!got[c].cover.empty()) next.push_back({join_knobs({p.tile, got[c].cover}), p.line, too_deep, true});
        // A sibling fold's cover whose accumulators spill, at half the key block: the registers
        // two value tiles take from the scores (head dim 128's dk and dv in one pass: 2.5x on the
        // H100). Not a single fold's: its covers at half the block were not measured, and ptxas
        // spills the forward's on sm_80 (f2x4 with 128 value columns, 32 bytes).
        if (p.cover && got[c].spilled && got[c].siblings)
          if (std::optional<std::string> half = half_key_block(p.tile)) next.push_back({*half, p.line, too_deep, true});
        tiles.push_back(round[c]);
        tried.push_back(std::move(got[c]));
      }
      pending = std::move(next);
    }
    const std::vector<size_t> order = fastest(tried);  // the lowered tiles, fastest first
    std::vector<TileChoice> refined;
    for (size_t r = 0; r < order.size() && r < kTilesRefined; ++r) {
      const TileChoice& best = tiles[order[r]];
      const size_t at =
          std::find_if(lines.begin(), lines.end(), [&](const PipelineRow* p) { return p->knobs == best.pipeline; }) -
          lines.begin();
      const int groups = warpgroups_of(best.tile);
      for (size_t p = next_line(lines, at + 1, groups, best.too_deep); p < lines.size();
           p = next_line(lines, p + 1, groups, best.too_deep))
        refined.push_back({best.tile, lines[p]->knobs});
    }
    try_choices(refined, {});
  }
  if (none_lowered()) {
    // The scalar tier, the knobs' defaults and every seam fused on each COOP choice; then every
    // placement on the best of those rows; then the best placements on the other rows (a
    // placement decides the kernels, COOP how a row's threads share their work: ranked one
    // after the other, not as a product).
    const std::string fast_exp = cls.has_exp ? "FAST_EXP=1" : "";
    const std::vector<std::string> places = place_choices(cls), coops = coop_choices(cls, choice.at);
    std::vector<std::string> knobs{join_knobs({"PLACE=fuse", fast_exp}), ""};
    if (cls.has_reduction)
      for (const std::string& coop : coops) knobs.push_back(join_knobs({places.front(), coop, fast_exp}));
    const double none = std::numeric_limits<double>::infinity();
    // (Each round reads the best of its COOP choices, the best kPlacesRefined placements, the best.)
    std::vector<Outcome> rows = try_bounded(cx, choice.at, check, knobs, 2, 1, none);
    const std::vector<size_t> best_rows = fastest(rows, 2);
    for (Outcome& o : rows) outcomes.push_back(std::move(o));
    if (!best_rows.empty()) {
      const std::string& coop = coops[best_rows.front() - 2];
      knobs.clear();
      for (size_t p = 1; p < places.size(); ++p) knobs.push_back(join_knobs({places[p], coop, fast_exp}));
      std::vector<Outcome> placed = try_bounded(cx, choice.at, check, knobs, 0, kPlacesRefined, none);
      std::vector<std::string> refined;
      const std::vector<size_t> best_places = fastest(placed);
      for (size_t r = 0; r < best_places.size() && r < kPlacesRefined; ++r)
        for (const std::string& other : coops)
          if (other != coop) refined.push_back(join_knobs({places[best_places[r] + 1], other, fast_exp}));
      for (Outcome& o : placed) outcomes.push_back(std::move(o));
      const std::vector<size_t> so_far = fastest(outcomes);
      const double best = so_far.empty() ? none : outcomes[so_far.front()].cost->us;
      for (Outcome& o : try_bounded(cx, choice.at, check, refined, 0, 1, best)) outcomes.push_back(std::move(o));
    }
  }

  // Too few CTAs for the SMs: the best candidate's reduction split into groups.
  auto best_so_far = [&]() -> const Outcome* {
    const std::vector<size_t> order = fastest(outcomes);
    return order.empty() ? nullptr : &outcomes[order.front()];
  };
  const Outcome* best = best_so_far();
  // A tensor-core schedule whose other kernels run on the scalar tier (a backward's row
  // statistic): the best one with those kernels on cooperative rows, a warp a row, too.
  if (best && cls.has_reduction && best->knobs.find("TILE=") != std::string::npos &&
      std::any_of(best->cost->kernels.begin(), best->cost->kernels.end(),
                  [](const KernelCost& k) { return k.tier == lower::tier_name(lower::KernelPlan::Tier::Scalar); })) {
    const std::string knobs = join_knobs({best->knobs, coop_choices(cls, choice.at).front()});
    for (Outcome& o : try_all(cx, choice.at, check, {knobs})) outcomes.push_back(std::move(o));
    best = best_so_far();
  }
  if (best && cls.has_reduction && best->ctas * 2 < target_ceilings(target).sms) {
    std::vector<std::string> split;
    for (int g : kSplitGroups) split.push_back(join_knobs({best->knobs, fmt::format("REDUCE=g{}k", g)}));
    for (Outcome& o : try_all(cx, choice.at, check, split)) outcomes.push_back(std::move(o));
  }
  rank(outcomes, choice);
  if (!choice.ranked.empty()) {
    choice.knobs = choice.ranked.front().knobs;
    choice.predicted_us = choice.ranked.front().us;
  }
  choice.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return choice;
}

std::string explain(const AutoSchedule& choice, int top) {
  std::vector<std::string> at;
  for (const auto& [name, value] : choice.at) at.push_back(fmt::format("{}={}", name, value));
  if (!choice.travelled.empty())
    return fmt::format("auto-schedule: {}: {}, travelling with its call (predicted {:.1f} us at {}{}; in {:.0f} ms)\n",
                       choice.knobs, choice.travelled, choice.predicted_us, fmt::join(at, ","),
                       choice.nominal ? fmt::format(", every size taken as {}", kNominalSize) : "",
                       choice.seconds * 1e3);
  std::string out =
      fmt::format("auto-schedule: {} (predicted {:.1f} us at {}{}; {} candidates ranked, {} refused{}, in {:.0f} ms)\n",
                  choice.knobs.empty() ? "the knobs' defaults" : choice.knobs, choice.predicted_us, fmt::join(at, ","),
                  choice.nominal ? fmt::format(", every size taken as {}", kNominalSize) : "", choice.ranked.size(),
                  choice.refused.size(),
                  choice.pruned.empty() ? "" : fmt::format(", {} left out by their floors", choice.pruned.size()),
                  choice.seconds * 1e3);
  for (size_t i = 0; i < choice.ranked.size() && static_cast<int>(i) < top; ++i)
    out += fmt::format("  {:2}. {:10.1f} us  {:<12} {}\n", i + 1, choice.ranked[i].us, choice.ranked[i].bound,
                       choice.ranked[i].knobs.empty() ? "(the knobs' defaults)" : choice.ranked[i].knobs);
  for (size_t i = 0; i < choice.refused.size() && static_cast<int>(i) < top; ++i)
    out += fmt::format("  refused: {}\n", choice.refused[i]);
  return out;
}

}  // namespace emmy::autosched
