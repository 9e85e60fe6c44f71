// Unit tests of the schedule-knob codec (parse, print, errors) and the target legality table.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "schedule/knobs.hpp"
#include "schedule/targets.hpp"

using namespace emmy;

namespace {

KnobSetting parse_ok(Knob knob, std::string_view value, std::string_view site = "") {
  auto r = parse_knob_value(knob, site, value);
  if (auto* e = std::get_if<KnobError>(&r)) FAIL_CHECK(e->code << ": " << e->message);
  REQUIRE(std::holds_alternative<KnobSetting>(r));
  return std::get<KnobSetting>(r);
}

KnobError parse_err(Knob knob, std::string_view value) {
  auto r = parse_knob_value(knob, "", value);
  REQUIRE(std::holds_alternative<KnobError>(r));
  return std::get<KnobError>(r);
}

// The one error of a single-entry EMMY_KNOBS text.
KnobError list_err(std::string_view text) {
  KnobListResult r = parse_knob_list(text);
  REQUIRE(r.errors.size() == 1);
  return r.errors[0];
}

std::string_view at(std::string_view text, const KnobError& e) { return text.substr(e.offset, e.length); }

KnobSetting setting_of(std::string_view entry) {
  KnobListResult r = parse_knob_list(entry);
  REQUIRE(r.errors.empty());
  REQUIRE(r.settings.size() == 1);
  return r.settings[0];
}

std::vector<KnobError> legal_on(std::string_view entry, std::string_view target) {
  const TargetInfo* t = find_target(target);
  REQUIRE(t != nullptr);
  return check_knob_legal(setting_of(entry), *t);
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Targets

TEST_CASE("targets: the table lists sm_80, sm_90, sm_90a, sm_120 in order") {
  CHECK(target_names() == std::vector<std::string_view>{"sm_80", "sm_90", "sm_90a", "sm_120"});
  CHECK(find_target("sm_70") == nullptr);
  CHECK(find_target("") == nullptr);
  CHECK(find_target("SM_90") == nullptr);
}

TEST_CASE("targets: sm_80 (A100) has cp.async, no TMA, no wgmma") {
  const TargetInfo* t = find_target("sm_80");
  REQUIRE(t);
  CHECK(t->name == "sm_80");
  CHECK(t->sm == 80);
  CHECK_FALSE(t->arch_specific);
  CHECK(t->cp_async);
  CHECK_FALSE(t->tma);
  CHECK_FALSE(t->wgmma);
  CHECK_FALSE(t->setmaxnreg);
  CHECK(t->smem_per_block_bytes == 166912);
  CHECK(t->max_regs_per_thread == 255);
  CHECK(t->max_threads_per_block == 1024);
}

TEST_CASE("targets: sm_90 has TMA but not wgmma/setmaxnreg; sm_90a has both") {
  const TargetInfo* h = find_target("sm_90");
  const TargetInfo* ha = find_target("sm_90a");
  REQUIRE(h);
  REQUIRE(ha);
  CHECK(h->sm == 90);
  CHECK(ha->sm == 90);
  CHECK_FALSE(h->arch_specific);
  CHECK(ha->arch_specific);
  CHECK(h->cp_async);
  CHECK(h->tma);
  CHECK_FALSE(h->wgmma);
  CHECK_FALSE(h->setmaxnreg);
  CHECK(ha->cp_async);
  CHECK(ha->tma);
  CHECK(ha->wgmma);
  CHECK(ha->setmaxnreg);
  CHECK(h->smem_per_block_bytes == 232448);
  CHECK(ha->smem_per_block_bytes == 232448);
  CHECK(ha->max_regs_per_thread == 255);
  CHECK(ha->max_threads_per_block == 1024);
}

TEST_CASE("targets: sm_120 (RTX 5090) has cp.async and TMA, no wgmma, 99 KB smem") {
  const TargetInfo* t = find_target("sm_120");
  REQUIRE(t);
  CHECK(t->sm == 120);
  CHECK_FALSE(t->arch_specific);
  CHECK(t->cp_async);
  CHECK(t->tma);
  CHECK_FALSE(t->wgmma);
  CHECK_FALSE(t->setmaxnreg);
  CHECK(t->smem_per_block_bytes == 101376);
  CHECK(t->max_regs_per_thread == 255);
  CHECK(t->max_threads_per_block == 1024);
}

TEST_CASE("targets: a device runs its arch-specific target best, which extends the portable one") {
  auto name = [](int sm) {
    const TargetInfo* t = device_target(sm);
    return t ? std::string(t->name) : "none";
  };
  CHECK(name(90) == "sm_90a");  // H100, H200
  CHECK(name(80) == "sm_80");   // A100
  CHECK(name(86) == "sm_80");   // RTX 30x0: same major, not newer than the device
  CHECK(name(89) == "sm_80");
  CHECK(name(120) == "sm_120");  // RTX 5090
  CHECK(name(75) == "none");
  CHECK(name(100) == "none");  // no sm_100 target: sm_90a's cubins do not run there
  CHECK(base_target(*find_target("sm_90a")) == find_target("sm_90"));
  for (std::string_view t : {"sm_80", "sm_90", "sm_120"}) CHECK(base_target(*find_target(t)) == nullptr);
}

TEST_CASE("targets: feature table") {
  const TargetInfo& a100 = *find_target("sm_80");
  const TargetInfo& h100 = *find_target("sm_90");
  const TargetInfo& h100a = *find_target("sm_90a");
  const TargetInfo& rtx = *find_target("sm_120");
  for (const TargetInfo* t : {&a100, &h100, &h100a, &rtx}) {
    CHECK(target_has(*t, Feature::None));
    CHECK(target_has(*t, Feature::MmaSync));
    CHECK(target_has(*t, Feature::CpAsync));
  }
  CHECK_FALSE(target_has(a100, Feature::Tma));
  CHECK(target_has(h100, Feature::Tma));
  CHECK(target_has(rtx, Feature::Tma));
  CHECK_FALSE(target_has(h100, Feature::Wgmma));
  CHECK(target_has(h100a, Feature::Wgmma));
  CHECK_FALSE(target_has(rtx, Feature::Wgmma));
  CHECK_FALSE(target_has(h100, Feature::Setmaxnreg));
  CHECK(target_has(h100a, Feature::Setmaxnreg));
  CHECK(feature_name(Feature::Tma) == "TMA");
  CHECK(feature_requirement(Feature::Tma) == "sm_90 or newer (TMA)");
  CHECK(feature_requirement(Feature::Wgmma) == "sm_90a (wgmma)");
  CHECK(feature_requirement(Feature::Clusters) == "sm_90 or newer (thread-block clusters)");
  CHECK_FALSE(target_has(a100, Feature::Clusters));
  CHECK(target_has(h100, Feature::Clusters));
  CHECK(feature_requirement(Feature::None).empty());
}

// ---------------------------------------------------------------------------------------
// Names

TEST_CASE("knobs: names and lookup") {
  CHECK(knob_names() == std::vector<std::string_view>{"PLACE", "TILE", "STAGE", "REDUCE", "WSPEC", "RASTER", "FAST_EXP",
                                                      "COOP", "OVERLAP", "PINGPONG", "PERSIST", "CLUSTER"});
  for (std::string_view name : knob_names()) {
    auto k = find_knob(name);
    REQUIRE(k);
    CHECK(knob_name(*k) == name);
  }
  CHECK(find_knob("FAST_EXP") == Knob::FastExp);
  CHECK(find_knob("tile") == std::nullopt);
  CHECK(find_knob("") == std::nullopt);
  CHECK(knob_grammar(Knob::Stage) == "d<depth>/<transport>[/ring]");
  CHECK(std::get<Knob>(lookup_knob("WSPEC")) == Knob::Wspec);
}

TEST_CASE("atoms: names and decoding") {
  CHECK(atom_names() == std::vector<std::string_view>{"mma_m16n8k16_f16", "mma_m16n8k16_bf16", "wgmma_m64n<N>k16_f16",
                                                      "wgmma_m64n<N>k16_bf16", "scalar", "none"});
  auto mma = find_atom("mma_m16n8k16_bf16");
  REQUIRE(mma);
  CHECK(mma->tier == AtomTier::Mma);
  CHECK(mma->m == 16);
  CHECK(mma->n == 8);
  CHECK(mma->k == 16);
  CHECK(mma->dtype == "bf16");
  auto wg = find_atom("wgmma_m64n128k16_f16");
  REQUIRE(wg);
  CHECK(wg->tier == AtomTier::Wgmma);
  CHECK(wg->m == 64);
  CHECK(wg->n == 128);
  CHECK(wg->k == 16);
  CHECK(wg->dtype == "f16");
  CHECK(find_atom("wgmma_m64n256k16_bf16")->n == 256);
  CHECK(find_atom("wgmma_m64n8k16_bf16")->n == 8);
  CHECK(find_atom("scalar")->tier == AtomTier::Scalar);
  CHECK(find_atom("none")->tier == AtomTier::Scalar);
  CHECK_FALSE(find_atom("wgmma_m64n<N>k16_f16"));
  CHECK_FALSE(find_atom("wgmma_m64n12k16_f16"));   // not a multiple of 8
  CHECK_FALSE(find_atom("wgmma_m64n264k16_f16"));  // above 256
  CHECK_FALSE(find_atom("wgmma_m64n064k16_f16"));  // leading zero
  CHECK_FALSE(find_atom("mma_m16n8k8_f16"));
  CHECK_FALSE(find_atom(""));
}

// ---------------------------------------------------------------------------------------
// Parsing every knob and field

TEST_CASE("parse: PLACE fuse|cut with and without a site") {
  KnobSetting fuse = parse_ok(Knob::Place, "fuse");
  CHECK(fuse.knob == Knob::Place);
  CHECK(fuse.site.empty());
  CHECK_FALSE(fuse.off);
  CHECK(std::get<bool>(fuse.value) == true);
  KnobSetting cut = parse_ok(Knob::Place, "cut", "m");
  CHECK(cut.site == "m");
  CHECK(std::get<bool>(cut.value) == false);
}

TEST_CASE("parse: FAST_EXP 0|1") {
  CHECK(std::get<bool>(parse_ok(Knob::FastExp, "1").value) == true);
  CHECK(std::get<bool>(parse_ok(Knob::FastExp, "0").value) == false);
  CHECK(parse_err(Knob::FastExp, "2").code == "E051");
  CHECK(parse_err(Knob::FastExp, "01").code == "E051");
}

TEST_CASE("parse: TILE with an mma atom and every field") {
  KnobSetting s = parse_ok(Knob::Tile, "a:mma_m16n8k16_f16/w4x1/f2x8/k4");
  const auto& t = std::get<TileValue>(s.value);
  CHECK(t.atom == "mma_m16n8k16_f16");
  CHECK(t.warps_m == 4);
  CHECK(t.warps_n == 1);
  CHECK(t.frag_m == 2);
  CHECK(t.frag_n == 8);
  CHECK(t.k_chunk == 4);
  CHECK(t.scalar_f == std::nullopt);
}

TEST_CASE("parse: TILE keeps absent fields as nullopt") {
  const auto t = std::get<TileValue>(parse_ok(Knob::Tile, "a:mma_m16n8k16_bf16/k2").value);
  CHECK(t.atom == "mma_m16n8k16_bf16");
  CHECK(t.warps_m == std::nullopt);
  CHECK(t.warps_n == std::nullopt);
  CHECK(t.frag_m == std::nullopt);
  CHECK(t.frag_n == std::nullopt);
  CHECK(t.k_chunk == 2);
  const auto atom_only = std::get<TileValue>(parse_ok(Knob::Tile, "a:mma_m16n8k16_f16").value);
  CHECK(atom_only.atom == "mma_m16n8k16_f16");
  CHECK_FALSE(atom_only.warps_m);
  CHECK_FALSE(atom_only.frag_m);
  CHECK_FALSE(atom_only.k_chunk);
}

TEST_CASE("parse: TILE wgmma atom") {
  const auto t = std::get<TileValue>(parse_ok(Knob::Tile, "a:wgmma_m64n128k16_f16/w4x1").value);
  CHECK(t.atom == "wgmma_m64n128k16_f16");
  CHECK(t.warps_m == 4);
  CHECK(t.warps_n == 1);
  CHECK(std::get<TileValue>(parse_ok(Knob::Tile, "a:wgmma_m64n256k16_bf16/w8x1/f1x1/k4").value).atom ==
        "wgmma_m64n256k16_bf16");
}

TEST_CASE("parse: TILE scalar tier: a:scalar, a:none, f<N> alone, a:scalar/f<N>") {
  const auto sc = std::get<TileValue>(parse_ok(Knob::Tile, "a:scalar").value);
  CHECK(sc.atom == "scalar");
  CHECK_FALSE(sc.scalar_f);
  CHECK(std::get<TileValue>(parse_ok(Knob::Tile, "a:none").value).atom == "none");
  KnobSetting f = parse_ok(Knob::Tile, "f64", "e");
  const auto& ft = std::get<TileValue>(f.value);
  CHECK(f.site == "e");
  CHECK(ft.atom.empty());
  CHECK(ft.scalar_f == 64);
  CHECK_FALSE(ft.frag_m);
  const auto asf = std::get<TileValue>(parse_ok(Knob::Tile, "a:scalar/f4").value);
  CHECK(asf.atom == "scalar");
  CHECK(asf.scalar_f == 4);
  CHECK(std::get<TileValue>(parse_ok(Knob::Tile, "a:none/f1024").value).scalar_f == 1024);
}

TEST_CASE("parse: STAGE depth, transport, ring") {
  const auto s = std::get<StageValue>(parse_ok(Knob::Stage, "d2/tma/ring").value);
  CHECK(s.depth == 2);
  CHECK(s.transport == "tma");
  CHECK(s.ring);
  const auto c = std::get<StageValue>(parse_ok(Knob::Stage, "d3/cp").value);
  CHECK(c.depth == 3);
  CHECK(c.transport == "cp");
  CHECK_FALSE(c.ring);
  const auto r = std::get<StageValue>(parse_ok(Knob::Stage, "d1/reg").value);
  CHECK(r.depth == 1);
  CHECK(r.transport == "reg");
  CHECK(std::get<StageValue>(parse_ok(Knob::Stage, "d8/cp/ring").value).depth == 8);
}

TEST_CASE("parse: REDUCE g<N>k and g<N>a") {
  const auto k = std::get<ReduceValue>(parse_ok(Knob::Reduce, "g4k").value);
  CHECK(k.groups == 4);
  CHECK_FALSE(k.atomic);
  const auto a = std::get<ReduceValue>(parse_ok(Knob::Reduce, "g1024a").value);
  CHECK(a.groups == 1024);
  CHECK(a.atomic);
  CHECK(std::get<ReduceValue>(parse_ok(Knob::Reduce, "g2k").value).groups == 2);
}

TEST_CASE("parse: WSPEC producers and optional registers") {
  const auto w = std::get<WspecValue>(parse_ok(Knob::Wspec, "p1/r240").value);
  CHECK(w.producers == 1);
  CHECK(w.regs == 240);
  const auto p = std::get<WspecValue>(parse_ok(Knob::Wspec, "p4").value);
  CHECK(p.producers == 4);
  CHECK_FALSE(p.regs);
  CHECK(std::get<WspecValue>(parse_ok(Knob::Wspec, "p2/r24").value).regs == 24);
  CHECK(std::get<WspecValue>(parse_ok(Knob::Wspec, "p2/r256").value).regs == 256);
}

TEST_CASE("parse: RASTER gm<G>|gn<G>") {
  const auto m = std::get<RasterValue>(parse_ok(Knob::Raster, "gm8").value);
  CHECK(m.axis == 'm');
  CHECK(m.group == 8);
  const auto n = std::get<RasterValue>(parse_ok(Knob::Raster, "gn64").value);
  CHECK(n.axis == 'n');
  CHECK(n.group == 64);
}

TEST_CASE("parse: CLUSTER m<N>|n<N>, two CTAs, on targets with TMA") {
  const auto m = std::get<ClusterValue>(parse_ok(Knob::Cluster, "m2").value);
  CHECK(m.axis == 'm');
  CHECK(m.size == 2);
  CHECK(std::get<ClusterValue>(parse_ok(Knob::Cluster, "n2").value).axis == 'n');
  CHECK(print_knob({Knob::Cluster, "", false, ClusterValue{'n', 2}}) == "CLUSTER=n2");
  for (std::string_view bad : {"m4", "m1", "x2", "m"}) {
    CAPTURE(bad);
    CHECK(parse_err(Knob::Cluster, bad).code.starts_with("E05"));
  }
  CHECK(legal_on("CLUSTER=m2", "sm_90a").empty());
  CHECK(legal_on("CLUSTER=n2", "sm_90").empty());
  REQUIRE(legal_on("CLUSTER=m2", "sm_80").size() == 1);
  CHECK(contains(legal_on("CLUSTER=m2", "sm_80")[0].message, "TMA"));
}

TEST_CASE("parse: an empty value is off for every knob") {
  for (std::string_view name : knob_names()) {
    Knob k = *find_knob(name);
    for (std::string_view v : {"", "  "}) {
      KnobSetting s = parse_ok(k, v);
      CHECK(s.off);
      CHECK(std::holds_alternative<std::monostate>(s.value));
      CHECK(print_knob(s) == std::string(name) + "=");
    }
  }
}

TEST_CASE("parse: blanks around a value are ignored, offsets still point into the input") {
  CHECK(std::get<StageValue>(parse_ok(Knob::Stage, "  d2/tma ").value).depth == 2);
  KnobError e = parse_err(Knob::Stage, "  d0/tma");
  CHECK(e.code == "E054");
  CHECK(e.offset == 3);
  CHECK(e.length == 1);
}

// ---------------------------------------------------------------------------------------
// Printing

TEST_CASE("print: round trip of canonical strings") {
  const std::vector<std::string> canonical = {
      // KNOBS.md and the seed
      "TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4",
      "STAGE=d2/tma/ring",
      "REDUCE=g4k",
      "PLACE@m=cut",
      "TILE@e=f64",
      "STAGE=",
      "REDUCE=",
      "WSPEC=p1/r240",
      "RASTER=gm8",
      "FAST_EXP=1",
      "TILE=a:wgmma_m64n128k16_f16/w4x1",
      "PLACE@fold=cut",
      "PLACE@tuple=cut",
      "TILE=a:scalar",
      "PLACE=fuse",
      // more
      "PLACE=cut",
      "FAST_EXP=0",
      "TILE=a:none",
      "TILE=a:scalar/f64",
      "TILE=a:mma_m16n8k16_bf16/f1x1",
      "TILE=a:mma_m16n8k16_f16/w2x2/k8",
      "TILE=a:wgmma_m64n256k16_bf16/w8x1/f1x2/k4",
      "TILE=f1",
      "STAGE=d1/reg",
      "STAGE=d3/cp/ring",
      "REDUCE=g1024a",
      "WSPEC=p4",
      "WSPEC=",
      "RASTER=gn64",
      "RASTER=",
      "CLUSTER=m2",
      "CLUSTER=",
      "FAST_EXP=",
      "TILE=",
      "PLACE=",
      "TILE@s=f32",
      "STAGE@_q1=d2/tma",
  };
  for (const std::string& text : canonical) {
    CAPTURE(text);
    KnobListResult r = parse_knob_list(text);
    REQUIRE(r.errors.empty());
    REQUIRE(r.settings.size() == 1);
    CHECK(print_knob(r.settings[0]) == text);
  }
}

TEST_CASE("print: the seed's EMMY_KNOBS strings round trip as lists") {
  for (std::string_view text : {
           "TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4,STAGE=d2/tma/ring,REDUCE=g4k",
           "PLACE@fold=cut,PLACE@tuple=cut,TILE=a:scalar,REDUCE=",
       }) {
    KnobListResult r = parse_knob_list(text);
    CHECK(r.errors.empty());
    CHECK(print_knob_list(r.settings) == text);
  }
}

TEST_CASE("parse: a tensor-core atom at a site is E051 at the atom") {
  for (const std::string text : {"TILE@s=a:mma_m16n8k16_f16/w4x1", "TILE@j=a:wgmma_m64n64k16_f16"}) {
    CAPTURE(text);
    KnobListResult r = parse_knob_list(text);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].code == "E051");
    CHECK(r.errors[0].offset == text.find("a:"));
    CHECK(r.errors[0].message.find("applies to the whole op") != std::string::npos);
  }
  CHECK(parse_knob_list("TILE@s=a:scalar/f64").errors.empty());  // the scalar tier's tile at a site
}

