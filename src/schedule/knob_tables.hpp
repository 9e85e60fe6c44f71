// The knob codec's tables (private to knobs.cpp): number ranges, the field specs of every knob in
// their required order (with the small accessors their store and load use), the knobs, the atoms
// and the tier rules. The codec that reads, checks and prints with them is knobs.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string_view>

#include "schedule/knobs.hpp"

namespace emmy::knob_tables {

struct NumRange {
  int lo = 1;
  int hi = 1;
  int step = 1;             // the number must be a multiple of step
  std::string_view what{};  // "depth": names the number in messages
  bool pow2 = false;        // the number must be a power of two
};

// One alternative spelling: a whole word (cp, tma), a prefix (gm, gn) or a suffix (k, a).
struct Choice {
  std::string_view text;
  Feature needs = Feature::None;  // what the target must have for this choice
};

enum class Shape {
  Word,    // exactly one of the choices: fuse | cut
  Number,  // prefix, number, optional suffix choice: d2, g4k, gm8
  Pair,    // prefix, number 'x' number: w4x1
  Atom,    // a:<atom>
};

// One field as read from or written to text; which members count depends on the shape.
struct FieldRead {
  int head = 0;  // index of the word or prefix choice
  int tail = 0;  // index of the suffix choice
  int n1 = 0;
  int n2 = 0;
  std::string_view atom{};
};

// TILE's fields depend on the atom's tier; fields of other knobs allow every tier.
enum TierBit : unsigned { kNoAtom = 1, kScalarTier = 2, kTensorTier = 4, kAllTiers = 7 };

struct FieldSpec {
  std::string_view name{};     // "transport"
  std::string_view grammar{};  // "cp|tma|reg"
  std::string_view example{};  // "tma"
  int slot = 0;                // position in the required order; alternatives share a slot
  Shape shape = Shape::Word;
  std::span<const Choice> heads{};  // Word: the words; Number/Pair: the prefixes; Atom: "a:"
  std::span<const Choice> tails{};  // Number: suffix choices, or none
  NumRange r1{}, r2{};
  int max_product = 0;  // Pair: bound on n1 * n2 (0 = none)
  std::string_view product_what{};
  bool required = false;
  Feature needs = Feature::None;  // what the target must have for this field at all
  unsigned tiers = kAllTiers;
  void (*store)(KnobValue&, const FieldRead&) = nullptr;
  std::optional<FieldRead> (*load)(const KnobValue&) = nullptr;  // nullopt: field absent
};

constexpr Choice kPlaceWords[] = {{"fuse"}, {"cut"}};
constexpr Choice kFastExpWords[] = {{"0"}, {"1"}};
constexpr Choice kOverlapWords[] = {{"0"}, {"1", Feature::Wgmma}};   // wgmma's asynchronous groups
constexpr Choice kPingPongWords[] = {{"0"}, {"1", Feature::Wgmma}};  // warpgroups taking turns at wgmma
constexpr Choice kPersistWords[] = {{"0"}, {"1"}};                   // one CTA an SM walking the tiles
constexpr Choice kTransports[] = {{"cp", Feature::CpAsync}, {"tma", Feature::Tma}, {"reg"}};
constexpr Choice kRingWord[] = {{"ring"}};
constexpr Choice kAtomPrefix[] = {{"a:"}};
constexpr Choice kPrefixW[] = {{"w"}};
constexpr Choice kPrefixF[] = {{"f"}};
constexpr Choice kPrefixK[] = {{"k"}};
constexpr Choice kPrefixD[] = {{"d"}};
constexpr Choice kPrefixG[] = {{"g"}};
constexpr Choice kPrefixP[] = {{"p"}};
constexpr Choice kPrefixR[] = {{"r"}};
constexpr Choice kRasterPrefixes[] = {{"gm"}, {"gn"}};
constexpr Choice kClusterPrefixes[] = {{"m"}, {"n"}};
constexpr Choice kReduceModes[] = {{"k"}, {"a"}};
constexpr Choice kPrefixT[] = {{"t"}};
constexpr Choice kPrefixV[] = {{"v"}};
constexpr Choice kPrefixC[] = {{"c"}};

// The index of `text` among `choices`, or -1.
inline int index_of(std::span<const Choice> choices, std::string_view text) {
  for (size_t i = 0; i < choices.size(); ++i)
    if (choices[i].text == text) return static_cast<int>(i);
  return -1;
}

template <class T>
T& as(KnobValue& v) {
  return std::get<T>(v);
}
template <class T>
const T& as(const KnobValue& v) {
  return std::get<T>(v);
}

// The field tables, one designated initializer a field, laid out by hand (clang-format would
// put every member on a line of its own).
// clang-format off
constexpr FieldSpec kPlaceFields[] = {
    {.name = "value", .grammar = "fuse|cut", .example = "fuse", .slot = 0, .shape = Shape::Word,
     .heads = kPlaceWords, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) { v = (r.head == 0); },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       return FieldRead{.head = as<bool>(v) ? 0 : 1};
     }},
};

