// Resolves the knobs in force for an op: the schedule block, then EMMY_KNOBS, then
// --knobs, entry by entry, with defaults for the rest and checks of what this tier lowers.
#include "lower/passes.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace emmy::lower {
namespace {

// "error[E053]: ... " with the knob text and a caret under the offending bytes.
std::string knob_error_text(const std::string& source, const std::string& text, const KnobError& e) {
  std::string caret(e.offset, ' ');
  caret += std::string(std::max<size_t>(e.length, 1), '^');
  std::string prefix = fmt::format("  {} '", source);
  std::string out = fmt::format("error[{}]: {}\n{}{}'\n{}{}", e.code, e.message, prefix, text,
                                std::string(prefix.size(), ' '), caret);
  if (!e.help.empty()) out += fmt::format("\n  help: {}", e.help);
  return out;
}

void merge(std::vector<KnobSetting>& into, const KnobSetting& s) {
  for (KnobSetting& have : into)
    if (have.knob == s.knob && have.site == s.site) {
      have = s;
      return;
    }
  into.push_back(s);
}

// Where a command-line or environment setting was written: its source name and text.
struct Origin {
  std::string source, text;
};
using Origins = std::map<std::string, Origin>;  // by "KNOB@site"

std::string origin_key(const KnobSetting& s) { return fmt::format("{}@{}", knob_name(s.knob), s.site); }

// Where a command-line or environment entry was written, else the block's entry (its file,
// line and column when the checker recorded them, else the block's name).
KnobOrigin origin_of(const Origins& origins, const KnobSetting& s, const std::string& block,
                     const CheckedSchedule* schedule = nullptr) {
  auto it = origins.find(origin_key(s));
  if (it == origins.end()) {
    if (schedule)
      for (size_t i = 0; i < schedule->knobs.size() && i < schedule->places.size(); ++i) {
        const KnobPlace& p = schedule->places[i];
        if (origin_key(schedule->knobs[i]) == origin_key(s) && p.line > 0)
          return {p.path, p.line_text, p.column, p.line, p.length};
      }
    return {block, "", 0};
  }
  size_t at = it->second.text.find(print_knob(s));
  return {it->second.source, it->second.text, at == std::string::npos ? 0 : at};
}

std::string located_error(const Origins& origins, const KnobSetting& s, const std::string& message,
                          const std::string& help) {
  return knob_error(origin_of(origins, s, ""), s, message, help);
}

void merge_text(std::vector<KnobSetting>& into, Origins& origins, const std::string& source, const std::string& text,
                const TargetInfo& target) {
  if (text.empty()) return;
  KnobListResult parsed = parse_knob_list(text, &target);
  if (!parsed.errors.empty()) {
    std::vector<std::string> all;
    for (const KnobError& e : parsed.errors) all.push_back(knob_error_text(source, text, e));
    throw LowerError(fmt::format("{}", fmt::join(all, "\n")));
  }
  for (const KnobSetting& s : parsed.settings) {
    merge(into, s);
    origins[origin_key(s)] = {source, text};
  }
}

void apply_place(Knobs& k, const KnobSetting& s) {
  bool fuse = s.off || std::get<bool>(s.value);
  if (s.site.empty())
    k.place_fuse = fuse;
  else
    k.place_at[s.site] = fuse;
}

// The tensor-core tier takes the mma.sync atoms (fields left out get FlashAttention-2's
// geometry) and, on sm_90a, the wgmma atoms (one m64nNk16 atom a warpgroup: f1x1, the
// default); a wgmma atom elsewhere asked for on the command line is an error, one from the
// op's schedule block falls back to the scalar tier with a warning, so the file still compiles.
bool apply_tile(Knobs& k, const KnobSetting& s, const TargetInfo& target, bool from_block, const Origins& origins) {
  if (s.off) return false;
  const auto& tile = std::get<TileValue>(s.value);
  std::optional<AtomInfo> atom = find_atom(tile.atom);
  const bool wgmma = atom && atom->tier == AtomTier::Wgmma && target.wgmma;
  if (atom && (atom->tier == AtomTier::Mma || wgmma) && s.site.empty()) {
    MmaTile m;
    m.atom = tile.atom;
    m.operand = atom->dtype == "bf16" ? kir::ScalarType::BF16 : kir::ScalarType::F16;
    m.warps_m = tile.warps_m.value_or(m.warps_m);
    m.warps_n = tile.warps_n.value_or(m.warps_n);
    m.frag_m = tile.frag_m.value_or(m.frag_m);
    m.frag_n = tile.frag_n.value_or(m.frag_n);
    m.k_chunk = tile.k_chunk.value_or(m.k_chunk);
    if (wgmma) {
      if (tile.frag_m.value_or(1) != 1 || tile.frag_n.value_or(1) != 1)
        throw LowerError(
            located_error(origins, s,
                          fmt::format("{}: a wgmma atom is one m64nNk16 instruction a warpgroup, so its "
                                      "register tile is f1x1, not f{}x{}",
                                      print_knob(s), *tile.frag_m, *tile.frag_n),
                          "drop the f field, or pick the atom's N for wider tiles (e.g. wgmma_m64n128k16_f16)"));
      m.wgmma_n = atom->n;
      m.frag_m = 1;
      m.frag_n = atom->n / 8;
    }
    k.atom = tile.atom;
    k.mma = m;
    return false;
  }
  bool tensor_core = atom && atom->tier != AtomTier::Scalar;
  if (tensor_core && from_block) {
    k.warnings.push_back({"W051", fmt::format("the schedule block's {} needs sm_90a (wgmma), which {} does not have: "
                                              "using TILE=a:scalar",
                                              print_knob(s), target.name)});
    return true;
  }
  if (tensor_core)
    throw LowerError(located_error(
        origins, s, fmt::format("{} needs sm_90a (wgmma), which {} does not have", print_knob(s), target.name),
        "use an mma.sync atom (TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4) or TILE=a:scalar"));
  if (tile.scalar_f) {
    if (s.site.empty())
      k.warnings.push_back({"W050", fmt::format("{} has no effect: a register tile needs an axis, e.g. TILE@e=f{}",
                                                print_knob(s), *tile.scalar_f)});
    else
      k.scalar_tile[s.site] = *tile.scalar_f;
  }
  return false;
}

// The tensor-core tier stages through cp.async, TMA (streamed tiles; cp.async where a tile
// or the sizes do not allow a box copy) or registers.
void apply_stage(Knobs& k, const KnobSetting& s) {
  const auto& v = std::get<StageValue>(s.value);
  MmaStage st;
  st.depth = std::max(1, v.depth);
  st.async = v.transport != "reg";
  st.ring = v.ring && st.depth > 1;
  st.tma = v.transport == "tma";
  if (v.ring && st.depth == 1)
    k.warnings.push_back(
        {"W052", fmt::format("{}: a ring needs two buffers or more (d2): no prefetch", print_knob(s))});
  k.stage = st;
}

// COOP applies to every kernel of the op: a site names nothing it could narrow to.
void apply_coop(Knobs& k, const KnobSetting& s) {
  if (s.off) return;
  if (!s.site.empty()) {
    k.warnings.push_back({"W050", fmt::format("{} has no effect: COOP applies to every kernel of the op, not to one "
                                              "site; write COOP={}",
                                              print_knob(s), print_knob_value(s))});
    return;
  }
  const auto& c = std::get<CoopValue>(s.value);
  k.coop_threads = c.threads;
  k.coop_vec = c.vec.value_or(1);
  k.coop_cache = c.cache.value_or(0);
  k.coop_registers = c.registers;
  k.coop_cluster = c.cluster.value_or(1);
  k.block_threads = std::max(k.block_threads, c.threads);
}

// Whether the op's rows are cooperative (a COOP setting for the whole op).
bool has_coop(const std::vector<KnobSetting>& settings) {
  return std::any_of(settings.begin(), settings.end(),
                     [](const KnobSetting& s) { return s.knob == Knob::Coop && !s.off && s.site.empty(); });
}

// The 0|1 knobs whose effect the tensor-core tier's plan decides, and where each is kept.
bool Knobs::*tensor_core_flag(Knob knob) {
  static constexpr std::pair<Knob, bool Knobs::*> kFlags[] = {
      {Knob::Overlap, &Knobs::overlap}, {Knob::PingPong, &Knobs::pingpong}, {Knob::Persist, &Knobs::persist}};
  for (const auto& [k, member] : kFlags)
    if (k == knob) return member;
  internal_error(__FILE__, __LINE__, "a knob that is not a tensor-core flag");
}

}  // namespace

