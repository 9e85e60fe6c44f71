// emmyc run: one op on seeded random inputs, on the GPU (or the SIMT interpreter), checked
// against a reference, optionally timed (--bench) against the naive cut+scalar schedule.
#include "driver/run.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/cuda/print_cuda.hpp"
#include "codegen/ptx/print_ptx.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/dtypes.hpp"
#include "ir/launch_expr.hpp"
#include "ir/numeric.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch_program.hpp"
#include "runtime/time_program.hpp"
#include "support/warning.hpp"
#include "support/write_file.hpp"

namespace emmy {

namespace {

double extent_of(const Size& s, const SizeBindings& sizes) {
  if (s.symbol.empty()) return static_cast<double>(s.literal);
  auto it = sizes.find(s.symbol);
  return it == sizes.end() ? 1.0 : static_cast<double>(it->second);
}

double points_of(const std::vector<Size>& shape, const SizeBindings& sizes) {
  double p = 1;
  for (const Size& s : shape) p *= extent_of(s, sizes);
  return p;
}

// A callee's sizes bound from its arguments' shapes in the caller, as the evaluator binds them.
SizeBindings callee_sizes(const CheckedOp& caller, const CheckedOp& callee, const ast::Expr& call,
                          const SizeBindings& sizes) {
  SizeBindings bound;
  for (size_t k = 0; k < call.args.size() && k < callee.decl->params.size(); ++k) {
    const TensorInfo* arg = caller.find(call.args[k].text);
    const ast::Param& p = callee.decl->params[k];
    if (!arg || arg->shape.size() != p.dims.size()) continue;
    for (size_t d = 0; d < p.dims.size(); ++d)
      if (!p.dims[d].is_literal()) bound.emplace(p.dims[d].name, static_cast<int64_t>(extent_of(arg->shape[d], sizes)));
  }
  return bound;
}

}  // namespace

double work_estimate(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes) {
  std::unordered_map<uint32_t, double> reduced;  // a reduction's points, by its expression
  for (const ReductionInfo& r : op.reductions) reduced[r.expr_id] = points_of(r.axis_sizes, sizes);
  double calls = 0;  // each call's callee runs once, whatever reads its outputs
  std::set<uint32_t> called;
  std::function<double(const ast::Expr&)> steps = [&](const ast::Expr& e) {
    double own = 1;
    for (const ast::Expr& a : e.args) own += steps(a);
    for (const ast::Expr& w : e.where_) own += steps(w);
    if (e.kind == ast::ExprKind::Call && called.insert(e.id).second)
      if (auto it = program.ops.find(e.text); it != program.ops.end())
        calls += work_estimate(program, it->second, callee_sizes(op, it->second, e, sizes));
    auto it = reduced.find(e.id);
    return it == reduced.end() ? own : it->second * own;
  };
  double total = 0, largest = 1;
  for (const TensorInfo& t : op.tensors) largest = std::max(largest, points_of(t.shape, sizes));
  for (const ast::Stmt& stmt : op.decl->body) {
    const bool let = std::holds_alternative<ast::LetStmt>(stmt);
    const ast::Ident& name = let ? std::get<ast::LetStmt>(stmt).name : std::get<ast::AssignStmt>(stmt).target;
    const ast::Expr& value = let ? std::get<ast::LetStmt>(stmt).value : std::get<ast::AssignStmt>(stmt).value;
    const TensorInfo* t = op.find(name.name);
    total += (t ? points_of(t->shape, sizes) : 1.0) * steps(value);
  }
  return total + calls + largest;
}

namespace {

using Clock = std::chrono::steady_clock;

// Past this estimate `emmyc run` without a GPU refuses to interpret (--interp overrides): the
// interpreter takes about 1e8 (row ops: cross_entropy (64, 50257) 0.97 s for 9e7) to 7e8
// (sdpa, matmul) of work_estimate's steps a second on one core, so at most about 10 s.
constexpr double kMaxInterpreterWork = 1e9;
// ... and charges a simulated thread at least this many of them: a tensor-core tile pads tiny
// dims to its rows (causal_self_attention at B=200, S=1, C=3: 3.3e5 threads, 5.9 s).
constexpr double kInterpreterStepsAThread = 2000;

// The threads the interpreter simulates: each kernel's CTAs times its block at the sizes.
double simulated_threads(const kir::Program& program, const SizeBindings& sizes) {
  double threads = 0;
  for (const kir::Kernel& k : program.kernels) threads += static_cast<double>(kir::ctas_at(k, sizes)) * k.block_threads;
  return threads;
}

struct OutputCheck {
  std::string name;
  Comparison comparison;
  Tolerance tolerance;
  std::vector<int64_t> shape;
  bool written = true;
  // Off elementwise, but no more than references jittered at the op's narrowing casts are
  // (within_peers): the worst of those references' excess over the bounds.
  bool within_peers = false;
  double peer_excess = 0;
  double peer_rel_l2 = 0;  // ... and the worst of their L2 figures
  bool ok() const { return written && (comparison.ok || within_peers); }
};

std::vector<OutputCheck> check_outputs(const CheckedOp& op, const TensorMap& got, const TensorMap& want) {
  std::vector<OutputCheck> out;
  for (const auto& [name, ref] : want) {
    OutputCheck c;
    c.name = name;
    c.tolerance = tolerance_for(op, ref.dtype);
    c.shape = ref.shape;
    auto it = got.find(name);
    c.written = it != got.end();
    if (c.written) c.comparison = compare(it->second, ref, c.tolerance);
    out.push_back(c);
  }
  return out;
}

bool all_ok(const std::vector<OutputCheck>& checks) {
  return std::all_of(checks.begin(), checks.end(), [](const OutputCheck& c) { return c.ok(); });
}

// One row an output: the L2 figure and its tolerance, the elements outside atol + rtol*|ref|,
// the verdict; under the table, why each failed output failed.
void print_checks(const std::vector<OutputCheck>& checks, std::ostream& out) {
  out << fmt::format("{:<10} {:>12} {:>12} {:>10} {:>8}  {}\n", "output", "rel L2", "max |err|", "tolerance", "off",
                     "result");
  std::vector<std::string> reasons;
  for (const OutputCheck& c : checks) {
    if (!c.written) {
      out << fmt::format("{:<10} FAIL (the kernels never wrote it)\n", c.name);
      continue;
    }
    const Comparison& m = c.comparison;
    out << fmt::format("{:<10} {:>12.3e} {:>12.3e} {:>10.1e} {:>8}  {}\n", c.name, m.rel_l2, m.max_abs,
                       c.tolerance.rel_l2, m.off, c.ok() ? "ok" : "FAIL");
    if (c.within_peers)
      reasons.push_back(fmt::format(
          "{}: ok within the op's own roundings: {}; references whose narrowing casts' arguments move by 2^{}, "
          "and the reference in f32 arithmetic, are off by up to {:.2g}x their bounds and rel L2 {:.2e}, this run "
          "{:.2g}x and {:.2e} (allowed: {}x theirs)",
          c.name, failure_reason(c.name, m, c.tolerance, c.shape), std::ilogb(kCastJitter), c.peer_excess,
          c.peer_rel_l2, m.worst_excess, m.rel_l2, kPeerFactor));
    else if (!m.ok)
      reasons.push_back(fmt::format("{}: {}", c.name, failure_reason(c.name, m, c.tolerance, c.shape)));
  }
  for (const std::string& r : reasons) out << "  " << r << "\n";
}

nlohmann::json checks_json(const std::vector<OutputCheck>& checks) {
  nlohmann::json a = nlohmann::json::array();
  for (const OutputCheck& c : checks) {
    const Comparison& m = c.comparison;
    nlohmann::json j = {{"name", c.name},
                        {"written", c.written},
                        {"rel_l2", m.rel_l2},
                        {"max_abs", m.max_abs},
                        {"non_finite", m.non_finite},
                        {"tolerance", c.tolerance.rel_l2},
                        {"atol", c.tolerance.atol},
                        {"rtol", c.tolerance.rtol},
                        {"elements", m.elements},
                        {"elements_off", m.off},
                        {"reference_nan", m.reference_nan},
                        {"reference_inf", m.reference_inf},
                        {"reference_rms", m.reference_rms},
                        {"worst_excess", m.worst_excess},
                        {"within_peers", c.within_peers},
                        {"peer_excess", c.peer_excess},
                        {"peer_rel_l2", c.peer_rel_l2},
                        {"ok", c.ok()}};
    if (c.written && m.elements > 0)
      j["worst"] = {{"index", index_text(m.worst, c.shape)}, {"got", m.worst_got}, {"want", m.worst_want}};
    if (c.written && !m.ok) j["reason"] = failure_reason(c.name, m, c.tolerance, c.shape);
    a.push_back(j);
  }
  return a;
}

// ---- --save: inputs and outputs as .npy files --------------------------------------------------
// bf16 has no numpy type: it is saved as float32, which holds every bf16 value exactly.
void write_npy(const std::filesystem::path& path, const HostTensor& t) {
  struct Format {
    const char* descr;
    kir::ScalarType type;
  };
  const Format f = t.dtype == DType::Bool  ? Format{"|b1", kir::ScalarType::Pred}
                   : t.dtype == DType::I32 ? Format{"<i4", kir::ScalarType::I32}
                   : t.dtype == DType::I64 ? Format{"<i8", kir::ScalarType::I64}
                   : t.dtype == DType::F16 ? Format{"<f2", kir::ScalarType::F16}
                   : t.dtype == DType::F64 ? Format{"<f8", kir::ScalarType::F64}
                                           : Format{"<f4", kir::ScalarType::F32};
  std::string shape =
      t.shape.size() == 1 ? fmt::format("({},)", t.shape[0]) : fmt::format("({})", fmt::join(t.shape, ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", f.descr, shape);
  header.append(63 - (10 + header.size()) % 64, ' ');  // the data starts at a multiple of 64
  header += '\n';
  std::string file("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<uint16_t>(header.size());
  file += static_cast<char>(len & 0xff);
  file += static_cast<char>(len >> 8);
  file += header;
  const std::vector<uint8_t> bytes = kir::encode_values(f.type, t.data);
  file.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (const std::string failed = write_file(path, file); !failed.empty()) throw std::runtime_error(failed);
}

void save_tensors(const std::string& dir, const TensorMap& inputs, const TensorMap& outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--save: cannot create the directory '{}': {}", dir, ec.message()));
  for (const TensorMap* map : {&inputs, &outputs})
    for (const auto& [name, t] : *map) write_npy(std::filesystem::path(dir) / (name + ".npy"), t);
}

// ---- the GPU -------------------------------------------------------------------------------------
struct Compiled {
  std::string cuda;
  runtime::CompileResult result;
  double ms = 0;
  bool cache_hit = false;
  std::string cache_path, cache_warning;
  std::string ptx_note;  // --emmy-ptx: what the PTX printer could not print (NVRTC compiled it)
};

Compiled compile_program(const kir::Program& program, const TargetInfo& target, const RunOptions& ro) {
  runtime::CompileOptions co;
  co.target = &target;
  const auto t0 = Clock::now();
  std::string cuda = print_cuda(program);
  std::string ptx_note;
  if (ro.emmy_ptx) {
    // ptxas through nvJitLink on the printed PTX: no NVRTC; the kernel cache keyed by the PTX.
    PtxPrint printed = print_ptx(program, target.name);
    if (printed.unsupported.empty()) {
      runtime::CachedCompile c = runtime::compile_ptx_cached(printed.ptx, co, {ro.use_cache, ""});
      Compiled out{std::move(cuda), std::move(c.result), 0, c.hit, c.path, c.warning, ""};
      // Loaded as PTX: the driver's JIT compiles it as a whole program. nvJitLink's ptxas compiles
      // relocatable code, where its calls of ptxas's own routines (64-bit division, IEEE division
      // and square root) are extern calls that serialize every wgmma and drop setmaxnreg (ptxas
      // C7509, C7504); its CUBIN only gives the report.
      if (out.result.ok) {
        out.result.cubin.assign(printed.ptx.begin(), printed.ptx.end());
        out.result.cubin.push_back('\0');
      }
      out.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (!out.result.ok)
        throw std::runtime_error("ptxas rejected Emmy's PTX (a compiler bug; please report it):\n" + out.result.log);
      return out;
    }
    ptx_note = "Emmy's PTX printer cannot print " + printed.unsupported + " yet: NVRTC compiled it";
  }
  runtime::CachedCompile c = runtime::compile_cuda_cached(cuda, program.op + ".cu", co, {ro.use_cache, ""});
  Compiled out{std::move(cuda),
               std::move(c.result),
               std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
               c.hit,
               c.path,
               c.warning,
               ptx_note};
  if (!out.result.ok)
    throw std::runtime_error("NVRTC rejected the generated CUDA (a compiler bug; please report it):\n" +
                             out.result.log);
  return out;
}

// One program on the device, run once (its outputs), optionally timed.
struct DeviceRun {
  runtime::ProgramRun run;
  TensorMap outputs;
  std::optional<runtime::ProgramTiming> timing;
};

DeviceRun run_device(const runtime::Driver& driver, const kir::Program& program, const Compiled& compiled,
                     const SizeBindings& sizes, const TensorMap& inputs, bool bench) {
  DeviceRun r{runtime::prepare_run(driver, program, compiled.result.cubin, sizes, inputs), {}, {}};
  for (const runtime::KernelLaunch& l : r.run.launches) r.run.loaded.launch(l, nullptr);
  driver.synchronize(nullptr);
  r.outputs = runtime::download_outputs(driver, program, sizes, r.run.tensors);
  if (bench) r.timing = runtime::time_program(driver, r.run.loaded, r.run.launches);
  return r;
}

// "PLACE=fuse,TILE=a:scalar,TILE@e=f64" -> the values of one family: "a:scalar @e=f64".
std::string family_values(const std::string& knobs, std::string_view family) {
  std::vector<std::string> values;
  for (size_t b = 0; b < knobs.size();) {
    size_t e = std::min(knobs.find(',', b), knobs.size());
    std::string entry = knobs.substr(b, e - b);
    b = e + 1;
    if (entry.rfind(family, 0) != 0 || entry.size() == family.size()) continue;
    const char next = entry[family.size()];
    if (next == '=')
      values.push_back(entry.substr(family.size() + 1));
    else if (next == '@')
      values.push_back(entry.substr(family.size()));
  }
  return values.empty() ? "-" : fmt::format("{}", fmt::join(values, " "));
}

std::string bytes_text(int bytes) {
  return bytes >= 1024 ? fmt::format("{:.1f}K", bytes / 1024.0) : fmt::format("{}", bytes);
}

struct KernelRow {
  std::string name;
  double us = 0, percent = 0;
  unsigned grid = 0, block = 0;
  int smem = 0, regs = 0;
  double occupancy = 0;
};

std::vector<KernelRow> kernel_rows(const runtime::Driver& driver, const DeviceRun& run, const Compiled& compiled) {
  std::vector<KernelRow> rows;
  double sum = 0;
  for (double ms : run.timing->kernel_ms) sum += ms;
  for (size_t i = 0; i < run.run.launches.size(); ++i) {
    const runtime::KernelLaunch& l = run.run.launches[i];
    KernelRow row{l.kernel->name, run.timing->kernel_ms[i] * 1000, 0, l.grid.x, l.block.x, 0, 0, 0};
    row.percent = sum > 0 ? 100 * run.timing->kernel_ms[i] / sum : 0;
    for (const runtime::KernelResources& r : compiled.result.resources)
      if (r.kernel == l.kernel->name) {
        row.smem = r.smem_bytes;
        row.regs = r.registers;
      }
    const int blocks = run.run.loaded.blocks_per_multiprocessor(run.run.loaded.index_of(l));
    row.occupancy = 100.0 * blocks * l.block.x / std::max(driver.max_threads_per_multiprocessor(), 1);
    rows.push_back(row);
  }
  return rows;
}

void print_bench(double naive_us, double emmy_us, const std::vector<KernelRow>& rows, const std::string& knobs,
                 std::ostream& out) {
  out << fmt::format("\n{:<22} {:>13}  {}\n{}\n", "Backend", "Latency (us)", "vs baseline", std::string(48, '-'));
  out << fmt::format("{:<22} {:>13.1f}  {:>10.2f}x\n", "naive (cut, scalar)", naive_us, 1.0);
  out << fmt::format("{:<22} {:>13.1f}  {:>10.2f}x\n", "Emmy", emmy_us, naive_us / std::max(emmy_us, 1e-9));
  size_t width = 6;
  for (const KernelRow& r : rows) width = std::max(width, r.name.size());
  out << fmt::format("\n{:<{}} {:>9} {:>7} {:>7} {:>6} {:>7} {:>5} {:>5}  {:<6} {:<24} {:<12} {}\n", "Kernel", width,
                     "us", "%", "grid", "block", "smem", "regs", "occ", "PLACE", "TILE", "STAGE", "REDUCE");
  double total = 0;
  for (const KernelRow& r : rows) {
    total += r.us;
    out << fmt::format("{:<{}} {:>9.1f} {:>6.1f}% {:>7} {:>6} {:>7} {:>5} {:>4.0f}%  {:<6} {:<24} {:<12} {}\n", r.name,
                       width, r.us, r.percent, r.grid, r.block, bytes_text(r.smem), r.regs, r.occupancy,
                       family_values(knobs, "PLACE"), family_values(knobs, "TILE"), family_values(knobs, "STAGE"),
                       family_values(knobs, "REDUCE"));
  }
  out << fmt::format("{:<{}} {:>9.1f}\n", "TOTAL", width, total);
}

nlohmann::json rows_json(const std::vector<KernelRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const KernelRow& r : rows)
    a.push_back({{"kernel", r.name},
                 {"us", r.us},
                 {"percent", r.percent},
                 {"grid", r.grid},
                 {"block", r.block},
                 {"smem_bytes", r.smem},
                 {"registers", r.regs},
                 {"occupancy_percent", r.occupancy}});
  return a;
}

struct RunContext {
  const CheckedProgram& program;
  const CheckedOp& op;
  const lower::Lowered& lowered;
  const LowerOptions& lo;
  const RunOptions& ro;
  SizeBindings sizes;
  ScalarValues scalars;  // --set
  TensorMap inputs;
  double work = 0;
  std::string size_class;  // the decided tests the kernels were specialized to ("": generic)
  // The float64 reference, computed before any kernel runs where it checks them: a size under which
  // the op reads outside a tensor or divides by zero stops the run there, located (E068, E069).
  std::optional<TensorMap> reference;
};

// ", set W=3" for the header: the scalar parameters given values.
std::string set_note(const ScalarValues& scalars) {
  return scalars.empty() ? "" : fmt::format(", set {}", scalars_text(scalars));
}

// The outputs against the float64 evaluator. Where an output fails elementwise, it is judged
// again against what the op's own narrowing casts make: a kernel rounds a cast's f32 argument,
// computed in its own order, and may land on the neighbouring value, which an ill-conditioned op
// (attention over projections whose scores reach +-70) carries far. References with those
// arguments jittered are such runs; the kernel may be off as they are (compare.hpp's within_peers).
std::vector<OutputCheck> check_against_reference(const RunContext& c, const TensorMap& got) {
  const TensorMap& ref = *c.reference;
  std::vector<OutputCheck> checks = check_outputs(c.op, got, ref);
  if (all_ok(checks)) return checks;
  const std::vector<TensorMap> peers = cast_jittered_references(c.program, c.op, c.sizes, c.inputs, c.ro.seed);
  for (OutputCheck& check : checks) {
    if (!check.written || check.comparison.ok) continue;
    const std::vector<Comparison> of = peer_comparisons(check.name, ref.at(check.name), peers, check.tolerance);
    for (const Comparison& p : of) {
      check.peer_excess = std::max(check.peer_excess, p.worst_excess);
      check.peer_rel_l2 = std::max(check.peer_rel_l2, p.rel_l2);
    }
    check.within_peers = within_peers(check.comparison, of, check.tolerance);
  }
  return checks;
}

// The float64 reference, when --check asks for it or when it is cheap enough.
bool use_cpu_reference(const RunContext& c) {
  return c.ro.check == "f64" || (c.ro.check == "auto" && c.work <= kMaxReferenceWork);
}

int run_gpu(RunContext& c, const runtime::Driver& driver, std::ostream& out, std::ostream& err) {
  const TargetInfo& target = *find_target(c.lo.target);
  const int device_sm = driver.cc_major() * 10 + driver.cc_minor();
  if (target.sm != device_sm) {
    err << fmt::format("emmyc: error: --target {} does not run on this GPU ({}, sm_{}): pass --target sm_{}\n",
                       target.name, driver.name(), device_sm, device_sm);
    return 2;
  }
  const kir::Program& program = c.lowered.kernels;
  const Compiled compiled = compile_program(program, target, c.ro);
  DeviceRun run = run_device(driver, program, compiled, c.sizes, c.inputs, c.ro.bench);

  // The naive schedule: the baseline of --bench and the large-shape reference.
  const bool cpu_reference = c.reference.has_value();  // run_op computed it where it checks the kernels
  const bool need_naive = c.ro.bench || (!cpu_reference && c.ro.check != "none");
  std::optional<lower::Lowered> naive;
  std::optional<Compiled> naive_compiled;
  std::optional<DeviceRun> naive_run;
  if (need_naive) {
    naive = lower::lower_op(c.program, c.op, {nullptr, "", kNaiveKnobs}, target, c.lo.chains);
    naive_compiled = compile_program(naive->kernels, target, c.ro);
    naive_run = run_device(driver, naive->kernels, *naive_compiled, c.sizes, c.inputs, c.ro.bench);
  }
  std::vector<OutputCheck> checks;
  std::string reference = "none (--check none)";
  if (c.ro.check != "none") {
    if (cpu_reference) {
      reference = "the float64 evaluator on the CPU";
      checks = check_against_reference(c, run.outputs);
    } else {
      reference = "float32 kernels of the naive schedule (" + std::string(kNaiveKnobs) + ") on the GPU";
      if (naive_compiled->cuda == compiled.cuda)
        reference += ", which is the schedule under test: pass --check f64 for an independent reference";
      checks = check_outputs(c.op, run.outputs, naive_run->outputs);
    }
  }
  if (!c.ro.save_dir.empty()) save_tensors(c.ro.save_dir, c.inputs, run.outputs);

  std::vector<KernelRow> rows;
  if (c.ro.bench) rows = kernel_rows(driver, run, compiled);
  const double emmy_us = c.ro.bench ? run.timing->total_ms * 1000 : 0;
  const double naive_us = c.ro.bench ? naive_run->timing->total_ms * 1000 : 0;
  const bool ok = c.ro.check == "none" || all_ok(checks);
  if (c.ro.json) {
    nlohmann::json j = {{"op", program.op},
                        {"backend", "gpu"},
                        {"device", driver.name()},
                        {"target", std::string(target.name)},
                        {"knobs", program.knobs},
                        {"size_class", c.size_class},
                        {"sizes", c.sizes},
                        {"set", scalars_json(c.scalars)},
                        {"seed", c.ro.seed},
                        {"compile_ms", compiled.ms},
                        {"cache_hit", compiled.cache_hit},
                        {"reference", reference},
                        {"outputs", checks_json(checks)},
                        {"ok", ok}};
    if (c.ro.bench)
      j["bench"] = {{"naive_us", naive_us},     {"emmy_us", emmy_us}, {"speedup", naive_us / std::max(emmy_us, 1e-9)},
                    {"reps", run.timing->reps}, {"l2_flushed", true}, {"kernels", rows_json(rows)}};
    out << j.dump(2) << "\n";
    return ok ? 0 : 1;
  }
  out << fmt::format("{} on {} ({}): {} kernel{}, knobs {}{}\n", program.op, driver.name(), target.name,
                     program.kernels.size(), program.kernels.size() == 1 ? "" : "s",
                     program.knobs.empty() ? "(defaults)" : program.knobs, set_note(c.scalars));
  out << fmt::format("compiled in {:.0f} ms{}\n", compiled.ms,
                     compiled.cache_hit            ? " (from the kernel cache)"
                     : compiled.cache_path.empty() ? ""
                                                   : " (now cached)");
  if (!compiled.cache_warning.empty()) err << "emmyc: " << render_warning({"W070", compiled.cache_warning}) << "\n";
  if (!compiled.ptx_note.empty()) err << "emmyc: note: " << compiled.ptx_note << "\n";
  out << "reference: " << reference << "\n";
  if (c.ro.check != "none") print_checks(checks, out);
  if (c.ro.bench) {
    print_bench(naive_us, emmy_us, rows, program.knobs, out);
    out << fmt::format("(CUDA-event medians of {} runs, L2 flushed before each; seed {})\n", run.timing->reps,
                       c.ro.seed);
  }
  return ok ? 0 : 1;
}

int run_interp(RunContext& c, std::ostream& out, std::ostream& err) {
  TensorMap buffers = c.inputs;
  SimtReport report;
  try {
    SimtOptions so;
    so.shuffle_blocks = c.ro.shuffle_blocks;
    so.seed = c.ro.seed;
    report = run_simt(c.lowered.kernels, c.sizes, buffers, so);
  } catch (const SimtError& e) {
    err << "emmyc: error: the interpreter stopped: " << e.what() << "\n";
    return 1;
  }
  TensorMap outputs;
  for (const kir::Buffer& b : c.lowered.kernels.buffers)
    if (b.role == kir::Buffer::Role::Output && buffers.count(b.name)) outputs[b.name] = buffers.at(b.name);
  std::vector<OutputCheck> checks;
  if (c.ro.check != "none") checks = check_against_reference(c, outputs);
  if (!c.ro.save_dir.empty()) save_tensors(c.ro.save_dir, c.inputs, outputs);
  const bool ok = c.ro.check == "none" || all_ok(checks);
  const kir::Program& program = c.lowered.kernels;
  if (c.ro.json) {
    out << nlohmann::json({{"op", program.op},
                           {"backend", "interpreter"},
                           {"knobs", program.knobs},
                           {"size_class", c.size_class},
                           {"sizes", c.sizes},
                           {"set", scalars_json(c.scalars)},
                           {"seed", c.ro.seed},
                           {"blocks", report.blocks},
                           {"reference", "float64 evaluator"},
                           {"outputs", checks_json(checks)},
                           {"ok", ok}})
               .dump(2)
        << "\n";
    return ok ? 0 : 1;
  }
  out << fmt::format("{} on the SIMT interpreter: {} kernel{}, {} blocks, knobs {}{}\n", program.op,
                     program.kernels.size(), program.kernels.size() == 1 ? "" : "s", report.blocks,
                     program.knobs.empty() ? "(defaults)" : program.knobs, set_note(c.scalars));
  if (c.ro.check != "none") print_checks(checks, out);
  return ok ? 0 : 1;
}

}  // namespace

// A derived op's saved inputs (`op f_bwd = grad(f) saving m, l`) take the values its forward op
// computes on the same inputs, not random ones (a backward given a row maximum that is not the
// rows' maximum overflows): the names filled, for the note that says so.
std::vector<std::string> fill_saved_inputs(const CheckedProgram& program, const CheckedOp& op,
                                           const SizeBindings& sizes, TensorMap& inputs) {
  const ast::GradDecl* grad = nullptr;
  for (const LoadedModule& m : program.modules)
    for (const ast::Item& item : m.ast.items)
      if (const auto* g = std::get_if<ast::GradDecl>(&item); g && g->name.name == op.decl->name.name) grad = g;
  if (!grad || grad->saved.empty() || !program.ops.count(grad->of.name)) return {};
  std::vector<std::string> saved;
  for (const ast::Ident& s : grad->saved) saved.push_back(s.name);
  const TensorMap forward = evaluate_reference(program, program.ops.at(grad->of.name), sizes, inputs, saved);
  std::vector<std::string> filled;
  for (const std::string& name : saved) {
    auto value = forward.find(name);
    auto input = inputs.find(name);
    if (value == forward.end() || input == inputs.end() || value->second.shape != input->second.shape) continue;
    for (size_t i = 0; i < input->second.data.size(); ++i)
      input->second.data[i] = kir::round_to(kir::scalar_of(input->second.dtype), value->second.data[i]);
    filled.push_back(name);
  }
  return filled;
}

std::optional<SizeBindings> bind_shape(const CheckedOp& op, const std::string& shape, std::ostream& err) {
  std::vector<std::string> defaulted;
  auto bound = bind_sizes(op, shape, &defaulted);
  if (const auto* why = std::get_if<std::string>(&bound)) {
    err << "emmyc: error: --shape: " << *why << "\n";
    return std::nullopt;
  }
  if (!defaulted.empty()) err << fmt::format("emmyc: note: --shape left out {}\n", fmt::join(defaulted, ", "));
  return std::get<SizeBindings>(bound);
}

nlohmann::json scalars_json(const ScalarValues& values) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : values)
    j[name] = std::trunc(v) == v && std::abs(v) < 9.1e15 ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v);
  return j;
}

