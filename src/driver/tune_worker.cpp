// `emmyc tune-worker`: the measuring side of `emmyc tune`, one process per GPU context. It loads
// the inputs and the reference once, says it is ready, then answers one JSON line per request
// line: the candidate's outputs checked against the reference, then its timed launches.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/cuda/print_cuda.hpp"
#include "driver/run.hpp"
#include "driver/tune.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch_program.hpp"
#include "runtime/time_program.hpp"
#include "tune/output_check.hpp"

namespace emmy {
namespace {

// The program on the device after one launch of every kernel, and its outputs.
struct Ran {
  runtime::ProgramRun run;
  TensorMap outputs;
};
Ran run_once(const runtime::Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
             const SizeBindings& sizes, const TensorMap& inputs) {
  Ran r{runtime::prepare_run(driver, program, cubin, sizes, inputs), {}};
  for (const runtime::KernelLaunch& l : r.run.launches) r.run.loaded.launch(l, nullptr);
  driver.synchronize(nullptr);
  r.outputs = runtime::download_outputs(driver, program, sizes, r.run.tensors);
  return r;
}

std::vector<char> build(const kir::Program& program, const TargetInfo& target) {
  runtime::CompileOptions co;
  co.target = &target;
  runtime::CachedCompile c = runtime::compile_cuda_cached(print_cuda(program), program.op + ".cu", co, {});
  if (!c.result.ok) throw std::runtime_error("NVRTC rejected it: " + c.result.log.substr(0, c.result.log.find('\n')));
  return std::move(c.result.cubin);
}

nlohmann::json answer(const CheckedProgram& program, const CheckedOp& op, const LowerOptions& lo,
                      const runtime::Driver& driver, const SizeBindings& sizes, const TensorMap& inputs,
                      const TensorMap& reference, const std::string& knobs, int reps) {
  const TargetInfo& target = *find_target(lo.target);
  lower::Lowered l = lower::lower_op(program, op, {nullptr, "", knobs}, target, lo.chains);
  const std::vector<char> cubin = build(l.kernels, target);
  const Ran ran = run_once(driver, l.kernels, cubin, sizes, inputs);
  const runtime::ProgramRun& run = ran.run;
  if (std::string wrong = tune::first_wrong_output(op, ran.outputs, reference); !wrong.empty())
    return {{"ok", false}, {"error", "wrong output: " + wrong}};
  runtime::TimingOptions to;
  to.warmup = 2;
  to.min_reps = to.max_reps = std::max(reps, 1);
  const runtime::ProgramTiming t = runtime::time_program(driver, run.loaded, run.launches, to);
  double occupancy = 0;
  for (size_t i = 0; i < run.launches.size(); ++i) {
    const runtime::KernelLaunch& k = run.launches[i];
    const double o = static_cast<double>(run.loaded.blocks_per_multiprocessor(run.loaded.index_of(k))) * k.block.x /
                     std::max(driver.max_threads_per_multiprocessor(), 1);
    occupancy = std::max(occupancy, o);
  }
  return {{"ok", true}, {"time_us", t.total_ms * 1000}, {"occupancy", occupancy}, {"reps", t.reps}};
}

}  // namespace

int tune_worker(const CheckedProgram& program, const LowerOptions& lo, const std::string& shape, uint64_t seed,
                std::istream& in, std::ostream& out, std::ostream& err) {
  const CheckedOp* op = nullptr;
  if (!lower_for_driver(program, lo, err, &op)) return 1;
  auto bound = bind_sizes(*op, shape, nullptr);
  if (const auto* why = std::get_if<std::string>(&bound)) {
    err << "emmyc tune-worker: --shape: " << *why << "\n";
    return 2;
  }
  const SizeBindings sizes = std::get<SizeBindings>(bound);
  std::string why;
  std::optional<runtime::Driver> driver = runtime::Driver::open(&why);
  if (!driver) {
    err << "emmyc tune-worker: no GPU: " << why << "\n";
    return 1;
  }
  const TensorMap inputs = random_inputs(*op, sizes, seed);
  TensorMap reference;
  std::string reference_name;
  try {
    if (work_estimate(*op, sizes) <= kMaxReferenceWork) {
      reference = evaluate_reference(program, *op, sizes, inputs);
      reference_name = "the float64 evaluator on the CPU";
    } else {
      const TargetInfo& target = *find_target(lo.target);
      lower::Lowered naive = lower::lower_op(program, *op, {nullptr, "", kNaiveKnobs}, target, lo.chains);
      reference = run_once(*driver, naive.kernels, build(naive.kernels, target), sizes, inputs).outputs;
      reference_name = fmt::format("float32 kernels of the naive schedule ({}) on the GPU", kNaiveKnobs);
    }
  } catch (const std::exception& e) {
    err << "emmyc tune-worker: the reference: " << e.what() << "\n";
    return 1;
  }
  out << nlohmann::json({{"ready", true}, {"device", driver->name()}, {"reference", reference_name}}).dump() << std::endl;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json reply;
    if (!request.is_object() || !request.contains("knobs")) {
      reply = {{"ok", false}, {"error", "a request is a JSON object with knobs and reps"}};
    } else {
      try {
        reply = answer(program, *op, lo, *driver, sizes, inputs, reference, request.value("knobs", ""),
                       request.value("reps", 10));
      } catch (const std::exception& e) {
        // A failed launch can leave the context unusable: the measurer starts a new worker.
        reply = {{"ok", false}, {"error", e.what()}, {"restart", true}};
      }
    }
    out << reply.dump() << std::endl;
  }
  return 0;
}

}  // namespace emmy
