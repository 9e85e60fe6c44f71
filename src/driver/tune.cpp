// emmyc tune: enumerate and prune the op's knob space, search it on the GPU through a worker
// process, store every measurement, report the best against the hand-written blocks, and write
// the winner back into the file (tune.hpp).
#include "driver/tune.hpp"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "autosched/auto_schedule.hpp"

#include "driver/run.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/nvrtc.hpp"
#include "support/hash.hpp"
#include "support/paths.hpp"
#include "support/warning.hpp"
#include "support/write_file.hpp"
#include "tune/build_ahead.hpp"
#include "tune/database.hpp"
#include "tune/measure_gpu.hpp"
#include "tune/measure_in_turns.hpp"
#include "tune/search.hpp"
#include "tune/shape_class.hpp"
#include "tune/space.hpp"
#include "tune/write_back.hpp"

namespace emmy {
namespace {

class WallClock : public tune::Clock {
 public:
  double seconds() override { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string sizes_text(const SizeBindings& sizes) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : sizes) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, ","));
}

// The op as the lowering sees it (its tensor IR, calls inlined): the database's notion of
// "the same op", so that editing a comment or another op keeps the stored points.
std::string op_hash(const CheckedProgram& program, const CheckedOp& op) {
  return fmt::format("{:016x}", fnv1a(tir::print_program(lower::to_tensor(program, op))));
}

std::string input_dtype(const CheckedOp& op) {
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Input && t.elem.kind == Type::Kind::Scalar)
      return std::string(dtype_name(t.elem.dtype));
  return "f32";
}

// "TILE=a:x/k4,TILE@e=f64" -> {"TILE", "a:x/k4"}, {"TILE@e", "f64"} (through the codec).
std::vector<std::pair<std::string, std::string>> knob_pairs(const std::string& knobs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const KnobSetting& k : parse_knob_list(knobs).settings)
    out.emplace_back(fmt::format("{}{}{}", knob_name(k.knob), k.site.empty() ? "" : "@", k.site), print_knob_value(k));
  return out;
}

std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// The winner's tensor-core geometry in FA-2's terms: rows a CTA, warps, m-atoms a warp, the
// streamed block's columns, the K chunk.
std::string geometry(const std::string& knobs) {
  for (const KnobSetting& s : parse_knob_list(knobs).settings) {
    const auto* t = std::get_if<TileValue>(&s.value);
    if (s.knob != Knob::Tile || !s.site.empty() || !t || t->atom.empty() || t->atom == "scalar") continue;
    const std::optional<AtomInfo> atom = find_atom(t->atom);
    if (!atom || !t->warps_m) return "";
    const int wm = *t->warps_m, wn = t->warps_n.value_or(1), k = t->k_chunk.value_or(4);
    if (atom->tier == AtomTier::Wgmma)
      return fmt::format(
          "{} rows a CTA ({} warpgroups of 64), {} warps, {}-column blocks (the atom's N), {}-deep K chunks",
          wm / 4 * 64, wm / 4, wm * wn, atom->n, 16 * k);
    const int fm = t->frag_m.value_or(1), fn = t->frag_n.value_or(8);
    return fmt::format(
        "{} rows a CTA, {} warps (w{}x{}), {} m-atoms ({} rows) a warp, {}-column blocks (f{}x{}), {}-deep K chunks",
        wm * fm * 16, wm * wn, wm, wn, fm, fm * 16, fn * 8 * wn, fm, fn, 16 * k);
  }
  return "";
}

void print_table(const std::vector<tune::Scored>& ranked, int top, std::ostream& out) {
  out << fmt::format("{:>4} {:>10} {:>8} {:>5} {:>8} {:>5}  {:<28} {}\n", "rank", "us", "vs best", "regs", "smem",
                     "occ", "origin", "knobs");
  const double best = ranked.empty() || !ranked.front().measurement.ok ? 0 : ranked.front().measurement.time_us;
  int shown = 0;
  for (const tune::Scored& s : ranked) {
    if (!s.measurement.ok || shown >= top) break;
    const tune::Candidate& c = *s.candidate;
    out << fmt::format("{:>4} {:>10.1f} {:>7.2f}x {:>5} {:>7.1f}K {:>4.0f}%  {:<28} {}\n", ++shown,
                       s.measurement.time_us, best / s.measurement.time_us, c.registers, c.smem_bytes / 1024.0,
                       100 * s.measurement.occupancy, c.origin == "enumerated" ? "" : c.origin.substr(0, 28), c.knobs);
  }
}

