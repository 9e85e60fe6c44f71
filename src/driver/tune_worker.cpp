// `emmyc tune-worker`: the measuring side of `emmyc tune`, one process per GPU context. It uploads
// the inputs and computes the reference once, says it is ready, then answers one JSON line per
// request line: the candidate's outputs checked against the reference (when asked: once a
// candidate), then its timed launches.
#include <chrono>
#include <functional>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/cuda/print_cuda.hpp"
#include "driver/run.hpp"
#include "driver/tune.hpp"
#include "lower/passes.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch_program.hpp"
#include "runtime/time_program.hpp"
#include "tune/output_check.hpp"
#include "tune/search.hpp"

namespace emmy {
namespace {

std::vector<char> build(const kir::Program& program, const TargetInfo& target) {
  runtime::CompileOptions co;
  co.target = &target;
  runtime::CachedCompile c = runtime::compile_cuda_cached(print_cuda(program), program.op + ".cu", co, {});
  if (!c.result.ok) throw std::runtime_error("NVRTC rejected it: " + c.result.log.substr(0, c.result.log.find('\n')));
  return std::move(c.result.cubin);
}

// The op's inputs on the device, uploaded once for every candidate (their buffers are the op's
// parameters under any schedule).
class ResidentInputs {
 public:
  ResidentInputs(const runtime::Driver& driver, const SizeBindings& sizes, const TensorMap& inputs)
      : driver_(driver), sizes_(sizes), inputs_(inputs) {}
  // Every buffer address of `program`: the resident inputs (uploaded on first use) and `results`.
  std::map<std::string, runtime::DevicePtr> addresses(const kir::Program& program,
                                                      const runtime::DeviceTensors& results) {
    kir::Program inputs_only = program;
    std::erase_if(inputs_only.buffers, [&](const kir::Buffer& b) {
      return b.role != kir::Buffer::Role::Input || uploaded_.buffers.count(b.name);
    });
    runtime::DeviceTensors fresh = runtime::upload(driver_, inputs_only, sizes_, inputs_);
    for (auto& [name, buffer] : fresh.buffers) uploaded_.buffers.emplace(name, std::move(buffer));
    std::map<std::string, runtime::DevicePtr> out = results.addresses();
    for (const kir::Buffer& b : program.buffers)
      if (b.role == kir::Buffer::Role::Input) out[b.name] = uploaded_.buffers.at(b.name).ptr();
    return out;
  }

