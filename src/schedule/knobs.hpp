// The schedule-knob codec of shared/design/KNOBS.md: parse, print and check knob values per target.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "schedule/targets.hpp"
#include "support/diagnostics.hpp"

namespace emmy {

enum class Knob { Place, Tile, Stage, Reduce, Wspec, Raster, FastExp, Coop, Overlap, PingPong, Persist, Cluster };

// TILE: a:<atom>/w<M>x<N>/f<M>x<N>/k<K>, or the scalar tier's per-thread tile f<N>.
// Absent fields stay std::nullopt: defaults are chosen later, not by the codec.
struct TileValue {
  std::string atom;  // "mma_m16n8k16_f16", "wgmma_m64n128k16_f16", "scalar", "none"; "" when only f<N>
  std::optional<int> warps_m, warps_n;  // w<M>x<N>
  std::optional<int> frag_m, frag_n;    // f<M>x<N> (tensor-core atoms)
  std::optional<int> k_chunk;           // k<K>
  std::optional<int> scalar_f;          // f<N> (scalar tier)
};

struct StageValue {  // d<depth>/<transport>[/ring]
  int depth = 0;
  std::string transport;  // "cp", "tma", "reg"
  bool ring = false;
};

struct ReduceValue {  // g<N>k | g<N>a
  int groups = 0;
  bool atomic = false;
};

struct WspecValue {  // p<N>[/r<R>]
  int producers = 0;
  std::optional<int> regs;
};

struct RasterValue {  // gm<G> | gn<G>
  char axis = 'm';
  int group = 0;
};

// CLUSTER: m<N> | n<N> — N CTAs of a thread-block cluster on consecutive row tiles (m: they share
// the column operand's tile) or column tiles (n: the row operand's), each bringing its share of
// the shared tile to all of them by TMA multicast.
struct ClusterValue {
  char axis = 'm';
  int size = 0;
};

// COOP: t<N>[/v<V>][/c<R>|/r<R>][/k<K>] — N threads (a power of two) cooperate on each point of
// a kernel's thread space (a row); V elements per vector load/store (1, 2, 4, 8); a row cache of
// R chunks of V elements a thread, so a row of up to N * V * R elements is read once: in shared
// memory (c<R>) or in the thread's registers (r<R>); a row split between the K CTAs of a
// thread-block cluster, which combine their carriers through distributed shared memory.
// COOP's k<K> needs a CTA a row: at least the 128 threads of COOP's smallest block.
inline constexpr int kCoopClusterMinThreads = 128;

struct CoopValue {
  int threads = 0;
  std::optional<int> vec;
  std::optional<int> cache;
  bool registers = false;      // r<R>: the cache in registers
  std::optional<int> cluster;  // k<K>: the row's CTAs
};

// monostate: off (empty value); bool: PLACE (fuse = true), FAST_EXP, OVERLAP, PINGPONG and PERSIST (1 = true).
using KnobValue = std::variant<std::monostate, bool, TileValue, StageValue, ReduceValue, WspecValue, RasterValue,
                               CoopValue, ClusterValue>;

struct KnobSetting {
  Knob knob;
  std::string site;  // "" = the whole op
  bool off = false;  // empty value
  KnobValue value;
};

// offset/length: the byte range, within the text that was passed in, that the error is about.
struct KnobError {
  std::string code;  // "E050".."E056"
  size_t offset = 0;
  size_t length = 0;
  std::string message;
  std::string help;
};

std::optional<Knob> find_knob(std::string_view name);
std::string_view knob_name(Knob knob);
std::vector<std::string_view> knob_names();
std::string_view knob_grammar(Knob knob);  // "d<depth>/<transport>[/ring]"
std::string_view knob_example(Knob knob);  // "d2/tma/ring"

// Resolves a knob name; an unknown name gives E050 (pointing into `name`) with the closest knob.
std::variant<Knob, KnobError> lookup_knob(std::string_view name);

// Atom names for editors and completion; wgmma atoms as the patterns wgmma_m64n<N>k16_f16/_bf16.
std::vector<std::string_view> atom_names();
// The words a knob value field may be (fuse, cut, cp, tma, reg, ring), for editors and completion.
std::vector<std::string_view> knob_value_words();

enum class AtomTier { Scalar, Mma, Wgmma };
struct AtomInfo {
  AtomTier tier;
  int m = 1, n = 1, k = 1;  // the instruction shape; 1x1x1 for scalar/none
  std::string_view dtype;   // "f16", "bf16"; "" for scalar/none
};
// Decodes an atom name ("wgmma_m64n128k16_f16" gives n = 128); nullopt if not a legal atom.
std::optional<AtomInfo> find_atom(std::string_view name);

// Parses one value (name and site already split). Surrounding blanks are ignored; errors
// point into `value`. The codec accepts only canonical text, so the trimmed value is
// exactly print_knob_value of the result.
std::variant<KnobSetting, KnobError> parse_knob_value(Knob knob, std::string_view site, std::string_view value);

// Canonical text: "TILE@e=f64", "STAGE=d2/tma/ring", "REDUCE="; print(parse(x)) == x.
std::string print_knob(const KnobSetting& setting);
// The value alone: "d2/tma/ring"; "" when off.
std::string print_knob_value(const KnobSetting& setting);

// EMMY_KNOBS: "TILE=a:.../k4,STAGE=d2/tma/ring,REDUCE=g4k". Collects every error (offsets
// into `text`), at most one per entry; entries that do not parse are left out of `settings`.
// With a target, the legality errors (E055) of the parsed settings are collected too.
struct KnobListResult {
  std::vector<KnobSetting> settings;
  std::vector<KnobError> errors;
};
KnobListResult parse_knob_list(std::string_view text, const TargetInfo* target = nullptr);
std::string print_knob_list(const std::vector<KnobSetting>& settings);  // comma-joined
// parse_knob_list's errors as diagnostics of `text` added to `sources` as `origin` (EMMY_KNOBS,
// --knobs, the REPL's :knobs), so that they point at a column of the list. Nothing for "".
void check_knob_list(SourceManager& sources, Diagnostics& diags, const std::string& origin, const std::string& text,
                     const TargetInfo* target);

// Legality on a target (E055); empty = legal. Offsets point into print_knob_value(setting),
// which is the value text as written.
std::vector<KnobError> check_knob_legal(const KnobSetting& setting, const TargetInfo& target);

}  // namespace emmy
