// Every op of stdlib/ and examples/ (the unit tests' schedule matrix), under every scalar-tier
// schedule of the matrix and every schedule block the file gives the op for the device's target,
// compiled by NVRTC for the device, run on the GPU at a realistic shape, at ragged shapes that no
// tile or block divides, and at tiny ones; every element of every output compared with the
// float64 reference.
//
// The CPU work of one op (lowering, NVRTC, random inputs, the reference) runs on worker threads,
// several ops ahead; the GPU work (and every doctest assertion) stays on the main thread, where
// the driver's context is current. One line per (op, schedule, shape) says how close it came.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../unit/hostile_matrix.hpp"
#include "../unit/schedule_matrix.hpp"
#include "../unit/test_helpers.hpp"
#include "codegen/cuda/print_cuda.hpp"
#include "gpu_context.hpp"
#include "interp/reference.hpp"
#include "ir/launch_expr.hpp"
#include "ir/verify_kernel.hpp"
#include "lower/passes.hpp"
#include "runtime/launch_program.hpp"
#include "runtime/nvrtc.hpp"

namespace emmy::gpu_test {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// ---- shapes -----------------------------------------------------------------------------------

// Sizes by symbol name, the same for every op that uses the name. Capped shapes shrink until the
// op's work fits the caps below.
struct ShapeSpec {
  const char* label;
  std::map<std::string, int64_t> sizes;
  int64_t other;  // a size symbol the table does not name
  bool capped;
  bool odd;  // shrink to odd sizes, so that the shape stays ragged
};

// Work caps of one (op, shape), in the units of the estimates below: expression nodes the float64
// reference evaluates (about 2 ns each on one core), kernel statements summed over every thread
// of the slowest schedule, and the statements of the slowest single thread (a fused attention has
// one thread per query row; its key loop runs serially).
constexpr double kRefCap = 8e9;
constexpr double kGpuCap = 5e10;
constexpr double kThreadCap = 3e7;
constexpr int64_t kMinShrunk = 16;

std::vector<ShapeSpec> shape_specs(bool small) {
  if (small)  // for compute-sanitizer: every kernel at most a few hundred threads and short loops
    return {
        {"small-ragged",
         {{"B", 2},
          {"H", 2},
          {"KH", 1},
          {"Z", 2},
          {"S", 17},
          {"T", 33},
          {"D", 16},
          {"E", 20},
          {"N", 37},
          {"C", 67},
          {"M", 19},
          {"K", 23},
          {"F", 21},
          {"V", 67}},
         13,
         false,
         false},
        {"ones", {}, 1, false, false},
        {"threes", {}, 3, false, false},
    };
  return {
      // Row ops N=4096 x C=1000; matmul 512x384 by N (shrunk to fit); attention B=1,H=4,S=1000,T=777,D=E=64.
      {"realistic",
       {{"B", 1},
        {"H", 4},
        {"KH", 2},
        {"Z", 2},
        {"S", 1000},
        {"T", 777},
        {"D", 64},
        {"E", 64},
        {"N", 4096},
        {"C", 1000},
        {"M", 512},
        {"K", 384},
        {"F", 1024},
        {"V", 1000}},
       256,
       true,
       false},
      // Odd sizes that no register tile (f3, f4, f8, f64) and no 128-thread block divides.
      {"ragged",
       {{"B", 2},
        {"H", 2},
        {"KH", 1},
        {"Z", 3},
        {"S", 257},
        {"T", 4097},
        {"D", 37},
        {"E", 67},
        {"N", 1001},
        {"C", 4097},
        {"M", 777},
        {"K", 129},
        {"F", 333},
        {"V", 4097}},
       131,
       true,
       true},
      // Ones next to long axes: one query against 1000 keys, one row of 777, one channel.
      {"ragged-ones",
       {{"B", 1},
        {"H", 3},
        {"KH", 1},
        {"Z", 1},
        {"S", 1},
        {"T", 1000},
        {"D", 3},
        {"E", 1},
        {"N", 1},
        {"C", 777},
        {"M", 1},
        {"K", 1000},
        {"F", 5},
        {"V", 4097}},
       7,
       true,
       true},
      {"ones", {}, 1, false, false},
      {"threes", {}, 3, false, false},
  };
}

// Batch and head counts are left alone when shrinking: ops constrain their ratios (H / KH).
bool shrinkable(const std::string& name) { return name != "B" && name != "H" && name != "KH" && name != "Z"; }

double size_value(const std::string& size, const SizeBindings& sizes) {
  if (!size.empty() && std::all_of(size.begin(), size.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::stod(size);
  auto it = sizes.find(size);
  return it == sizes.end() ? 1.0 : static_cast<double>(it->second);
}

// The reference's work on one expression at one point: every node once, a reduction's body once
// per point of its axes, a whole-row read (v[b, h, j, :]) once per element of the row.
double expr_cost(const tir::Program& t, const tir::Expr& e, const SizeBindings& sizes) {
  double c = 1;
  for (const tir::Expr& a : e.args) c += expr_cost(t, a, sizes);
  for (const tir::Expr& w : e.where) c += expr_cost(t, w, sizes);
  if (e.kind == tir::Expr::Kind::Read)
    if (const tir::Tensor* info = t.find(e.name))
      for (size_t k = 0; k < e.args.size() && k < info->dims.size(); ++k)
        if (e.args[k].kind == tir::Expr::Kind::Slice) c *= size_value(info->dims[k], sizes);
  if (e.kind == tir::Expr::Kind::Reduce)
    for (const tir::Axis& a : e.axes) c *= size_value(a.size, sizes);
  return c;
}

// The reference keeps every statement's result as a tensor: each statement once per point.
double reference_cost(const tir::Program& t, const SizeBindings& sizes) {
  double total = 0;
  for (const tir::Stmt& s : t.stmts) {
    double points = 1;
    for (const tir::Axis& v : s.vars) points *= size_value(v.size, sizes);
    total += points * expr_cost(t, s.value, sizes);
  }
  return total;
}

// Statements one thread executes: loops by their trip count where the bounds are sizes and
// constants, else (bounds held in registers) by the largest size, an upper bound.
double body_cost(const std::vector<kir::Stmt>& body, const std::map<std::string, int64_t>& scalars, double widest) {
  double c = 0;
  for (const kir::Stmt& s : body) {
    c += 1;
    if (s.kind == kir::Stmt::Kind::For && s.args.size() >= 2) {
      auto lo = kir::evaluate_launch_expr(s.args[0], scalars);
      auto hi = kir::evaluate_launch_expr(s.args[1], scalars);
      double trip = widest;
      if (const auto* h = std::get_if<int64_t>(&hi)) {
        const auto* l = std::get_if<int64_t>(&lo);
        trip = std::max<double>(0, std::ceil(static_cast<double>(*h - (l ? *l : 0)) / std::max(1, s.step)));
      }
      c += trip * body_cost(s.body, scalars, widest);
    } else {
      c += body_cost(s.body, scalars, widest) + body_cost(s.orelse, scalars, widest);
    }
  }
  return c;
}

// The kernels' work at these sizes: statements over all threads, and the most one thread runs
// (what bounds a kernel with few threads: one per row of a fused attention, say).
struct KernelWork {
  double total = 0, thread = 0;
};

KernelWork kernels_cost(const kir::Program& p, const SizeBindings& sizes) {
  std::map<std::string, int64_t> scalars(sizes.begin(), sizes.end());
  double widest = 1;
  for (const auto& [name, v] : sizes) widest = std::max(widest, static_cast<double>(v));
  KernelWork w;
  for (const kir::Kernel& k : p.kernels) {
    auto grid = kir::evaluate_launch_expr(k.grid_x, scalars);
    double blocks = std::holds_alternative<int64_t>(grid) ? static_cast<double>(std::get<int64_t>(grid)) : widest;
    double thread = body_cost(k.body, scalars, widest);
    w.total += blocks * k.block_threads * thread;
    w.thread += thread;
  }
  return w;
}

// ---- the CPU side of one op ---------------------------------------------------------------------

// One schedule of an op: lowered, verified and compiled for the device's target.
struct Variant {
  std::string label;  // "fused", "PLACE=cut", "TILE@e=f4", "schedule \"fa1-scalar\""
  kir::Program program;
  std::vector<char> cubin;
  std::string error;                   // lowering, verification or NVRTC failed: a test failure
  const TargetInfo* target = nullptr;  // what it compiles for: the device's target, or its arch-specific twin
};

// One shape: inputs and the reference outputs.
struct Case {
  std::string label;
  SizeBindings sizes;
  TensorMap inputs, ref;
  std::string rejected;             // the reference does not accept these sizes: why
  std::optional<HostileKind> kind;  // hostile inputs of this kind (else ordinary ones)
  double ref_cost = 0, gpu_cost = 0, thread_cost = 0, ref_seconds = 0;
};

struct OpWork {
  std::string file, op;
  const CheckedOp* checked = nullptr;
  std::vector<Variant> variants;
  std::vector<Case> cases;
  std::vector<std::string> notes;  // schedules with the same kernels as an earlier one
  std::string error;               // the worker itself failed
  double cpu_seconds = 0;
};

// The kernels' CUDA without its comments (which quote the knobs) and with the kernels' names
// (which carry a hash of the knobs) replaced by their positions: two schedules with the same
// key run the same code.
std::string code_key(const kir::Program& p) {
  std::string text;
  const std::string printed = print_cuda(p);
  for (size_t at = 0; at < printed.size();) {
    size_t end = printed.find('\n', at);
    if (end == std::string::npos) end = printed.size();
    const std::string line = printed.substr(at, end - at);
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line.compare(first, 2, "//") != 0) text += line + "\n";
    at = end + 1;
  }
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const std::string& name = p.kernels[i].name;
    const std::string by = fmt::format("kernel#{}", i);
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + by.size()))
      text.replace(at, name.size(), by);
  }
  // What the launcher reads besides the code: each kernel's grid and block, the buffers.
  for (const kir::Kernel& k : p.kernels)
    text += fmt::format("launch grid {} block {}\n", print_cuda_expr(k.grid_x), k.block_threads);
  for (const kir::Buffer& b : p.buffers)
    text += fmt::format("buffer {} {} {} [{}]\n", b.name, static_cast<int>(b.role), kir::type_name(b.type),
                        fmt::join(b.dims, ","));
  return text;
}

