// Enumerates the knob lists the tuner tries for an op on a target: the op's own schedule
// blocks, then each tier's families from the tables below.
#include "tune/space.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "autosched/op_class.hpp"
#include "ir/dtypes.hpp"

namespace emmy::tune {
namespace {

using autosched::mma_atom;

// ---- the families: tables, not branches -----------------------------------------------------
struct Grid {
  int m, n;
};
// A fold (online softmax) splits rows across warps only (w<M>x1); a contraction both ways.
constexpr Grid kFoldWarps[] = {{1, 1}, {2, 1}, {4, 1}, {8, 1}};
constexpr Grid kContractionWarps[] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {4, 2}, {2, 4}};
constexpr Grid kFragments[] = {{1, 2}, {1, 4}, {1, 8}, {2, 2}, {2, 4}, {2, 8}, {4, 4}, {4, 8}};
constexpr int kChunks[] = {2, 4, 8};  // k<K>: K steps of 16 a chunk

struct StageRow {
  const char* value;
  Feature needs;
  int depth = 0;  // its buffers (OVERLAP needs 3)
};
constexpr StageRow kMmaStages[] = {{"", Feature::None},
                                   {"d1/cp", Feature::CpAsync},
                                   {"d2/cp/ring", Feature::CpAsync},
                                   {"d3/cp/ring", Feature::CpAsync},
                                   {"d1/tma", Feature::Tma},
                                   {"d2/tma/ring", Feature::Tma},
                                   {"d3/tma/ring", Feature::Tma},
                                   {"d4/tma/ring", Feature::Tma}};
constexpr StageRow kWgmmaStages[] = {{"d2/cp/ring", Feature::CpAsync, 2},
                                     {"d3/cp/ring", Feature::CpAsync, 3},
                                     {"d2/tma/ring", Feature::Tma, 2},
                                     {"d3/tma/ring", Feature::Tma, 3},
                                     {"d4/tma/ring", Feature::Tma, 4}};
// The atom's N: 64 and 128 for both; 176 and 192 only a fold's key blocks (FlashAttention-3's
// head-dim-128 and head-dim-64 tiles); 256 only a contraction's columns, two warpgroups at most.
constexpr int kWgmmaN[] = {64, 128, 176, 192, 256};
constexpr int kWgmmaWarps[] = {4, 8, 12, 16};  // w<M>x1: M / 4 warpgroups (12: three, FA-3's head-dim-64 tile)
constexpr int kValueTiles[] = {64, 128};       // TILE@<the output's last axis>: a fold's value columns a CTA

// The scalar tier varies one family at a time around fuse / cut / one seam cut.
constexpr int kScalarTiles[] = {16, 32, 64, 128};
constexpr int kCoopThreads[] = {32, 64, 128, 256, 512, 1024};
// The row cache's chunk counts (COOP=.../c<R>): with t256/v8, rows up to 2 K, 8 K and 32 K
// elements; with t1024/v8 up to 128 K (f16 only: f32 overflows shared memory, pruned).
constexpr int kRowCacheChunks[] = {1, 4, 16};
constexpr int kRowRegisterChunks[] = {1, 4, 8};  // ... and in registers (r<R>: the auto-scheduler's up to 8)
// Long rows (COOP=.../c<R>/k<K>, PERSIST=1): split between a cluster's CTAs that walk the rows and
// keep the weights' slices; with t256/v8 and c16, slices up to 32 K elements (rows up to 64 K at
// k2, 128 K at k4), with c4 up to 8 K. Where clusters exist (sm_90 and newer), beside the whole
// op fused and every seam cut.
constexpr int kRowWalkThreads[] = {256, 512};
constexpr int kRowWalkChunks[] = {4, 16};
constexpr int kRowClusters[] = {1, 2, 4};  // 1: the walk alone (no cluster)
constexpr int kSplits[] = {4, 8, 16, 32, 64};

// The last index of each output: where a register tile of output columns (TILE@axis) goes.
std::vector<std::string> output_columns(const CheckedOp& op) {
  std::vector<std::string> out;
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Output && !t.index_vars.empty()) out.push_back(t.index_vars.back());
  return out;
}

class Builder {
 public:
  void add(std::string knobs, std::string origin = "enumerated") {
    if (seen_.insert(knobs).second) out_.push_back({std::move(knobs), std::move(origin)});
  }
  std::vector<Enumerated> take() { return std::move(out_); }

 private:
  std::set<std::string> seen_;
  std::vector<Enumerated> out_;
};

std::string join(std::initializer_list<std::string> parts) { return autosched::join_knobs(parts); }

