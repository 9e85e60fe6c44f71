// The tuner's search over pruned candidates: every candidate when the space is small, else
// successive halving (each rung measures the survivors with more launches and keeps the
// fastest part), within a wall-clock budget; a candidate whose output is wrong never ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tune/space.hpp"

namespace emmy::tune {

struct Measurement {
  bool ok = false;       // it ran and every output matched the reference
  double time_us = 0;    // median of the launches when ok
  std::string error;     // why not ok: a wrong output, a launch error, a crash, a timeout
  double occupancy = 0;  // resident warps / the SM's maximum, 0..1 (0 when unknown)
  // Its first launch took longer than the cut-off it was given: not timed further, not
  // checked, not ok (it could not have ranked); time_us holds that one launch.
  bool cut_off = false;
};

// Measures one candidate with `reps` timed launches (kRepsAsRun: as many as `emmyc run --bench`
// times, about 300 ms of launches); when `cutoff_us` > 0 and its first launch takes longer, it
// stops there (Measurement::cut_off). Implementations: the GPU through a worker process
// (measure_gpu.hpp), the interpreter in tests.
constexpr int kRepsAsRun = 0;
class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual Measurement measure(const Candidate& candidate, int reps, double cutoff_us) = 0;
  virtual std::string device() const = 0;
};

// Seconds since some start; tests pass a fake one that the measurer advances.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double seconds() = 0;
};

struct Progress {
  int rung = 0, rungs = 1;
  int done = 0, total = 0;  // in this rung
  std::optional<double> best_us;
  std::string best_knobs;
  double seconds = 0;
};

struct SearchOptions {
  double budget_s = 600;
  int final_size = 4;         // candidates measured in the last rung
  int eta = 4;                // each rung keeps 1 / eta of its candidates (at least final_size)
  int first_reps = 3;         // launches a candidate in the first rung; times eta each rung after
  int max_reps = 50;          // ... up to this many
  int exhaustive_below = 48;  // at most this many candidates: one rung, every one at the final reps
  // The first rung may use this share of the budget; past it, it ends with the candidates
  // measured so far, so the later rungs (more launches a candidate) still run. Its order:
  // the seeds first (first_rung_order), then the rest shuffled with `seed`, so that a cut-short
  // first rung samples every family. A sample cut short at sample_share is refined until
  // first_rung_share: the unmeasured neighbours (field_distance 1) of its refine_top best.
  double first_rung_share = 0.85;
  double sample_share = 0.7;
  int refine_top = 4;
  // A candidate whose first launch takes over cutoff_factor x the best time so far (and over
  // cutoff_floor_us) is cut off after that launch: the scalar tier's attention kernels take
  // 1,000 x the tensor-core ones, and timing them in full would eat the budget. 0: never.
  double cutoff_factor = 8;
  double cutoff_floor_us = 10000;
  uint64_t seed = 1;
  std::function<void(const Progress&)> on_progress;
  // A stored measurement (the database) stands for the candidate at every rung.
  std::function<std::optional<Measurement>(const Candidate&)> known;
  // Asked before a candidate's first measurement: "" to measure it, else why it is left out
  // (NVRTC built alongside the search: build_ahead.hpp).
  std::function<std::string(const Candidate&)> admit;
  // Each fresh measurement, as it is made (to store it).
  std::function<void(const Candidate&, const Measurement&, int reps)> on_measured;
};

struct Scored {
  const Candidate* candidate = nullptr;
  Measurement measurement;
  int rung = 0;  // the last rung it was measured in
  int reps = 0;
  bool stored = false;  // from the database, not measured in this search
};

struct SearchResult {
  std::vector<Scored> ranked;  // ok ones: last rung first, then by time; the failed ones after
  int measured = 0;            // fresh measurements made
  int rungs = 0;               // rungs run
  bool out_of_budget = false;  // stopped by the budget before the last rung completed
  int unmeasured = 0;          // candidates the first rung had no time for
  int cut_off = 0;             // measurements cut off after one launch
  int refined = 0;             // first-rung measurements of neighbours of the best (a cut-short sample)
  int left_out = 0;            // candidates `admit` refused
  double seconds = 0;
  const Scored* best() const { return !ranked.empty() && ranked.front().measurement.ok ? &ranked.front() : nullptr; }
};

SearchResult search(const std::vector<Candidate>& candidates, Measurer& measurer, Clock& clock,
                    const SearchOptions& options);

// A tuned block is written only where it is faster than no block: by kWriteMargin of the
// auto-schedule's time in the same search (origin "auto-schedule"; measurement noise is about 1%).
inline constexpr double kWriteMargin = 0.98;
// Why the search's best is not written as a block, "" when it is: the auto-schedule not measured
// (the budget ran out before it, or it failed), the auto-schedule itself, or not faster than it.
std::string why_not_written(const Scored& best, const std::vector<Scored>& ranked);

// The first rung's order (indices into `candidates`): the seeds (the auto-schedule, the
// hand-written blocks) as given, then the enumerated candidates fastest first by the cost model's
// `predicted_us`, a shuffle with `seed` breaking its ties (all of them where nothing is predicted).
// A budget that cuts the first rung short so measures the candidates the model ranks best.
std::vector<size_t> first_rung_order(const std::vector<Candidate>& candidates, uint64_t seed);

// How many fields of two knob lists differ, each knob's value split at '/': "STAGE=d2/tma/ring"
// vs "d3/tma/ring" or "d1/tma" (a field changed, one dropped with it) is 1; a knob only one
// list has is 1.
int field_distance(const std::string& a, const std::string& b);

// The cut-off for a measurement when the best correct time so far is `best_us` (0: none yet).
double cutoff_us(double best_us, const SearchOptions& options);
// The measurement of a candidate whose one launch took `one_us`, over `cutoff_us`.
Measurement cut_off_after(double one_us, double cutoff_us);

// The rungs' sizes and launch counts for `n` candidates (for the plan printed before a tune).
struct Rung {
  int candidates = 0;
  int reps = 0;
};
std::vector<Rung> plan_rungs(int n, const SearchOptions& options);

}  // namespace emmy::tune
