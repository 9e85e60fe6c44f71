// Successive halving over the pruned candidates within a wall-clock budget (search.hpp).
#include "tune/search.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include <fmt/format.h>

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

// A knob list as each knob's value split at '/': "TILE=a:mma/w4x2/f4x8/k8,FAST_EXP=1" ->
// {TILE: [a:mma, w4x2, f4x8, k8], FAST_EXP: [1]}.
using Fields = std::map<std::string, std::vector<std::string>>;
Fields fields_of(const std::string& knobs) {
  Fields out;
  for (size_t at = 0; at < knobs.size();) {
    const size_t comma = std::min(knobs.find(',', at), knobs.size());
    const std::string pair = knobs.substr(at, comma - at);
    const size_t eq = pair.find('=');
    std::vector<std::string>& fields = out[pair.substr(0, eq)];
    const std::string value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    for (size_t from = 0;;) {
      const size_t slash = std::min(value.find('/', from), value.size());
      fields.push_back(value.substr(from, slash - from));
      if (slash == value.size()) break;
      from = slash + 1;
    }
    at = comma + 1;
  }
  return out;
}

// Within one knob: the fields both have that differ, or 1 when only the length differs.
int knob_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  int d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d += a[i] == b[i] ? 0 : 1;
  return std::max(d, a.size() != b.size() ? 1 : 0);
}

int distance(const Fields& fa, const Fields& fb) {
  int d = 0;
  for (const auto& [k, v] : fa) d += fb.count(k) ? knob_distance(v, fb.at(k)) : 1;
  for (const auto& [k, v] : fb) d += fa.count(k) ? 0 : 1;
  return d;
}

}  // namespace

int field_distance(const std::string& a, const std::string& b) { return distance(fields_of(a), fields_of(b)); }

double cutoff_us(double best_us, const SearchOptions& o) {
  return best_us > 0 && o.cutoff_factor > 0 ? std::max(o.cutoff_factor * best_us, o.cutoff_floor_us) : 0.0;
}

Measurement cut_off_after(double one_us, double cutoff_us) {
  Measurement m;
  m.cut_off = true;
  m.time_us = one_us;
  m.error = fmt::format("cut off: one launch took {:.1f} us, over the cut-off of {:.1f} us", one_us, cutoff_us);
  return m;
}

std::vector<size_t> first_rung_order(const std::vector<Candidate>& candidates, uint64_t seed) {
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto enumerated =
      std::stable_partition(order.begin(), order.end(), [&](size_t i) { return candidates[i].origin != "enumerated"; });
  std::shuffle(enumerated, order.end(), std::mt19937_64(seed));
  std::stable_sort(enumerated, order.end(),
                   [&](size_t a, size_t b) { return candidates[a].predicted_us < candidates[b].predicted_us; });
  return order;
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

SearchResult search(const std::vector<Candidate>& candidates, Measurer& measurer, Clock& clock,
                    const SearchOptions& o) {
  SearchResult result;
  const double start = clock.seconds();
  const std::vector<Rung> rungs = plan_rungs(static_cast<int>(candidates.size()), o);
  std::vector<Scored> scored(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) scored[i].candidate = &candidates[i];
  std::vector<Scored*> alive;
  for (size_t i : first_rung_order(candidates, o.seed)) alive.push_back(&scored[i]);
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
  auto measure = [&](Scored* s, size_t r) {
    std::optional<Measurement> stored = o.known ? o.known(*s->candidate) : std::nullopt;
    if (stored) {
      s->measurement = *stored;
      s->stored = true;
    } else if (std::string why = o.admit && s->reps == 0 ? o.admit(*s->candidate) : ""; !why.empty()) {
      s->measurement = Measurement{};  // left out: never ranks (reps stays 0)
      s->measurement.error = why;
      ++result.left_out;
      return;
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
  };
  size_t next_size = candidates.size();  // a cut-short rung passes on fewer survivors than planned
  for (size_t r = 0; r < rungs.size() && !alive.empty(); ++r) {
    alive.resize(std::min({alive.size(), static_cast<size_t>(rungs[r].candidates), next_size}));
    int done = 0;
    const bool sampling = r == 0 && rungs.size() > 1;
    const double rung_end = sampling ? o.budget_s * o.sample_share : o.budget_s;
    size_t measured_here = 0;
    for (Scored* s : alive) {
      if (clock.seconds() - start > rung_end) {
        if (!sampling) result.out_of_budget = true;
        break;
      }
      ++measured_here;
      measure(s, r);
      report(static_cast<int>(r), ++done, static_cast<int>(alive.size()));
    }
    // A sample cut short: measure the unmeasured neighbours of the best ones (one field of
    // their knobs changed), best first, until none is left or the first rung's time is up.
    std::vector<Fields> fields;  // each candidate's, parsed once
    if (sampling && measured_here < alive.size())
      for (const Candidate& c : candidates) fields.push_back(fields_of(c.knobs));
    auto fields_at = [&](const Scored* s) -> const Fields& {
      return fields[static_cast<size_t>(s->candidate - candidates.data())];
    };
    while (sampling && measured_here < alive.size() && clock.seconds() - start <= o.budget_s * o.first_rung_share) {
      std::stable_sort(alive.begin(), alive.begin() + static_cast<std::ptrdiff_t>(measured_here),
                       [](const Scored* a, const Scored* b) { return better(*a, *b); });
      size_t pick = alive.size();
      for (size_t t = 0; t < std::min(measured_here, static_cast<size_t>(o.refine_top)) && pick == alive.size(); ++t) {
        if (!alive[t]->measurement.ok) break;
        for (size_t j = measured_here; j < alive.size() && pick == alive.size(); ++j)
          if (distance(fields_at(alive[t]), fields_at(alive[j])) == 1) pick = j;
      }
      if (pick == alive.size()) break;
      std::swap(alive[measured_here], alive[pick]);
      measure(alive[measured_here++], r);
      ++result.refined;
      report(static_cast<int>(r), ++done, static_cast<int>(alive.size()));
    }
    if (sampling) result.unmeasured = static_cast<int>(alive.size() - measured_here);
    if (measured_here < alive.size()) report(static_cast<int>(r), done, done);  // the rung ends here
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

std::string why_not_written(const Scored& best, const std::vector<Scored>& ranked) {
  auto it = std::find_if(ranked.begin(), ranked.end(),
                         [](const Scored& s) { return s.candidate && s.candidate->origin == "auto-schedule"; });
  if (it == ranked.end() || !it->measurement.ok)
    return "the auto-schedule was not measured (raise --budget): a block not measured against it may be slower "
           "than no block";
  if (it->candidate->knobs == best.candidate->knobs)
    return "the auto-schedule is the best: a run without a block gets it";
  if (best.measurement.time_us > kWriteMargin * it->measurement.time_us)
    return fmt::format(
        "{:.1f} us is within {:.0f}% of the auto-schedule's {:.1f} us: a run without a block does as well",
        best.measurement.time_us, (1 - kWriteMargin) * 100, it->measurement.time_us);
  return "";
}

}  // namespace emmy::tune