 private:
  const runtime::Driver& driver_;
  const SizeBindings& sizes_;
  const TensorMap& inputs_;
  runtime::DeviceTensors uploaded_;
};

// The program launched once (every kernel) on the resident inputs.
struct Ran {
  runtime::DeviceTensors results;
  runtime::LoadedProgram loaded;
  std::vector<runtime::KernelLaunch> launches;
  double first_launch_us = 0;  // host clock, launch to synchronize: enough to tell a slow kernel
};
// `on_launch(true)` runs just before the first kernel is launched (everything else is ready),
// `on_launch(false)` once the last one has finished.
Ran run_once(const runtime::Driver& driver, ResidentInputs& resident, const kir::Program& program,
             const std::vector<char>& cubin, const SizeBindings& sizes,
             const std::function<void(bool)>& on_launch = {}) {
  Ran r{runtime::allocate_results(driver, program, sizes), runtime::LoadedProgram(driver, program, cubin), {}};
  r.launches = r.loaded.bind(resident.addresses(program, r.results), sizes);
  if (on_launch) on_launch(true);
  const auto start = std::chrono::steady_clock::now();
  for (const runtime::KernelLaunch& l : r.launches) r.loaded.launch(l, nullptr);
  driver.synchronize(nullptr);
  r.first_launch_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (on_launch) on_launch(false);
  return r;
}

struct Request {
  std::string knobs;
  int reps = 10;
  bool check = true;     // compare the outputs with the reference (once a candidate is enough)
  double cutoff_us = 0;  // > 0: a first launch slower than this is the whole measurement
};

nlohmann::json answer(const CheckedProgram& program, const CheckedOp& op, const LowerOptions& lo,
                      const runtime::Driver& driver, ResidentInputs& resident, const SizeBindings& sizes,
                      const TensorMap& reference, const tune::Peers& peers, const Request& q, std::ostream& out) {
  const TargetInfo& target = *find_target(lo.target);
  lower::Lowered l = lower::lower_op(program, op, {nullptr, "", q.knobs}, target, lo.chains);
  l.kernels = lower::specialize_sizes(l.kernels, sizes);  // what a run at these sizes launches (prune_space built it)
  // With a cut-off, say when the kernels start and end: the measurer holds the cut-off to that
  // span, not to the request (lowering, loading, allocating and checking take what they take).
  auto bracket = [&](bool starting) {
    out << nlohmann::json({{starting ? "launching" : "launched", true}}).dump() << std::endl;
  };
  const Ran ran = run_once(driver, resident, l.kernels, build(l.kernels, target), sizes,
                           q.cutoff_us > 0 ? std::function<void(bool)>(bracket) : std::function<void(bool)>());
  if (q.cutoff_us > 0 && ran.first_launch_us > q.cutoff_us) {
    const tune::Measurement cut = tune::cut_off_after(ran.first_launch_us, q.cutoff_us);
    return {{"ok", false}, {"cut_off", true}, {"time_us", cut.time_us}, {"error", cut.error}};
  }
  if (q.check) {
    const TensorMap got = runtime::download_outputs(driver, l.kernels, sizes, ran.results);
    if (std::string wrong = tune::first_wrong_output(op, got, reference, peers); !wrong.empty())
      return {{"ok", false}, {"error", "wrong output: " + wrong}};
  }
  // reps 0 (tune::kRepsAsRun): `emmyc run --bench`'s timing, so that the time written into a
  // tuned block is the one `emmyc run --bench` reproduces (a GPU under 300 ms of load runs a few
  // percent slower than under the rungs' short bursts).
  runtime::TimingOptions to;
  if (q.reps != tune::kRepsAsRun) {
    to.warmup = 2;
    to.min_reps = to.max_reps = std::max(q.reps, 1);
  }
  const runtime::ProgramTiming t = runtime::time_program(driver, ran.loaded, ran.launches, to);
  double occupancy = 0;
  for (const runtime::KernelLaunch& k : ran.launches) {
    const double o = static_cast<double>(ran.loaded.blocks_per_multiprocessor(ran.loaded.index_of(k))) * k.block.x /
                     std::max(driver.max_threads_per_multiprocessor(), 1);
    occupancy = std::max(occupancy, o);
  }
  return {{"ok", true}, {"time_us", t.total_ms * 1000}, {"occupancy", occupancy}, {"reps", t.reps}};
}

}  // namespace

int tune_worker(const CheckedProgram& program, const LowerOptions& lo, const std::string& shape,
                const std::vector<std::string>& set, uint64_t seed, std::istream& in, std::ostream& out,
                std::ostream& err) {
  const CheckedOp* op = nullptr;
  if (!lower_for_driver(program, lo, err, &op)) return 1;
  const std::optional<SizeBindings> bound = bind_shape(*op, shape, err);
  if (!bound) return 2;
  const SizeBindings& sizes = *bound;
  const std::optional<ScalarValues> scalars = bind_set(*op, set, err);
  if (!scalars) return 2;
  std::string why;
  std::optional<runtime::Driver> driver = runtime::Driver::open(&why);
  if (!driver) {
    err << "emmyc tune-worker: no GPU: " << why << "\n";
    return 1;
  }
  TensorMap inputs = random_inputs(*op, sizes, seed);
  set_scalars(inputs, *scalars);
  ResidentInputs resident(*driver, sizes, inputs);
  TensorMap reference;
  std::string reference_name;
  // The float64 reference's peers, made on the first candidate off elementwise (the check's rule).
  std::optional<std::vector<TensorMap>> jittered;
  tune::Peers peers;
  try {
    if (work_estimate(program, *op, sizes) <= kMaxReferenceWork) {
      reference = evaluate_reference(program, *op, sizes, inputs);
      reference_name = "the float64 evaluator on the CPU";
      peers = [&]() -> const std::vector<TensorMap>& {
        if (!jittered) jittered = cast_jittered_references(program, *op, sizes, inputs, seed);
        return *jittered;
      };
    } else {
      const TargetInfo& target = *find_target(lo.target);
      lower::Lowered naive = lower::lower_op(program, *op, {nullptr, "", kNaiveKnobs}, target, lo.chains);
      const Ran ran = run_once(*driver, resident, naive.kernels, build(naive.kernels, target), sizes);
      reference = runtime::download_outputs(*driver, naive.kernels, sizes, ran.results);
      reference_name = fmt::format("float32 kernels of the naive schedule ({}) on the GPU", kNaiveKnobs);
    }
  } catch (const std::exception& e) {
    err << "emmyc tune-worker: the reference: " << e.what() << "\n";
    return 1;
  }
  out << nlohmann::json({{"ready", true}, {"device", driver->name()}, {"reference", reference_name}}).dump()
      << std::endl;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json reply;
    if (!request.is_object() || !request.contains("knobs")) {
      reply = {{"ok", false}, {"error", "a request is a JSON object with knobs and reps"}};
    } else {
      try {
        reply = answer(program, *op, lo, *driver, resident, sizes, reference, peers,
                       {request.value("knobs", ""), request.value("reps", 10), request.value("check", true),
                        request.value("cutoff_us", 0.0)},
                       out);
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