void lower_variant(const CheckedProgram& program, const CheckedOp& op, const lower::KnobSources& sources,
                   const TargetInfo& target, Variant& v) {
  lower::Lowered low = lower::lower_op(program, op, sources, target);
  std::vector<std::string> problems = verify_program(low.kernels);
  if (!problems.empty()) {
    v.error = fmt::format("the kernel IR does not verify:\n{}", fmt::join(problems, "\n"));
    return;
  }
  v.program = std::move(low.kernels);
}

OpWork prepare(const std::string& file, const CheckedProgram& program, const CheckedOp& op, const Context& ctx,
               uint64_t seed) {
  const Clock::time_point start = Clock::now();
  OpWork w;
  w.file = file;
  w.op = op.decl->name.name;
  w.checked = &op;
  try {
    // The schedules: the matrix's knob strings, then the file's blocks for this target.
    std::vector<std::string> matrix = test::schedules(program, op);
    for (const std::string& knobs : test::split_schedules(program, op, *ctx.target)) matrix.push_back(knobs);
    for (const std::string& knobs : test::tensor_core_schedules()) {
      try {
        lower::Lowered low = lower::lower_op(program, op, {nullptr, "", knobs}, *ctx.target);
        if (low.kernels.warnings.empty()) matrix.push_back(knobs);  // only where the tier takes the op
      } catch (const std::exception&) {
        matrix.push_back(knobs);  // lowered again below, where the failure is reported
      }
    }
    for (const std::string& knobs : matrix) {
      Variant v;
      v.label = knobs == "TILE=a:scalar" ? "fused" : knobs.substr(knobs.rfind("TILE=a:scalar,", 0) == 0 ? 14 : 0);
      try {
        lower_variant(program, op, {nullptr, "", knobs}, *ctx.target, v);
      } catch (const std::exception& e) {
        v.error = fmt::format("lowering failed: {}", e.what());
      }
      w.variants.push_back(std::move(v));
    }
    // The file's blocks for the device's target and for its arch-specific twin (sm_90a's wgmma
    // schedules run on an sm_90 device).
    for (const CheckedSchedule& s : program.schedules) {
      if (s.decl->op.name != w.op || !s.target) continue;
      const bool twin = s.target->arch_specific && s.target->sm == ctx.target->sm;
      if (s.target->name != ctx.target->name && !twin) continue;
      Variant v;
      v.target = s.target;
      v.label = s.decl->label ? fmt::format("schedule \"{}\"", s.decl->label->name) : "schedule (unnamed)";
      if (twin) v.label += fmt::format(" for {}", s.target->name);
      try {
        lower_variant(program, op, {&s, "", ""}, *s.target, v);
      } catch (const std::exception& e) {
        v.error = fmt::format("lowering failed: {}", e.what());
      }
      w.variants.push_back(std::move(v));
    }

    // Compile each distinct program; a schedule that gives the same kernels as an earlier one is noted, not rerun.
    std::map<std::string, std::string> seen;  // code key -> label
    std::vector<Variant> kept;
    for (Variant& v : w.variants) {
      if (v.error.empty()) {
        std::string key = code_key(v.program);
        auto [it, fresh] = seen.emplace(key, v.label);
        if (!fresh) {
          w.notes.push_back(fmt::format("{}: the same kernels as {}", v.label, it->second));
          continue;
        }
        runtime::CompileOptions co;
        co.target = v.target ? v.target : ctx.target;
        runtime::CompileResult r = runtime::compile_cuda(print_cuda(v.program), w.op + ".cu", co);
        if (!r.ok)
          v.error = fmt::format("NVRTC failed for {}:\n{}", co.target->name, r.log);
        else if (r.cubin.empty())
          v.error = "NVRTC returned no CUBIN";
        else
          v.cubin = std::move(r.cubin);
      }
      kept.push_back(std::move(v));
    }
    w.variants = std::move(kept);

    // The shapes: the table's sizes, shrunk (capped specs) until the work fits.
    const tir::Program tensor = lower::to_tensor(program, op);
    const std::vector<std::string> names = test::input_size_names(op);
    for (const ShapeSpec& spec : shape_specs(ctx.small)) {
      Case c;
      c.label = spec.label;
      for (const std::string& n : names) c.sizes[n] = spec.sizes.count(n) ? spec.sizes.at(n) : spec.other;
      auto measure = [&](const SizeBindings& sizes, Case& into) {
        into.ref_cost = reference_cost(tensor, sizes);
        into.gpu_cost = into.thread_cost = 0;
        for (const Variant& v : w.variants)
          if (!v.cubin.empty()) {
            KernelWork k = kernels_cost(v.program, sizes);
            into.gpu_cost = std::max(into.gpu_cost, k.total);
            into.thread_cost = std::max(into.thread_cost, k.thread);
          }
        return std::max({into.ref_cost / kRefCap, into.gpu_cost / kGpuCap, into.thread_cost / kThreadCap});
      };
      // Halve the largest size whose halving makes the work smaller, until the work fits.
      for (double over = measure(c.sizes, c); spec.capped && over > 1;) {
        std::vector<std::string> order;
        for (const auto& [n, v] : c.sizes)
          if (shrinkable(n) && v > kMinShrunk) order.push_back(n);
        std::stable_sort(order.begin(), order.end(),
                         [&](const std::string& a, const std::string& b) { return c.sizes.at(a) > c.sizes.at(b); });
        bool shrunk = false;
        for (const std::string& n : order) {
          SizeBindings smaller = c.sizes;
          smaller[n] = spec.odd ? (smaller[n] / 2) | 1 : smaller[n] / 2;
          Case probe;
          double now = measure(smaller, probe);
          if (now < over * 0.9) {
            c.sizes = smaller;
            over = measure(c.sizes, c);
            shrunk = true;
            break;
          }
        }
        if (!shrunk) break;
      }
      const Clock::time_point ref_start = Clock::now();
      c.inputs = random_inputs(op, c.sizes, seed + w.cases.size());
      try {
        c.ref = evaluate_reference(program, op, c.sizes, c.inputs);
        if (!test::reference_finite(c.ref)) c.rejected = "the reference is not finite here (e.g. 0 / 0)";
      } catch (const std::exception& e) {
        c.rejected = e.what();
        c.inputs.clear();
      }
      c.ref_seconds = seconds_since(ref_start);
      w.cases.push_back(std::move(c));
    }
    // Hostile inputs at the ragged shape: large, -inf rows, NaN, subnormal.
    const auto ragged = std::find_if(w.cases.begin(), w.cases.end(),
                                     [](const Case& c) { return c.label == "ragged" && c.rejected.empty(); });
    if (ragged != w.cases.end()) {
      const Case base = *ragged;
      for (HostileKind kind : test::kMatrixHostileKinds) {
        Case h = base;
        h.kind = kind;
        h.label = fmt::format("ragged/{}", hostile_kind_name(kind));
        h.inputs = hostile_inputs(op, h.sizes, seed + w.cases.size(), kind);
        try {
          h.ref = evaluate_reference(program, op, h.sizes, h.inputs);
          if (!test::reference_meaningful(h.ref, kind)) h.rejected = "the reference overflows on these inputs";
        } catch (const std::exception& e) {
          h.rejected = e.what();
        }
        w.cases.push_back(std::move(h));
      }
    }
  } catch (const std::exception& e) {
    w.error = e.what();
  }
  w.cpu_seconds = seconds_since(start);
  return w;
}

