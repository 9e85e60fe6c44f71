// emmyc: the Emmy compiler's command line.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "driver/commands.hpp"
#include "driver/guard.hpp"
#include "driver/run.hpp"
#include "driver/tune.hpp"
#include "emmy/version.hpp"
#include "lower/passes.hpp"
#include "lsp/server.hpp"
#include "repl/repl.hpp"
#include "runtime/driver.hpp"
#include "schedule/targets.hpp"
#include "support/paths.hpp"

namespace {

// EMMY_STDLIB, the installed share/emmy/stdlib beside this binary's bin/, then the source tree.
std::vector<std::string> stdlib_dirs(const char* argv0) {
  std::error_code ec;
  auto exe = std::filesystem::canonical("/proc/self/exe", ec);
  if (ec) exe = std::filesystem::absolute(argv0, ec);
  return emmy::stdlib_search_path(exe, EMMY_STDLIB_DIR);
}

int run_main(int argc, char** argv) {
  CLI::App app{"emmyc — the Emmy tensor compiler", "emmyc"};
  app.set_version_flag("--version", std::string("emmyc ") + EMMY_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough();  // --color after the subcommand too
  app.footer(
      "Examples:\n"
      "  emmyc check examples/sdpa.emmy            parse and check; prints only diagnostics\n"
      "  emmyc compile stdlib/nn.emmy --ir ast     print the checked AST\n"
      "  emmyc compile stdlib/nn.emmy --op sdpa --ir cuda --knobs 'PLACE=fuse,TILE=a:scalar,TILE@e=f64'\n"
      "  emmyc compile stdlib/nn.emmy --op sdpa --ir kernel --knobs-merge --knobs 'FAST_EXP=0'   the block, FAST_EXP "
      "off\n"
      "  emmyc run stdlib/nn.emmy --op sdpa --shape B=1,H=2,S=64,T=64,D=16,E=16 --interp\n"
      "  emmyc run stdlib/nn.emmy --op sdpa --shape B=1,H=8,S=4096,D=64 --schedule fa1-scalar --bench\n"
      "  emmyc run examples/sliding_window.emmy --shape B=1,H=2,S=128,D=64 --set w=16 --interp   a scalar parameter\n"
      "  emmyc tune stdlib/linalg.emmy --op matmul --shape M=4096,N=4096,K=4096 --budget 10m --write\n"
      "  emmyc tune stdlib/nn.emmy --op softmax --shapes 'N=4097,C=1000;N=8192,C=50257' --write   guarded blocks\n"
      "  emmyc fmt -i examples/*.emmy              format files in place\n"
      "  emmyc repl stdlib/nn.emmy                 an interactive session (:help); or a script: emmyc repl < s.txt\n"
      "  EMMY_KNOBS='TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4,STAGE=d2/tma/ring' emmyc check f.emmy\n"
      "Knobs: --knobs (or EMMY_KNOBS; --knobs wins entry by entry) is the whole schedule: the op's schedule block\n"
      "is not used and the knobs left out take their defaults. --knobs-merge puts them over the block instead\n"
      "(the target's, or --schedule NAME's), entry by entry.\n"
      "Exit status: 0 ok, 1 errors in the program, 2 usage errors.");

  emmy::DriverOptions opt;
  opt.stdlib_dirs = stdlib_dirs(argv[0]);
  std::string color = "auto";
  app.add_option("--color", color, "color diagnostics: auto, always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--error-limit", opt.error_limit, "errors shown per file before stopping (default 20; 0: no limit)")
      ->check(CLI::NonNegativeNumber);

  std::vector<std::string> targets;
  for (auto t : emmy::target_names()) targets.emplace_back(t);
  std::vector<std::string> files;
  bool verify = false;
  CLI::App* check = app.add_subcommand("check", "parse and check files; prints nothing but diagnostics");
  check->add_option("files", files, ".emmy files")->required()->check(CLI::ExistingFile);
  check->add_flag("--verify", verify, "compare diagnostics with the file's expected-error comments");
  check->add_flag("--explain", opt.explain, "print each reduction's laws: proof outline or counterexample");
  check->add_option("--knobs", opt.knobs, "knob list to validate, as in EMMY_KNOBS");
  check->add_option("--target", opt.target, "target for knob legality")->check(CLI::IsMember(targets));

  std::string file, ir = "ast";
  CLI::App* compile = app.add_subcommand("compile", "compile a file and print an IR level");
  compile->add_option("file", file, ".emmy file")->required()->check(CLI::ExistingFile);
  compile->add_option("--ir", ir, "IR level to print")
      ->check(CLI::IsMember({"ast", "tensor", "loop", "plan", "cost", "kernel", "cuda", "ptx"}));
  const char* knobs_help = "the whole schedule (KNOB=V,...; as in EMMY_KNOBS): the op's schedule block is not used";
  const char* merge_help = "put --knobs and EMMY_KNOBS over the op's schedule block (or --schedule NAME's) instead";
  compile->add_option("--knobs", opt.knobs, knobs_help);
  compile->add_flag("--knobs-merge", opt.knobs_merge, merge_help);
  compile->add_option("--target", opt.target, "target GPU")->check(CLI::IsMember(targets));
  compile->add_option("--op", opt.op, "the op to lower (default: the file's only op)");
  compile->add_option("--schedule", opt.schedule, "a named schedule block of the op (schedule ... as \"NAME\")");
  const char* explain_help = "print the schedule blocks considered, in order, and why each was taken or passed over";
  compile->add_flag("--explain-schedule", opt.explain_schedule, explain_help);
  compile->add_option("--shape", opt.shape,
                      "sizes, e.g. M=1000,N=777,K=1023: lower the block a run at them takes (guarded blocks)");
  const auto dtypes = CLI::IsMember({"f16", "bf16", "f32", "f64"});
  const char* dtype_help =
      "read the f16/bf16 tensors of every op signature as this dtype: f16, bf16, f32; f64 widens every float";
  compile->add_option("--dtype", opt.dtype, dtype_help)->check(dtypes);
  compile->add_flag("--specialize", opt.specialize,
                    "with --shape: the kernels a run at those sizes launches, every test of sizes alone decided "
                    "(docs/running.md, size classes)");
  compile->add_flag("--emmy-ptx", opt.emmy_ptx,
                    "--ir ptx printed by Emmy's own PTX printer instead of NVRTC (issue 28, in progress: what it "
                    "cannot print yet goes through NVRTC, with a note)");
  std::vector<std::string> passes = emmy::lower::pass_names();
  passes.emplace_back("all");
  compile
      ->add_option(
          "--print-after", opt.print_after,
          fmt::format("print the IR after these lowering passes (comma-separated: {})", fmt::join(passes, ", ")))
      ->delimiter(',')
      ->check(CLI::IsMember(passes));
  compile->add_flag("--timings", opt.timings,
                    "print each phase's time on stderr (parse + check, prove, lower, print, NVRTC and NVRTC's own "
                    "phases)");
  compile->add_flag("--verify-each", opt.verify_each,
                    "verify the tensor and loop IR after every lowering pass (the kernel IR is verified always)");

  emmy::RunOptions run_opt;
  CLI::App* run = app.add_subcommand("run", "run an op on random inputs and compare with the float64 reference");
  run->add_option("file", file, ".emmy file")->required()->check(CLI::ExistingFile);
  run->add_option("--op", opt.op, "the op to run (default: the file's only op)");
  run->add_option("--shape", run_opt.shape, "sizes, e.g. B=1,H=2,S=64,D=16")->required();
  run->add_option("--knobs", opt.knobs, knobs_help);
  run->add_flag("--knobs-merge", opt.knobs_merge, merge_help);
  const char* set_help = "values of the op's scalar parameters, e.g. W=3,scale=0.5 (repeatable; default: random)";
  run->add_option("--set", run_opt.set, set_help)->expected(1)->take_all();
  run->add_option("--schedule", opt.schedule, "a named schedule block of the op");
  run->add_flag("--explain-schedule", opt.explain_schedule, explain_help);
  run->add_option("--dtype", opt.dtype, dtype_help)->check(dtypes);
  run->add_option("--target", opt.target, "target GPU (default: the GPU's best, sm_90a on an H100/H200; else sm_90)")
      ->check(CLI::IsMember(targets));
  run->add_option("--seed", run_opt.seed, "seed of the random inputs")->check(CLI::NonNegativeNumber);
  run->add_flag("--interp", run_opt.interp, "run on the CPU SIMT interpreter");
  run->add_flag("--shuffle-blocks", run_opt.shuffle_blocks, "interpreter: run thread blocks in a random order");
  run->add_flag("--bench", run_opt.bench,
                "time it on the GPU against the naive cut+scalar schedule; print both tables");
  run->add_option("--check", run_opt.check,
                  "reference: auto (float64 on the CPU when affordable, else float32 naive kernels on the GPU), "
                  "f64, gpu, none")
      ->check(CLI::IsMember({"auto", "f64", "gpu", "none"}));
  run->add_flag("--json", run_opt.json, "print one JSON object instead of the tables");
  run->add_option("--save", run_opt.save_dir, "write the inputs and outputs as NAME.npy files into this directory");
  bool no_specialize = false;
  run->add_flag("--no-specialize", no_specialize,
                "run the shape-generic kernels, not the ones specialized to the sizes' class (EMMY_SPECIALIZE=0)");
  run->add_flag("--emmy-ptx", run_opt.emmy_ptx,
                "compile through Emmy's own PTX printer and nvJitLink's ptxas instead of NVRTC (issue 28, in progress: "
                "what it cannot print yet goes through NVRTC, with a note)");
  bool no_cache = false;
  run->add_flag("--no-cache", no_cache,
                "neither read nor write the on-disk kernel cache ($EMMY_CACHE_DIR, ~/.cache/emmy)");

  emmy::TuneOptions tune_opt;
  bool tune_list = false;
  std::string budget = "10m";
  CLI::App* tune =
      app.add_subcommand("tune", "search the op's schedule knobs on the GPU; --write puts the winner into the file");
  tune->add_option("file", file, ".emmy file")->check(CLI::ExistingFile);
  tune->add_option("--op", opt.op, "the op to tune (default: the file's only op)");
  tune->add_option("--shape", tune_opt.shape, "the sizes to tune at, e.g. B=1,H=8,S=4096,D=64");
  std::string shapes;
  tune->add_option("--shapes", shapes,
                   "several shapes, ';' between them: each tuned in turn (the budget split), and with --write each "
                   "winner written as a block guarded to its shape class");
  tune->add_option("--set", tune_opt.set, set_help)->expected(1)->take_all();
  tune->add_option("--target", opt.target, "target GPU (default: the GPU's best, sm_90a on an H100/H200; else sm_90)")
      ->check(CLI::IsMember(targets));
  tune->add_option("--budget", budget, "wall-clock budget of the search: 90s, 10m, 1h (default 10m)");
  tune->add_flag("--write", tune_opt.write, "write the winner into the file as the op's schedule block for the target");
  tune->add_flag("--dry-run", tune_opt.dry_run, "enumerate and prune only (no GPU): print the candidates");
  tune->add_flag("--list", tune_list, "print what the tuning database holds");
  tune->add_option("--top", tune_opt.top, "rows of the report (default 10)");
  tune->add_flag("--json", tune_opt.json, "print the report as one JSON object (the progress lines go to stderr)");
  tune->add_option("--db", tune_opt.db_path,
                   "the tuning database (default $EMMY_TUNE_DB, else ~/.cache/emmy/tune.sqlite)");
  tune->add_option("--timeout", tune_opt.timeout_s,
                   "seconds one measurement may take before its worker is killed (60)");
  tune->add_option("--threads", tune_opt.threads, "threads for lowering and NVRTC (default: every core)");
  tune->add_option("--seed", tune_opt.seed, "seed of the random inputs")->check(CLI::NonNegativeNumber);
  tune->add_option("--blocks", tune_opt.blocks,
                   "the op's own schedule blocks: candidates (seed, the default) or measured after the search for "
                   "comparison only (reference)")
      ->check(CLI::IsMember({"seed", "reference"}));
  uint64_t worker_seed = 1;
  CLI::App* worker = app.add_subcommand("tune-worker", "");  // emmyc tune's measuring process (hidden)
  worker->group("");
  worker->add_option("file", file, ".emmy file")->required()->check(CLI::ExistingFile);
  worker->add_option("--op", opt.op, "the op");
  worker->add_option("--shape", run_opt.shape, "sizes")->required();
  worker->add_option("--target", opt.target, "target")->check(CLI::IsMember(targets));
  worker->add_option("--seed", worker_seed, "seed of the random inputs")->check(CLI::NonNegativeNumber);
  worker->add_option("--set", run_opt.set, "values of scalar parameters")->expected(1)->take_all();

  bool repl_plain = false;
  CLI::App* lsp = app.add_subcommand(
      "lsp", "a Language Server Protocol server on stdin/stdout: diagnostics, hover, definition, completion, format");
  CLI::App* repl = app.add_subcommand("repl",
                                      "an interactive session: define ops, monoids and schedules, then check, "
                                      "print IR, run, bench and tune them (:help); reads a script from a pipe");
  repl->add_option("files", files, ".emmy files to :load first")->check(CLI::ExistingFile);
  repl->add_option("--target", opt.target, "target GPU (default sm_90; :target changes it)")
      ->check(CLI::IsMember(targets));
  repl->add_flag("--no-edit", repl_plain, "read lines plainly even on a terminal (no history, no completion)");

  bool fmt_check = false, in_place = false;
  CLI::App* fmt = app.add_subcommand("fmt", "format files canonically (comments kept)");
  fmt->add_option("files", files, ".emmy files")->required()->check(CLI::ExistingFile);
  fmt->add_flag("--check", fmt_check, "exit 1 and name each file that is not formatted");
  fmt->add_flag("-i,--in-place", in_place, "rewrite the files");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : emmy::kUsageError;
  }
  opt.color = color == "always" || (color == "auto" && isatty(2));
  run_opt.use_cache = !no_cache;
  run_opt.specialize = !no_specialize && emmy::lower::specialize_by_env();
  if (const char* env = std::getenv("EMMY_KNOBS")) opt.env_knobs = env;
  // `run` without --target on a GPU: the target it runs best (sm_90a on an H100 or H200, whose
  // ops without an sm_90a block use their sm_90 ones); the interpreter and the other commands
  // keep sm_90.
  if (((*run && !run_opt.interp) || (*tune && !tune_opt.dry_run && !tune_list)) && run->count("--target") == 0 &&
      tune->count("--target") == 0)
    if (std::optional<int> cc = emmy::runtime::device_compute_capability())
      if (const emmy::TargetInfo* t = emmy::device_target(*cc)) opt.target = t->name;

  if (*check) return emmy::run_check(files, verify, opt, std::cout, std::cerr);
  if (*lsp) return emmy::lsp::serve(std::cin, std::cout, {opt.stdlib_dirs, EMMY_VERSION_STRING});
  if (*repl) {
    const bool interactive = isatty(0) && !repl_plain;
    std::error_code ec;
    emmy::repl::Repl session({opt.stdlib_dirs, opt.color, interactive, opt.target, opt.env_knobs,
                              std::filesystem::canonical("/proc/self/exe", ec).string(), opt.error_limit},
                             std::cout, std::cerr);
    for (const std::string& f : files) session.feed(":load " + f);
    std::unique_ptr<emmy::repl::LineReader> reader =
        interactive ? emmy::repl::terminal_reader(emmy::repl::history_path(), [&] { return session.completions(); })
                    : emmy::repl::stream_reader(std::cin);
    if (interactive)
      std::cout << "emmyc " << EMMY_VERSION_STRING << " repl: enter definitions as in a .emmy file; :help lists the "
                << "commands, :quit leaves\n";
    return emmy::repl::run_repl(session, *reader);
  }
  if (*compile) return emmy::run_compile(file, ir, opt, std::cout, std::cerr);
  if (*run) return emmy::run_run(file, run_opt, opt, std::cout, std::cerr);
  if (*worker)
    return emmy::run_tune_worker(file, run_opt.shape, run_opt.set, worker_seed, opt, std::cin, std::cout, std::cerr);
  if (*tune) {
    if (tune_list) return emmy::tune_list(tune_opt.db_path, std::cout, std::cerr);
    for (size_t at = 0; !shapes.empty() && at <= shapes.size();) {
      size_t end = std::min(shapes.find(';', at), shapes.size());
      if (end > at) tune_opt.shapes.push_back(shapes.substr(at, end - at));
      at = end + 1;
    }
    if (!tune_opt.shape.empty() && !tune_opt.shapes.empty()) {
      std::cerr << "emmyc tune: error: give --shape or --shapes, not both\n";
      return emmy::kUsageError;
    }
    if (file.empty() || (tune_opt.shape.empty() && tune_opt.shapes.empty())) {
      std::cerr << "emmyc tune: error: give the file and --shape or --shapes (or --list)\n";
      return emmy::kUsageError;
    }
    std::optional<double> seconds = emmy::parse_duration(budget);
    if (!seconds) {
      std::cerr << "emmyc tune: error: --budget " << budget
                << ": a number of seconds with s, m or h, e.g. 90s, 10m, 1h\n";
      return emmy::kUsageError;
    }
    tune_opt.budget_s = *seconds;
    tune_opt.file = file;
    tune_opt.stdlib_dirs = opt.stdlib_dirs;
    tune_opt.progress = isatty(2);
    std::error_code ec;
    tune_opt.self = std::filesystem::canonical("/proc/self/exe", ec).string();
    return emmy::run_tune(file, tune_opt, opt, std::cout, std::cerr);
  }
  return emmy::run_fmt(files, fmt_check, in_place, std::cout, std::cerr);
}

}  // namespace

// The whole command on a large stack (the passes recurse on expression trees); an exception that
// escapes becomes one line and exit status 1 or 2, never an abort.
int main(int argc, char** argv) {
  return emmy::run_guarded([&] { return run_main(argc, argv); }, std::cerr, "emmyc: ");
}