constexpr FieldSpec kTileFields[] = {
    {.name = "atom", .grammar = "a:<atom>", .example = "a:mma_m16n8k16_f16", .slot = 0,
     .shape = Shape::Atom, .heads = kAtomPrefix,
     .store = [](KnobValue& v, const FieldRead& r) { as<TileValue>(v).atom = std::string(r.atom); },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& t = as<TileValue>(v);
       if (t.atom.empty()) return std::nullopt;
       return FieldRead{.atom = t.atom};
     }},
    {.name = "warp grid", .grammar = "w<M>x<N>", .example = "w4x1", .slot = 1, .shape = Shape::Pair,
     .heads = kPrefixW, .r1 = {1, 32, 1, "warp grid rows"}, .r2 = {1, 32, 1, "warp grid columns"},
     .max_product = 32, .product_what = "warps", .tiers = kTensorTier,
     .store = [](KnobValue& v, const FieldRead& r) {
       as<TileValue>(v).warps_m = r.n1;
       as<TileValue>(v).warps_n = r.n2;
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& t = as<TileValue>(v);
       if (!t.warps_m || !t.warps_n) return std::nullopt;
       return FieldRead{.n1 = *t.warps_m, .n2 = *t.warps_n};
     }},
    {.name = "fragment tile", .grammar = "f<M>x<N>", .example = "f2x8", .slot = 2,
     .shape = Shape::Pair, .heads = kPrefixF, .r1 = {1, 64, 1, "fragment rows"},
     .r2 = {1, 64, 1, "fragment columns"}, .tiers = kTensorTier,
     .store = [](KnobValue& v, const FieldRead& r) {
       as<TileValue>(v).frag_m = r.n1;
       as<TileValue>(v).frag_n = r.n2;
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& t = as<TileValue>(v);
       if (!t.frag_m || !t.frag_n) return std::nullopt;
       return FieldRead{.n1 = *t.frag_m, .n2 = *t.frag_n};
     }},
    {.name = "per-thread tile", .grammar = "f<N>", .example = "f64", .slot = 2,
     .shape = Shape::Number, .heads = kPrefixF, .r1 = {1, 1024, 1, "per-thread tile"},
     .tiers = kNoAtom | kScalarTier,
     .store = [](KnobValue& v, const FieldRead& r) { as<TileValue>(v).scalar_f = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& t = as<TileValue>(v);
       if (!t.scalar_f) return std::nullopt;
       return FieldRead{.n1 = *t.scalar_f};
     }},
    {.name = "K chunk", .grammar = "k<K>", .example = "k4", .slot = 3, .shape = Shape::Number,
     .heads = kPrefixK, .r1 = {1, 64, 1, "K chunk"}, .tiers = kTensorTier,
     .store = [](KnobValue& v, const FieldRead& r) { as<TileValue>(v).k_chunk = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& t = as<TileValue>(v);
       if (!t.k_chunk) return std::nullopt;
       return FieldRead{.n1 = *t.k_chunk};
     }},
};