// ---- the GPU side -------------------------------------------------------------------------------

struct Totals {
  int ops = 0, schedules = 0, programs = 0, runs = 0, comparisons = 0, failed = 0, known = 0;
  double gpu_ms = 0;
};

std::string compact(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

void run_op(const OpWork& w, const Context& ctx, Totals& totals) {
  CAPTURE(w.file);
  CAPTURE(w.op);
  ++totals.ops;
  REQUIRE_MESSAGE(w.error.empty(), w.error);
  for (const std::string& n : w.notes) fmt::print("  note {:<24} {}\n", w.op, n);
  int runnable = 0;
  for (const Variant& v : w.variants) {
    CAPTURE(v.label);
    CHECK_MESSAGE(v.error.empty(), v.error);
    if (v.error.empty()) ++runnable;
  }
  totals.programs += runnable;
  totals.schedules += runnable + static_cast<int>(w.notes.size());
  // Schedules that give the same kernels as another were folded into it (the notes above).
  CHECK_MESSAGE(runnable >= 1, "no schedule of the op could run");

  int accepted = 0;
  for (const Case& c : w.cases) {
    const std::string shape = test::shape_text(c.sizes);
    CAPTURE(c.label);
    CAPTURE(shape);
    if (!c.rejected.empty()) {
      fmt::print("  skip {:<24} {:<28} {:<12} {}: the reference rejects it: {}\n", w.op, "", c.label, shape,
                 compact(c.rejected));
      // The realistic and ragged shapes must run: only the tiny ones may fall outside an op's domain.
      CHECK_MESSAGE((c.label != "realistic" && c.label != "ragged"), "the reference rejects the shape: " << c.rejected);
      continue;
    }
    ++accepted;
    fmt::print(
        "  shape {:<19} {:<28} {:<12} {}: reference {:.1e} nodes in {:.2f} s; kernels <= {:.1e} statements, "
        "<= {:.1e} per thread\n",
        w.op, "", c.label, shape, c.ref_cost, c.ref_seconds, c.gpu_cost, c.thread_cost);
    for (const Variant& v : w.variants) {
      if (v.cubin.empty()) continue;
      CAPTURE(v.label);
      ++totals.runs;
      TensorMap got;
      runtime::RunTiming timing;
      try {
        got = runtime::run_on_gpu(*ctx.driver, v.program, v.cubin, c.sizes, c.inputs, &timing);
      } catch (const std::exception& e) {
        ++totals.failed;
        fmt::print("  FAIL {:<24} {:<28} {:<12} {}: {}\n", w.op, v.label, c.label, shape, compact(e.what()));
        FAIL_CHECK("run_on_gpu: " << e.what());
        continue;
      }
      totals.gpu_ms += timing.total_ms;
      bool all_ok = true;
      std::vector<std::string> parts;
      for (const auto& [name, want] : c.ref) {
        CAPTURE(name);
        ++totals.comparisons;
        auto it = got.find(name);
        if (it == got.end()) {
          all_ok = false;
          parts.push_back(fmt::format("{}: not written", name));
          FAIL_CHECK("output " << name << " did not come back from the GPU");
          continue;
        }
        const Tolerance tol =
            c.kind ? test::hostile_tolerance(*w.checked, want.dtype, *c.kind) : tolerance_for(*w.checked, want.dtype);
        Comparison cmp = compare(it->second, want, tol);
        if (!cmp.ok && c.kind && test::known_divergence(w.op, v.label, *c.kind)) {
          ++totals.known;  // documented (hostile_matrix.hpp): reported, not a failure
          parts.push_back(fmt::format("{} KNOWN: {}", name, test::known_divergence(w.op, v.label, *c.kind)));
          continue;
        }
        all_ok = all_ok && cmp.ok;
        parts.push_back(fmt::format("{} rel {:.2e} max {:.2e} tol {:.0e} off {}", name, cmp.rel_l2, cmp.max_abs,
                                    tol.rel_l2, cmp.off));
        CHECK_MESSAGE(cmp.ok, name << ": " << failure_reason(name, cmp, tol, want.shape));
      }
      if (!all_ok) ++totals.failed;
      fmt::print("  {} {:<24} {:<28} {:<12} {:<44} {} | {:.3f} ms\n", all_ok ? "ok  " : "FAIL", w.op, v.label, c.label,
                 shape, fmt::join(parts, "; "), timing.total_ms);
    }
  }
  CHECK_MESSAGE(accepted >= 2, "fewer than two shapes ran");
  std::fflush(stdout);
}

bool selected(const Context& ctx, const std::string& op) {
  if (ctx.ops.empty()) return true;
  return std::any_of(ctx.ops.begin(), ctx.ops.end(), [&](const std::string& p) { return glob_match(p, op); });
}

}  // namespace

