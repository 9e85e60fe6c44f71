// The target table (sm_80, sm_90, sm_90a, sm_120) and the feature table that knob legality reads.
#include "schedule/targets.hpp"

#include <algorithm>
#include <iterator>

namespace emmy {
namespace {

constexpr int kKiB = 1024;

constexpr TargetInfo kTargets[] = {
    // name     sm   arch   cp.async tma   wgmma  setmaxnreg smem/block  regs threads carrier tile, fragment regs,
    // causal group, rescale skip, row cache registers, registers besides a row cache in registers, kept values'
    {"sm_80", 80, false, true, false, false, false, 163 * kKiB, 255, 1024, 65536, 64, 184, 256, 1, 64, 48, 32},  // A100
    {"sm_90", 90, false, true, true, false, false, 227 * kKiB, 255, 1024, 65536, 64, 184, 256, 1, 64, 48,
     32},  // H100, H200
    {"sm_90a", 90, true, true, true, true, true, 227 * kKiB, 255, 1024, 65536, 64, 184, 256, 1, 64, 48,
     32},  // H100, H200
    {"sm_120", 120, false, true, true, false, false, 99 * kKiB, 255, 1024, 65536, 32, 184, 256, 1, 64, 64,
     32},  // RTX 5090
};

// One row a target of kTargets, in its order. H200: 132 SMs, 4.26 TB/s copy ceiling measured
// (perf/H200-ANCHORS.md), 989 dense f16 TFLOP/s with wgmma, mma.sync about two thirds of that.
constexpr TargetCeilings kCeilings[] = {
    // SMs clock DRAM    L2       wgmma  mma    fma    smem     ex2  launch latency threads smem/SM L2 reuse, sector
    {108, 1.41, 1400.0, 5000.0, 0.0, 312.0, 19.5, 19500.0, 16, 3.0, 0.7, 2048, 164 * kKiB, 20e6, 32},   // sm_80: A100
    {132, 1.83, 4260.0, 10000.0, 0.0, 660.0, 67.0, 30900.0, 16, 3.0, 0.7, 2048, 228 * kKiB, 25e6, 32},  // sm_90: H200
    {132, 1.83, 4260.0, 10000.0, 989.0, 660.0, 67.0, 30900.0, 16, 3.0, 0.7, 2048, 228 * kKiB, 25e6,
     32},  // sm_90a: H200
    {170, 2.40, 1600.0, 5000.0, 0.0, 209.0, 104.0, 52200.0, 16, 3.0, 0.7, 1536, 100 * kKiB, 96e6,
     32},  // sm_120: RTX 5090
};
static_assert(std::size(kCeilings) == std::size(kTargets), "a ceilings row a target");

struct FeatureRow {
  Feature feature;
  std::string_view name;
  std::string_view requirement;
  bool (*has)(const TargetInfo&);
};

constexpr FeatureRow kFeatures[] = {
    {Feature::None, "", "", [](const TargetInfo&) { return true; }},
    {Feature::MmaSync, "mma.sync", "sm_80 or newer (mma.sync)", [](const TargetInfo& t) { return t.sm >= 80; }},
    {Feature::CpAsync, "cp.async", "sm_80 or newer (cp.async)", [](const TargetInfo& t) { return t.cp_async; }},
    {Feature::Tma, "TMA", "sm_90 or newer (TMA)", [](const TargetInfo& t) { return t.tma; }},
    {Feature::Clusters, "thread-block clusters", "sm_90 or newer (thread-block clusters)",
     [](const TargetInfo& t) { return t.sm >= 90; }},
    {Feature::Wgmma, "wgmma", "sm_90a (wgmma)", [](const TargetInfo& t) { return t.wgmma; }},
    {Feature::Setmaxnreg, "setmaxnreg", "sm_90a (setmaxnreg)", [](const TargetInfo& t) { return t.setmaxnreg; }},
};

const FeatureRow& feature_row(Feature feature) {
  return *std::find_if(std::begin(kFeatures), std::end(kFeatures),
                       [&](const FeatureRow& r) { return r.feature == feature; });
}

}  // namespace

const TargetInfo* find_target(std::string_view name) {
  auto it = std::find_if(std::begin(kTargets), std::end(kTargets), [&](const TargetInfo& t) { return t.name == name; });
  return it == std::end(kTargets) ? nullptr : &*it;
}

std::vector<std::string_view> target_names() {
  std::vector<std::string_view> names;
  for (const TargetInfo& t : kTargets) names.push_back(t.name);
  return names;
}

const TargetInfo* base_target(const TargetInfo& target) {
  if (!target.arch_specific) return nullptr;
  auto it = std::find_if(std::begin(kTargets), std::end(kTargets),
                         [&](const TargetInfo& t) { return !t.arch_specific && t.sm == target.sm; });
  return it == std::end(kTargets) ? nullptr : &*it;
}

const TargetInfo* device_target(int sm) {
  const TargetInfo* best = nullptr;
  for (const TargetInfo& t : kTargets) {
    if (t.sm / 10 != sm / 10 || t.sm > sm || (t.arch_specific && t.sm != sm)) continue;
    if (!best || t.sm > best->sm || (t.sm == best->sm && t.arch_specific)) best = &t;
  }
  return best;
}

const TargetCeilings& target_ceilings(const TargetInfo& target) {
  auto it = std::find_if(std::begin(kTargets), std::end(kTargets),
                         [&](const TargetInfo& t) { return t.name == target.name; });
  return kCeilings[it == std::end(kTargets) ? 0 : static_cast<size_t>(it - std::begin(kTargets))];
}

bool target_has(const TargetInfo& target, Feature feature) { return feature_row(feature).has(target); }

std::string_view feature_name(Feature feature) { return feature_row(feature).name; }

std::string_view feature_requirement(Feature feature) { return feature_row(feature).requirement; }

}  // namespace emmy
