// The emmyc subcommands as functions, so the CLI, the REPL and tests share them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "support/diagnostics.hpp"

namespace emmy {

// Process exit codes.
enum ExitCode { kOk = 0, kUserError = 1, kUsageError = 2 };

struct DriverOptions {
  std::vector<std::string> stdlib_dirs;
  bool color = false;
  std::string knobs;         // --knobs (same codec as EMMY_KNOBS)
  std::string env_knobs;     // the EMMY_KNOBS environment variable
  bool knobs_merge = false;  // --knobs-merge: the knobs go over the schedule block instead of replacing it
  std::string target = "sm_90";
  bool explain = false;                  // check --explain: print every reduction's laws and proofs
  std::string op;                        // compile/run --op
  std::string schedule;                  // compile/run --schedule: a named schedule block
  std::string shape;                     // compile --shape: the sizes that pick a guarded block
  bool specialize = false;               // compile --specialize: the kernels of --shape's size class
  bool emmy_ptx = false;                 // compile --emmy-ptx: --ir ptx from Emmy's PTX printer, not NVRTC
  bool explain_schedule = false;         // compile/run --explain-schedule: which block, and why
  std::string dtype;                     // compile/run --dtype: f16/bf16 signature tensors read as this
  int error_limit = kDefaultErrorLimit;  // --error-limit: errors shown per file (0: all); check --verify sees all
  std::vector<std::string> print_after;  // compile --print-after: pass names or "all"
  bool verify_each = false;              // compile --verify-each
  bool timings = false;                  // compile --timings: each phase's time on stderr
};

struct RunOptions;
struct TuneOptions;

int run_check(const std::vector<std::string>& files, bool verify, const DriverOptions& opt, std::ostream& out,
              std::ostream& err);
int run_compile(const std::string& file, const std::string& ir, const DriverOptions& opt, std::ostream& out,
                std::ostream& err);
int run_run(const std::string& file, const RunOptions& run, const DriverOptions& opt, std::ostream& out,
            std::ostream& err);
int run_tune(const std::string& file, const TuneOptions& tune, const DriverOptions& opt, std::ostream& out,
             std::ostream& err);
int run_tune_worker(const std::string& file, const std::string& shape, const std::vector<std::string>& set,
                    uint64_t seed, const DriverOptions& opt, std::istream& in, std::ostream& out, std::ostream& err);
int run_fmt(const std::vector<std::string>& files, bool check_only, bool in_place, std::ostream& out,
            std::ostream& err);

}  // namespace emmy
