// Resolves the knobs in force for an op: the schedule block, then EMMY_KNOBS, then
// --knobs, entry by entry, with defaults for the rest and checks of what this tier lowers.
#include "lower/passes.hpp"

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

void merge_text(std::vector<KnobSetting>& into, const std::string& source, const std::string& text,
                const TargetInfo& target) {
  if (text.empty()) return;
  KnobListResult parsed = parse_knob_list(text, &target);
  if (!parsed.errors.empty()) {
    std::vector<std::string> all;
    for (const KnobError& e : parsed.errors) all.push_back(knob_error_text(source, text, e));
    throw LowerError(fmt::format("{}", fmt::join(all, "\n")));
  }
  for (const KnobSetting& s : parsed.settings) merge(into, s);
}

void apply_place(Knobs& k, const KnobSetting& s) {
  bool fuse = s.off || std::get<bool>(s.value);
  if (s.site.empty()) k.place_fuse = fuse;
  else k.place_at[s.site] = fuse;
}

void apply_tile(Knobs& k, const KnobSetting& s, const TargetInfo& target) {
  if (s.off) return;
  const auto& tile = std::get<TileValue>(s.value);
  if (!tile.atom.empty() && s.site.empty()) k.atom = tile.atom;
  if (tile.atom == "none") k.atom = "scalar";
  if (k.atom != "scalar")
    throw LowerError(fmt::format("error: {} needs the tensor-core lowering, which this build does not have yet on {}\n"
                                 "  help: use TILE=a:scalar (the scalar tier: one thread per output row)",
                                 print_knob(s), target.name));
  if (tile.scalar_f) {
    if (s.site.empty())
      k.warnings.push_back(fmt::format("{} has no effect: a register tile needs an axis, e.g. TILE@e=f{}", print_knob(s),
                                       *tile.scalar_f));
    else
      k.scalar_tile[s.site] = *tile.scalar_f;
  }
}

}  // namespace

bool Knobs::fuses(const std::string& site) const {
  auto it = place_at.find(site);
  return it == place_at.end() ? place_fuse : it->second;
}

Knobs resolve_knobs(const KnobSources& sources, const TargetInfo& target) {
  Knobs k;
  if (sources.block)
    for (const KnobSetting& s : sources.block->knobs) merge(k.settings, s);
  merge_text(k.settings, "EMMY_KNOBS", sources.env, target);
  merge_text(k.settings, "--knobs", sources.cli, target);
  for (const KnobSetting& s : k.settings) {
    switch (s.knob) {
      case Knob::Place: apply_place(k, s); break;
      case Knob::Tile: apply_tile(k, s, target); break;
      case Knob::Reduce:
        if (!s.off)
          throw LowerError(fmt::format("error: {} (a reduction split across CTAs) is not implemented yet\n"
                                       "  help: leave REDUCE empty (REDUCE=) for a serial reduction per thread",
                                       print_knob(s)));
        break;
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
