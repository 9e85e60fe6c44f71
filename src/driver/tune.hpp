// emmyc tune: search an op's knob space on the GPU, keep every measurement in the tuning
// database, report the best, and (--write) write the winner into the .emmy file as the op's
// schedule block for the target. tune-worker is its measuring process.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/lowering.hpp"

namespace emmy {

struct TuneOptions {
  std::string file;                      // the .emmy file (read by the worker, rewritten by --write)
  std::string shape;                     // "B=1,H=8,S=4096,D=64"
  std::vector<std::string> shapes;       // --shapes: several, each its own problem and guarded block
  std::vector<std::string> set;          // each --set: "W=3,eps=0.5", values of scalar parameters
  double budget_s = 600;                 // wall-clock budget of the search
  bool write = false;                    // write the winner into the file
  bool dry_run = false;                  // enumerate and prune only: no GPU
  int top = 10;                          // rows of the report
  std::string db_path;                   // "" = tune::Database::default_path()
  double timeout_s = 60;                 // one measurement's limit before the worker is killed
  int threads = 0;                       // lowering and NVRTC threads; 0 = every core
  uint64_t seed = 1;                     // the random inputs
  std::string self;                      // this emmyc, the worker's executable
  std::vector<std::string> stdlib_dirs;  // where `import std.X` looks (to check the written file)
  bool progress = false;                 // a progress line redrawn in place (a terminal)
  // The op's own schedule blocks: candidates of the search ("seed"), or measured after it
  // for comparison only ("reference": the winner comes from the enumerated space alone).
  std::string blocks = "seed";
  bool json = false;  // the report as one JSON object on stdout (the progress lines on stderr)
};

// "90s", "10m", "1.5h", "600" (seconds) -> seconds; nullopt when it is none of these or not positive.
std::optional<double> parse_duration(std::string_view text);

// 0 ok, 1 an error, 2 a usage error.
int tune_op(const CheckedProgram& program, const LowerOptions& lo, const TuneOptions& options, std::ostream& out,
            std::ostream& err);
// `emmyc tune --list`: what the database holds.
int tune_list(const std::string& db_path, std::ostream& out, std::ostream& err);
// `emmyc tune-worker`: requests on `in`, one JSON line each; answers on `out`.
// `set`: the --set lists, as emmyc tune passed them on.
int tune_worker(const CheckedProgram& program, const LowerOptions& lo, const std::string& shape,
                const std::vector<std::string>& set, uint64_t seed, std::istream& in, std::ostream& out,
                std::ostream& err);

}  // namespace emmy