TEST_CASE("print: print_knob_value and hand-built settings") {
  KnobSetting s{Knob::Stage, "", false, StageValue{3, "cp", true}};
  CHECK(print_knob(s) == "STAGE=d3/cp/ring");
  CHECK(print_knob_value(s) == "d3/cp/ring");
  TileValue t;
  t.atom = "mma_m16n8k16_f16";
  t.warps_m = 4;
  t.warps_n = 1;
  t.k_chunk = 4;
  CHECK(print_knob({Knob::Tile, "", false, t}) == "TILE=a:mma_m16n8k16_f16/w4x1/k4");
  CHECK(print_knob({Knob::Raster, "", false, RasterValue{'n', 16}}) == "RASTER=gn16");
  CHECK(print_knob({Knob::Reduce, "", false, ReduceValue{8, true}}) == "REDUCE=g8a");
  CHECK(print_knob({Knob::Wspec, "", false, WspecValue{2, 232}}) == "WSPEC=p2/r232");
  CHECK(print_knob({Knob::Place, "", false, true}) == "PLACE=fuse");
  CHECK(print_knob({Knob::FastExp, "", true, std::monostate{}}) == "FAST_EXP=");
  CHECK(print_knob_value({Knob::FastExp, "", true, std::monostate{}}).empty());
  CHECK(print_knob_list({}).empty());
}