// The kinds of reason ("not honoured", "sizes", "spills"...) with their counts.
std::string pruned_summary(const std::vector<tune::Pruned>& pruned) {
  std::map<std::string, int> counts;
  for (const tune::Pruned& p : pruned) ++counts[p.kind];
  std::vector<std::string> parts;
  for (const auto& [why, n] : counts) parts.push_back(fmt::format("{} {}", n, why));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The auto-schedule at the tuning sizes as the first point of the space, before the op's blocks
// and the enumerated points (in place of the same knob list among them): the search measures it
// first, whatever the budget leaves for the rest (at (8192, 50257) six slow blocks took a 30 s
// budget before it), and a block is written only where it beats it (tune::why_not_written).
std::vector<tune::Enumerated> with_auto_schedule(std::vector<tune::Enumerated> points, const std::string& knobs) {
  std::erase_if(points, [&](const tune::Enumerated& p) { return p.knobs == knobs; });
  points.insert(points.begin(), {knobs, "auto-schedule"});
  return points;
}

// The winner against the hand-written blocks after the search. Each block with the winner's
// kernels (the same CUDA) is the winner and is not measured again. The others and the winner
// are measured in turns (measure_in_turns.hpp), so that the comparison does not depend on
// which was measured first; the winner's time becomes its time in the turns. When the search
// measured nothing (every point from the database), the stored times stand.
struct BlockComparison {
  tune::Scored winner;
  std::vector<tune::Scored> blocks;  // the correct ones fastest first, then the others
  const tune::Candidate* same_as_winner = nullptr;
};
constexpr int kComparisonTurns = 5;

BlockComparison compare_with_blocks(const tune::Scored& winner, const std::vector<const tune::Candidate*>& blocks,
                                    tune::Measurer& measurer, const tune::SearchOptions& so, int reps, bool fresh) {
  BlockComparison c{winner, {}, nullptr};
  std::vector<const tune::Candidate*> contenders{winner.candidate};
  for (const tune::Candidate* b : blocks) {
    if (b->cuda_hash == winner.candidate->cuda_hash) {
      if (!c.same_as_winner) c.same_as_winner = b;
      continue;
    }
    tune::Scored s;
    s.candidate = b;
    s.reps = reps;
    if (std::optional<tune::Measurement> stored = fresh ? std::nullopt : so.known(*b)) {
      s.measurement = *stored;
      s.stored = true;
    } else {
      contenders.push_back(b);
    }
    c.blocks.push_back(s);
  }
  if (contenders.size() > 1) {
    const std::vector<tune::Measurement> turns = tune::measure_in_turns(
        contenders, measurer, reps, kComparisonTurns, tune::cutoff_us(winner.measurement.time_us, so));
    for (size_t i = 0; i < contenders.size(); ++i) so.on_measured(*contenders[i], turns[i], reps);
    if (turns[0].ok) c.winner.measurement = turns[0];
    for (tune::Scored& s : c.blocks)
      if (!s.stored)
        s.measurement = turns[std::find(contenders.begin(), contenders.end(), s.candidate) - contenders.begin()];
  }
  std::stable_sort(c.blocks.begin(), c.blocks.end(), [](const tune::Scored& a, const tune::Scored& b) {
    return a.measurement.ok && (!b.measurement.ok || a.measurement.time_us < b.measurement.time_us);
  });
  return c;
}

// --write: the block into the file, checked, in one rename (write_file: symlinks followed, mode kept).
int write_winner(const TuneOptions& o, const tune::TunedBlock& block, std::ostream& out, std::ostream& err) {
  std::optional<std::string> text = read_file(o.file);
  if (!text) {
    err << fmt::format("emmyc: error: cannot read '{}' to write the tuned block\n", o.file);
    return 1;
  }
  try {
    tune::WriteBack wb = tune::write_tuned_block(o.file, *text, block, o.stdlib_dirs);
    if (const std::string failed = write_file(o.file, wb.text); !failed.empty()) throw std::runtime_error(failed);
    out << fmt::format("{}: {}\n", o.file, wb.action);
  } catch (const std::exception& e) {
    err << "emmyc: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

std::optional<double> parse_duration(std::string_view text) {
  static constexpr std::pair<char, double> kUnits[] = {{'s', 1}, {'m', 60}, {'h', 3600}};
  double scale = 1;
  if (!text.empty())
    for (auto [unit, seconds] : kUnits)
      if (text.back() == unit) {
        scale = seconds;
        text.remove_suffix(1);
      }
  std::string number(text);
  char* end = nullptr;
  const double value = number.empty() ? 0 : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(value > 0)) return std::nullopt;
  return value * scale;
}

namespace {

// A shape's winner under --shapes: its block and its shape class.
struct ClassWinner {
  tune::TunedBlock block;
  tune::ShapeClass cls;
  std::string not_written;  // why the block is not written ("": it is); the class still bounds the others' guards
};

// One shape: the search, the report, and the winner written into the file (--write), or given
// to `tuned` (named after its shape class, and with it) when the caller writes it (--shapes).
int tune_one(const CheckedProgram& program, const LowerOptions& lo, const TuneOptions& o, std::ostream& json_out,
             std::ostream& err, std::optional<ClassWinner>* tuned) {
  // --json: the report as one JSON object on stdout; the human-readable lines go to stderr.
  std::ostream& out = o.json ? err : json_out;
  nlohmann::json report;
  const CheckedOp* op = nullptr;
  if (!lower_for_driver(program, lo, err, &op)) return 1;
  const std::optional<SizeBindings> bound = bind_shape(*op, o.shape, err);
  if (!bound) return 2;
  const SizeBindings& sizes = *bound;
  const std::optional<ScalarValues> scalars = bind_set(*op, o.set, err);
  if (!scalars) return 2;
  // The problem tuned: the sizes and the values --set gives (they change the work, e.g. a window).
  const std::string set_text = scalars_text(*scalars);
  const tune::ShapeClass shape_class = tune::shape_class({sizes.begin(), sizes.end()});
  const std::string problem = set_text.empty() ? shape_class.text() : shape_class.text() + ";" + set_text;
  const TargetInfo& target = *find_target(lo.target);
  const std::string op_name = op->decl->name.name;
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());

  // The space, pruned without a GPU.
  WallClock clock;
  const bool seed = o.blocks == "seed";
  const autosched::AutoSchedule chosen = autosched::auto_schedule(program, *op, target, &sizes, lo.chains);
  tune::Space space =
      tune::prune_space(program, *op, target, sizes,
                        with_auto_schedule(tune::enumerate_knobs(program, *op, target, lo.chains, seed), chosen.knobs),
                        lo.chains, threads);
  tune::Space references;  // --blocks reference: the op's blocks, measured after the search
  if (!seed)
    references =
        tune::prune_space(program, *op, target, sizes, tune::block_knobs(program, *op, target), lo.chains, threads);
  out << fmt::format("{} on {} at {} (shape class {}){}: {} enumerated, {} lowered as asked ({:.1f} s); pruned: {}\n",
                     op_name, target.name, sizes_text(sizes), shape_class.text(),
                     set_text.empty() ? "" : ", set " + set_text, space.enumerated, space.candidates.size(),
                     clock.seconds(), space.pruned.empty() ? "none" : pruned_summary(space.pruned));
  out << std::flush;
  // NVRTC: every candidate now for a dry run; for a search, alongside it (BuildAhead below).
  std::string no_nvrtc;
  const size_t before = space.pruned.size();
  const bool nvrtc = runtime::nvrtc_available(&no_nvrtc);
  // The builds go through the kernel cache, which the measuring worker loads from: an unusable
  // one is said once here, not once a candidate.
  if (const std::string off = nvrtc ? runtime::cache_warning({}) : ""; !off.empty())
    err << "emmyc: " << render_warning({"W070", off}) << "\n";
  if (!references.candidates.empty()) tune::prune_by_ptxas(references, target, threads, &no_nvrtc);
  if (nvrtc && o.dry_run) {
    tune::prune_by_ptxas(space, target, threads, &no_nvrtc);
    const std::vector<tune::Pruned> built(space.pruned.begin() + static_cast<std::ptrdiff_t>(before),
                                          space.pruned.end());
    out << fmt::format("NVRTC: {} candidates build, spilling at most {} bytes ({:.1f} s); pruned: {}\n",
                       space.candidates.size(), tune::kMaxSpillBytes, clock.seconds(),
                       built.empty() ? "none" : pruned_summary(built));
  } else if (!nvrtc) {
    out << "NVRTC is not available (" << no_nvrtc << "): registers and spills not checked\n";
  }
  std::map<std::string, int> pruned_kinds;
  for (const tune::Pruned& p : space.pruned) ++pruned_kinds[p.kind];
  report = {{"op", op_name},
            {"target", std::string(target.name)},
            {"sizes", sizes},
            {"shape_class", shape_class.text()},
            {"set", scalars_json(*scalars)},
            {"enumerated", space.enumerated},
            {"candidates", space.candidates.size()},
            {"pruned", pruned_kinds},
            {"blocks", o.blocks}};
  if (space.candidates.empty()) {
    err << "emmyc: error: no candidate is left to measure\n";
    return 1;
  }
  tune::SearchOptions so;
  so.budget_s = o.budget_s;
  std::vector<tune::Rung> rungs = tune::plan_rungs(static_cast<int>(space.candidates.size()), so);
  std::vector<std::string> plan;
  for (const tune::Rung& r : rungs) plan.push_back(fmt::format("{} x {} launches", r.candidates, r.reps));
  out << fmt::format("search: {} (budget {:.0f} s)\n", fmt::join(plan, ", then "), o.budget_s);
  if (!seed)
    out << fmt::format("the op's {} schedule block{} for {}: measured after the search, for comparison only\n",
                       references.candidates.size(), references.candidates.size() == 1 ? "" : "s", target.name);
  if (o.dry_run) {  // fastest first by the cost model (docs/auto_schedule.md)
    std::vector<const tune::Candidate*> ranked;
    for (const tune::Candidate& c : space.candidates) ranked.push_back(&c);
    std::stable_sort(ranked.begin(), ranked.end(), [](const tune::Candidate* a, const tune::Candidate* b) {
      return a->predicted_us < b->predicted_us;
    });
    out << "the candidates, fastest first by the cost model (predicted time, registers, shared memory):\n";
    for (const tune::Candidate* c : ranked) {
      out << fmt::format("  {:<72} {:>9.1f} us {:>3} regs {:>7.1f}K{}\n", c->knobs, c->predicted_us, c->registers,
                         c->smem_bytes / 1024.0, c->origin == "enumerated" ? "" : "  (" + c->origin + ")");
      report["space"].push_back({{"knobs", c->knobs},
                                 {"predicted_us", c->predicted_us},
                                 {"registers", c->registers},
                                 {"smem_bytes", c->smem_bytes},
                                 {"origin", c->origin}});
    }
    if (o.json) json_out << report.dump(2) << "\n";
    return 0;
  }

  // The database's points for this problem, then the measuring worker if any candidate has none.
  std::string no_gpu;
  const std::optional<std::string> device = runtime::device_name(&no_gpu);
  if (!device) {
    err << "emmyc: error: tuning measures on the GPU, and there is none: " << no_gpu
        << " (--dry-run enumerates and prunes without one)\n";
    return 1;
  }
  std::optional<tune::Database> db;
  const std::string db_path = o.db_path.empty() ? tune::Database::default_path() : o.db_path;
  try {
    if (!db_path.empty()) db = tune::Database::open(db_path);
  } catch (const tune::DatabaseError& e) {
    err << "emmyc: warning: " << e.what() << ": measuring without the database\n";
  }
  const tune::TuneKey key{op_hash(program, *op), op_name, o.file, std::string(target.name), *device, problem,
                          input_dtype(*op)};
  std::map<std::string, tune::Point> stored;
  if (db)
    for (tune::Point& p : db->points(key)) stored.emplace(p.knobs, std::move(p));
  // A class not tuned yet: the nearest tuned one's winner, for comparison (and a start).
  if (db && stored.empty())
    if (std::optional<tune::NearestClass> near = tune::nearest_class(*db, key)) {
      const tune::Point& best = *near->entry.best;
      const bool candidate = std::any_of(space.candidates.begin(), space.candidates.end(),
                                         [&](const tune::Candidate& c) { return c.knobs == best.knobs; });
      out << fmt::format("nearest tuned shape class: {} ({:.1f} doublings away): {} at {:.1f} us{}\n",
                         near->entry.key.shape_class, near->distance, best.knobs, best.time_us.value_or(0),
                         candidate ? "" : " (not a candidate here)");
      report["nearest_class"] = {{"shape_class", near->entry.key.shape_class},
                                 {"distance", near->distance},
                                 {"knobs", best.knobs},
                                 {"time_us", best.time_us.value_or(0)}};
    }
  size_t unknown = 0;
  for (const tune::Candidate& c : space.candidates) unknown += stored.count(c.knobs) ? 0 : 1;
  const std::string log =
      (std::filesystem::temp_directory_path() / fmt::format("emmyc-tune-{}.log", getpid())).string();
  std::vector<std::string> worker_args{o.self,
                                       "tune-worker",
                                       o.file,
                                       "--op",
                                       op_name,
                                       "--shape",
                                       sizes_text(sizes),
                                       "--target",
                                       std::string(target.name),
                                       "--seed",
                                       std::to_string(o.seed)};
  if (!set_text.empty()) worker_args.insert(worker_args.end(), {"--set", set_text});
  tune::WorkerMeasurer measurer(worker_args, o.timeout_s, log);
  if (unknown == 0) {
    out << fmt::format("device: {}; every candidate is in the database ({}): nothing to measure\n", *device,
                       db ? db->path() : "");
  } else {
    try {
      measurer.start();
    } catch (const std::exception& e) {
      err << "emmyc: error: " << e.what() << "\n";
      return 1;
    }
    out << fmt::format("device: {}; reference: {}; {} of {} candidates in the database\n", measurer.device(),
                       measurer.reference(), space.candidates.size() - unknown, space.candidates.size());
  }
  // NVRTC alongside the search, in its order, on all cores but the worker's; a candidate it
  // rules out is stored as failed, so that a re-run does not build it again.
  std::unique_ptr<tune::BuildAhead> ahead;
  if (nvrtc && unknown > 0) {
    ahead = std::make_unique<tune::BuildAhead>(space.candidates, target, std::max(threads - 1, 1),
                                               tune::first_rung_order(space.candidates, so.seed));
    out << fmt::format(
        "NVRTC: building the candidates alongside the search, in its order (spills of at most {} bytes "
        "kept)\n",
        tune::kMaxSpillBytes);
  }
  // A measurement into the database (a failing database is a warning: the search goes on).
  auto store = [&](const tune::Candidate& c, const tune::Measurement& m) {
    if (!db) return;
    try {
      db->record(key, {c.knobs, m.ok, m.cut_off, m.ok || m.cut_off ? std::optional<double>(m.time_us) : std::nullopt,
                       c.registers, c.smem_bytes, m.occupancy, m.error, ""});
    } catch (const tune::DatabaseError& e) {
      err << "emmyc: warning: " << e.what() << "\n";
    }
  };
  if (ahead)
    so.admit = [&](const tune::Candidate& c) -> std::string {
      const tune::Pruned v = ahead->verdict(static_cast<size_t>(&c - space.candidates.data()));
      if (v.kind.empty()) return "";
      tune::Measurement refused;
      refused.error = v.kind + ": " + v.reason;
      store(c, refused);
      return refused.error;
    };
  so.known = [&](const tune::Candidate& c) -> std::optional<tune::Measurement> {
    auto it = stored.find(c.knobs);
    if (it == stored.end()) return std::nullopt;
    return tune::Measurement{it->second.ok, it->second.time_us.value_or(0), it->second.error, it->second.occupancy,
                             it->second.cut_off};
  };
  so.on_measured = [&](const tune::Candidate& c, const tune::Measurement& m, int) { store(c, m); };
  so.on_progress = [&](const tune::Progress& p) {
    const std::string best = p.best_us ? fmt::format("best {:.1f} us", *p.best_us) : "no result yet";
    if (o.progress)
      err << fmt::format("\r[rung {}/{}] {}/{}  {:.0f} s  {}  ", p.rung + 1, p.rungs, p.done, p.total, p.seconds, best)
          << std::flush;
    else if (p.done == p.total)
      err << fmt::format("rung {}/{}: {} candidates through, {:.0f} s, {}\n", p.rung + 1, p.rungs, p.total, p.seconds,
                         best);
  };
  WallClock search_clock;
  tune::SearchResult result = tune::search(space.candidates, measurer, search_clock, so);
  if (o.progress) err << "\n";
  if (ahead) {
    const std::vector<tune::Pruned> late = ahead->pruned();
    out << fmt::format("NVRTC: built {} of {} candidates; pruned: {}\n", ahead->built(), space.candidates.size(),
                       late.empty() ? "none" : pruned_summary(late));
    for (const tune::Pruned& p : late) ++pruned_kinds[p.kind];
    report["pruned"] = pruned_kinds;
    report["built"] = ahead->built();
    so.admit = nullptr;
    ahead.reset();  // the builds still queued are not needed
  }
  const tune::Scored* best = result.best();
  int failed = 0, cut_off = 0, from_database = 0;
  for (const tune::Scored& s : result.ranked) {
    from_database += s.stored ? 1 : 0;
    cut_off += s.measurement.cut_off ? 1 : 0;
    failed += s.measurement.ok || s.measurement.cut_off ? 0 : 1;
  }
  out << fmt::format("measured {} ({} from the database), {} failed, {} cut off after one launch, {:.0f} s{}\n",
                     result.ranked.size(), from_database, failed, cut_off, result.seconds,
                     result.out_of_budget ? " (the budget ran out)" : "");
  if (!best) {
    err << "emmyc: error: no candidate ran correctly";
    for (const tune::Scored& s : result.ranked) {
      err << ": " << s.candidate->knobs << ": " << s.measurement.error;
      break;
    }
    err << "\n";
    return 1;
  }
  print_table(result.ranked, o.top, out);
  // The hand-written blocks: the best one among the candidates (seed), or every block of the op
  // (reference), against the winner in turns.
  std::vector<const tune::Candidate*> block_candidates;
  if (seed) {
    for (const tune::Scored& s : result.ranked)
      if (s.measurement.ok && s.candidate->origin.starts_with("schedule ")) {  // not the auto-schedule
        block_candidates.push_back(s.candidate);
        break;
      }
  } else {
    for (const tune::Candidate& c : references.candidates) block_candidates.push_back(&c);
  }
  const BlockComparison comparison =
      compare_with_blocks(*best, block_candidates, measurer, so, rungs.back().reps, result.measured > 0);
  const tune::Scored& winner = comparison.winner;
  if (comparison.winner.measurement.time_us != best->measurement.time_us)
    out << fmt::format("the winner measured again in {} turns with the hand-written blocks: {:.1f} us\n",
                       kComparisonTurns, winner.measurement.time_us);
  // The time written into the block: timed as `emmyc run --bench` times it, so that it is the
  // time that command reproduces (the rungs' short bursts run a few percent faster on a GPU that
  // is not yet hot). The database keeps the rungs' times, comparable with the other points.
  double recorded_us = winner.measurement.time_us;
  if (result.measured > 0) {
    const tune::Measurement as_run = measurer.measure(*winner.candidate, tune::kRepsAsRun, 0);
    if (as_run.ok) {
      recorded_us = as_run.time_us;
      out << fmt::format("the winner timed as `emmyc run --bench` times it (about 300 ms of launches): {:.1f} us\n",
                         recorded_us);
    }
  }
  const std::string winner_geometry = geometry(winner.candidate->knobs);
  if (!winner_geometry.empty()) out << "geometry found: " << winner_geometry << "\n";
  if (op->reductions.size() >= 2 && !winner_geometry.empty())
    out << "FA-2's hand-picked geometry: 128 rows a CTA, 4 warps, 2 m-atoms (32 rows) a warp, 64-key blocks\n";
  const tune::Scored* hand =
      comparison.blocks.empty() || !comparison.blocks.front().measurement.ok ? nullptr : &comparison.blocks.front();
  std::string hand_text = "no hand-written block for this target";
  if (comparison.same_as_winner)
    hand_text = fmt::format("the winner is a hand-written block's schedule: {} (the same kernels)",
                            comparison.same_as_winner->origin);
  else if (hand)
    hand_text = fmt::format("best hand-written{}: {} {:.1f} us ({:.2f}x the winner's {:.1f} us{})",
                            seed ? "" : " (not a candidate)", hand->candidate->origin, hand->measurement.time_us,
                            hand->measurement.time_us / winner.measurement.time_us, winner.measurement.time_us,
                            hand->stored ? "" : ", measured in turns");
  out << hand_text << "\n";
  if (comparison.same_as_winner && hand)
    out << fmt::format("next hand-written: {} {:.1f} us ({:.2f}x the winner)\n", hand->candidate->origin,
                       hand->measurement.time_us, hand->measurement.time_us / winner.measurement.time_us);
  for (const tune::Scored& s : result.ranked)
    if (s.candidate->origin == "auto-schedule" && s.measurement.ok)
      out << fmt::format("the auto-schedule ({}): {:.1f} us in the search ({:.2f}x the winner there){}\n",
                         s.candidate->knobs, s.measurement.time_us, s.measurement.time_us / best->measurement.time_us,
                         s.candidate == winner.candidate ? ": the winner" : "");
  auto scored_json = [](const tune::Scored& x) {
    return nlohmann::json{{"knobs", x.candidate->knobs},
                          {"origin", x.candidate->origin},
                          {"ok", x.measurement.ok},
                          {"time_us", x.measurement.time_us},
                          {"error", x.measurement.error},
                          {"registers", x.candidate->registers},
                          {"smem_bytes", x.candidate->smem_bytes},
                          {"occupancy", x.measurement.occupancy},
                          {"rung", x.rung},
                          {"reps", x.reps},
                          {"stored", x.stored}};
  };
  report["device"] = *device;
  report["measured"] = result.ranked.size();
  report["from_database"] = from_database;
  report["failed"] = failed;
  report["cut_off"] = cut_off;
  report["seconds"] = result.seconds;
  report["out_of_budget"] = result.out_of_budget;
  report["best"] = scored_json(winner);
  report["recorded_us"] = recorded_us;
  report["geometry"] = winner_geometry;
  report["hand_written"] = hand ? scored_json(*hand) : nlohmann::json();
  report["hand_written_same_as_winner"] =
      comparison.same_as_winner ? nlohmann::json(comparison.same_as_winner->origin) : nlohmann::json();
  for (size_t i = 0; i < result.ranked.size() && static_cast<int>(i) < o.top; ++i)
    report["ranked"].push_back(scored_json(result.ranked[i]));
  if (!o.write && !tuned) {
    if (o.json) json_out << report.dump(2) << "\n";
    return 0;
  }
  tune::TunedBlock block{op_name,
                         std::string(target.name),
                         knob_pairs(winner.candidate->knobs),
                         {fmt::format("{}, {} {}: {:.1f} us", *device, sizes_text(sizes), key.dtype, recorded_us),
                          fmt::format("{}; {} candidates, {} measured in {:.0f} s; {}", utc_now("%Y-%m-%d"),
                                      space.candidates.size(), result.ranked.size(), result.seconds, hand_text)}};
  const std::string why_not = tune::why_not_written(*best, result.ranked);
  report["not_written"] = why_not;
  if (!why_not.empty()) out << "not written: " << why_not << "\n";
  if (tuned) {
    block.name = std::string(tune::kClassBlockPrefix) + shape_class.text();
    *tuned = ClassWinner{std::move(block), shape_class, why_not};
    if (o.json) json_out << report.dump(2) << "\n";
    return 0;
  }
  if (!why_not.empty()) {
    report["written"] = false;
    if (o.json) json_out << report.dump(2) << "\n";
    return 0;
  }
  const int status = write_winner(o, block, out, err);
  report["written"] = status == 0;
  // The written block is the unguarded default; a guarded block that holds here runs first.
  if (auto at = lower::select_schedule(program, op_name, target, "", &sizes);
      status == 0 && std::holds_alternative<const CheckedSchedule*>(at))
    if (const CheckedSchedule* s = std::get<const CheckedSchedule*>(at); s && s->decl->guard)
      err << fmt::format(
          "emmyc: note: {}:{}: a guarded block of {} holds at these sizes and runs before the written one: "
          "drop or narrow its guard to run the tuned block here\n",
          s->place.path, s->place.line, op_name);
  if (o.json) json_out << report.dump(2) << "\n";
  return status;
}

}  // namespace

int tune_op(const CheckedProgram& program, const LowerOptions& lo, const TuneOptions& o, std::ostream& json_out,
            std::ostream& err) {
  if (o.shapes.empty()) return tune_one(program, lo, o, json_out, err, nullptr);
  // --shapes: each shape its own problem, the budget split between them; with --write, each
  // shape class's winner as a block named after the class, guarded to the sizes nearer its class
  // than the others' (tune::class_guards), after the op's blocks.
  std::ostream& out = o.json ? err : json_out;
  std::vector<ClassWinner> winners;
  std::vector<tune::ShapeClass> classes;  // theirs, in order
  int status = 0;
  for (const std::string& shape : o.shapes) {
    TuneOptions one = o;
    one.shape = shape;
    one.shapes.clear();
    one.budget_s = o.budget_s / static_cast<double>(o.shapes.size());
    out << fmt::format("-- {} ({} of {})\n", shape, &shape - o.shapes.data() + 1, o.shapes.size());
    std::optional<ClassWinner> tuned;
    const int one_status = tune_one(program, lo, one, json_out, err, o.write ? &tuned : nullptr);
    status = std::max(status, one_status);
    if (!tuned) continue;
    const std::string cls = tuned->cls.text();
    if (std::any_of(classes.begin(), classes.end(), [&](const tune::ShapeClass& c) { return c.text() == cls; })) {
      out << fmt::format("{} is in shape class {}, tuned above: one block for both\n", shape, cls);
      continue;
    }
    classes.push_back(tuned->cls);
    winners.push_back(std::move(*tuned));
  }
  // Every tuned class bounds the others' guards, written or not: where the auto-schedule won, no
  // other class's block reaches.
  const std::vector<std::string> guards = tune::class_guards(classes);
  for (size_t i = 0; i < winners.size(); ++i) {
    if (!winners[i].not_written.empty()) continue;
    winners[i].block.guard = guards[i];
    status = std::max(status, write_winner(o, winners[i].block, out, err));
  }
  return status;
}

int tune_list(const std::string& db_path, std::ostream& out, std::ostream& err) {
  const std::string path = db_path.empty() ? tune::Database::default_path() : db_path;
  if (path.empty()) {
    err << "emmyc: error: no tuning database ($EMMY_TUNE_DB, $XDG_CACHE_HOME and $HOME are unset)\n";
    return 1;
  }
  try {
    tune::Database db = tune::Database::open(path);
    std::vector<tune::Database::Entry> entries = db.list();
    out << fmt::format("{}: {} tuned problem{}\n", path, entries.size(), entries.size() == 1 ? "" : "s");
    for (const tune::Database::Entry& e : entries)
      out << fmt::format("  {} {} {} {} {} on {}: {} points ({} ok){}; last {}\n", e.key.file, e.key.op, e.key.target,
                         e.key.shape_class, e.key.dtype, e.key.device, e.points, e.ok_points,
                         e.best ? fmt::format(", best {:.1f} us {}", e.best->time_us.value_or(0), e.best->knobs) : "",
                         e.last_measured);
  } catch (const tune::DatabaseError& e) {
    err << "emmyc: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace emmy