constexpr FieldSpec kStageFields[] = {
    {.name = "depth", .grammar = "d<depth>", .example = "d2", .slot = 0, .shape = Shape::Number,
     .heads = kPrefixD, .r1 = {1, 8, 1, "depth"}, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) { as<StageValue>(v).depth = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& s = as<StageValue>(v);
       if (s.depth == 0) return std::nullopt;
       return FieldRead{.n1 = s.depth};
     }},
    {.name = "transport", .grammar = "cp|tma|reg", .example = "tma", .slot = 1,
     .shape = Shape::Word, .heads = kTransports, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) {
       as<StageValue>(v).transport = std::string(kTransports[r.head].text);
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       int i = index_of(kTransports, as<StageValue>(v).transport);
       if (i < 0) return std::nullopt;
       return FieldRead{.head = i};
     }},
    {.name = "ring", .grammar = "ring", .example = "ring", .slot = 2, .shape = Shape::Word,
     .heads = kRingWord,
     .store = [](KnobValue& v, const FieldRead&) { as<StageValue>(v).ring = true; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       if (!as<StageValue>(v).ring) return std::nullopt;
       return FieldRead{};
     }},
};

constexpr FieldSpec kReduceFields[] = {
    {.name = "split", .grammar = "g<N>k|g<N>a", .example = "g4k", .slot = 0, .shape = Shape::Number,
     .heads = kPrefixG, .tails = kReduceModes, .r1 = {2, 1024, 1, "split count"}, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) {
       as<ReduceValue>(v).groups = r.n1;
       as<ReduceValue>(v).atomic = r.tail == 1;
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& r = as<ReduceValue>(v);
       if (r.groups == 0) return std::nullopt;
       return FieldRead{.tail = r.atomic ? 1 : 0, .n1 = r.groups};
     }},
};

constexpr FieldSpec kWspecFields[] = {
    {.name = "producer warps", .grammar = "p<N>", .example = "p1", .slot = 0, .shape = Shape::Number,
     .heads = kPrefixP, .r1 = {1, 4, 1, "producer warp count"}, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) { as<WspecValue>(v).producers = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& w = as<WspecValue>(v);
       if (w.producers == 0) return std::nullopt;
       return FieldRead{.n1 = w.producers};
     }},
    {.name = "register count", .grammar = "r<R>", .example = "r240", .slot = 1,
     .shape = Shape::Number, .heads = kPrefixR, .r1 = {24, 256, 8, "register count"},
     .needs = Feature::Setmaxnreg,
     .store = [](KnobValue& v, const FieldRead& r) { as<WspecValue>(v).regs = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& w = as<WspecValue>(v);
       if (!w.regs) return std::nullopt;
       return FieldRead{.n1 = *w.regs};
     }},
};

constexpr FieldSpec kRasterFields[] = {
    {.name = "group", .grammar = "gm<G>|gn<G>", .example = "gm8", .slot = 0, .shape = Shape::Number,
     .heads = kRasterPrefixes, .r1 = {1, 64, 1, "group size"}, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) {
       as<RasterValue>(v).axis = r.head == 0 ? 'm' : 'n';
       as<RasterValue>(v).group = r.n1;
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& r = as<RasterValue>(v);
       if (r.group == 0) return std::nullopt;
       return FieldRead{.head = r.axis == 'n' ? 1 : 0, .n1 = r.group};
     }},
};

constexpr FieldSpec kClusterFields[] = {
    {.name = "size", .grammar = "m<N>|n<N>", .example = "m2", .slot = 0, .shape = Shape::Number,
     .heads = kClusterPrefixes, .r1 = {2, 2, 1, "cluster size"}, .required = true,
     .needs = Feature::Tma,  // thread-block clusters and TMA multicast: sm_90 and newer
     .store = [](KnobValue& v, const FieldRead& r) {
       as<ClusterValue>(v).axis = r.head == 0 ? 'm' : 'n';
       as<ClusterValue>(v).size = r.n1;
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& c = as<ClusterValue>(v);
       if (c.size == 0) return std::nullopt;
       return FieldRead{.head = c.axis == 'n' ? 1 : 0, .n1 = c.size};
     }},
};