// "--knobs:1:7: error: ..." with the knob text and a caret under the entry, like every other
// diagnostic; a setting of the op's schedule block names the block.
KnobLocation knob_location(const KnobOrigin& o, const KnobSetting& s) {
  if (o.text.empty()) return {};
  size_t length = o.length ? o.length : print_knob(s).size();
  std::string gutter(std::to_string(o.line).size(), ' ');
  return {fmt::format("{}:{}:{}", o.source, o.line, o.column + 1),
          fmt::format(" {} | {}\n {} | {}^{}", o.line, o.text, gutter, std::string(o.column, ' '),
                      std::string(length > 1 ? length - 1 : 0, '~'))};
}

std::string knob_error(const KnobOrigin& o, const KnobSetting& s, const std::string& message, const std::string& help,
                       const std::string& code) {
  std::string entry = print_knob(s);
  std::string error = code.empty() ? "error" : fmt::format("error[{}]", code);
  if (o.text.empty())
    return fmt::format("{}: {}{}\n  help: {}", error,
                       o.source.empty() ? "" : fmt::format("{} (in `{}`): ", entry, o.source), message, help);
  KnobLocation at = knob_location(o, s);
  return fmt::format("{}: {}: {}\n{}\n  help: {}", at.where, error, message, at.snippet, help);
}

bool Knobs::fuses(const std::string& site) const {
  auto it = place_at.find(site);
  return it == place_at.end() ? place_fuse : it->second;
}

