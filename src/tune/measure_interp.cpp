// The interpreter measurer: correctness on the SIMT interpreter, time from a cost function.
#include "tune/measure_interp.hpp"

#include "runtime/time_program.hpp"

#include "interp/simt.hpp"
#include "tune/output_check.hpp"

namespace emmy::tune {

InterpreterMeasurer::InterpreterMeasurer(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                                         SizeBindings sizes, std::function<double(const Candidate&)> cost_us,
                                         FakeClock& clock, double seconds_per_launch,
                                         const std::vector<algebra::DiscoveredChain>* chains)
    : program_(program),
      op_(op),
      target_(target),
      sizes_(std::move(sizes)),
      cost_us_(std::move(cost_us)),
      clock_(clock),
      seconds_per_launch_(seconds_per_launch),
      chains_(chains) {
  inputs_ = random_inputs(op_, sizes_, 1);
  reference_ = evaluate_reference(program_, op_, sizes_, inputs_);
}

Measurement InterpreterMeasurer::measure(const Candidate& candidate, int reps, double cutoff_us) {
  ++runs_;
  Measurement m;
  if (const double one = cost_us_(candidate); cutoff_us > 0 && one > cutoff_us) {
    clock_.advance(seconds_per_launch_);
    return cut_off_after(one, cutoff_us);
  }
  clock_.advance(seconds_per_launch_ * (reps == kRepsAsRun ? runtime::TimingOptions{}.max_reps : reps));
  try {
    lower::Lowered l = lower::lower_op(program_, op_, {nullptr, "", candidate.knobs}, target_, chains_);
    TensorMap buffers = inputs_;
    SimtOptions so;
    so.shuffle_blocks = true;
    run_simt(l.kernels, sizes_, buffers, so);
    const Peers peers = [this]() -> const std::vector<TensorMap>& {
      if (!peers_) peers_ = cast_jittered_references(program_, op_, sizes_, inputs_, 1);
      return *peers_;
    };
    if (std::string wrong = first_wrong_output(op_, buffers, reference_, peers); !wrong.empty()) {
      m.error = wrong;
      return m;
    }
  } catch (const std::exception& e) {
    m.error = std::string("the interpreter stopped: ") + e.what();
    return m;
  }
  m.ok = true;
  m.time_us = cost_us_(candidate);
  return m;
}

}  // namespace emmy::tune