TEST_CASE("gpu: every op of stdlib and examples, every scalar-tier schedule, on the GPU against the reference") {
  const Context& ctx = context();
  REQUIRE(ctx.driver != nullptr);
  REQUIRE(ctx.target != nullptr);
  const Clock::time_point start = Clock::now();

  // Every file checked up front (read-only from here on); the ops that the selection keeps.
  std::vector<std::unique_ptr<test::Run>> files;
  struct Job {
    std::string file;
    const CheckedProgram* program;
    const CheckedOp* op;
  };
  std::vector<Job> jobs;
  for (const std::string& path : test::program_files(ctx.root)) {
    files.push_back(test::check_file(path, ctx.root));
    const test::Run& run = *files.back();
    REQUIRE_MESSAGE(!run.diags->has_errors(), path << ":\n" << run.rendered());
    for (const CheckedOp* op : test::main_ops(*run.program))
      if (selected(ctx, op->decl->name.name)) jobs.push_back({path, run.program.get(), op});
  }
  if (ctx.ops.empty()) CHECK(jobs.size() >= 40);
  REQUIRE_MESSAGE(!jobs.empty(), "--ops / EMMY_GPU_OPS selects no op");

  // CPU work ctx.threads ops ahead of the GPU.
  std::deque<std::future<OpWork>> ahead;
  size_t next = 0;
  auto launch = [&] {
    const Job& j = jobs[next];
    ahead.push_back(std::async(std::launch::async, [j, &ctx, seed = 1000 * next + 1] {
      return prepare(j.file, *j.program, *j.op, ctx, seed);
    }));
    ++next;
  };
  while (next < jobs.size() && ahead.size() < ctx.threads) launch();
  Totals totals;
  double cpu_seconds = 0;
  while (!ahead.empty()) {
    OpWork w = ahead.front().get();
    ahead.pop_front();
    if (next < jobs.size()) launch();
    cpu_seconds += w.cpu_seconds;
    double ref_seconds = 0;
    for (const Case& c : w.cases) ref_seconds += c.ref_seconds;
    fmt::print("{} ({}): {} schedules, {} distinct, CPU {:.1f} s (reference {:.1f} s)\n", w.op,
               w.file.substr(w.file.rfind('/', w.file.rfind('/') - 1) + 1), w.variants.size() + w.notes.size(),
               w.variants.size(), w.cpu_seconds, ref_seconds);
    run_op(w, ctx, totals);
  }

  const std::string summary = fmt::format(
      "emmy_gpu_tests: {} ops, {} schedules ({} distinct programs), {} (op, schedule, shape) runs, {} output "
      "comparisons, {} failed, {} known divergences; GPU {:.1f} ms, CPU workers {:.1f} s, wall {:.1f} s",
      totals.ops, totals.schedules, totals.programs, totals.runs, totals.comparisons, totals.failed, totals.known,
      totals.gpu_ms, cpu_seconds, seconds_since(start));
  fmt::print("{}\n", summary);
  std::fflush(stdout);
  CHECK(totals.failed == 0);
  CHECK(totals.runs >= totals.programs * 2);
  CHECK(totals.comparisons >= totals.runs);
}

}  // namespace emmy::gpu_test