Knobs resolve_knobs(const KnobSources& sources, const TargetInfo& target) {
  Knobs k;
  k.carrier_tile = target.scalar_carrier_tile;
  k.fold_fragment_regs = target.mma_fold_fragment_regs;
  k.register_file = target.register_file;
  k.max_thread_registers = target.max_regs_per_thread;
  k.causal_group_blocks = target.causal_group_blocks;
  k.shared_memory = target.smem_per_block_bytes;
  k.rescale_skip_per_key = target.rescale_skip_per_key;
  k.row_cache_registers = target.row_cache_registers;
  k.row_cache_own_registers = target.row_cache_own_registers;
  k.row_cache_value_registers = target.row_cache_value_registers;
  std::vector<KnobSetting> block;
  if (sources.block)
    for (const KnobSetting& s : sources.block->knobs) merge(block, s);
  k.settings = block;
  Origins origins;
  std::string block_name;
  if (sources.block && sources.block->decl) {
    const ast::ScheduleDecl& d = *sources.block->decl;
    block_name = fmt::format("schedule {} for {}{}", d.op.name, d.target.name,
                             d.label ? fmt::format(" as \"{}\"", d.label->name) : "");
  }
  if (is_auto(sources.block)) merge_text(k.settings, origins, "the auto-schedule", sources.base, target);
  merge_text(k.settings, origins, "EMMY_KNOBS", sources.env, target);
  merge_text(k.settings, origins, "--knobs", sources.cli, target);
  auto from_block = [&](const KnobSetting& s) {
    return std::any_of(block.begin(), block.end(),
                       [&](const KnobSetting& b) { return print_knob(b) == print_knob(s); });
  };
  // TILE first: it decides the tier the other knobs apply to.
  for (int pass = 0; pass < 2; ++pass)
    for (KnobSetting& s : k.settings) {
      if ((s.knob == Knob::Tile) != (pass == 0)) continue;
      switch (s.knob) {
        case Knob::Place: apply_place(k, s); break;
        case Knob::Tile:
          if (apply_tile(k, s, target, from_block(s), origins))
            s = std::get<KnobSetting>(parse_knob_value(Knob::Tile, s.site, "a:scalar"));
          else if (!s.off && s.site.empty())
            k.uses[Knob::Tile] = {s, origin_of(origins, s, block_name, sources.block)};
          break;
        case Knob::Reduce: {
          if (s.off) break;
          const auto& r = std::get<ReduceValue>(s.value);
          SplitKnob split{s, s.site, r.groups, r.atomic, origin_of(origins, s, block_name, sources.block)};
          if (!k.splits.empty())
            throw LowerError(knob_error(split.origin, s,
                                        fmt::format("{} is a second split: one reduction per op is split ({} already)",
                                                    print_knob(s), print_knob(k.splits.front().setting)),
                                        "keep one REDUCE entry"));
          k.splits.push_back(std::move(split));
          break;
        }
        case Knob::Coop:
          apply_coop(k, s);
          if (!s.off && s.site.empty()) k.uses[Knob::Coop] = {s, origin_of(origins, s, block_name, sources.block)};
          break;
        case Knob::Stage:
          if (!s.off && k.mma) {
            apply_stage(k, s);
            break;
          }
          [[fallthrough]];
        case Knob::Overlap:
        case Knob::PingPong:
        case Knob::Persist:
          // the tensor-core tier's plan decides where they apply; PERSIST applies to COOP's rows too
          if (!s.off && (k.mma || (s.knob == Knob::Persist && has_coop(k.settings)))) {
            k.*tensor_core_flag(s.knob) = std::get<bool>(s.value);
            break;
          }
          [[fallthrough]];
        case Knob::Wspec:
          if (s.knob == Knob::Wspec && k.mma) {  // as OVERLAP: the plan decides
            k.wspec = s.off ? std::nullopt : std::optional<WspecValue>(std::get<WspecValue>(s.value));
            break;
          }
          [[fallthrough]];
        case Knob::Raster:
          if (s.knob == Knob::Raster && k.mma) {  // the contraction's tile order; a fold's plan refuses it
            k.raster = s.off ? std::nullopt : std::optional<RasterValue>(std::get<RasterValue>(s.value));
            break;
          }
          [[fallthrough]];
        case Knob::Cluster:
          if (s.knob == Knob::Cluster && k.mma) {  // as RASTER: the contraction's plan decides
            k.cluster = s.off ? std::nullopt : std::optional<ClusterValue>(std::get<ClusterValue>(s.value));
            break;
          }
          [[fallthrough]];
        case Knob::FastExp:
          if (s.knob == Knob::FastExp && !s.off) {  // both tiers: exp as exp2 of a scaled argument
            k.fast_exp = std::get<bool>(s.value);
            break;
          }
          // (a 0|1 knob at 0 asks for nothing, so it has nothing to warn about)
          if (!s.off && !(std::holds_alternative<bool>(s.value) && !std::get<bool>(s.value)))
            k.warnings.push_back(
                {"W050", fmt::format("{} has no effect on {}: ignored", print_knob(s),
                                     k.mma ? "the tensor-core tier yet" : "the scalar tier (TILE=a:scalar)")});
          break;
      }
    }
  return k;
}

}  // namespace emmy::lower