// ---------------------------------------------------------------------------------------
// Errors, one code at a time, with their ranges

TEST_CASE("E050: unknown knob name, with the closest knob suggested") {
  std::string_view text = "TILLE=a:scalar";
  KnobError e = list_err(text);
  CHECK(e.code == "E050");
  CHECK(e.offset == 0);
  CHECK(e.length == 5);
  CHECK(at(text, e) == "TILLE");
  CHECK(contains(e.message,
                 "PLACE, TILE, STAGE, REDUCE, WSPEC, RASTER, FAST_EXP, COOP, OVERLAP, PINGPONG, PERSIST, CLUSTER"));
  CHECK(contains(e.help, "TILE"));

  std::string_view lower = "STAGE=d2/tma, fast_exp=1";
  KnobError l = list_err(lower);
  CHECK(l.code == "E050");
  CHECK(l.offset == 14);
  CHECK(l.length == 8);
  CHECK(contains(l.help, "FAST_EXP"));

  auto far = std::get<KnobError>(lookup_knob("XYZZY"));
  CHECK(far.code == "E050");
  CHECK(far.offset == 0);
  CHECK(far.length == 5);
  CHECK_FALSE(contains(far.help, "did you mean"));
}

TEST_CASE("E051: unknown field names the knob's fields in order and suggests a word") {
  KnobError e = parse_err(Knob::Stage, "d2/dma");
  CHECK(e.code == "E051");
  CHECK(e.offset == 3);
  CHECK(e.length == 3);
  CHECK(contains(e.message, "d<depth> (1..8), cp|tma|reg, ring (optional)"));
  CHECK(contains(e.help, "'tma'"));

  KnobError p = parse_err(Knob::Place, "fused");
  CHECK(p.code == "E051");
  CHECK(p.offset == 0);
  CHECK(p.length == 5);
  CHECK(contains(p.message, "fuse|cut"));
  CHECK(contains(p.help, "'fuse'"));

  KnobError t = parse_err(Knob::Tile, "a:mma_m16n8k16_f16/x4");
  CHECK(t.code == "E051");
  CHECK(t.offset == 19);
  CHECK(t.length == 2);
  CHECK(contains(t.message, "a:<atom>, w<M>x<N>"));

  KnobError r = parse_err(Knob::Raster, "g8");
  CHECK(r.code == "E051");
  CHECK(contains(r.message, "gm<G>|gn<G>"));
}

