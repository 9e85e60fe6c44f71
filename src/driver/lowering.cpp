// emmyc compile --ir tensor|loop|kernel|cuda|ptx: lower one op of a checked program with its
// knobs and print a level.
#include "driver/lowering.hpp"

#include <fmt/format.h>

#include "autosched/auto_schedule.hpp"
#include "codegen/cuda/print_cuda.hpp"
#include "codegen/ptx/print_ptx.hpp"
#include "ir/print_kernel.hpp"
#include "runtime/nvrtc.hpp"

namespace emmy {

const CheckedOp* pick_op(const CheckedProgram& program, const std::string& name, std::ostream& err) {
  std::vector<std::string> ops = lower::main_ops(program);
  if (name.empty()) {
    if (ops.size() == 1) return &program.ops.at(ops.front());
    err << fmt::format("emmyc: error: --op is required: this file defines {}\n",
                       ops.empty() ? std::string("no op") : fmt::format("{}", fmt::join(ops, ", ")));
    return nullptr;
  }
  auto it = program.ops.find(name);
  if (it != program.ops.end()) return &it->second;
  std::string guess = closest_name(name, ops);
  err << fmt::format(
      "emmyc: error: no op '{}' in this file{}\n", name,
      guess.empty() ? fmt::format(" (ops: {})", fmt::join(ops, ", ")) : fmt::format("; did you mean '{}'?", guess));
  return nullptr;
}

namespace {

// `schedule OP for T [as "NAME"]` at FILE:LINE, or "no block".
std::string block_name(const CheckedSchedule* s) {
  if (!s) return "no block: the auto-schedule";
  const ast::ScheduleDecl& d = *s->decl;
  return fmt::format("schedule {} for {}{}{} ({}:{})", d.op.name, d.target.name,
                     d.label ? fmt::format(" as \"{}\"", d.label->name) : "", d.automatic ? " auto" : "", s->place.path,
                     s->place.line);
}

// --explain-schedule: the blocks a run of `op` considers, in order, and each one's verdict before
// the kernels' limits are checked (those verdicts follow as "passed over" / "taken").
void explain_choice(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                    const LowerOptions& lo, const CheckedSchedule* in_force, std::ostream& err) {
  std::vector<std::string> sizes;
  if (lo.sizes)
    for (const auto& [name, value] : *lo.sizes) sizes.push_back(fmt::format("{}={}", name, value));
  err << fmt::format(
      "emmyc: schedule of {} for {}{}:\n", op.decl->name.name, target.name,
      lo.sizes ? fmt::format(" at {}", fmt::join(sizes, ",")) : " (no sizes: guarded blocks are not tried)");
  if (!lo.schedule.empty()) {
    err << "  asked for by --schedule: " << block_name(in_force) << "\n";
    return;
  }
  if (!in_force && (!lo.env_knobs.empty() || !lo.cli_knobs.empty())) {
    err << "  the knobs given are the whole schedule (no block; --knobs-merge puts them over it)\n";
    return;
  }
  for (const CheckedSchedule* c : lower::default_candidates(program, op.decl->name.name, target)) {
    std::string verdict = !c                                  ? "derived from the op and the sizes"
                          : !c->decl->guard                   ? "unguarded"
                          : !lo.sizes                         ? "guarded, not tried without sizes"
                          : lower::guard_holds(*c, *lo.sizes) ? "its guard holds"
                                                              : "its guard does not hold";
    err << fmt::format("  {}: {}\n", block_name(c), verdict);
  }
}

}  // namespace

std::variant<const CheckedSchedule*, std::string> block_in_force(const CheckedSchedule* block, const LowerOptions& lo) {
  if (lo.knobs_merge || (lo.env_knobs.empty() && lo.cli_knobs.empty())) return block;
  if (!lo.schedule.empty())
    return fmt::format(
        "--schedule {} picks a schedule block, and {} replaces the block (it is the whole schedule): "
        "pass --knobs-merge (in the REPL: :knobs --merge) to put the knobs over the block, or leave "
        "out --schedule",
        lo.schedule, lo.cli_knobs.empty() ? "EMMY_KNOBS" : "--knobs");
  return static_cast<const CheckedSchedule*>(nullptr);
}

std::optional<lower::Lowered> lower_for_driver(const CheckedProgram& program, const LowerOptions& lo, std::ostream& err,
                                               const CheckedOp** op_out) {
  const CheckedOp* op = pick_op(program, lo.op, err);
  if (!op) return std::nullopt;
  const TargetInfo* target = find_target(lo.target);
  auto selected = lower::select_schedule(program, op->decl->name.name, *target, lo.schedule, lo.sizes);
  if (const auto* why = std::get_if<std::string>(&selected)) {
    err << "emmyc: error: " << *why << "\n";
    return std::nullopt;
  }
  auto kept = block_in_force(std::get<const CheckedSchedule*>(selected), lo);
  if (const auto* why = std::get_if<std::string>(&kept)) {
    err << "emmyc: error: " << *why << "\n";
    return std::nullopt;
  }
  // The blocks tried: the one in force; by default at known sizes, each candidate whose guard
  // holds until one's kernels serve the sizes (W056 for each passed over). No block (null): the
  // auto-schedule, unless the knobs given are the whole schedule.
  std::vector<const CheckedSchedule*> tried{std::get<const CheckedSchedule*>(kept)};
  if (lo.sizes && lo.schedule.empty() && tried[0]) {
    tried.clear();
    for (const CheckedSchedule* c : lower::default_candidates(program, op->decl->name.name, *target))
      if (!c || lower::guard_holds(*c, *lo.sizes)) tried.push_back(c);
  }
  if (lo.explain_schedule) explain_choice(program, *op, *target, lo, std::get<const CheckedSchedule*>(kept), err);
  try {
    const bool whole = !lo.knobs_merge && (!lo.env_knobs.empty() || !lo.cli_knobs.empty());
    for (size_t i = 0; i < tried.size(); ++i) {
      std::string base;
      if (!whole && lower::derives(tried[i], lo.schedule)) {
        autosched::AutoSchedule choice =
            autosched::auto_schedule(program, *op, *target, lo.sizes, lo.chains, lo.pipeline.laws);
        base = choice.knobs;
        if (lo.explain_schedule)
          err << autosched::explain(choice);
        else if (lo.note_auto_schedule)
          err << fmt::format(
              "emmyc: note: {}: {} {} (--explain-schedule says why)\n",
              tried[i] ? block_name(tried[i])
                       : fmt::format("no schedule block of {} for {}", op->decl->name.name, target->name),
              choice.travelled.empty() ? "auto-schedule" : choice.travelled + ", travelling with its call:",
              base.empty() ? "the knobs' defaults" : base);
      }
      lower::Lowered l =
          lower::lower_op(program, *op, {tried[i], lo.env_knobs, lo.cli_knobs, base}, *target, lo.chains, lo.pipeline);
      if (i + 1 < tried.size())
        if (std::optional<std::string> broken = kir::check_limits(l.kernels, *lo.sizes)) {
          err << driver_warning(lower::unserved_block(*tried[i], *broken)) << "\n";
          if (lo.explain_schedule) err << "  passed over: " << block_name(tried[i]) << "\n";
          continue;
        }
      for (const Warning& w : l.knobs.warnings) err << driver_warning(w) << "\n";
      for (const Warning& w : l.loops.warnings) err << driver_warning(w) << "\n";
      for (const Warning& w : l.kernels.warnings) err << driver_warning(w) << "\n";
      if (lo.explain_schedule) err << "  taken: " << block_name(tried[i]) << "\n";
      if (op_out) *op_out = op;
      return l;
    }
  } catch (const lower::LowerError& e) {  // (an internal error, EMMY_INTERNAL_ASSERT, is run_guarded's to report)
    std::string text = e.what();
    // "FILE:LINE:COL: error: ..." stands as it is; the rest gets emmyc's prefix.
    std::string first = text.substr(0, text.find('\n'));
    bool located = first.find(": error: ") != std::string::npos || first.find(": error[") != std::string::npos;
    const char* prefix = located ? "" : text.rfind("error", 0) == 0 ? "emmyc: " : "emmyc: error: ";
    err << prefix << text << "\n";
    return std::nullopt;
  }
  EMMY_INTERNAL_ASSERT(false, "no schedule block tried");
  return std::nullopt;
}

int print_level(const CheckedProgram& program, const std::string& level, const LowerOptions& lo, std::ostream& out,
                std::ostream& err, PhaseTimes* times) {
  auto mark = [times](const char* phase) {
    if (times) times->mark(phase);
  };
  LowerOptions watched = lo;
  watched.pipeline.out = &out;  // --print-after's levels, before the one --ir prints
  std::optional<lower::Lowered> l = lower_for_driver(program, watched, err, nullptr);
  if (!l) return 1;
  if (lo.specialize && lo.sizes) {
    const std::string cls = lower::size_class(l->kernels, *lo.sizes);
    err << "emmyc: note: the kernels of the size class " << (cls.empty() ? "(no test of sizes alone)" : cls) << "\n";
    l->kernels = lower::specialize_sizes(l->kernels, *lo.sizes);
  }
  mark("lower");
  if (level == "tensor")
    out << tir::print_program(l->tensor);
  else if (level == "loop")
    out << lir::print_program(l->loops);
  else if (level == "plan")
    out << lower::print_plans(l->plans);
  else if (level == "cost") {
    const TargetInfo* target = find_target(lo.target);
    std::map<std::string, int64_t> nominal;
    for (const std::string& s : l->tensor.sizes) nominal[s] = autosched::kNominalSize;
    if (!lo.sizes) err << fmt::format("emmyc: note: no --shape: every size taken as {}\n", autosched::kNominalSize);
    // EMMY_COST_FIT: the model's constants overridden, for tests/bench/cost_model_rank.py --fit; with
    // several sets (';' between them), each one's prediction after the first one's report.
    const char* fit = std::getenv("EMMY_COST_FIT");
    const std::string sets = fit ? fit : "";
    for (size_t at = 0, i = 0; at <= sets.size(); ++i) {
      const size_t end = std::min(sets.find(';', at), sets.size());
      std::optional<autosched::Fitted> fitted = autosched::parse_fitted(sets.substr(at, end - at));
      if (!fitted) {
        err << "emmyc: error: EMMY_COST_FIT takes name=value entries of the cost model's constants\n";
        return 1;
      }
      autosched::Cost cost = autosched::estimate_cost(*l, lo.sizes ? *lo.sizes : nominal, *target, *fitted);
      out << (i == 0 ? autosched::print_cost(cost) : fmt::format("predicted[{}]: {:.3f} us\n", i, cost.us));
      at = end + 1;
    }
  } else if (level == "kernel")
    out << print_program(l->kernels);
  else if (level == "cuda") {
    out << print_cuda(l->kernels);
    mark("print CUDA");
  } else if (level == "ptx") {
    runtime::CompileOptions co;
    co.target = find_target(lo.target);
    if (lo.emmy_ptx) {
      PtxPrint printed = print_ptx(l->kernels, co.target->name);
      mark("print PTX");
      if (printed.unsupported.empty()) {
        out << printed.ptx;
        return 0;
      }
      err << "emmyc: note: Emmy's PTX printer cannot print " << printed.unsupported << " yet: NVRTC's PTX follows\n";
    }
    co.phase_times = times != nullptr;
    try {
      const std::string cuda = print_cuda(l->kernels);
      mark("print CUDA");
      (void)runtime::nvrtc_available();  // loads it, timed apart from the compile (which says if it failed)
      mark("load NVRTC");
      runtime::CompileResult r = runtime::compile_cuda(cuda, l->kernels.op + ".cu", co);
      mark("NVRTC");
      if (times)
        for (const runtime::NvrtcPhase& phase : r.phases) times->add_part(phase.name, phase.seconds);
      if (!r.ok) {
        err << "emmyc: internal error: NVRTC rejected the generated CUDA (a compiler bug; please report it):\n"
            << r.log;
        return 1;
      }
      out << r.ptx;
      for (const runtime::KernelResources& k : r.resources) err << "// " << runtime::format_resources(k) << "\n";
      // ptxas's performance remarks (a wgmma pipeline it serialized, C7510-C7520; setmaxnreg it
      // ignored, C7508) beside the report.
      for (size_t at = 0; at < r.log.size();) {
        size_t end = std::min(r.log.find('\n', at), r.log.size());
        std::string_view line(r.log.data() + at, end - at);
        if (line.find("Performance Loss") != std::string_view::npos) err << "// " << line << "\n";
        at = end + 1;
      }
    } catch (const std::runtime_error& e) {
      err << "emmyc: error: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace emmy