// A 0|1 knob (FAST_EXP, OVERLAP, PINGPONG, PERSIST): true for 1; `words` says what each value needs of the target.
constexpr std::array<FieldSpec, 1> flag_fields(std::span<const Choice> words) {
  return {{{.name = "value", .grammar = "0|1", .example = "1", .slot = 0, .shape = Shape::Word,
            .heads = words, .required = true,
            .store = [](KnobValue& v, const FieldRead& r) { v = (r.head == 1); },
            .load = [](const KnobValue& v) -> std::optional<FieldRead> {
              return FieldRead{.head = as<bool>(v) ? 1 : 0};
            }}}};
}
constexpr std::array<FieldSpec, 1> kFastExpFields = flag_fields(kFastExpWords);
constexpr std::array<FieldSpec, 1> kOverlapFields = flag_fields(kOverlapWords);
constexpr std::array<FieldSpec, 1> kPingPongFields = flag_fields(kPingPongWords);
constexpr std::array<FieldSpec, 1> kPersistFields = flag_fields(kPersistWords);

constexpr FieldSpec kCoopFields[] = {
    {.name = "threads per row", .grammar = "t<N>", .example = "t256", .slot = 0, .shape = Shape::Number,
     .heads = kPrefixT, .r1 = {2, 1024, 1, "thread count", true}, .required = true,
     .store = [](KnobValue& v, const FieldRead& r) { as<CoopValue>(v).threads = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& c = as<CoopValue>(v);
       if (c.threads == 0) return std::nullopt;
       return FieldRead{.n1 = c.threads};
     }},
    {.name = "vector width", .grammar = "v<V>", .example = "v8", .slot = 1, .shape = Shape::Number,
     .heads = kPrefixV, .r1 = {1, 8, 1, "vector width", true},
     .store = [](KnobValue& v, const FieldRead& r) { as<CoopValue>(v).vec = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& c = as<CoopValue>(v);
       if (!c.vec) return std::nullopt;
       return FieldRead{.n1 = *c.vec};
     }},
    {.name = "row cache", .grammar = "c<R>", .example = "c4", .slot = 2, .shape = Shape::Number,
     .heads = kPrefixC, .r1 = {1, 64, 1, "chunk count"},
     .store = [](KnobValue& v, const FieldRead& r) { as<CoopValue>(v).cache = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& c = as<CoopValue>(v);
       if (!c.cache || c.registers) return std::nullopt;
       return FieldRead{.n1 = *c.cache};
     }},
    {.name = "row registers", .grammar = "r<R>", .example = "r4", .slot = 2, .shape = Shape::Number,
     .heads = kPrefixR, .r1 = {1, 16, 1, "register chunk count"},
     .store = [](KnobValue& v, const FieldRead& r) {
       as<CoopValue>(v).cache = r.n1;
       as<CoopValue>(v).registers = true;
     },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& c = as<CoopValue>(v);
       if (!c.cache || !c.registers) return std::nullopt;
       return FieldRead{.n1 = *c.cache};
     }},
    {.name = "cluster CTAs", .grammar = "k<K>", .example = "k2", .slot = 3, .shape = Shape::Number,
     .heads = kPrefixK, .r1 = {2, 8, 1, "cluster CTA count", true},
     .needs = Feature::Clusters,  // and distributed shared memory
     .store = [](KnobValue& v, const FieldRead& r) { as<CoopValue>(v).cluster = r.n1; },
     .load = [](const KnobValue& v) -> std::optional<FieldRead> {
       const auto& c = as<CoopValue>(v);
       if (!c.cluster) return std::nullopt;
       return FieldRead{.n1 = *c.cluster};
     }},
};
// clang-format on

struct KnobSpec {
  Knob knob;
  std::string_view name;
  std::string_view grammar;
  std::string_view example;
  KnobValue (*init)();
  std::span<const FieldSpec> fields;  // in the required order
};

