// The lowering pipeline from a checked op to kernel IR, one pass per file:
//   resolve_knobs    schedule block + EMMY_KNOBS + --knobs + defaults -> the knobs in force
//   to_tensor        checked op -> tensor IR (lets, bare names, op calls inlined; the callees'
//                    chains renamed as inlined: inlined_chains)
//   forward_copies   tensor IR -> tensor IR where an output copying an intermediate is written by
//                    the intermediate's statement (a call's result: its chain ends in the output)
//   hoist_invariant  tensor IR -> tensor IR with each reduction that does not vary along its whole
//                    context (statement variables, enclosing axes) an intermediate of its own
//   inline_pointwise tensor IR -> tensor IR without elementwise intermediates (unless cut)
//   factor_normalizer tensor IR -> tensor IR with a chain's sum normalized inside by the chain's
//                    own denominator divided after the sum (sum(j: w / l · v) -> sum(j: w · v) / l)
//   chain_prefixes   chains -> chains with the intermediates' prefix of each longer online chain
//   to_loops         tensor IR + knobs -> loop IR (PLACE: fuse/cut per seam, folds, kernels)
//   split_reduce     loop IR + REDUCE -> loop IR with one reduction split across CTAs
//   to_kernel        loop IR + knobs -> kernel IR: a plan a kernel (kernel/plan.hpp: its tier,
//                    tiles and slabs), then the tier's emitter (kernel/, kernel/mma/)
// At a launch (api/program.cpp, emmyc run), after the pipeline:
//   specialize_sizes kernel IR + the launch's sizes -> kernel IR with each test of sizes decided
// pipeline.cpp runs them as a list (pass_names()), printing and verifying the IR after each
// pass that PipelineOptions names.
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "algebra/discover.hpp"
#include "ir/kernel.hpp"
#include "ir/loop_ir.hpp"
#include "ir/tensor_ir.hpp"
#include "lower/kernel/plan.hpp"
#include "lower/law_memo.hpp"
#include "schedule/knobs.hpp"
#include "sema/sema.hpp"