TEST_CASE("E051: malformed fields") {
  KnobError g = parse_err(Knob::Reduce, "g4");  // combine mode missing
  CHECK(g.code == "E051");
  CHECK(g.offset == 0);
  CHECK(g.length == 2);
  CHECK(contains(g.help, "k, a"));
  KnobError w = parse_err(Knob::Tile, "a:mma_m16n8k16_f16/w4");
  CHECK(w.code == "E051");
  CHECK(w.offset == 19);
  CHECK(w.length == 2);
  CHECK(contains(w.message, "w<M>x<N>"));
  CHECK(parse_err(Knob::Tile, "a:mma_m16n8k16_f16/w4x").code == "E051");
  CHECK(parse_err(Knob::Tile, "a:mma_m16n8k16_f16/w4x1y").code == "E051");
  CHECK(parse_err(Knob::Stage, "d2x/tma").code == "E051");
  CHECK(parse_err(Knob::Reduce, "g4kk").code == "E051");
  CHECK(parse_err(Knob::Stage, "d2 /tma").code == "E051");
}

TEST_CASE("E051: unknown or missing atom") {
  KnobError u = parse_err(Knob::Tile, "a:mma_m16n8k8_f16/w4x1");
  CHECK(u.code == "E051");
  CHECK(u.offset == 2);
  CHECK(u.length == 15);
  CHECK(contains(u.message, "wgmma_m64n<N>k16_f16"));
  CHECK(contains(u.help, "mma_m16n8k16_f16"));
  KnobError m = parse_err(Knob::Tile, "a:");
  CHECK(m.code == "E051");
  CHECK(m.offset == 0);
  CHECK(m.length == 2);
}

