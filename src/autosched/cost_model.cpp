// Predicts a lowered op's time, kernel by kernel: the larger of its memory, L2 and compute times
// (their sum where a tensor-core kernel has no ring to overlap them) plus a launch, each from the
// target's ceilings scaled by what the kernel's plan and launch let it reach.
#include "autosched/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "autosched/op_class.hpp"
#include "ir/launch_expr.hpp"

namespace emmy::autosched {
namespace {

using Sizes = std::map<std::string, int64_t>;
using Tier = lower::KernelPlan::Tier;

// A size symbol or decimal literal at `sizes` (unbound: 1).
double extent(const std::string& size, const Sizes& sizes) {
  if (size.empty()) return 1;
  if (std::isdigit(static_cast<unsigned char>(size[0]))) return std::stod(size);
  auto it = sizes.find(size);
  return it == sizes.end() ? 1.0 : static_cast<double>(it->second);
}

// Registers a tensor-core thread holds besides its accumulators (addresses, loop state, the
// softmax's row values): the stdlib's blocks at their ptxas counts.
constexpr int kAddressingRegisters = 40;
// A fold's row state besides (the running max and sum, their rescales, the row's saved values).
constexpr int kFoldRowRegisters = 16;
constexpr int kMaxRegisters = 255;

// ---- the tensor-core pipeline's share of the peak: a table, the first row that holds -------
struct PipelineRow {
  const char* what;
  double efficiency;
  bool (*holds)(const lower::KernelPlan&);
};
bool ring(const lower::KernelPlan& p) {
  return std::any_of(p.slabs.begin(), p.slabs.end(), [](const lower::SlabPlan& s) { return s.buffers >= 2; });
}
bool tma_ring(const lower::KernelPlan& p) {
  return std::any_of(p.slabs.begin(), p.slabs.end(),
                     [](const lower::SlabPlan& s) { return s.buffers >= 2 && s.transport == "tma"; });
}
// Producer warps feed wgmma's asynchronous products; an mma.sync warp waits on its own loads
// either way (the H200's matmul with producers ran 475 us against 291 without).
bool producers(const lower::KernelPlan& p) { return p.producer_threads > 0 && p.atom.rfind("wgmma", 0) == 0; }
constexpr PipelineRow kPipelines[] = {
    {"producers, overlap, turns", 0.80,
     [](const lower::KernelPlan& p) { return producers(p) && p.overlap && p.turns > 0; }},
    {"producers and overlap", 0.76, [](const lower::KernelPlan& p) { return producers(p) && p.overlap; }},
    {"overlap on a TMA ring", 0.70, [](const lower::KernelPlan& p) { return p.overlap && tma_ring(p); }},
    {"producers", 0.68, producers},
    {"TMA ring", 0.62, tma_ring},
    {"cp.async ring", 0.55, ring},
    {"one buffer a slab", 0.40, [](const lower::KernelPlan& p) { return !p.slabs.empty(); }},
    {"fragments from global memory", 0.20, [](const lower::KernelPlan&) { return true; }},
};
const PipelineRow& pipeline_row(const lower::KernelPlan& p) {
  for (const PipelineRow& r : kPipelines)
    if (r.holds(p)) return r;
  return kPipelines[std::size(kPipelines) - 1];
}

// The tensor cores' shared-memory bytes a FLOP: an issuer's tile of im x in (a wgmma warpgroup:
// 64 x the atom's N; an mma.sync warp: its fragments) reads im + in rows of 16 a k-step.
double smem_bytes_per_flop(const lower::KernelPlan& p, double elem) {
  double im = 16.0 * std::max(p.frag_m, 1), in = 8.0 * std::max(p.frag_n, 1);
  if (p.atom.rfind("wgmma", 0) == 0) {
    im = 64;
    const size_t n = p.atom.find('n', 6);
    if (n != std::string::npos) in = std::max(std::atof(p.atom.c_str() + n + 1), 8.0);
  }
  return elem * (im + in) / (2 * im * in);
}

// ---- work: element operations of a loop nest ------------------------------------------------
// A fold's combine, in element operations a trip: divisions and the special functions cost
// several (Welford's per-element divisions made the H200's fused layernorm 2.8x its two passes).
struct OpWeight {
  algebra::TermOp op;
  double ops;
};
constexpr OpWeight kOpWeights[] = {{algebra::TermOp::Div, 8}, {algebra::TermOp::IDiv, 8}, {algebra::TermOp::Mod, 8},
                                   {algebra::TermOp::Exp, 4}, {algebra::TermOp::Log, 4},  {algebra::TermOp::Sqrt, 4},
                                   {algebra::TermOp::Var, 0}, {algebra::TermOp::Const, 0}};
double term_ops(const algebra::Term& t) {
  double n = 1;
  for (const OpWeight& w : kOpWeights)
    if (w.op == t.op) n = w.ops;
  for (const algebra::Term& a : t.args) n += term_ops(a);
  return n;
}

struct Work {
  const Sizes& sizes;
  const tir::Program& tensors;
  std::set<std::string> stored;  // tensors some kernel writes; another intermediate is recomputed where read
  mutable std::map<std::string, double> recomputed = {};  // a fused intermediate's element operations, by name
  // An intermediate no kernel writes is computed again at each read (PLACE=fuse): its whole
  // definition, reductions included, counts at every read.
  double read_cost(const std::string& name) const {
    if (stored.count(name)) return 0;
    if (auto it = recomputed.find(name); it != recomputed.end()) return it->second;
    double n = 0;
    for (const tir::Stmt& d : tensors.stmts)
      if (d.name == name) n = expr(d.value);
    return recomputed[name] = n;
  }
  double axes(const std::vector<tir::Axis>& a) const {
    double n = 1;
    for (const tir::Axis& x : a) n *= extent(x.size, sizes);
    return n;
  }
  // The elements one value of `e` stands for: a vector field's (a Slice read's dimension) or 1.
  double width(const tir::Expr& e) const {
    double w = 1;
    if (e.kind == tir::Expr::Kind::Read)
      if (const tir::Tensor* t = tensors.find(e.name))
        for (size_t i = 0; i < e.args.size() && i < t->dims.size(); ++i)
          if (e.args[i].kind == tir::Expr::Kind::Slice) w *= extent(t->dims[i], sizes);
    for (const tir::Expr& a : e.args) w = std::max(w, width(a));
    return e.kind == tir::Expr::Kind::Reduce ? 1 : w;
  }
  double expr(const tir::Expr& e) const {
    double inner = 0;
    for (const tir::Expr& a : e.args) inner += expr(a);
    for (const tir::Expr& w : e.where) inner += expr(w);
    if (e.kind == tir::Expr::Kind::Reduce) return axes(e.axes) * (inner + 1) * (e.where.empty() ? 1.0 : 0.5);
    if (e.kind == tir::Expr::Kind::Read) inner += read_cost(e.name);
    return inner + width(e);
  }
  double stmts(const std::vector<lir::Stmt>& body) const {
    double n = 0;
    for (const lir::Stmt& s : body) {
      switch (s.kind) {
        case lir::Stmt::Kind::Loop: n += extent(s.axis.size, sizes) * stmts(s.body); break;
        case lir::Stmt::Kind::Compute:
        case lir::Stmt::Kind::Store: n += expr(s.value) + 1; break;
        case lir::Stmt::Kind::Fold: {
          double lift = 1;
          for (const lir::CarrierField& f : s.fields) lift += expr(f.lift);
          for (const algebra::Term& c : s.terms.combine) lift += term_ops(c);
          for (const tir::Expr& w : s.where) lift += expr(w);
          double trips = extent(s.axis.size, sizes) * (s.where.empty() ? 1.0 : 0.5);
          n += trips * lift + stmts(s.results);
          break;
        }
      }
    }
    return n;
  }
};

// Every axis a loop kernel names, by name: the extents the plan's tiled axes have.
void collect_axes(const std::vector<lir::Stmt>& body, std::map<std::string, std::string>& out) {
  lir::visit(body, [&](const lir::Stmt& s) {
    if (s.kind == lir::Stmt::Kind::Loop || s.kind == lir::Stmt::Kind::Fold) out[s.axis.name] = s.axis.size;
    lir::visit_exprs(s, [&](const tir::Expr& e) {
      tir::visit(e, [&](const tir::Expr& n) {
        for (const tir::Axis& a : n.axes) out[a.name] = a.size;
      });
    });
  });
}

// The extent of `axis` in the read a slab stages ("q[b, h, i, d_1]"): the read tensor's dimension.
std::string slab_axis_size(const lower::KernelPlan& p, const std::string& axis, const tir::Program& tensors) {
  for (const lower::SlabPlan& s : p.slabs)
    if (std::string size = read_axis_size(s.read, axis, tensors); !size.empty()) return size;
  return "";
}

// A buffer's bytes at `sizes`.
double bytes_of(const kir::Buffer& b, const Sizes& sizes) {
  double n = kir::type_bytes(b.type);
  for (const std::string& d : b.dims) n *= extent(d, sizes);
  return n;
}

// The elements of each tensor the kernel whose loop IR is `loops` reads, one walk: the most any
// one read of it covers, the extents of the axes its subscripts name (a gather table[ids[n], c]
// over (n, c) reaches N rows, not the table; g[c] all of g); infinite where a subscript names an
// axis of unknown extent. A tensor not read is not in the map.
std::map<std::string, double> reached_elements(const lir::Kernel& loops, const Sizes& sizes) {
  std::map<std::string, std::string> axes;  // name -> size
  for (const tir::Axis& a : loops.threads) axes[a.name] = a.size;
  collect_axes(loops.body, axes);
  std::map<std::string, double> out;
  lir::visit(loops.body, [&](const lir::Stmt& s) {
    lir::visit_exprs(s, [&](const tir::Expr& e) {
      tir::visit(e, [&](const tir::Expr& r) {
        if (r.kind != tir::Expr::Kind::Read) return;
        std::set<std::string> named;
        for (const tir::Expr& a : r.args)
          tir::visit(a, [&](const tir::Expr& x) {
            if (x.kind == tir::Expr::Kind::Index) named.insert(x.name);
          });
        double n = 1;
        for (const std::string& axis : named) {
          auto it = axes.find(axis);
          n = it == axes.end() ? std::numeric_limits<double>::infinity() : n * extent(it->second, sizes);
        }
        double& most = out[r.name];
        most = std::max(most, n);
      });
    });
  });
  return out;
}

// The kernel's global buffers (a TMA descriptor's buffer counts once), or its inputs only, in
// bytes at `sizes`, each as far as the kernel's reads reach it (reached_elements), never more than
// the buffer; `narrowest` (when given) takes the narrowest element among them.
double buffer_bytes(const kir::Program& program, const kir::Kernel& k, const lir::Kernel* loops, const Sizes& sizes,
                    bool inputs_only, int* narrowest = nullptr) {
  const std::map<std::string, double> reached =
      loops ? reached_elements(*loops, sizes) : std::map<std::string, double>{};
  std::set<std::string> names;
  for (const kir::Param& p : k.params) {
    if (p.kind == kir::Param::Kind::Buffer) names.insert(p.name);
    if (p.kind == kir::Param::Kind::TensorMap) names.insert(p.map_of);
  }
  double bytes = 0;
  for (const kir::Buffer& b : program.buffers) {
    if (!names.count(b.name) || (inputs_only && b.role != kir::Buffer::Role::Input)) continue;
    if (narrowest) *narrowest = std::min(*narrowest, kir::type_bytes(b.type));
    const double whole = bytes_of(b, sizes);
    auto it = reached.find(b.name);
    bytes += it == reached.end() ? whole : std::min(whole, it->second * kir::type_bytes(b.type));
  }
  return bytes;
}

// The CTA tile's rows and columns (a fold's key block) from its slabs; 64 x 64 without slabs.
std::pair<double, double> cta_tile(const lower::KernelPlan& p) {
  double tm = 64, tn = 64;
  for (const lower::SlabPlan& s : p.slabs) {
    if (s.role == "row") tm = s.outer == p.rows ? s.rows : s.cols;
    if (s.role == "col") tn = s.outer == p.cols ? s.rows : s.cols;
  }
  return {std::max(tm, 1.0), std::max(tn, 1.0)};
}

// The value columns a fold's sibling register tiles add (dv's beside dk's): their slabs' columns.
double sibling_value_cols(const lower::KernelPlan& p) {
  double cols = 0;
  for (const lower::SlabPlan& s : p.slabs)
    if (lower::is_sibling_value(s)) cols += s.cols;
  return cols;
}

// A consumer thread's registers: its accumulators (and a fold's output columns its value slab
// takes) over the consumer threads, plus addressing.
int tensor_core_registers(const lower::KernelPlan& p, double tm, double tn, double value_cols) {
  for (const lower::SlabPlan& s : p.slabs)
    if (s.role == "value" && s.cols > 0) value_cols = std::min<double>(value_cols, s.cols);
  value_cols += sibling_value_cols(p);
  const int consumers = std::max(p.block_threads, 32);  // the plan counts consumers; producers come after
  const double scores = p.reduced2.empty() ? 1 : 2;     // a fold weight's second contraction: its own scores
  const double acc = (scores * tm * tn + (p.tier == Tier::MmaFold ? tm * value_cols : 0)) / consumers;
  // mma.sync's operand fragments a warp holds at once (wgmma reads them from shared memory): A's
  // four registers an m-atom, B's two an n-atom; a fold's block weights as the A operand of each
  // output's P @ V (two registers a key fragment, P's and dS's in a backward's dk_dv) and the
  // softmax's row state. The value fragments are loaded a k-step at a time: they do not grow with
  // the value columns (ptxas, sm_90a: head dim 128's dk and dv in one pass at 32-key blocks, 252).
  int fragments = 0;
  if (p.atom.rfind("mma", 0) == 0) {
    fragments = p.frag_m * 4 + p.frag_n * 2;
    if (p.tier == Tier::MmaFold) {
      int outputs = 1;
      for (const lower::SlabPlan& s : p.slabs) outputs += lower::is_sibling_value(s) ? 1 : 0;
      fragments += p.frag_m * 4 + kFoldRowRegisters + 2 * p.frag_n * outputs;
    }
  }
  return static_cast<int>(std::ceil(acc)) + fragments + kAddressingRegisters;
}

// The inputs a thread of the scalar tier reads along their contiguous dim while the thread space
// indexes an outer one (a thread a row: dl[i] = sum(e: do[i, e] * o[i, e]) / l[i]): neighbouring
// threads are a row apart, so each access of a warp is a sector of its own.
std::set<std::string> strided_row_reads(const lir::Kernel& k, const tir::Program& tensors) {
  std::set<std::string> threads, out;
  for (const tir::Axis& a : k.threads) threads.insert(a.name);
  auto is_thread = [&](const tir::Expr& e) { return e.kind == tir::Expr::Kind::Index && threads.count(e.name); };
  lir::visit(k.body, [&](const lir::Stmt& s) {
    lir::visit_exprs(s, [&](const tir::Expr& top) {
      tir::visit(top, [&](const tir::Expr& e) {
        if (e.kind != tir::Expr::Kind::Read || e.args.size() < 2) return;
        const tir::Tensor* t = tensors.find(e.name);
        const tir::Expr& inner = e.args.back();
        if (t && t->role == tir::Tensor::Role::Input && inner.kind == tir::Expr::Kind::Index && !is_thread(inner) &&
            std::any_of(e.args.begin(), e.args.end() - 1, is_thread))
          out.insert(e.name);
      });
    });
  });
  return out;
}

// The bytes of the buffers named whose rows (their last dim) are at least `row_bytes` long: a
// shorter row shares its sectors with the neighbouring threads', which stay in L1 for the walk.
double long_row_bytes(const kir::Program& program, const std::set<std::string>& names, const Sizes& sizes,
                      double row_bytes) {
  double bytes = 0;
  for (const kir::Buffer& b : program.buffers) {
    if (!names.count(b.name) || b.dims.empty() || extent(b.dims.back(), sizes) * kir::type_bytes(b.type) < row_bytes)
      continue;
    bytes += bytes_of(b, sizes);
  }
  return bytes;
}

// Sequential passes over a thread's data: the top-level loops, folds and reductions of its body.
int passes(const std::vector<lir::Stmt>& body) {
  int n = 0;
  for (const lir::Stmt& s : body)
    n += s.kind == lir::Stmt::Kind::Loop || s.kind == lir::Stmt::Kind::Fold || tir::has_reduce(s.value) ? 1 : 0;
  return std::max(n, 1);
}

// CTAs resident an SM by shared memory, threads and registers; the launch's waves over the slots
// and the threads resident at once.
struct Residency {
  int per_sm = 1;
  double waves = 1, resident_threads = 0;
};
Residency residency(const kir::Kernel& k, double ctas, int regs, int64_t smem, const TargetInfo& target,
                    const TargetCeilings& c) {
  int per_sm = std::min<int>(c.threads_per_sm / std::max(k.block_threads, 1),
                             target.register_file / std::max(k.block_threads * regs, 1));
  if (smem > 0) per_sm = std::min<int>(per_sm, static_cast<int>(c.smem_per_sm_bytes / smem));
  Residency r;
  r.per_sm = std::clamp(per_sm, 1, 32);
  const double slots = static_cast<double>(c.sms) * r.per_sm;
  r.waves = std::ceil(ctas / slots);
  r.resident_threads = std::min(ctas, slots) * k.block_threads;
  return r;
}

// The scalar tiers' compute time: the larger of the loop nest's arithmetic at the FMA peak and a
// thread's dependent steps, plus each wave's passes over the rows (a global round trip each, but
// one under a row cache that holds the rows) and a cooperative row's reduction trees.
struct RowCompute {
  double alu = 0, serial = 0, us = 0;
};
RowCompute row_compute(double work, double resident_threads, double waves, int threads_a_row, int row_passes,
                       bool cached, const TargetCeilings& c, const Fitted& f) {
  RowCompute r;
  r.alu = work * 2 / (c.fma_tflops * 1e6);
  r.serial = work / std::max(resident_threads, 1.0) * f.step_cycles / (c.clock_ghz * 1e3);
  const double round_trips = cached ? 1 : row_passes;
  const double wave = round_trips * f.pass_us + row_passes * std::log2(threads_a_row) * f.sync_us;
  r.us = std::max(r.alu, r.serial) + waves * wave;
  return r;
}

// Global memory at the bandwidth the accesses in flight reach (bandwidth x latency), bytes a us.
double memory_rate(double in_flight, const TargetCeilings& c) {
  return std::min(c.dram_gbs * 1e3, in_flight / c.latency_us);
}

// A loop kernel's thread space and its element operations over it.
struct LoopWork {
  double points = 1, work = 1;
};
LoopWork loop_work(const lower::Lowered& l, const lir::Kernel* loops, const Sizes& sizes) {
  if (!loops) return {};
  std::set<std::string> stored;
  for (const lir::Kernel& lk : l.loops.kernels)
    lir::visit(lk.body, [&](const lir::Stmt& s) {
      if (s.kind == lir::Stmt::Kind::Store) stored.insert(s.tensor);
    });
  const Work work{sizes, l.loops.tensors, std::move(stored)};
  LoopWork out;
  out.points = work.axes(loops->threads);
  out.work = out.points * std::max(work.stmts(loops->body), 1.0);
  return out;
}

const lir::Kernel* loops_of(const lower::Lowered& l, const kir::Program& program, size_t index) {
  return l.loops.kernels.size() == program.kernels.size() ? &l.loops.kernels[index] : nullptr;
}

bool on_tensor_cores(const lower::KernelPlan* plan) {
  return plan && (plan->tier == Tier::MmaContraction || plan->tier == Tier::MmaFold);
}

// A thread a row walking the rows' contiguous dim: a sector moves for each element read (rows of a
// sector or longer), the bytes besides the elements'.
double strided_extra_bytes(const kir::Program& program, const lower::Lowered& l, const lir::Kernel* loops,
                           const Sizes& sizes, int narrowest, const TargetCeilings& c) {
  if (!loops) return 0;
  const double strided = long_row_bytes(program, strided_row_reads(*loops, l.loops.tensors), sizes, c.sector_bytes);
  return strided * (c.sector_bytes / static_cast<double>(narrowest) - 1);
}

KernelCost kernel_cost(const kir::Program& program, size_t index, const lower::Lowered& l, const Sizes& sizes,
                       const TargetInfo& target, const TargetCeilings& c, const Fitted& f) {
  const kir::Kernel& k = program.kernels[index];
  const lower::KernelPlan* plan = index < l.plans.size() ? &l.plans[index] : nullptr;
  const lir::Kernel* loops = loops_of(l, program, index);
  KernelCost out;
  out.kernel = k.name;
  out.tier = plan ? lower::tier_name(plan->tier) : "scalar";
  out.persistent = k.persistent;
  out.ctas = kir::ctas_at(k, sizes);
  int narrowest = 8;
  out.bytes = buffer_bytes(program, k, loops, sizes, false, &narrowest);
  const bool tensor_cores = on_tensor_cores(plan);

  // Work: the loop nest's element operations over its thread space.
  const LoopWork lw = loop_work(l, loops, sizes);
  const double points = lw.points;
  out.work = lw.work;

  // The tensor-core tiers' tiles and extents.
  double tm = 1, tn = 1, reduced = 1, keys = 1, value_cols = 1;
  if (tensor_cores) {
    std::map<std::string, std::string> axes;
    if (loops) collect_axes(loops->body, axes);
    auto size_of = [&](const std::string& axis) {
      auto it = axes.find(axis);
      return extent(it != axes.end() ? it->second : slab_axis_size(*plan, axis, l.loops.tensors), sizes);
    };
    std::tie(tm, tn) = cta_tile(*plan);
    reduced = size_of(plan->reduced);
    for (const std::string& outer : plan->reduced_outer) reduced *= size_of(outer);  // sum(h, d: ...)
    if (!plan->reduced2.empty()) reduced += size_of(plan->reduced2);                 // both of a weight's contractions
    keys = size_of(plan->cols);
    double out_elems = 0;
    for (const kir::Buffer& b : program.buffers)
      if (b.role == kir::Buffer::Role::Output) {
        double n = 1;
        for (const std::string& d : b.dims) n *= extent(d, sizes);
        out_elems = std::max(out_elems, n);
      }
    value_cols = std::max(out_elems / std::max(points, 1.0), 1.0);
  }
  const double sibling_cols = tensor_cores ? sibling_value_cols(*plan) : 0;

  // Residency: CTAs an SM by shared memory, threads and registers.
  const int64_t smem = kir::shared_bytes(k);
  if (tensor_cores) {
    out.registers = tensor_core_registers(*plan, tm, tn, value_cols);
    out.register_budget = plan->consumer_registers > 0 ? plan->consumer_registers : kMaxRegisters;
  }
  // (A row cache in registers, COOP's r<R>, is charged no registers beyond the scalar tiers'
  // addressing ones, as one in shared memory is not: the auto-scheduler offers it only where it
  // keeps at most eight 16-byte chunks a thread. Charging its launch bounds' registers made the
  // model pick streamed rows at (32768, 8192): RESULTS.md, "the row choices".)
  const int regs =
      tensor_cores ? std::min(plan->consumer_registers > 0 ? plan->consumer_registers : kMaxRegisters, out.registers)
                   : kAddressingRegisters;
  const Residency resident = residency(k, static_cast<double>(out.ctas), regs, smem, target, c);
  out.per_sm = resident.per_sm;
  out.waves = resident.waves;
  const double resident_threads = resident.resident_threads;

  // Memory: the buffers once, at the bandwidth the accesses in flight reach (bandwidth x latency).
  const double access = tensor_cores ? 16.0 : static_cast<double>(narrowest) * std::max(l.knobs.coop_vec, 1);
  out.in_flight = resident_threads * access * f.accesses_in_flight;
  out.memory_us = out.bytes / memory_rate(out.in_flight, c);

  if (tensor_cores) {
    const double bound = plan->key_bound.empty() || plan->key_bound == "none" ? 1.0 : 0.5;
    const double elem = narrowest;
    if (plan->tier == Tier::MmaContraction) {
      out.flops = 2 * points * reduced;
      out.tile_bytes = elem * points * reduced * (1 / tn + 1 / tm);
    } else {
      // A CTA whose value slab takes part of the value columns folds the keys once a part:
      // the scores and exponentials again each time.
      double parts = 1;
      for (const lower::SlabPlan& s : plan->slabs)
        if (s.role == "value" && s.cols > 0) parts = std::ceil(value_cols / s.cols);
      out.flops = 2 * points * keys * (reduced * parts + value_cols + sibling_cols) * bound;
      out.exps = points * keys * bound * parts;
      out.tile_bytes = elem * (points / tm) * keys * (reduced * parts + value_cols + sibling_cols) * bound;
    }
    out.smem_bytes = out.flops * smem_bytes_per_flop(*plan, elem);
    const PipelineRow& row = pipeline_row(*plan);
    out.pipeline = row.what;
    out.efficiency = row.efficiency;
    out.overlap = plan->turns > 0 ? "turns" : plan->overlap ? "overlap" : "none";
    const double exposed = plan->turns > 0 ? f.exposed_turns : plan->overlap ? f.exposed_overlap : f.exposed_none;
    // The busiest SM's CTAs one after another at its whole throughput (a partial wave leaves
    // fewer CTAs an SM than fit): products, their shared-memory reads and the softmax's
    // exponentials, then a prologue and epilogue a wave.
    const double ctas = static_cast<double>(out.ctas);
    const double loaded = std::ceil(ctas / c.sms), together = std::min<double>(out.per_sm, loaded);
    // Under a key bound (causal) a CTA's keys range from none to all: the busiest SM holds at
    // least one CTA with all of them, twice the average.
    const double busiest = std::max(loaded, 1 / bound);
    const bool wgmma = plan->atom.rfind("wgmma", 0) == 0;
    const double peak_sm = (wgmma ? c.wgmma_tflops : c.mma_tflops) * 1e6 / c.sms;  // flops a microsecond
    const int consumers = std::max(plan->block_threads, 128) / 128;                // consumer warpgroups
    const double busy = wgmma && consumers * together < 2 ? f.lone_warpgroup : 1.0;
    const bool cp_ring = wgmma && ring(*plan) && !tma_ring(*plan);
    const double tc = out.flops / ctas * busiest / (peak_sm * out.efficiency * busy * (cp_ring ? f.cp_wgmma : 1.0));
    const double shared = out.smem_bytes / ctas * busiest / (c.smem_gbs * 1e3 / c.sms);
    const double ex = out.exps / ctas * busiest / (c.exp_per_clock * c.clock_ghz * 1e3);
    // An mma.sync warp issues its fragments' loads and its products in turn; wgmma reads shared
    // memory beside its products.
    const double core = wgmma ? std::max(tc, shared) : tc + shared;
    const double cta = std::max(core, ex) + exposed * std::min(core, ex);
    // A persistent CTA pays its prologue once, not once a tile.
    out.compute_us = cta + (out.persistent ? 1.0 : out.waves) * f.cta_overhead_us;
    out.l2_us = out.tile_bytes / (c.l2_gbs * 1e3);
    const bool overlapped = ring(*plan);
    const double body = overlapped ? std::max({out.memory_us, out.l2_us, out.compute_us})
                                   : std::max(out.memory_us, out.compute_us + out.l2_us);
    out.us = c.launch_us + body;
    out.bound = out.memory_us >= std::max(out.l2_us, out.compute_us) ? "memory"
                : out.l2_us >= out.compute_us                        ? "L2"
                : ex > core                                          ? "exp"
                : shared > tc                                        ? "shared memory"
                                                                     : "tensor cores";
  } else {
    const int threads_a_row = plan && plan->tier == Tier::CoopRows ? std::max(plan->coop_threads, 1) : 1;
    const int row_passes = loops ? passes(loops->body) : 1;
    // Under a row cache that holds the rows at these sizes, the passes after the first read
    // shared memory (or registers): no global round trip, and no second read of the inputs from L2
    // or memory.
    bool cached = plan && plan->cache_capacity > 0 && !plan->cache_kept.empty();
    // (COOP's k<K>: each CTA holds its slice of the row, 1/K of it.)
    const double slices = plan && plan->cluster > 1 ? plan->cluster : 1;
    if (cached)
      for (const std::string& size : plan->cache_sizes)
        cached &= std::ceil(extent(size, sizes) / slices) <= plan->cache_capacity;
    // Rows copied whole before the first pass (inputs under the row cache): a resident row's copies
    // are all in flight together. (A CTA's passes wait for its copies; that is not charged: with
    // the dependent-steps estimate of one CTA an SM it misranked the f32 long rows, RESULTS.md.)
    const bool copied = cached && !plan->cache_copied.empty();
    if (copied) {
      double row = 0, element = 0;
      for (const std::string& size : plan->cache_sizes) row = std::max(row, std::ceil(extent(size, sizes) / slices));
      for (const kir::Buffer& b : program.buffers)
        if (std::find(plan->cache_copied.begin(), plan->cache_copied.end(), b.name) != plan->cache_copied.end())
          element += kir::type_bytes(b.type);
      const double rows_resident = resident_threads / threads_a_row;
      out.in_flight = std::max(out.in_flight, rows_resident * row * element);
      out.memory_us = out.bytes / memory_rate(out.in_flight, c);
    }
    const RowCompute rc = row_compute(out.work, resident_threads, out.waves, threads_a_row, row_passes, cached, c, f);
    const double alu = rc.alu, serial = rc.serial;
    out.compute_us = rc.us;
    if (threads_a_row == 1)
      out.memory_us += strided_extra_bytes(program, l, loops, sizes, narrowest, c) / memory_rate(out.in_flight, c);
    // Each pass after the first reads the rows' inputs again: from shared memory under the row
    // cache (nothing from registers), from L2 where the rows the resident threads hold fit in it, else from memory. A
    // read again from L2 does not hide under the first read from memory (the two share L2's path to the SMs, and the
    // stores stream through L2 beside them): its time adds to the memory's.
    const double inputs = buffer_bytes(program, k, loops, sizes, true);
    const double reread = (row_passes - 1) * inputs;
    const double resident_rows = std::min(points * threads_a_row, resident_threads) / threads_a_row;
    if (cached && plan->cache_registers) {
      // (kept in registers: the passes after the first read nothing)
    } else if (cached) {
      out.smem_bytes = reread;
      out.compute_us += reread / (c.smem_gbs * 1e3);
    } else if (resident_rows * inputs / std::max(points, 1.0) <= c.l2_reuse_bytes) {
      out.l2_us = reread / (c.l2_gbs * 1e3);
    } else {
      out.memory_us += reread / memory_rate(out.in_flight, c);
    }
    const double body = std::max(out.memory_us + out.l2_us, out.compute_us);
    out.us = c.launch_us + body;
    out.bound = out.memory_us + out.l2_us >= out.compute_us ? "memory" : alu >= serial ? "ALU" : "latency";
  }
  if (out.us < 2 * c.launch_us) out.bound = "launch";
  return out;
}

// A floor under kernel_cost's time from what a lowering without bodies holds (KernelBodies::None):
// a tensor-core kernel's buffers once at the memory's bandwidth; a scalar tier's with every CTA it
// could hold resident (no shared memory) and its row cache (COOP's c<R>) holding the rows: its
// arithmetic, dependent steps and passes, and its buffers (a thread a row's strided walks
// included) at the bandwidth those threads reach. What kernel_cost adds besides (rows re-read)
// only adds.
double kernel_floor(const kir::Program& program, size_t index, const lower::Lowered& l, const Sizes& sizes,
                    const TargetInfo& target, const TargetCeilings& c, const Fitted& f) {
  const kir::Kernel& k = program.kernels[index];
  const lower::KernelPlan* plan = index < l.plans.size() ? &l.plans[index] : nullptr;
  int narrowest = 8;
  const lir::Kernel* loops = loops_of(l, program, index);
  const double bytes = buffer_bytes(program, k, loops, sizes, false, &narrowest);
  if (on_tensor_cores(plan)) return c.launch_us + bytes / (c.dram_gbs * 1e3);
  const Residency most = residency(k, static_cast<double>(kir::ctas_at(k, sizes)), kAddressingRegisters, 0, target, c);
  const double in_flight = most.resident_threads * narrowest * std::max(l.knobs.coop_vec, 1) * f.accesses_in_flight;
  const bool coop = plan && plan->tier == Tier::CoopRows;
  const double strided = coop ? 0 : strided_extra_bytes(program, l, loops, sizes, narrowest, c);
  const RowCompute rc = row_compute(loop_work(l, loops, sizes).work, most.resident_threads, most.waves,
                                    coop ? std::max(plan->coop_threads, 1) : 1, loops ? passes(loops->body) : 1,
                                    coop && l.knobs.coop_cache > 0, c, f);
  // (A row cache may copy its rows whole, every copy in flight: its memory at the bandwidth.)
  const double rate = coop && l.knobs.coop_cache > 0 ? c.dram_gbs * 1e3 : memory_rate(in_flight, c);
  return c.launch_us + std::max((bytes + strided) / rate, rc.us);
}

}  // namespace

double cost_floor(const lower::Lowered& lowered, const std::map<std::string, int64_t>& sizes, const TargetInfo& target,
                  const Fitted& fitted) {
  const TargetCeilings& c = target_ceilings(target);
  double us = 0;
  for (size_t i = 0; i < lowered.kernels.kernels.size(); ++i)
    us += kernel_floor(lowered.kernels, i, lowered, sizes, target, c, fitted);
  return us;
}

bool row_cache_moot(const lower::Lowered& lowered) {
  return std::all_of(lowered.loops.kernels.begin(), lowered.loops.kernels.end(),
                     [](const lir::Kernel& k) { return passes(k.body) <= 1; });
}

std::optional<Fitted> parse_fitted(const std::string& text) {
  Fitted f;
  const std::map<std::string, double*> fields{{"cta_overhead_us", &f.cta_overhead_us},
                                              {"exposed_none", &f.exposed_none},
                                              {"exposed_overlap", &f.exposed_overlap},
                                              {"exposed_turns", &f.exposed_turns},
                                              {"lone_warpgroup", &f.lone_warpgroup},
                                              {"cp_wgmma", &f.cp_wgmma},
                                              {"accesses_in_flight", &f.accesses_in_flight},
                                              {"step_cycles", &f.step_cycles},
                                              {"pass_us", &f.pass_us},
                                              {"sync_us", &f.sync_us}};
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(at, end - at);
    const size_t eq = entry.find('=');
    auto it = eq == std::string::npos ? fields.end() : fields.find(entry.substr(0, eq));
    if (it == fields.end()) return std::nullopt;
    char* stop = nullptr;
    *it->second = std::strtod(entry.c_str() + eq + 1, &stop);
    if (stop == entry.c_str() + eq + 1 || *stop) return std::nullopt;
    at = end + 1;
  }
  return f;
}