std::optional<ScalarValues> bind_set(const CheckedOp& op, const std::vector<std::string>& set, std::ostream& err) {
  auto bound = bind_scalars(op, set);
  if (const auto* why = std::get_if<std::string>(&bound)) {
    err << "emmyc: error: --set: " << *why << "\n";
    return std::nullopt;
  }
  return std::get<ScalarValues>(bound);
}

int run_op(const CheckedProgram& program, const LowerOptions& lo, const RunOptions& ro, std::ostream& out,
           std::ostream& err) {
  const CheckedOp* op = pick_op(program, lo.op, err);
  if (!op) return 1;
  std::optional<SizeBindings> sizes = bind_shape(*op, ro.shape, err);
  if (!sizes) return 2;
  LowerOptions at_sizes = lo;
  at_sizes.sizes = &*sizes;
  std::optional<lower::Lowered> l = lower_for_driver(program, at_sizes, err, &op);
  if (!l) return 1;
  const std::string size_class = ro.specialize ? lower::size_class(l->kernels, *sizes) : std::string();
  if (ro.specialize) l->kernels = lower::specialize_sizes(l->kernels, *sizes);
  std::optional<ScalarValues> scalars = bind_set(*op, ro.set, err);
  if (!scalars) return 2;
  RunContext c{program, *op, *l, lo, ro, *sizes, *scalars, {}, 0, size_class, std::nullopt};
  c.work = work_estimate(program, *op, c.sizes);
  try {
    if (ro.interp && ro.bench) {
      err << "emmyc: error: --bench times the GPU; it cannot be combined with --interp\n";
      return 2;
    }
    std::string why;
    std::optional<runtime::Driver> driver = ro.interp ? std::nullopt : runtime::Driver::open(&why);
    if (!ro.interp && !driver) {
      if (ro.bench) {
        err << "emmyc: error: --bench needs a CUDA GPU: " << why << "\n";
        return 1;
      }
      const double steps = std::max(c.work, simulated_threads(c.lowered.kernels, c.sizes) * kInterpreterStepsAThread);
      if (steps > kMaxInterpreterWork) {
        err << fmt::format(
            "emmyc: error: no GPU ({}), and this shape is too large for the CPU interpreter (about {:.1e} steps); "
            "pass --interp to run it there anyway, or a smaller --shape\n",
            why, steps);
        return 1;
      }
      err << "emmyc: note: no GPU (" << why << "): running on the SIMT interpreter\n";
    }
    c.inputs = random_inputs(*op, c.sizes, ro.seed);
    set_scalars(c.inputs, c.scalars);
    if (const std::vector<std::string> saved = fill_saved_inputs(program, *op, c.sizes, c.inputs); !saved.empty())
      err << fmt::format("emmyc: note: {}: the values the forward op computes on these inputs (saved tensors)\n",
                         fmt::join(saved, ", "));
    if (ro.check != "none" && (!driver || use_cpu_reference(c))) {
      c.reference = evaluate_reference(program, *op, c.sizes, c.inputs);
    } else if (std::optional<std::string> divisor = kir::zero_size_divisor(c.lowered.kernels, c.sizes)) {
      // The kernels would divide by zero (silently on the GPU): the reference evaluator stops at
      // the division, located (E069), after its first element; else said here.
      (void)evaluate_reference(program, *op, c.sizes, c.inputs);
      err << fmt::format("emmyc: error[E069]: the kernels divide by {}, which is 0 at these sizes: {}\n", *divisor,
                         kZeroDivisorHelp);
      return 1;
    }
    return driver ? run_gpu(c, *driver, out, err) : run_interp(c, out, err);
  } catch (const lower::LowerError& e) {
    err << "emmyc: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    err << "emmyc: error: out of host memory for this --shape (inputs, outputs and the reference live in host "
           "memory as float64): pass a smaller --shape\n";
    return 1;
  } catch (const ReferenceRangeError&) {
    throw;  // located by the caller, which holds the sources
  } catch (const std::runtime_error& e) {
    err << "emmyc: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace emmy