// PLACE: everything fused, every seam cut, and each intermediate alone cut (the seam between
// a chain's head and the rest: softmax's max as its own pass).
std::vector<std::string> placements(const CheckedOp& op) {
  std::vector<std::string> out{"PLACE=fuse", "PLACE=cut"};
  for (const TensorInfo& t : op.tensors)
    if (t.role == TensorInfo::Role::Intermediate) out.push_back(fmt::format("PLACE@{}=cut", t.name));
  return out;
}

// COOP's vector widths: none, and the widest 16-byte access of the op's narrowest input.
std::vector<std::string> coop_vectors(const CheckedOp& op) {
  const int widest = autosched::widest_vector(op);
  std::vector<std::string> out{""};
  if (widest > 1) out.push_back(fmt::format("/v{}", widest));
  return out;
}

// `rows`: the op's kernels are the scalar tier's alone (row ops): the walks over long rows too.
void scalar_family(Builder& b, const CheckedOp& op, const TargetInfo& target, const std::vector<std::string>& fast_exp,
                   bool rows) {
  const std::vector<std::string> vectors = coop_vectors(op);
  for (const std::string& place : placements(op))
    for (const std::string& fe : fast_exp) {
      const std::string base = join({place, "TILE=a:scalar", fe});
      b.add(base);
      for (const std::string& axis : output_columns(op))
        for (int f : kScalarTiles) b.add(join({base, fmt::format("TILE@{}=f{}", axis, f)}));
      for (int t : kCoopThreads)
        for (const std::string& v : vectors) {
          b.add(join({base, fmt::format("COOP=t{}{}", t, v)}));
          if (!v.empty()) {  // the row cache: rows up to t x v x c elements read once
            for (int c : kRowCacheChunks) b.add(join({base, fmt::format("COOP=t{}{}/c{}", t, v, c)}));
            for (int r : kRowRegisterChunks) b.add(join({base, fmt::format("COOP=t{}{}/r{}", t, v, r)}));
          }
        }
      for (int t : kRowWalkThreads)
        for (int c : kRowWalkChunks)
          for (int k : kRowClusters)
            if (rows && vectors.size() > 1 && (k == 1 || target.tma) && (place == "PLACE=fuse" || place == "PLACE=cut"))
              b.add(join({base,
                          fmt::format("COOP=t{}{}/c{}{}", t, vectors.back(), c, k > 1 ? fmt::format("/k{}", k) : ""),
                          "PERSIST=1"}));
      for (int g : kSplits) b.add(join({base, fmt::format("REDUCE=g{}k", g)}));
    }
}

// A fold's value tiles (TILE@<the output's last axis>), none ("") first; a contraction has none.
std::vector<std::string> value_tiles(const CheckedOp& op, bool fold) {
  std::vector<std::string> out{""};
  if (fold)
    for (const std::string& axis : output_columns(op))
      for (int f : kValueTiles) out.push_back(fmt::format("TILE@{}=f{}", axis, f));
  return out;
}

// `cuts`: the operand cuts the tensor-core tiers need (autosched::operand_cut_knobs).
void mma_family(Builder& b, const CheckedOp& op, const TargetInfo& target, bool fold, const std::string& cuts,
                const std::vector<std::string>& fast_exp) {
  const std::string atom = mma_atom(op, "mma_m16n8k16");
  const std::vector<std::string> tiles = value_tiles(op, fold);
  auto add_grid = [&](const Grid& w) {
    for (const Grid& f : kFragments)
      for (int k : kChunks)
        for (const StageRow& s : kMmaStages) {
          if (!target_has(target, s.needs)) continue;
          for (const std::string& v : tiles)
            for (const std::string& fe : fast_exp)
              b.add(join({fold ? "PLACE=fuse" : "", cuts,
                          fmt::format("TILE=a:{}/w{}x{}/f{}x{}/k{}", atom, w.m, w.n, f.m, f.n, k), v,
                          fmt::format("STAGE={}", s.value), fe}));
        }
  };
  if (fold)
    for (const Grid& w : kFoldWarps) add_grid(w);
  else
    for (const Grid& w : kContractionWarps) add_grid(w);
}