constexpr KnobSpec kKnobs[] = {
    {Knob::Place, "PLACE", "fuse|cut", "fuse", [] { return KnobValue{false}; }, kPlaceFields},
    {Knob::Tile, "TILE", "a:<atom>/w<M>x<N>/f<M>x<N>/k<K> | f<N>", "a:mma_m16n8k16_f16/w4x1/f2x8/k4",
     [] { return KnobValue{TileValue{}}; }, kTileFields},
    {Knob::Stage, "STAGE", "d<depth>/<transport>[/ring]", "d2/tma/ring", [] { return KnobValue{StageValue{}}; },
     kStageFields},
    {Knob::Reduce, "REDUCE", "g<N>k|g<N>a", "g4k", [] { return KnobValue{ReduceValue{}}; }, kReduceFields},
    {Knob::Wspec, "WSPEC", "p<N>[/r<R>]", "p1/r240", [] { return KnobValue{WspecValue{}}; }, kWspecFields},
    {Knob::Raster, "RASTER", "gm<G>|gn<G>", "gm8", [] { return KnobValue{RasterValue{}}; }, kRasterFields},
    {Knob::FastExp, "FAST_EXP", "0|1", "1", [] { return KnobValue{false}; }, kFastExpFields},
    {Knob::Coop, "COOP", "t<N>[/v<V>][/c<R>|/r<R>][/k<K>]", "t256/v8", [] { return KnobValue{CoopValue{}}; },
     kCoopFields},
    {Knob::Overlap, "OVERLAP", "0|1", "1", [] { return KnobValue{false}; }, kOverlapFields},
    {Knob::PingPong, "PINGPONG", "0|1", "1", [] { return KnobValue{false}; }, kPingPongFields},
    {Knob::Persist, "PERSIST", "0|1", "1", [] { return KnobValue{false}; }, kPersistFields},
    {Knob::Cluster, "CLUSTER", "m<N>|n<N>", "m2", [] { return KnobValue{ClusterValue{}}; }, kClusterFields},
};

// A tensor-core or scalar atom. A pattern with <N> takes the number in n_range there.
struct AtomSpec {
  std::string_view pattern;
  AtomTier tier;
  unsigned tier_bit;
  int m, n, k;
  std::string_view dtype;
  Feature needs;
  int warp_multiple;  // warp grids come in groups of this many warps (wgmma: a warpgroup)
  NumRange n_range;
};

constexpr std::string_view kParam = "<N>";

constexpr AtomSpec kAtoms[] = {
    {"mma_m16n8k16_f16", AtomTier::Mma, kTensorTier, 16, 8, 16, "f16", Feature::MmaSync, 1, {}},
    {"mma_m16n8k16_bf16", AtomTier::Mma, kTensorTier, 16, 8, 16, "bf16", Feature::MmaSync, 1, {}},
    {"wgmma_m64n<N>k16_f16", AtomTier::Wgmma, kTensorTier, 64, 0, 16, "f16", Feature::Wgmma, 4, {8, 256, 8, "wgmma N"}},
    {"wgmma_m64n<N>k16_bf16",
     AtomTier::Wgmma,
     kTensorTier,
     64,
     0,
     16,
     "bf16",
     Feature::Wgmma,
     4,
     {8, 256, 8, "wgmma N"}},
    {"scalar", AtomTier::Scalar, kScalarTier, 1, 1, 1, "", Feature::None, 1, {}},
    {"none", AtomTier::Scalar, kScalarTier, 1, 1, 1, "", Feature::None, 1, {}},
};

// The messages for a TILE field whose tier does not match the atom's.
struct TierRule {
  unsigned tier_bit;
  std::string_view rule;  // after "TILE field 'x' ..."
  std::string_view help;
};

constexpr TierRule kTierRules[] = {
    {kNoAtom, "needs an atom: without a:<atom>, TILE takes only f<N> (the scalar tier's per-thread tile)",
     "start with an atom, e.g. a:mma_m16n8k16_f16/w4x1/f2x8/k4"},
    {kScalarTier, "is not allowed with a scalar atom: the scalar tier takes only f<N>",
     "drop it, or pick a tensor-core atom such as a:mma_m16n8k16_f16"},
    {kTensorTier,
     "is not allowed with a tensor-core atom, which takes w<M>x<N>, f<M>x<N> and k<K>; f<N> is the "
     "scalar tier's per-thread tile",
     "give the warp's sub-tile in atoms as f<M>x<N>, e.g. f2x8"},
};

}  // namespace emmy::knob_tables