TEST_CASE("E051: empty fields point at the stray '/'") {
  KnobError mid = parse_err(Knob::Stage, "d2//tma");
  CHECK(mid.code == "E051");
  CHECK(mid.offset == 2);
  CHECK(mid.length == 1);
  KnobError trail = parse_err(Knob::Stage, "d2/tma/");
  CHECK(trail.offset == 6);
  CHECK(trail.length == 1);
  KnobError lead = parse_err(Knob::Stage, "/d2/tma");
  CHECK(lead.offset == 0);
  CHECK(lead.length == 1);
}

TEST_CASE("E051: missing required fields") {
  KnobError s = parse_err(Knob::Stage, "d2");
  CHECK(s.code == "E051");
  CHECK(s.offset == 0);
  CHECK(s.length == 2);
  CHECK(contains(s.message, "transport"));
  CHECK(contains(s.help, "cp|tma|reg"));
  KnobError d = parse_err(Knob::Stage, "tma/ring");
  CHECK(d.code == "E051");
  CHECK(contains(d.message, "depth"));
  KnobError w = parse_err(Knob::Wspec, "r240");
  CHECK(w.code == "E051");
  CHECK(contains(w.message, "producer warps"));
}

TEST_CASE("E051: TILE fields that do not belong to the atom's tier") {
  KnobError sw = parse_err(Knob::Tile, "a:scalar/w4x1");
  CHECK(sw.code == "E051");
  CHECK(sw.offset == 9);
  CHECK(sw.length == 4);
  CHECK(contains(sw.message, "the scalar tier takes only f<N>"));
  KnobError sk = parse_err(Knob::Tile, "a:none/k4");
  CHECK(sk.code == "E051");
  CHECK(sk.offset == 7);
  CHECK(contains(sk.message, "the scalar tier takes only f<N>"));
  KnobError sf = parse_err(Knob::Tile, "a:scalar/f2x8");
  CHECK(sf.code == "E051");
  CHECK(contains(sf.message, "only f<N>"));
  KnobError mf = parse_err(Knob::Tile, "a:mma_m16n8k16_f16/f64");
  CHECK(mf.code == "E051");
  CHECK(mf.offset == 19);
  CHECK(mf.length == 3);
  CHECK(contains(mf.help, "f<M>x<N>"));
  KnobError na = parse_err(Knob::Tile, "w4x1/k4");
  CHECK(na.code == "E051");
  CHECK(na.offset == 0);
  CHECK(na.length == 4);
  CHECK(contains(na.message, "needs an atom"));
  CHECK(parse_err(Knob::Tile, "f2x8").code == "E051");
}

TEST_CASE("E052: fields out of order, with the reordered value as help") {
  KnobError s = parse_err(Knob::Stage, "tma/d2");
  CHECK(s.code == "E052");
  CHECK(s.offset == 4);
  CHECK(s.length == 2);
  CHECK(contains(s.message, "d<depth>, cp|tma|reg, ring"));
  CHECK(s.help == "write STAGE=d2/tma");
  KnobError t = parse_err(Knob::Tile, "a:mma_m16n8k16_f16/k4/w4x1");
  CHECK(t.code == "E052");
  CHECK(t.offset == 22);
  CHECK(t.length == 4);
  CHECK(t.help == "write TILE=a:mma_m16n8k16_f16/w4x1/k4");
  KnobError a = parse_err(Knob::Tile, "w4x1/a:mma_m16n8k16_f16");
  CHECK(a.code == "E052");
  CHECK(a.offset == 5);
  KnobError w = parse_err(Knob::Wspec, "r240/p1");
  CHECK(w.code == "E052");
  CHECK(w.help == "write WSPEC=p1/r240");
}

TEST_CASE("E053: a field given twice") {
  KnobError d = parse_err(Knob::Stage, "d2/d3/tma");
  CHECK(d.code == "E053");
  CHECK(d.offset == 3);
  CHECK(d.length == 2);
  CHECK(contains(d.message, "'d2'"));
  KnobError r = parse_err(Knob::Stage, "d2/tma/ring/ring");
  CHECK(r.code == "E053");
  CHECK(r.offset == 12);
  CHECK(r.length == 4);
  KnobError t = parse_err(Knob::Stage, "d2/tma/cp");
  CHECK(t.code == "E053");
  CHECK(t.offset == 7);
  KnobError f = parse_err(Knob::Tile, "a:scalar/f4/f8");
  CHECK(f.code == "E053");
  CHECK(f.offset == 12);
  CHECK(f.length == 2);
  CHECK(parse_err(Knob::Place, "fuse/cut").code == "E053");
}

TEST_CASE("E054: numbers with leading zeros, zero, too large, out of range") {
  KnobError lz = parse_err(Knob::Stage, "d02/tma");
  CHECK(lz.code == "E054");
  CHECK(lz.offset == 1);
  CHECK(lz.length == 2);
  CHECK(contains(lz.message, "leading zero"));
  KnobError zero = parse_err(Knob::Stage, "d0/tma");
  CHECK(zero.code == "E054");
  CHECK(zero.offset == 1);
  CHECK(zero.length == 1);
  CHECK(contains(zero.message, "1..8"));
  KnobError deep = parse_err(Knob::Stage, "d9/tma");
  CHECK(deep.code == "E054");
  CHECK(contains(deep.message, "1..8"));
  KnobError huge = parse_err(Knob::Reduce, "g99999999999999999999k");
  CHECK(huge.code == "E054");
  CHECK(huge.offset == 1);
  CHECK(huge.length == 20);
  CHECK(contains(huge.message, "2..1024"));
  KnobError g1 = parse_err(Knob::Reduce, "g1k");
  CHECK(g1.code == "E054");
  CHECK(contains(g1.message, "2..1024"));
  KnobError reg = parse_err(Knob::Wspec, "p1/r100");
  CHECK(reg.code == "E054");
  CHECK(reg.offset == 4);
  CHECK(reg.length == 3);
  CHECK(contains(reg.message, "24..256, a multiple of 8"));
  CHECK(parse_err(Knob::Wspec, "p1/r16").code == "E054");
  CHECK(parse_err(Knob::Wspec, "p1/r264").code == "E054");
  CHECK(parse_err(Knob::Wspec, "p5").code == "E054");
  CHECK(parse_err(Knob::Raster, "gm65").code == "E054");
  CHECK(parse_err(Knob::Raster, "gm0").code == "E054");
  CHECK(parse_err(Knob::Tile, "f1025").code == "E054");
  CHECK(parse_err(Knob::Tile, "f0").code == "E054");
  CHECK(parse_err(Knob::Tile, "a:mma_m16n8k16_f16/k65").code == "E054");
  CHECK(parse_err(Knob::Tile, "a:mma_m16n8k16_f16/f65x1").code == "E054");
  KnobError fz = parse_err(Knob::Tile, "a:mma_m16n8k16_f16/f2x08");
  CHECK(fz.code == "E054");
  CHECK(fz.offset == 22);
  CHECK(fz.length == 2);
}

