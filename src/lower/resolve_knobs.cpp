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

// "--knobs:1:7: error: ..." with the knob text and a caret under the entry, like every
// other diagnostic; a block's setting never gets here (it falls back with a warning).
std::string located_error(const Origins& origins, const KnobSetting& s, const std::string& message,
                          const std::string& help) {
  auto it = origins.find(origin_key(s));
  std::string entry = print_knob(s);
  if (it == origins.end()) return fmt::format("error: {}\n  help: {}", message, help);
  const Origin& o = it->second;
  size_t at = o.text.find(entry);
  if (at == std::string::npos) at = 0;
  return fmt::format("{}:1:{}: error: {}\n 1 | {}\n   | {}^{}\n  help: {}", o.source, at + 1, message, o.text,
                     std::string(at, ' '), std::string(entry.size() > 1 ? entry.size() - 1 : 0, '~'), help);
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
  if (s.site.empty()) k.place_fuse = fuse;
  else k.place_at[s.site] = fuse;
}

// A tensor-core atom asked for on the command line is an error; one from the op's schedule
// block falls back to the scalar tier with a warning, so the file still compiles and runs.
bool apply_tile(Knobs& k, const KnobSetting& s, const TargetInfo& target, bool from_block, const Origins& origins) {
  if (s.off) return false;
  const auto& tile = std::get<TileValue>(s.value);
  bool tensor_core = !tile.atom.empty() && tile.atom != "scalar" && tile.atom != "none";
  if (tensor_core && from_block) {
    k.warnings.push_back(fmt::format("the schedule block's {} needs the tensor-core lowering, which this build does "
                                     "not have yet: using TILE=a:scalar",
                                     print_knob(s)));
    return true;
  }
  if (tensor_core)
    throw LowerError(located_error(
        origins, s,
        fmt::format("{} needs the tensor-core lowering, which this build does not have yet on {}", print_knob(s),
                    target.name),
        "use TILE=a:scalar (the scalar tier: one thread per output row)"));
  if (tile.scalar_f) {
    if (s.site.empty())
      k.warnings.push_back(fmt::format("{} has no effect: a register tile needs an axis, e.g. TILE@e=f{}", print_knob(s),
                                       *tile.scalar_f));
    else
      k.scalar_tile[s.site] = *tile.scalar_f;
  }
  return false;
}

// COOP applies to every kernel of the op: a site names nothing it could narrow to.
void apply_coop(Knobs& k, const KnobSetting& s) {
  if (s.off) return;
  if (!s.site.empty()) {
    k.warnings.push_back(fmt::format("{} has no effect: COOP applies to every kernel of the op, not to one site; "
                                     "write COOP={}",
                                     print_knob(s), print_knob_value(s)));
    return;
  }
  const auto& c = std::get<CoopValue>(s.value);
  k.coop_threads = c.threads;
  k.coop_vec = c.vec.value_or(1);
  k.block_threads = std::max(k.block_threads, c.threads);
}

}  // namespace

bool Knobs::fuses(const std::string& site) const {
  auto it = place_at.find(site);
  return it == place_at.end() ? place_fuse : it->second;
}

Knobs resolve_knobs(const KnobSources& sources, const TargetInfo& target) {
  Knobs k;
  k.carrier_tile = target.scalar_carrier_tile;
  std::vector<KnobSetting> block;
  if (sources.block)
    for (const KnobSetting& s : sources.block->knobs) merge(block, s);
  k.settings = block;
  Origins origins;
  merge_text(k.settings, origins, "EMMY_KNOBS", sources.env, target);
  merge_text(k.settings, origins, "--knobs", sources.cli, target);
  auto from_block = [&](const KnobSetting& s) {
    return std::any_of(block.begin(), block.end(),
                       [&](const KnobSetting& b) { return print_knob(b) == print_knob(s); });
  };
  for (KnobSetting& s : k.settings) {
    switch (s.knob) {
      case Knob::Place: apply_place(k, s); break;
      case Knob::Tile:
        if (apply_tile(k, s, target, from_block(s), origins)) s = std::get<KnobSetting>(parse_knob_value(Knob::Tile, s.site, "a:scalar"));
        break;
      case Knob::Reduce:
        if (s.off) break;
        if (from_block(s)) {  // like TILE: the file keeps compiling, with a serial reduction
          k.warnings.push_back(fmt::format("the schedule block's {} needs split reductions, which this build does not "
                                           "have yet: each reduction runs serially in its thread",
                                           print_knob(s)));
          s = std::get<KnobSetting>(parse_knob_value(Knob::Reduce, s.site, ""));
          break;
        }
        throw LowerError(located_error(origins, s,
                                       fmt::format("{} (a reduction split across CTAs) is not implemented yet",
                                                   print_knob(s)),
                                       "leave REDUCE empty (REDUCE=) for a serial reduction per thread"));
      case Knob::Coop: apply_coop(k, s); break;
      case Knob::Stage:
      case Knob::Wspec:
      case Knob::Raster:
      case Knob::FastExp:
        if (!s.off && !(s.knob == Knob::FastExp && !std::get<bool>(s.value)))
          k.warnings.push_back(fmt::format("{} has no effect on the scalar tier (TILE=a:scalar): ignored", print_knob(s)));
        break;
    }
  }
  return k;
}

}  // namespace emmy::lower