Cost estimate_cost(const lower::Lowered& lowered, const std::map<std::string, int64_t>& sizes, const TargetInfo& target,
                   const Fitted& fitted) {
  const TargetCeilings& c = target_ceilings(target);
  Cost cost;
  for (size_t i = 0; i < lowered.kernels.kernels.size(); ++i) {
    cost.kernels.push_back(kernel_cost(lowered.kernels, i, lowered, sizes, target, c, fitted));
    cost.us += cost.kernels.back().us;
  }
  return cost;
}

std::string print_cost(const Cost& cost) {
  std::string out;
  for (const KernelCost& k : cost.kernels) {
    out += fmt::format("kernel {}: {}, {} bound\n  {} CTAs, {} an SM, {:g} waves{}; {:.3g} MB of buffers", k.kernel,
                       k.tier, k.bound, k.ctas, k.per_sm, k.waves, k.persistent ? " (persistent)" : "", k.bytes / 1e6);
    if (k.flops > 0)
      out += fmt::format(
          ", {:.3g} MB of tiles through L2, {:.3g} GFLOP, {:.3g} G exponentials\n  pipeline: {} ({:.2f}); "
          "about {} registers a consumer thread of {}{}",
          k.tile_bytes / 1e6, k.flops / 1e9, k.exps / 1e9, k.pipeline, k.efficiency, k.registers, k.register_budget,
          k.registers > k.register_budget ? ": it spills" : "");
    else
      out += fmt::format(", {:.3g} G element operations", k.work / 1e9);
    out += fmt::format("\n  memory {:.1f} us, L2 {:.1f} us, compute {:.1f} us: {:.1f} us with its launch\n",
                       k.memory_us, k.l2_us, k.compute_us, k.us);
    out += fmt::format(
        "  features: {{\"tier\": \"{}\", \"ctas\": {}, \"per_sm\": {}, \"waves\": {:g}, \"persistent\": {}, "
        "\"bytes\": {:g}, \"in_flight\": {:g}, \"tile_bytes\": {:g}, \"smem_bytes\": {:g}, \"flops\": {:g}, "
        "\"exps\": {:g}, \"work\": {:g}, \"pipeline\": \"{}\", \"overlap\": \"{}\", \"us\": {:g}}}\n",
        k.tier, k.ctas, k.per_sm, k.waves, k.persistent, k.bytes, k.in_flight, k.tile_bytes, k.smem_bytes, k.flops,
        k.exps, k.work, k.pipeline, k.overlap, k.us);
  }
  out += fmt::format("predicted: {:.1f} us\n", cost.us);
  return out;
}

}  // namespace emmy::autosched
