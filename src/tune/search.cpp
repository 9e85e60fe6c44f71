// Successive halving over the pruned candidates within a wall-clock budget (search.hpp).
#include "tune/search.hpp"

#include <algorithm>
#include <random>

namespace emmy::tune {
namespace {

// Fast ones first (their last rung before the time: a later rung had more launches), failed last.
bool better(const Scored& a, const Scored& b) {
  if (a.measurement.ok != b.measurement.ok) return a.measurement.ok;
  if (!a.measurement.ok) return a.candidate->knobs < b.candidate->knobs;
  if (a.rung != b.rung) return a.rung > b.rung;
  if (a.measurement.time_us != b.measurement.time_us) return a.measurement.time_us < b.measurement.time_us;
  return a.candidate->knobs < b.candidate->knobs;
}

}  // namespace

double cutoff_us(double best_us, const SearchOptions& o) {
  return best_us > 0 && o.cutoff_factor > 0 ? std::max(o.cutoff_factor * best_us, o.cutoff_floor_us) : 0.0;
}

std::vector<Rung> plan_rungs(int n, const SearchOptions& o) {
  const int final_size = std::max(o.final_size, 1), eta = std::max(o.eta, 2);
  const int final_reps = std::min(o.max_reps, o.first_reps * eta * eta);
  if (n <= o.exhaustive_below) return {{n, final_reps}};
  std::vector<Rung> rungs;
  int reps = o.first_reps;
  for (int left = n;; left = std::max(final_size, (left + eta - 1) / eta), reps = std::min(o.max_reps, reps * eta)) {
    rungs.push_back({left, reps});
    if (left <= final_size) break;
  }
  return rungs;
}

SearchResult search(const std::vector<Candidate>& candidates, Measurer& measurer, Clock& clock, const SearchOptions& o) {
  SearchResult result;
  const double start = clock.seconds();
  const std::vector<Rung> rungs = plan_rungs(static_cast<int>(candidates.size()), o);
  std::vector<Scored> scored(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) scored[i].candidate = &candidates[i];
  std::vector<Scored*> alive;
  for (Scored& s : scored) alive.push_back(&s);
  // The first rung's order: hand-written blocks first, the rest shuffled.
  auto enumerated = std::stable_partition(alive.begin(), alive.end(),
                                          [](const Scored* s) { return s->candidate->origin != "enumerated"; });
  std::shuffle(enumerated, alive.end(), std::mt19937_64(o.seed));
  auto report = [&](int rung, int done, int total) {
    if (!o.on_progress) return;
    Progress p{rung, static_cast<int>(rungs.size()), done, total, std::nullopt, "", clock.seconds() - start};
    for (const Scored& s : scored)
      if (s.rung >= rung - 1 && s.measurement.ok && s.reps > 0 && (!p.best_us || s.measurement.time_us < *p.best_us)) {
        p.best_us = s.measurement.time_us;
        p.best_knobs = s.candidate->knobs;
      }
    o.on_progress(p);
  };
  double best_us = 0;  // the best correct time so far, for the cut-off
  size_t next_size = candidates.size();  // a cut-short rung passes on fewer survivors than planned
  for (size_t r = 0; r < rungs.size() && !alive.empty(); ++r) {
    alive.resize(std::min({alive.size(), static_cast<size_t>(rungs[r].candidates), next_size}));
    int done = 0;
    const double rung_end = r == 0 && rungs.size() > 1 ? o.budget_s * o.first_rung_share : o.budget_s;
    size_t measured_here = 0;
    for (Scored* s : alive) {
      if (clock.seconds() - start > rung_end) {
        if (r == 0 && rungs.size() > 1) {
          result.unmeasured = static_cast<int>(alive.size() - measured_here);
        } else {
          result.out_of_budget = true;
        }
        break;
      }
      ++measured_here;
      std::optional<Measurement> stored = o.known ? o.known(*s->candidate) : std::nullopt;
      if (stored) {
        s->measurement = *stored;
        s->stored = true;
      } else {
        s->measurement = measurer.measure(*s->candidate, rungs[r].reps, cutoff_us(best_us, o));
        s->stored = false;
        ++result.measured;
        if (s->measurement.cut_off) ++result.cut_off;
        if (o.on_measured) o.on_measured(*s->candidate, s->measurement, rungs[r].reps);
      }
      if (s->measurement.ok && (best_us == 0 || s->measurement.time_us < best_us)) best_us = s->measurement.time_us;
      s->rung = static_cast<int>(r);
      s->reps = rungs[r].reps;
      report(static_cast<int>(r), ++done, static_cast<int>(alive.size()));
    }
    result.rungs = static_cast<int>(r) + 1;
    if (result.out_of_budget) break;
    alive.resize(measured_here);
    const size_t eta = static_cast<size_t>(std::max(o.eta, 2));
    next_size = std::max(static_cast<size_t>(std::max(o.final_size, 1)), (measured_here + eta - 1) / eta);
    // The survivors: the fastest correct ones of this rung.
    std::stable_sort(alive.begin(), alive.end(), [](const Scored* a, const Scored* b) { return better(*a, *b); });
    while (!alive.empty() && !alive.back()->measurement.ok) alive.pop_back();
  }
  for (Scored& s : scored)
    if (s.reps > 0) result.ranked.push_back(s);
  std::stable_sort(result.ranked.begin(), result.ranked.end(), better);
  result.seconds = clock.seconds() - start;
  return result;
}

}  // namespace emmy::tune