void wgmma_family(Builder& b, const CheckedOp& op, const TargetInfo& target, bool fold, const std::string& cuts,
                  const std::vector<std::string>& fast_exp) {
  const std::vector<std::string> tiles = value_tiles(op, fold);
  for (int n : kWgmmaN)
    for (int w : kWgmmaWarps)
      for (int k : kChunks)
        for (const StageRow& s : kWgmmaStages) {
          if (!target_has(target, s.needs) || (n == 256 && (fold || w > 8)) || ((n == 176 || n == 192) && !fold))
            continue;
          // The asynchronous moves: OVERLAP on a fold whose ring has a buffer for the P @ V in
          // flight (with two warpgroups or more, also taking turns: PINGPONG); a producer warpgroup (WSPEC) on a ring
          // of TMA boxes, and on a contraction OVERLAP with it (without the producers a contraction's is refused: no
          // build spent on it). The producer-fed variants also with persistent CTAs (PERSIST), whose producers load
          // the next tile's first blocks under this tile's last ones; a contraction's also in clusters (CLUSTER).
          std::vector<std::string> overlap{""};
          const bool boxes = s.needs == Feature::Tma;
          if (fold && s.depth >= 3) overlap.push_back("OVERLAP=1");
          if (fold && s.depth >= 3 && w >= 8) overlap.push_back("OVERLAP=1,PINGPONG=1");
          if (fold && boxes && s.depth >= 3 && w >= 8) {
            overlap.push_back("OVERLAP=1,PINGPONG=1,WSPEC=p1");
            overlap.push_back("OVERLAP=1,PINGPONG=1,WSPEC=p1,PERSIST=1");
          }
          if (boxes) overlap.push_back("WSPEC=p1");
          if (boxes && !fold && s.depth >= 3) {
            overlap.push_back("WSPEC=p1,OVERLAP=1");
            overlap.push_back("WSPEC=p1,OVERLAP=1,RASTER=gm8");
            overlap.push_back("WSPEC=p1,OVERLAP=1,RASTER=gm8,PERSIST=1");
            // Pairs of row tiles sharing B's tile by multicast, where it splits into their two runs of boxes.
            if (n % 128 == 0) overlap.push_back("WSPEC=p1,OVERLAP=1,RASTER=gm8,PERSIST=1,CLUSTER=m2");
          }
          for (const std::string& v : tiles)
            for (const std::string& fe : fast_exp)
              for (const std::string& ov : overlap)
                b.add(join({fold ? "PLACE=fuse" : "", cuts,
                            fmt::format("TILE=a:{}/w{}x1/k{}", mma_atom(op, fmt::format("wgmma_m64n{}k16", n)), w, k),
                            v, fmt::format("STAGE={}", s.value), fe, ov}));
        }
}

}  // namespace

std::vector<Enumerated> block_knobs(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target) {
  std::vector<Enumerated> out;
  const TargetInfo* base = base_target(target);
  for (const CheckedSchedule& s : program.schedules) {
    if (s.decl->op.name != op.decl->name.name || (s.target != &target && s.target != base)) continue;
    out.push_back(
        {print_knob_list(s.knobs), fmt::format("schedule {} for {}{}", s.decl->op.name, s.target->name,
                                               s.decl->label ? fmt::format(" as \"{}\"", s.decl->label->name) : "")});
  }
  return out;
}

std::vector<Enumerated> enumerate_knobs(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                                        const std::vector<algebra::DiscoveredChain>* chains, bool with_blocks) {
  Builder b;
  // The op's own blocks: the hand-written schedules the tuner must match.
  if (with_blocks)
    for (Enumerated& e : block_knobs(program, op, target)) b.add(std::move(e.knobs), std::move(e.origin));
  const std::string tensor_text = tir::print_program(lower::to_tensor(program, op));
  // FAST_EXP: both ways on the scalar tier; the tensor-core families take ex2.approx alone
  // (fewer instructions for the same checked accuracy), which halves their share of the space.
  const bool has_exp = tensor_text.find("exp(") != std::string::npos;
  const std::vector<std::string> fast_exp =
      has_exp ? std::vector<std::string>{"", "FAST_EXP=1"} : std::vector<std::string>{""};
  const std::vector<std::string> tc_fast_exp{has_exp ? "FAST_EXP=1" : ""};
  // The tensor-core tiers, where the op's kernels take them at all, with the operand cuts they
  // need (an epilogue or a call's result a product reads): the auto-scheduler's probes.
  const autosched::OpClass cls = autosched::classify_op(program, op, target, chains);
  scalar_family(b, op, target, fast_exp, !cls.fold && !cls.contraction);
  const std::string cuts = autosched::operand_cut_knobs(cls);
  if (cls.fold || cls.contraction) mma_family(b, op, target, cls.fold, cuts, tc_fast_exp);
  if (target.wgmma && (cls.fold || cls.contraction)) wgmma_family(b, op, target, cls.fold, cuts, tc_fast_exp);
  return b.take();
}

}  // namespace emmy::tune
