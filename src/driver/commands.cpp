#include "driver/commands.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "algebra/classify.hpp"
#include "driver/lowering.hpp"
#include "driver/run.hpp"
#include "driver/tune.hpp"
#include "driver/verify.hpp"
#include "interp/reference.hpp"
#include "schedule/knobs.hpp"
#include "sema/print_checked.hpp"
#include "sema/sema.hpp"
#include "support/write_file.hpp"
#include "syntax/format.hpp"
#include "syntax/parse.hpp"

namespace emmy {
namespace {

struct Checked {
  SourceManager sources;
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<CheckedProgram> program;
  algebra::ProgramLaws laws;
  std::unique_ptr<lower::LawMemo> known;  // the prover's reports, for the lowerings (the auto-scheduler's too)
  bool classified = false;                // sema passed and the prover ran: laws are meaningful
  uint32_t file = 0;
};

// How check_one checks: `check` sees every error and proves every monoid; the commands that
// lower one op prove the monoids that op uses (algebra::classify's `ops`) and the file's own.
struct CheckMode {
  bool every_error = false;  // no --error-limit (check --verify matches every error)
  bool one_op = false;       // compile, run, tune: prove for the op --op names (or the file's only op)
  PhaseTimes* times = nullptr;
};

// The ops a lowering command lowers: --op, or the file's only op; else every main op (the
// command then asks for --op).
std::set<std::string> lowered_ops(const CheckedProgram& program, const DriverOptions& opt) {
  if (!opt.op.empty()) return {opt.op};
  std::vector<std::string> ops = lower::main_ops(program);
  if (ops.size() == 1) return {ops.front()};
  return {ops.begin(), ops.end()};
}

// Loads and checks one file; returns false (after printing) when it cannot be read.
bool check_one(const std::string& path, const DriverOptions& opt, Checked& c, std::ostream& err,
               const CheckMode& mode = {}) {
  c.diags = std::make_unique<Diagnostics>(c.sources, mode.every_error ? 0 : opt.error_limit);
  c.file = c.sources.load(path);
  if (c.file == 0) {
    err << fmt::format("emmyc: error: cannot read '{}'\n", path);
    return false;
  }
  SemaOptions sema{opt.stdlib_dirs, std::nullopt, {}};
  if (!opt.dtype.empty()) sema.half_dtype = parse_dtype(opt.dtype);  // main.cpp admits f16, bf16, f32, f64
  c.program = check_program(c.sources, c.file, sema, *c.diags);
  if (mode.times) mode.times->mark("parse + check");
  c.classified = !c.diags->has_errors();
  algebra::LawMemo proofs;
  if (c.classified) {
    const std::set<std::string> ops = mode.one_op ? lowered_ops(*c.program, opt) : std::set<std::string>();
    c.laws = algebra::classify(*c.program, *c.diags, &proofs, mode.one_op ? &ops : nullptr);
  }
  c.known = std::make_unique<lower::LawMemo>(proofs);
  if (mode.times) mode.times->mark("prove");
  check_knob_list(c.sources, *c.diags, "EMMY_KNOBS", opt.env_knobs, find_target(opt.target));
  check_knob_list(c.sources, *c.diags, "--knobs", opt.knobs, find_target(opt.target));
  return true;
}

LowerOptions lower_options(const DriverOptions& opt, const Checked& c) {
  LowerOptions lo{opt.op,    opt.schedule,    opt.target,     opt.env_knobs,
                  opt.knobs, opt.knobs_merge, &c.laws.chains, {opt.print_after, opt.verify_each, nullptr}};
  lo.pipeline.laws = c.known.get();
  lo.explain_schedule = opt.explain_schedule;
  return lo;
}

// Checks `file` and renders its diagnostics, then runs `body` on the checked program (with its
// lowering options); body's 0 / 2 / other become kOk / kUsageError / kUserError.
template <class Body>
int on_checked(const std::string& file, const DriverOptions& opt, std::ostream& err, Body body) {
  Checked c;
  if (!check_one(file, opt, c, err, {.one_op = true})) return kUsageError;
  c.diags->render(err, opt.color);
  if (c.diags->has_errors()) return kUserError;
  int status = 0;
  try {
    status = body(*c.program, lower_options(opt, c));
  } catch (const ReferenceRangeError& e) {
    if (!e.range.valid()) {
      err << "emmyc: error: " << e.what() << "\n";
      return kUserError;
    }
    const Diagnostic& d =
        c.diags->error(e.code, e.range, e.message + " at the run's sizes (the reference evaluator)").hint(e.hint);
    err << c.diags->render_one(d, opt.color);
    return kUserError;
  }
  return status == 0 ? kOk : status == 2 ? kUsageError : kUserError;
}

}  // namespace

int run_check(const std::vector<std::string>& files, bool verify, const DriverOptions& opt, std::ostream& out,
              std::ostream& err) {
  int status = kOk;
  for (const std::string& path : files) {
    Checked c;
    if (!check_one(path, opt, c, err, {.every_error = verify})) return kUsageError;  // --verify: every error
    if (verify) {
      if (!verify_diagnostics(*c.diags, c.file, out)) status = kUserError;
      continue;
    }
    c.diags->render(err, opt.color);
    if (c.diags->has_errors()) status = kUserError;
    // The prover's own errors (a refuted law) come with their explanation: the witness.
    if (opt.explain && c.classified) out << algebra::explain_program(*c.program, c.laws);
  }
  return status;
}

int run_compile(const std::string& file, const std::string& ir, const DriverOptions& opt, std::ostream& out,
                std::ostream& err) {
  PhaseTimes times;
  PhaseTimes* timed = opt.timings ? &times : nullptr;
  Checked c;
  if (!check_one(file, opt, c, err, {.one_op = true, .times = timed})) return kUsageError;
  c.diags->render(err, opt.color);
  if (c.diags->has_errors()) return kUserError;
  if (ir == "ast") {
    if (!opt.print_after.empty() || opt.verify_each) {
      err << "emmyc: error: --print-after and --verify-each watch the lowering passes; pick a lowered level "
             "(--ir tensor, loop, kernel, cuda or ptx)\n";
      return kUsageError;
    }
    out << print_checked(*c.program);
    if (timed) timed->mark("print AST");
  }
  LowerOptions lo = lower_options(opt, c);
  lo.note_auto_schedule = true;  // emmyc compile says which knobs the auto-scheduler chose
  std::optional<SizeBindings> sizes;
  if (!opt.shape.empty() && ir != "ast") {  // the block a run at these sizes would take
    const CheckedOp* op = pick_op(*c.program, opt.op, err);
    if (!op) return kUserError;
    if (!(sizes = bind_shape(*op, opt.shape, err))) return kUsageError;
    lo.sizes = &*sizes;
  }
  if (opt.specialize && opt.shape.empty()) {
    err << "emmyc: error: --specialize prints the kernels a run at some sizes launches: give them with --shape\n";
    return kUsageError;
  }
  lo.specialize = opt.specialize;
  lo.emmy_ptx = opt.emmy_ptx;
  const int status = ir == "ast" ? 0 : print_level(*c.program, ir, lo, out, err, timed);
  if (timed) err << "emmyc: timings (wall clock, after the process started)\n" << times.format();
  return status == 0 ? kOk : kUserError;
}

int run_run(const std::string& file, const RunOptions& run, const DriverOptions& opt, std::ostream& out,
            std::ostream& err) {
  return on_checked(file, opt, err,
                    [&](const CheckedProgram& p, const LowerOptions& lo) { return run_op(p, lo, run, out, err); });
}

int run_tune(const std::string& file, const TuneOptions& tune, const DriverOptions& opt, std::ostream& out,
             std::ostream& err) {
  return on_checked(file, opt, err,
                    [&](const CheckedProgram& p, const LowerOptions& lo) { return tune_op(p, lo, tune, out, err); });
}

int run_tune_worker(const std::string& file, const std::string& shape, const std::vector<std::string>& set,
                    uint64_t seed, const DriverOptions& opt, std::istream& in, std::ostream& out, std::ostream& err) {
  return on_checked(file, opt, err, [&](const CheckedProgram& p, const LowerOptions& lo) {
    return tune_worker(p, lo, shape, set, seed, in, out, err);
  });
}

int run_fmt(const std::vector<std::string>& files, bool check_only, bool in_place, std::ostream& out,
            std::ostream& err) {
  int status = kOk;
  for (const std::string& path : files) {
    SourceManager sources;
    Diagnostics diags(sources);
    uint32_t id = sources.load(path);
    if (id == 0) {
      err << fmt::format("emmyc: error: cannot read '{}'\n", path);
      return kUsageError;
    }
    const std::string& text = sources.file(id).text();
    parse_module(sources, id, diags);
    std::optional<std::string> formatted = diags.has_errors() ? std::nullopt : format_source(text);
    if (!formatted) {
      diags.render(err);
      status = std::max(status, static_cast<int>(kUserError));
      continue;
    }
    if (check_only) {
      if (*formatted != text) {
        out << fmt::format("{}: not formatted (run emmyc fmt -i {})\n", path, path);
        status = std::max(status, static_cast<int>(kUserError));
      }
    } else if (in_place) {
      // A file that cannot be replaced is a usage error, like one that cannot be read; the
      // other files are still formatted.
      const std::string failed = *formatted == text ? "" : write_file(path, *formatted);
      if (!failed.empty()) {
        err << "emmyc: error: " << failed << "\n";
        status = kUsageError;
      }
    } else {
      out << *formatted;
    }
  }
  return status;
}

}  // namespace emmy
