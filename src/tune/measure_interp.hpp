// A measurer without a GPU: each candidate runs on the SIMT interpreter at small sizes and is
// checked against the float64 reference; its "time" comes from a caller's cost function and
// advances a fake clock. For tests of the search and of everything around it, not for tuning.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "tune/search.hpp"

namespace emmy::tune {

class FakeClock : public Clock {
 public:
  double seconds() override { return now_; }
  void advance(double s) { now_ += s; }

 private:
  double now_ = 0;
};

class InterpreterMeasurer : public Measurer {
 public:
  // `cost_us`: the time a candidate is given; `seconds_per_launch`: what the fake clock
  // advances per timed launch.
  InterpreterMeasurer(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target, SizeBindings sizes,
                      std::function<double(const Candidate&)> cost_us, FakeClock& clock, double seconds_per_launch,
                      const std::vector<algebra::DiscoveredChain>* chains = nullptr);
  Measurement measure(const Candidate& candidate, int reps, double cutoff_us) override;
  std::string device() const override { return "interpreter"; }
  int runs() const { return runs_; }

 private:
  const CheckedProgram& program_;
  const CheckedOp& op_;
  const TargetInfo& target_;
  SizeBindings sizes_;
  TensorMap inputs_, reference_;
  std::optional<std::vector<TensorMap>> peers_;  // the reference's peers, made on a first miss
  std::function<double(const Candidate&)> cost_us_;
  FakeClock& clock_;
  double seconds_per_launch_;
  const std::vector<algebra::DiscoveredChain>* chains_;
  int runs_ = 0;
};

}  // namespace emmy::tune
