// `emmyc tune --write`: puts the tuner's winner into a .emmy text as the op's unnamed schedule block.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace emmy::tune {

// The first doc line of a block written by the tuner starts with this: `/// emmyc tune: ...`.
inline constexpr std::string_view kTunedMarker = "emmyc tune:";

// The names of the blocks `emmyc tune --shapes` writes start with this: "tuned D=64,S~4096".
inline constexpr std::string_view kClassBlockPrefix = "tuned ";

struct TunedBlock {
  std::string op;      // the op the block schedules
  std::string target;  // "sm_90"
  // In order, name (with its @site) and canonical value: {"PLACE", "fuse"},
  // {"TILE", "a:mma_m16n8k16_f16/w4x1/f2x8/k4"}, {"TILE@e", "f64"}, {"STAGE", "d2/tma/ring"};
  // an empty value turns the knob off (`REDUCE = ;`).
  std::vector<std::pair<std::string, std::string>> knobs;
  // The doc lines after the marker, without "/// ": comment[0] goes on the marker's line
  // ("NVIDIA H200, B=1,H=8,S=4096,D=64 f16: 99.1 us (FA-2 122.9 us)"), each further one on its own.
  std::vector<std::string> comment;
  // A shape class's block (emmyc tune --shapes): its name (`as "tuned B=1,S~4096"`) and guard
  // (`where S >= 2048 && S < 8192`, "" for none). It replaces the tuned block of that name, or
  // follows the op's last schedule block; hand-written blocks keep their names.
  std::string name = {};
  std::string guard = {};
};

// A mistake of the user or of the file (does not parse, no such op, a knob the codec refuses):
// the message names the file and says what to fix.
struct WriteBackError : std::runtime_error {
  using runtime_error::runtime_error;
};

// The written text failed a check that every written text must pass: a bug in Emmy.
struct WriteBackInternalError : std::logic_error {
  using logic_error::logic_error;
};

struct WriteBack {
  std::string text;    // the new file text
  std::string action;  // for the user: "replaced the tuned block of sdpa for sm_90 (line 120)"
};

// Writes `block` into `text` (the contents of `file_name`) as the unnamed schedule of block.op for
// block.target (a named one: see TunedBlock::name), so that `emmyc run` picks it:
//  1. a block of that op and target whose first doc line starts with kTunedMarker (named or not,
//     the unnamed one first; not a shape class's) is replaced in place, doc comment included;
//  2. else an unnamed hand-written block of that op and target stays where it is, labelled
//     `as "hand"` ("hand-2", "hand-3"... when taken), and the tuned block follows it;
//  3. else the tuned block follows the op's last schedule block (any target), else the op.
// The text outside the edits is kept byte for byte and the block is laid out as `emmyc fmt`
// would, so a formatted file stays formatted. `stdlib_dirs` is where `import std.X` looks (the
// result is checked as emmyc would check the file). Throws WriteBackError for user errors and
// WriteBackInternalError when the result does not check although the input did.
WriteBack write_tuned_block(std::string_view file_name, std::string_view text, const TunedBlock& block,
                            const std::vector<std::string>& stdlib_dirs);

// The block alone, formatted, ending in a newline (after validating it as write_tuned_block does
// save for the file: target, knob names, sites are not checked against an op here).
std::string tuned_block_text(const TunedBlock& block);

}  // namespace emmy::tune