TEST_CASE("E054: warp grid product and wgmma N") {
  KnobError w = parse_err(Knob::Tile, "a:mma_m16n8k16_f16/w8x8");
  CHECK(w.code == "E054");
  CHECK(w.offset == 19);
  CHECK(w.length == 4);
  CHECK(contains(w.message, "64 warps"));
  CHECK(contains(w.message, "at most 32"));
  CHECK(std::holds_alternative<KnobSetting>(parse_knob_value(Knob::Tile, "", "a:mma_m16n8k16_f16/w8x4")));
  CHECK(std::holds_alternative<KnobSetting>(parse_knob_value(Knob::Tile, "", "a:mma_m16n8k16_f16/w32x1")));
  CHECK(parse_err(Knob::Tile, "a:mma_m16n8k16_f16/w33x1").code == "E054");
  KnobError n = parse_err(Knob::Tile, "a:wgmma_m64n100k16_f16");
  CHECK(n.code == "E054");
  CHECK(n.offset == 12);
  CHECK(n.length == 3);
  CHECK(contains(n.message, "8..256, a multiple of 8"));
  CHECK(parse_err(Knob::Tile, "a:wgmma_m64n264k16_f16").code == "E054");
  CHECK(parse_err(Knob::Tile, "a:wgmma_m64n0k16_f16").code == "E054");
}

TEST_CASE("E055: illegal on the target, with the legal values named") {
  std::vector<KnobError> e = legal_on("STAGE=d2/tma", "sm_80");
  REQUIRE(e.size() == 1);
  CHECK(e[0].code == "E055");
  CHECK(e[0].offset == 3);
  CHECK(e[0].length == 3);
  CHECK(e[0].message == "STAGE transport 'tma' needs sm_90 or newer (TMA); target sm_80 supports: cp, reg");
  CHECK(contains(e[0].help, "STAGE=d2/cp"));
}

TEST_CASE("E056: malformed EMMY_KNOBS entries") {
  std::string_view no_eq = "STAGE=d2/tma,TILE";
  KnobError a = list_err(no_eq);
  CHECK(a.code == "E056");
  CHECK(a.offset == 13);
  CHECK(a.length == 4);
  CHECK(contains(a.message, "no '='"));

  KnobError b = list_err("=fuse");
  CHECK(b.code == "E056");
  CHECK(b.offset == 0);
  CHECK(b.length == 1);
  CHECK(contains(b.message, "no knob name"));

  KnobError c = list_err("PLACE@=cut");
  CHECK(c.code == "E056");
  CHECK(c.offset == 5);
  CHECK(c.length == 1);

  std::string_view bad_site = "PLACE@1m=cut";
  KnobError d = list_err(bad_site);
  CHECK(d.code == "E056");
  CHECK(at(bad_site, d) == "1m");
  CHECK(list_err("PLACE@m.n=cut").code == "E056");

  std::string_view twice = "STAGE=d2/tma,STAGE=d3/cp";
  KnobListResult r = parse_knob_list(twice);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].code == "E056");
  CHECK(at(twice, r.errors[0]) == "STAGE=d3/cp");
  CHECK(contains(r.errors[0].message, "given twice"));
  REQUIRE(r.settings.size() == 1);
  CHECK(print_knob(r.settings[0]) == "STAGE=d2/tma");

  std::string_view empty = "PLACE=fuse,,REDUCE=";
  KnobError f = list_err(empty);
  CHECK(f.code == "E056");
  CHECK(f.offset == 10);
  CHECK(f.length == 1);
}

TEST_CASE("E056: the same knob at different sites is fine, the same site twice is not") {
  KnobListResult ok = parse_knob_list("PLACE@m=cut,PLACE@l=cut,PLACE=fuse");
  CHECK(ok.errors.empty());
  CHECK(ok.settings.size() == 3);
  KnobListResult dup = parse_knob_list("PLACE@m=cut,PLACE@m=fuse");
  REQUIRE(dup.errors.size() == 1);
  CHECK(dup.errors[0].code == "E056");
  CHECK(contains(dup.errors[0].message, "PLACE@m"));
}

// ---------------------------------------------------------------------------------------
// parse_knob_list

TEST_CASE("list: splits entries, ignores blanks, keeps order") {
  KnobListResult r = parse_knob_list(" TILE=a:scalar , PLACE@fold = cut,REDUCE= ");
  CHECK(r.errors.empty());
  REQUIRE(r.settings.size() == 3);
  CHECK(r.settings[0].knob == Knob::Tile);
  CHECK(r.settings[1].knob == Knob::Place);
  CHECK(r.settings[1].site == "fold");
  CHECK(r.settings[2].off);
  CHECK(print_knob_list(r.settings) == "TILE=a:scalar,PLACE@fold=cut,REDUCE=");
  CHECK(parse_knob_list("").settings.empty());
  CHECK(parse_knob_list("").errors.empty());
  CHECK(parse_knob_list("   ").errors.empty());
}

TEST_CASE("list: collects every error, with offsets into the whole string") {
  std::string_view text = "TILLE=a:scalar,STAGE=d2/dma,REDUCE=g04k,PLACE=fuse,WSPEC,STAGE=d1/cp,RASTER=gm8";
  KnobListResult r = parse_knob_list(text);
  REQUIRE(r.errors.size() == 5);
  CHECK(r.errors[0].code == "E050");
  CHECK(at(text, r.errors[0]) == "TILLE");
  CHECK(r.errors[1].code == "E051");
  CHECK(at(text, r.errors[1]) == "dma");
  CHECK(r.errors[1].offset == 24);
  CHECK(r.errors[2].code == "E054");
  CHECK(at(text, r.errors[2]) == "04");
  CHECK(r.errors[3].code == "E056");
  CHECK(at(text, r.errors[3]) == "WSPEC");
  CHECK(r.errors[4].code == "E056");  // STAGE again, although the first one was malformed
  CHECK(at(text, r.errors[4]) == "STAGE=d1/cp");
  REQUIRE(r.settings.size() == 2);
  CHECK(print_knob_list(r.settings) == "PLACE=fuse,RASTER=gm8");
}

TEST_CASE("list: value errors are shifted past blanks and the site") {
  std::string_view text = "PLACE=fuse,  TILE@e = f0";
  KnobError e = list_err(text);
  CHECK(e.code == "E054");
  CHECK(e.offset == 23);
  CHECK(e.length == 1);
  CHECK(at(text, e) == "0");
}