namespace emmy::lower {

// A schedule the lowering cannot honour, or an op construct it does not lower yet: a
// user-facing one-line message (the driver prints it as an error).
struct LowerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The schedule's kernels need more shared memory a block than the target has (too many
// pipeline stages, too large tiles): the tuner prunes such points as "shared memory".
struct SharedMemoryError : LowerError {
  using LowerError::LowerError;
};
inline constexpr const char* kSharedMemoryHelp =
    "fewer pipeline stages (STAGE=d2 or d1) or smaller tiles (TILE's warp grid, fragments or k)";

// TILE with an mma atom: the warp grid, each warp's fragments and the K chunk, in atoms.
struct MmaTile {
  std::string atom;  // "mma_m16n8k16_f16", "mma_m16n8k16_bf16"
  kir::ScalarType operand = kir::ScalarType::F16;
  int warps_m = 4, warps_n = 1;
  int frag_m = 1, frag_n = 8;
  int k_chunk = 4;  // K steps of 16 per chunk; the contraction's register bound is 16 * k_chunk
  // wgmma (sm_90a): the atom's N (0: mma.sync). Each warpgroup's 64 rows are four warps of 16
  // (frag_m = 1) and the atom's N columns are frag_n = N / 8 n-atoms of the mma C layout, which
  // is the warpgroup accumulator's layout warp by warp.
  int wgmma_n = 0;
};

// STAGE for the tensor-core tier: the streamed operands' tiles in shared memory.
struct MmaStage {
  int depth = 1;      // buffers per operand
  bool async = true;  // cp.async (false: through registers, the `reg` transport)
  bool ring = false;  // prefetch tile i + depth - 1 under tile i's math
  bool tma = false;   // streamed tiles by TMA (one thread, an mbarrier a buffer)
};

// Where a knob setting was written, so that a later pass can point at it in an error.
struct KnobOrigin {
  std::string source;  // "--knobs", "EMMY_KNOBS", the block's file, or the block ("schedule sdpa for sm_90")
  std::string text;    // the knob list as written, or the block's source line (empty: no location)
  size_t column = 0;   // the entry's byte offset in `text`
  int line = 1;        // the line of `text` in `source`
  size_t length = 0;   // the entry's bytes in `text` (0: as printed)
};
// "--knobs:1:7: error: MESSAGE" (or "file.emmy:12:3: ...") with the text and a caret under
// the entry, then the help.
std::string knob_error(const KnobOrigin& origin, const KnobSetting& setting, const std::string& message,
                       const std::string& help, const std::string& code = "");
// Where a setting was written ("--knobs:1:7") and its source line with a caret under the
// entry, for a located warning; both empty where the origin has no text.
struct KnobLocation {
  std::string where, snippet;
};
KnobLocation knob_location(const KnobOrigin& origin, const KnobSetting& setting);

// REDUCE=g<N>k|g<N>a (REDUCE@site: a statement or a reduction axis; "" = the op's first
// reduction, see split_reduce.cpp).
struct SplitKnob {
  KnobSetting setting;
  std::string site;
  int groups = 0;
  bool atomic = false;
  KnobOrigin origin;
};

// A setting in force and where it was written, for the errors of later passes.
struct KnobUse {
  KnobSetting setting;
  KnobOrigin origin;
};

// The knobs in force for one op, every default filled in.
struct Knobs {
  bool place_fuse = true;                  // PLACE for the whole op
  std::map<std::string, bool> place_at;    // PLACE@site: statement name -> fuse?
  std::string atom = "scalar";             // TILE a:<atom>
  std::optional<MmaTile> mma;              // the tensor-core tier, when TILE names an mma atom
  std::optional<MmaStage> stage;           // STAGE on the tensor-core tier; none: fragments from global memory
  bool fast_exp = false;                   // FAST_EXP=1: exp(x) as exp2(x * log2 e) (both tiers)
  bool overlap = false;                    // OVERLAP=1: a block's next product issued before its elementwise work
  std::optional<WspecValue> wspec;         // WSPEC=p<N>[/r<R>]: producer warps issue the ring's copies
  bool pingpong = false;                   // PINGPONG=1: the consumer warpgroups take turns issuing wgmma
  bool persist = false;                    // PERSIST=1: CTAs the device holds at once walk the tiles (or COOP rows)
  std::optional<RasterValue> raster;       // RASTER=gm<G>|gn<G>: a contraction's tiles in groups (L2 reuse)
  std::optional<ClusterValue> cluster;     // CLUSTER=m<N>|n<N>: a contraction's CTAs share a tile by multicast
  std::map<std::string, int> scalar_tile;  // TILE@axis=f<N>: register tile along an axis
  std::vector<SplitKnob> splits;           // REDUCE (at most one)
  std::vector<KnobSetting> settings;       // as resolved, for printing and hashing
  std::vector<Warning> warnings;           // knobs that have no effect here, and why (W050-W052)
  int block_threads = 128;
  int carrier_tile = 32;               // TILE@axis default for per-element carriers (the target's)
  int fold_fragment_regs = 184;        // the tensor-core fold's fragment register budget (the target's)
  int register_file = 65536;           // 32-bit registers of an SM (the target's)
  int max_thread_registers = 255;      // the most a thread may hold (the target's)
  int causal_group_blocks = 256;       // a key-bounded fold's head-group size in blocks (the target's)
  int64_t shared_memory = 232448;      // shared memory a block may hold, bytes (the target's)
  int rescale_skip_per_key = 1;        // the fold's rescale skip: elements of o a thread per key (the target's)
  int row_cache_registers = 64;        // a row-cache kernel's registers a thread at least (the target's)
  int row_cache_own_registers = 48;    // ... besides the kept chunks', the cache in registers (the target's)
  int row_cache_value_registers = 32;  // ... on kept values of calls a later pass computes again (the target's)
  int coop_threads = 1;                // COOP=t<N>: threads per point of a kernel's thread space
  int coop_vec = 1;                    // COOP=.../v<V>: elements per vector load/store
  int coop_cache = 0;                  // COOP=.../c<R> or r<R>: chunks of a row a thread keeps (0: no row cache)
  bool coop_registers = false;         // COOP=.../r<R>: the row cache in registers, not shared memory
  int coop_cluster = 1;                // COOP=.../k<K>: CTAs of a thread-block cluster a row (1: one CTA)
  std::map<Knob, KnobUse> uses;        // the op-wide TILE and COOP in force, with their origins
  bool fuses(const std::string& site) const;
};

struct KnobSources {
  KnobSources(const CheckedSchedule* block_ = nullptr, std::string env_ = "", std::string cli_ = "",
              std::string base_ = "")
      : block(block_), env(std::move(env_)), cli(std::move(cli_)), base(std::move(base_)) {}
  const CheckedSchedule* block = nullptr;  // the op's schedule block for the target, if any
  std::string env;                         // EMMY_KNOBS
  std::string cli;                         // --knobs
  std::string base;                        // under env and cli where the block is none or `auto;`: the auto-schedule's
};

// Merges the sources entry by entry (later wins: block or base, env, cli) and checks what the
// scalar tier can lower. Knob text errors carry the knob codec's message.
Knobs resolve_knobs(const KnobSources& sources, const TargetInfo& target);

tir::Program to_tensor(const CheckedProgram& program, const CheckedOp& op);
// The chains of the ops `program` inlined (tir::Program::inlined), their statements renamed as
// inlined: each callee's from `known` (the program's discovered chains) where it has some there,
// else discovered and proved here; `op` the caller's. A call's fold then folds in the caller.
std::vector<algebra::DiscoveredChain> inlined_chains(const tir::Program& program, const CheckedProgram& checked,
                                                     const std::vector<algebra::DiscoveredChain>* known);
// `known` (none: empty) with the chains of `op` and of every op it calls, transitively, that it
// lacks, each discovered and proved here once: what a search that lowers `op` many times passes
// each lowering, so that none discovers and proves them again.
std::vector<algebra::DiscoveredChain> with_callee_chains(const CheckedProgram& checked, const CheckedOp& op,
                                                         const std::vector<algebra::DiscoveredChain>* known);
// An output that copies an intermediate element for element, o[b, i] = x[b, i] with nothing else
// reading x (a call's result: o[...] = sdpa(q, k, v)[...]), is computed by x's statement itself:
// the copy and x disappear, and a chain that ends in
// x ends in o. `renamed`: each forwarded intermediate -> the output.
struct ForwardedCopies {
  tir::Program program;
  std::map<std::string, std::string> renamed;
};
ForwardedCopies forward_copies(const tir::Program& program);
// softmax's y[n, c] = exp(x[n, c] - max(k: x[n, k])) / sum(k: ...) becomes y_max[n], y_sum[n] and
// y reading them: each row statistic computed once a row, not once an element (O(C), not O(C^2)).
// The statements of `chains` stay as written: to_loops folds their reductions in one pass.
tir::Program hoist_invariant(const tir::Program& program, const std::vector<algebra::DiscoveredChain>& chains);
tir::Program inline_pointwise(const tir::Program& program, const Knobs& knobs);
// sum(j: exp(x - m) / l * v), l = sum(j: exp(x - m)) of the same chain read where m is, becomes
// select(l == 0, 0, sum(j: exp(x - m) * v) / l): a sum the chain's fold carries.
tir::Program factor_normalizer(const tir::Program& program, const std::vector<algebra::DiscoveredChain>& chains);
// `chains` and, for each online chain whose sums reach past its intermediates (a derived
// backward's dq beside the forward's m, l, o_sum), the chain of the intermediates before the
// first other statement, proved with `laws`: to_loops folds it in a kernel of its own when it
// cuts them.
std::vector<algebra::DiscoveredChain> chain_prefixes(const tir::Program& program,
                                                     std::vector<algebra::DiscoveredChain> chains, const LawMemo& laws);
// `chains`: the discovered chains of `op` with their proofs; only proved ones are folded.
lir::Program to_loops(const tir::Program& program, const CheckedProgram& checked, const CheckedOp& op,
                      const Knobs& knobs, const std::vector<algebra::DiscoveredChain>& chains);
// REDUCE: the reduction the split names becomes a kernel over (group, threads) folding each
// group's range plus a kernel combining the partials (k), or an init kernel, a kernel with
// atomics and a finishing kernel (a). No split: the program unchanged.
lir::Program split_reduce(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
                          const LawMemo* laws = nullptr);
// What to-kernel emits: every kernel's body (a lowering that runs), or for a lowering that is
// only ranked or probed, never run (verify_kernel off): the tensor-core kernels' headers without
// their bodies (the plan, launch shape, parameters and shared arrays the cost model reads; the
// scalar tiers' kernels whole but a warp's row cache, whose cached bodies are left out: only its
// dry run decides what it keeps), or no kernel's body at all (the plans, limits and warnings).
enum class KernelBodies { All, Headers, None };

// `plans`: what the back end decided for each kernel (its tier, tiles, slabs; --ir plan).
kir::Program to_kernel(const lir::Program& program, const CheckedProgram& checked, const Knobs& knobs,
                       std::vector<KernelPlan>* plans = nullptr, const LawMemo* laws = nullptr,
                       KernelBodies bodies = KernelBodies::All);

// The ops the main file of `program` defines, in order.
std::vector<std::string> main_ops(const CheckedProgram& program);
// `--schedule auto`: no block, the auto-schedule (unless a block of the op is named "auto").
inline constexpr const char* kAutoSchedule = "auto";
// The op's schedule block for `target`: the one labelled `label` (kAutoSchedule and no block so
// named: null); else (label empty) the first of
// default_candidates whose guard holds at `sizes` (without sizes, guarded blocks are passed over),
// which may be null (no block); a one-line message when `label` names no block.
std::variant<const CheckedSchedule*, std::string> select_schedule(
    const CheckedProgram& program, const std::string& op, const TargetInfo& target, const std::string& label,
    const std::map<std::string, int64_t>* sizes = nullptr);
// The blocks a run of `op` may take by default, in the order they are tried: for the target and
// then its base, the guarded blocks (named or not) in source order, then the unnamed unguarded
// one; null last (no block: the auto-schedule). A block that says `auto;` takes its place like any.
std::vector<const CheckedSchedule*> default_candidates(const CheckedProgram& program, const std::string& op,
                                                       const TargetInfo& target);
// Whether the block's guard holds at `sizes` (true without a guard); false where a size it reads is
// unbound, or its arithmetic overflows or divides by zero.
bool guard_holds(const CheckedSchedule& block, const std::map<std::string, int64_t>& sizes);
// Whether lowering with `block` takes the auto-scheduler's knobs: no block, or one that says `auto;`.
inline bool is_auto(const CheckedSchedule* block) { return !block || (block->decl && block->decl->automatic); }
// Whether a run asking for schedule `asked` ("" by default) and lowering with `block` derives its
// knobs: a block that says `auto;` always; no block unless `asked` named another than kAutoSchedule.
inline bool derives(const CheckedSchedule* block, const std::string& asked) {
  return is_auto(block) && (block || asked.empty() || asked == kAutoSchedule);
}
// W056, at the block's header: `block` cannot serve a run's sizes (`why`: the kernels' limit).
Warning unserved_block(const CheckedSchedule& block, const std::string& why);

// The whole pipeline; the IR of each level is kept for printing.
struct Lowered {
  Knobs knobs;
  tir::Program tensor;
  lir::Program loops;
  kir::Program kernels;
  std::vector<KernelPlan> plans;  // the kernel back end's decisions, a kernel each
};
// What the pipeline shows and checks as it runs (emmyc compile --print-after, --verify-each).
struct PipelineOptions {
  std::vector<std::string> print_after;  // pass names (pass_names()), or "all"
  bool verify_each = false;              // verify the tensor and loop IR after each pass too
  std::ostream* out = nullptr;           // where print_after writes
  const LawMemo* laws = nullptr;         // the prover's verdicts, shared by many lowerings of one op
  // Verify the kernel IR after to-kernel (the default). Off only for lowerings that are ranked,
  // never run: the auto-scheduler lowers its choice again with it on.
  bool verify_kernel = true;
  KernelBodies bodies = KernelBodies::All;  // anything else only with verify_kernel off
};
// The passes of lower_op, in order: to-tensor, forward-copies, hoist-invariant, inline-pointwise,
// factor-normalizer, chain-prefixes, to-loops, split-reduce, to-kernel.
const std::vector<std::string>& pass_names();

// `chains`: the algebra layer's discovered chains (algebra::classify proves them once for
// the program); when null they are discovered and proved here. The kernel IR is verified
// after to-kernel on every call; a verifier's complaint is an internal error (std::logic_error).
Lowered lower_op(const CheckedProgram& program, const CheckedOp& op, const KnobSources& sources,
                 const TargetInfo& target, const std::vector<algebra::DiscoveredChain>* chains = nullptr,
                 const PipelineOptions& options = {});

// The kernels of `program` specialized to the sizes of a launch: every `if` whose test reads
// only sizes and constants (a row cache's capacity, the row length a multiple of the vector
// width) decided, the branch taken kept, so NVRTC drops the others. They serve every sizes whose
// size_class is the same: the decided tests, each with its outcome ("" where none is).
kir::Program specialize_sizes(const kir::Program& program, const std::map<std::string, int64_t>& sizes);
std::string size_class(const kir::Program& program, const std::map<std::string, int64_t>& sizes);
// False where EMMY_SPECIALIZE=0 asks the library and emmyc run for the shape-generic kernels.
bool specialize_by_env();

}  // namespace emmy::lower