TEST_CASE("list: with a target, legality errors are collected with offsets into the string") {
  std::string_view text = "TILE=a:wgmma_m64n128k16_f16/w4x1, STAGE=d2/tma/ring,WSPEC=p1/r240";
  KnobListResult h = parse_knob_list(text, find_target("sm_90"));
  REQUIRE(h.errors.size() == 2);
  CHECK(h.errors[0].code == "E055");
  CHECK(at(text, h.errors[0]) == "a:wgmma_m64n128k16_f16");
  CHECK(h.errors[1].code == "E055");
  CHECK(at(text, h.errors[1]) == "r240");
  CHECK(h.settings.size() == 3);  // they parse; only the target refuses them

  KnobListResult ha = parse_knob_list(text, find_target("sm_90a"));
  CHECK(ha.errors.empty());

  KnobListResult a100 = parse_knob_list(text, find_target("sm_80"));
  REQUIRE(a100.errors.size() == 3);
  CHECK(at(text, a100.errors[1]) == "tma");
}

// ---------------------------------------------------------------------------------------
// Legality per target

TEST_CASE("legal: STAGE transports per target") {
  CHECK(legal_on("STAGE=d2/tma/ring", "sm_80").size() == 1);
  CHECK(legal_on("STAGE=d2/tma/ring", "sm_90").empty());
  CHECK(legal_on("STAGE=d2/tma/ring", "sm_90a").empty());
  CHECK(legal_on("STAGE=d2/tma/ring", "sm_120").empty());
  for (std::string_view t : target_names()) {
    CHECK(legal_on("STAGE=d2/cp/ring", t).empty());
    CHECK(legal_on("STAGE=d1/reg", t).empty());
    CHECK(legal_on("STAGE=", t).empty());
  }
  std::vector<KnobError> e = legal_on("STAGE=d3/tma/ring", "sm_80");
  REQUIRE(e.size() == 1);
  CHECK(e[0].help == "write STAGE=d3/cp/ring for sm_80, or compile for sm_90 or newer (TMA)");
}

TEST_CASE("legal: wgmma only on sm_90a; mma on every target") {
  std::vector<KnobError> h = legal_on("TILE=a:wgmma_m64n128k16_f16/w4x1", "sm_90");
  REQUIRE(h.size() == 1);
  CHECK(h[0].code == "E055");
  CHECK(h[0].offset == 0);
  CHECK(h[0].length == 22);
  CHECK(contains(h[0].message, "needs sm_90a (wgmma)"));
  CHECK(contains(h[0].message, "supports: mma_m16n8k16_f16, mma_m16n8k16_bf16, scalar, none"));
  CHECK(contains(h[0].help, "a:mma_m16n8k16_f16"));
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_f16/w4x1", "sm_90a").empty());
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_bf16", "sm_90a").empty());
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_f16/w4x1", "sm_80").size() == 1);
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_f16/w4x1", "sm_120").size() == 1);
  std::vector<KnobError> bf = legal_on("TILE=a:wgmma_m64n64k16_bf16", "sm_120");
  REQUIRE(bf.size() == 1);
  CHECK(contains(bf[0].help, "a:mma_m16n8k16_bf16"));
  for (std::string_view t : target_names()) {
    CHECK(legal_on("TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4", t).empty());
    CHECK(legal_on("TILE=a:mma_m16n8k16_bf16", t).empty());
    CHECK(legal_on("TILE=a:scalar", t).empty());
    CHECK(legal_on("TILE@e=f64", t).empty());
  }
}

TEST_CASE("legal: wgmma warp grids come in warpgroups of 4") {
  std::vector<KnobError> e = legal_on("TILE=a:wgmma_m64n128k16_f16/w2x1/f1x1", "sm_90a");
  REQUIRE(e.size() == 1);
  CHECK(e[0].code == "E055");
  CHECK(e[0].offset == 23);
  CHECK(e[0].length == 4);
  CHECK(contains(e[0].message, "warpgroups of 4 warps"));
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_f16/w4x2", "sm_90a").empty());
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_f16/w2x2", "sm_90a").empty());
  CHECK(legal_on("TILE=a:wgmma_m64n128k16_f16/w3x3", "sm_90a").size() == 1);
  CHECK(legal_on("TILE=a:mma_m16n8k16_f16/w3x1", "sm_90a").empty());
}

TEST_CASE("legal: a warp grid over the block's thread limit is rejected (w8x8)") {
  // The codec already refuses w8x8 (E054); a hand-built or tuner-built value is checked here.
  TileValue t;
  t.atom = "mma_m16n8k16_f16";
  t.warps_m = 8;
  t.warps_n = 8;
  KnobSetting s{Knob::Tile, "", false, t};
  for (std::string_view name : target_names()) {
    std::vector<KnobError> e = check_knob_legal(s, *find_target(name));
    REQUIRE(e.size() == 1);
    CHECK(e[0].code == "E055");
    CHECK(e[0].offset == 19);
    CHECK(e[0].length == 4);
    CHECK(contains(e[0].message, "2048 threads"));
    CHECK(contains(e[0].message, "at most 1024"));
  }
  CHECK(parse_err(Knob::Tile, "a:mma_m16n8k16_f16/w8x8").code == "E054");
}

TEST_CASE("legal: WSPEC r<R> needs setmaxnreg") {
  std::vector<KnobError> e = legal_on("WSPEC=p1/r240", "sm_90");
  REQUIRE(e.size() == 1);
  CHECK(e[0].code == "E055");
  CHECK(e[0].offset == 3);
  CHECK(e[0].length == 4);
  CHECK(contains(e[0].message, "sm_90a (setmaxnreg)"));
  CHECK(legal_on("WSPEC=p1/r240", "sm_90a").empty());
  CHECK(legal_on("WSPEC=p1/r240", "sm_80").size() == 1);
  CHECK(legal_on("WSPEC=p1/r240", "sm_120").size() == 1);
  for (std::string_view t : target_names()) CHECK(legal_on("WSPEC=p2", t).empty());
}

TEST_CASE("legal: target-independent knobs are legal everywhere") {
  for (std::string_view t : target_names()) {
    for (std::string_view entry : {"PLACE=fuse", "PLACE@m=cut", "REDUCE=g4k", "REDUCE=g8a", "RASTER=gm8", "RASTER=gn4",
                                   "FAST_EXP=1", "FAST_EXP=0", "TILE=", "WSPEC="}) {
      CAPTURE(entry);
      CHECK(legal_on(entry, t).empty());
    }
  }
}

TEST_CASE("legal: several violations in one setting are all reported") {
  std::vector<KnobError> e = legal_on("TILE=a:wgmma_m64n128k16_f16/w2x1", "sm_80");
  REQUIRE(e.size() == 2);
  CHECK(contains(e[0].message, "needs sm_90a"));
  CHECK(contains(e[1].message, "warpgroups"));
}

// ---------------------------------------------------------------------------------------
// COOP: cooperative rows

TEST_CASE("parse: COOP t<N>[/v<V>][/c<R>|/r<R>][/k<K>]") {
  KnobSetting s = parse_ok(Knob::Coop, "t256/v8");
  CHECK(std::get<CoopValue>(s.value).threads == 256);
  CHECK(std::get<CoopValue>(s.value).vec == 8);
  KnobSetting t = parse_ok(Knob::Coop, "t32");
  CHECK(std::get<CoopValue>(t.value).threads == 32);
  CHECK_FALSE(std::get<CoopValue>(t.value).vec.has_value());
  for (std::string_view ok : {"t2", "t1024", "t64/v1", "t128/v2", "t512/v4"})
    CHECK(print_knob_value(parse_ok(Knob::Coop, ok)) == ok);
  CHECK(print_knob(parse_ok(Knob::Coop, " t256/v8 ")) == "COOP=t256/v8");
  CHECK(print_knob(parse_ok(Knob::Coop, "")) == "COOP=");
  CHECK(print_knob(setting_of("COOP=t32/v8")) == "COOP=t32/v8");
  CHECK(knob_grammar(Knob::Coop) == "t<N>[/v<V>][/c<R>|/r<R>][/k<K>]");
  KnobSetting c = parse_ok(Knob::Coop, "t512/v8/c13");
  CHECK(std::get<CoopValue>(c.value).cache == 13);
  CHECK_FALSE(std::get<CoopValue>(c.value).registers);
  CHECK_FALSE(std::get<CoopValue>(s.value).cache.has_value());
  KnobSetting r = parse_ok(Knob::Coop, "t32/v8/r4");
  CHECK(std::get<CoopValue>(r.value).cache == 4);
  CHECK(std::get<CoopValue>(r.value).registers);
  for (std::string_view ok : {"t512/v8/c13", "t32/c1", "t1024/v4/c64", "t32/v8/r4", "t2/r16", "t1024/v8/r1"})
    CHECK(print_knob_value(parse_ok(Knob::Coop, ok)) == ok);
  KnobSetting k = parse_ok(Knob::Coop, "t256/v8/c4/k2");
  CHECK(std::get<CoopValue>(k.value).cluster == 2);
  CHECK(std::get<CoopValue>(k.value).cache == 4);
  CHECK_FALSE(std::get<CoopValue>(s.value).cluster.has_value());
  for (std::string_view ok : {"t128/k2", "t256/v8/k4", "t512/v8/c13/k8", "t128/v8/r2/k2"})
    CHECK(print_knob_value(parse_ok(Knob::Coop, ok)) == ok);
}

TEST_CASE("COOP errors: every code, with the byte range and the fix") {
  struct Case {
    std::string_view value, code, range, message, help;
  };
  const Case cases[] = {
      {"t48", "E054", "48", "COOP thread count 48 is out of range: t<N> takes a power of two in 2..1024",
       "use a thread count that is a power of two in 2..1024"},
      {"t1", "E054", "1", "out of range", "power of two in 2..1024"},
      {"t2048", "E054", "2048", "out of range", "2..1024"},
      {"t0256", "E054", "0256", "has a leading zero", "drop the leading zero: 256"},
      {"t256/v3", "E054", "3", "COOP vector width 3 is out of range: v<V> takes a power of two in 1..8",
       "power of two in 1..8"},
      {"t256/v16", "E054", "16", "vector width 16 is out of range", "1..8"},
      {"v8/t256", "E052", "t256", "out of order", "COOP=t256/v8"},
      {"t256/t128", "E053", "t128", "repeats", "keep one of"},
      {"v8", "E051", "v8", "missing its threads per row", "e.g. COOP=t256/v8"},
      {"t256/w8", "E051", "w8", "unknown COOP field 'w8'", "COOP=t256/v8"},
      {"t256/v", "E051", "v", "unknown COOP field", ""},
      {"t256/v8/c0", "E054", "0", "COOP chunk count 0 is out of range: c<R> takes 1..64", "1..64"},
      {"t256/v8/c65", "E054", "65", "chunk count 65 is out of range", "1..64"},
      {"t256/c4/v8", "E052", "v8", "out of order", "COOP=t256/v8/c4"},
      {"t256/v8/r0", "E054", "0", "COOP register chunk count 0 is out of range: r<R> takes 1..16", "1..16"},
      {"t256/v8/r17", "E054", "17", "register chunk count 17 is out of range", "1..16"},
      {"t256/v8/c4/r4", "E053", "r4", "COOP field 'r4' repeats 'c4'", "keep one of 'c4' and 'r4'"},
      {"t256/r4/v8", "E052", "v8", "out of order", "COOP=t256/v8/r4"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.value);
    KnobError e = parse_err(Knob::Coop, c.value);
    CHECK(e.code == c.code);
    CHECK(at(c.value, e) == c.range);
    CHECK(contains(e.message, c.message));
    CHECK(contains(e.help, c.help));
  }
  // In EMMY_KNOBS: offsets into the whole text; a second COOP is E056.
  std::string_view text = "PLACE=fuse, COOP=t48";
  KnobError e = list_err(text);
  CHECK(e.code == "E054");
  CHECK(at(text, e) == "48");
  std::string_view twice = "COOP=t32,COOP=t64";
  KnobError d = list_err(twice);
  CHECK(d.code == "E056");
  CHECK(contains(d.message, "COOP is given twice"));
}

TEST_CASE("legal: COOP's threads must fit one block (E055); every codec value is legal on every target") {
  for (std::string_view name : target_names()) {
    CHECK(legal_on("COOP=t1024/v8", name).empty());
    CHECK(legal_on("COOP=t2", name).empty());
  }
  CoopValue big;
  big.threads = 2048;  // beyond the codec's bounds: a value built in code (a tuner)
  big.vec = 8;
  KnobSetting s{Knob::Coop, "", false, big};
  std::vector<KnobError> e = check_knob_legal(s, *find_target("sm_90"));
  REQUIRE(e.size() == 1);
  CHECK(e[0].code == "E055");
  CHECK(e[0].offset == 0);
  CHECK(e[0].length == 5);
  CHECK(contains(e[0].message, "COOP thread count t2048 is more than target sm_90 allows in one block (1024 threads)"));
  CHECK(contains(e[0].help, "t1024"));
}
