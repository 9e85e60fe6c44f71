// The intrinsic table and the numeric conversions reproduce the hardware-recorded PTX
// vectors of tests/data/ptx (copied from shared/data/ptx) bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"
#include "tma_vectors.hpp"

using namespace emmy::kir;
using nlohmann::json;

namespace {

json load_vectors(const std::string& file) {
  std::ifstream in(std::string(EMMY_SOURCE_DIR) + "/tests/data/ptx/" + file);
  REQUIRE_MESSAGE(in.good(), "missing " << file);
  return json::parse(in);
}

// Shared memory and global buffers as plain bytes, bounds-checked.
class TestMemory : public MemoryPort {
 public:
  std::vector<uint8_t> shared;
  std::vector<std::vector<uint8_t>> global;

  void read_shared(uint32_t addr, void* dst, uint32_t bytes) override {
    check(addr, bytes, shared.size());
    std::memcpy(dst, shared.data() + addr, bytes);
  }
  void write_shared(uint32_t addr, const void* src, uint32_t bytes) override {
    check(addr, bytes, shared.size());
    std::memcpy(shared.data() + addr, src, bytes);
  }
  void read_global(int buffer, uint64_t offset, void* dst, uint32_t bytes) override {
    const std::vector<uint8_t>& g = global.at(static_cast<size_t>(buffer));
    check(offset, bytes, g.size());
    std::memcpy(dst, g.data() + offset, bytes);
  }
  uint16_t shared16(size_t i) const { return static_cast<uint16_t>(shared[2 * i] | shared[2 * i + 1] << 8); }

 private:
  static void check(uint64_t addr, uint32_t bytes, size_t size) {
    if (addr + bytes > size) throw std::out_of_range("test memory: access out of bounds");
  }
};

std::vector<uint8_t> u16_bytes(const std::vector<uint16_t>& words) {
  std::vector<uint8_t> bytes(words.size() * 2);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

// Runs `id`'s semantics on lane-major inputs; returns the lane-major outputs.
struct Run {
  IntrinsicId id;
  int lanes;
  std::vector<int64_t> imm;
  TestMemory* memory;
  int buffer;
  uint32_t elem_bytes;
  const TmaMap* map;

  explicit Run(IntrinsicId id, int lanes = 32, std::vector<int64_t> imm = {}, TestMemory* memory = nullptr,
               int buffer = -1, uint32_t elem_bytes = 0, const TmaMap* map = nullptr)
      : id(id), lanes(lanes), imm(std::move(imm)), memory(memory), buffer(buffer), elem_bytes(elem_bytes), map(map) {}

  std::vector<uint32_t> operator()(const std::vector<uint32_t>& in) const {
    std::vector<uint32_t> out(intrinsic_info(id).outs.size() * static_cast<size_t>(lanes));
    IntrinsicCall call{in, out, lanes, imm, memory, buffer, elem_bytes, map};
    intrinsic_info(id).semantics(call);
    return out;
  }
};

// JSON registers stored lane-major per lane (x[lane * n + o]) to IntrinsicCall's operand-major
// layout (in[o * 32 + lane]).
void append_operands(std::vector<uint32_t>& in, const json& regs, int per_lane, bool as_float) {
  for (int o = 0; o < per_lane; ++o)
    for (int lane = 0; lane < 32; ++lane) {
      const json& v = regs.at(static_cast<size_t>(lane * per_lane + o));
      in.push_back(as_float ? f32_bits(v.get<float>()) : v.get<uint32_t>());
    }
}

void check_mma_file(const std::string& file, IntrinsicId id, bool f32_acc) {
  json data = load_vectors(file);
  REQUIRE(data["cases"].size() == 6);
  int acc_regs = f32_acc ? 4 : 2;
  int n = 0;
  for (const json& c : data["cases"]) {
    CAPTURE(file);
    CAPTURE(n++);
    std::vector<uint32_t> in;
    append_operands(in, c["a"], 4, false);
    append_operands(in, c["b"], 2, false);
    append_operands(in, c["c"], acc_regs, f32_acc);
    std::vector<uint32_t> out = Run{id}(in);
    std::vector<uint32_t> want;
    append_operands(want, c["d"], acc_regs, f32_acc);
    CHECK(out == want);
  }
}

}  // namespace

// ---- the table ----------------------------------------------------------------------------------

TEST_CASE("intrinsic table: one entry per id, in enum order, helpers named and defined") {
  const auto& table = intrinsic_table();
  REQUIRE(table.size() == static_cast<size_t>(IntrinsicId::Count));
  for (size_t i = 0; i < table.size(); ++i) {
    const IntrinsicInfo& info = table[i];
    CAPTURE(info.name);
    CHECK(static_cast<size_t>(info.id) == i);
    CHECK(&intrinsic_info(info.id) == &info);
    CHECK(info.helper == "emmy_" + std::string(info.name));
    CHECK(info.helper_source.find("__device__ __forceinline__ void " + std::string(info.helper) + "(") !=
          std::string_view::npos);
    CHECK(info.helper_source.find("asm") != std::string_view::npos);
    CHECK((info.semantics != nullptr && info.semantics == intrinsic_semantics(info.id)));
    CHECK((info.min_sm == 80 || info.min_sm == 90));
  }
  CHECK(intrinsic_info(IntrinsicId::MmaF16F32).name == "mma_m16n8k16_f16_f32");
  CHECK(intrinsic_info(IntrinsicId::MmaF16F32).ins.size() == 10);
  CHECK(intrinsic_info(IntrinsicId::MmaF16F16).outs.size() == 2);
  CHECK(intrinsic_info(IntrinsicId::LdmatrixX4Trans).outs.size() == 4);
  CHECK(intrinsic_info(IntrinsicId::ShflBfly).imms == 1);
  CHECK(intrinsic_info(IntrinsicId::CpAsyncWait).imms == 1);
  CHECK(intrinsic_info(IntrinsicId::MbarrierInit).imms == 1);
  CHECK(intrinsic_info(IntrinsicId::CpAsync16).ins == std::vector<ScalarType>{ScalarType::U32, ScalarType::I64});
  CHECK(intrinsic_info(IntrinsicId::TmaLoad2d).min_sm == 90);
  CHECK(intrinsic_info(IntrinsicId::MbarrierTryWait).min_sm == 90);
  CHECK(intrinsic_info(IntrinsicId::LdmatrixX1).scope == Scope::Warp);
  CHECK(intrinsic_info(IntrinsicId::CvtRnF16x2F32).scope == Scope::Thread);
}

TEST_CASE("intrinsic mma fragment maps cover each matrix element exactly once") {
  auto covers = [](auto coord, int elems, int rows, int cols) {
    std::vector<int> seen(static_cast<size_t>(rows * cols), 0);
    for (int lane = 0; lane < 32; ++lane)
      for (int e = 0; e < elems; ++e) {
        FragmentCoord p = coord(lane, e);
        REQUIRE((p.row >= 0 && p.row < rows && p.col >= 0 && p.col < cols));
        ++seen[static_cast<size_t>(p.row * cols + p.col)];
      }
    for (int s : seen) CHECK(s == 1);
  };
  covers(mma_a_coord, 8, 16, 16);
  covers(mma_b_coord, 4, 16, 8);
  covers(mma_c_coord, 4, 16, 8);
  CHECK(mma_a_coord(5, 7) == FragmentCoord{1 + 8, 2 + 1 + 8});  // lane 5: group 1, t 1; reg 3 high
  CHECK(mma_b_coord(6, 3) == FragmentCoord{4 + 1 + 8, 1});
  CHECK(mma_c_coord(7, 2) == FragmentCoord{1 + 8, 6});
}

// ---- warp-scope intrinsics against the hardware ------------------------------------------------

TEST_CASE("intrinsic mma.m16n8k16 f16 in, f32 accumulate: every recorded case") {
  check_mma_file("mma_m16n8k16_row_col_f32_f16_f16_f32.json", IntrinsicId::MmaF16F32, true);
}

TEST_CASE("intrinsic mma.m16n8k16 bf16 in, f32 accumulate: every recorded case") {
  check_mma_file("mma_m16n8k16_row_col_f32_bf16_bf16_f32.json", IntrinsicId::MmaBf16F32, true);
}

TEST_CASE("intrinsic mma.m16n8k16 f16 in, packed f16 accumulate: every recorded case") {
  check_mma_file("mma_m16n8k16_row_col_f16_f16_f16_f16.json", IntrinsicId::MmaF16F16, false);
}

TEST_CASE("intrinsic ldmatrix x1/x2/x4, plain and .trans, padded pitch, permuted rows") {
  json data = load_vectors("ldmatrix.json");
  REQUIRE(data["cases"].size() == 12);
  TestMemory memory;
  std::vector<uint16_t> smem(4096);
  for (size_t i = 0; i < smem.size(); ++i) smem[i] = static_cast<uint16_t>(i);
  memory.shared = u16_bytes(smem);
  constexpr IntrinsicId kPlain[] = {IntrinsicId::LdmatrixX1, IntrinsicId::LdmatrixX2, IntrinsicId::LdmatrixX1,
                                    IntrinsicId::LdmatrixX4};
  constexpr IntrinsicId kTrans[] = {IntrinsicId::LdmatrixX1Trans, IntrinsicId::LdmatrixX2Trans,
                                    IntrinsicId::LdmatrixX1Trans, IntrinsicId::LdmatrixX4Trans};
  for (const json& c : data["cases"]) {
    int x = c["x"].get<int>();
    bool trans = c["trans"].get<bool>();
    CAPTURE(x);
    CAPTURE(trans);
    CAPTURE(c["pitch"].get<int>());
    std::vector<uint32_t> in;
    for (const json& off : c["rowoff"]) in.push_back(2 * off.get<uint32_t>());  // element -> byte address
    std::vector<uint32_t> out = Run{(trans ? kTrans : kPlain)[x - 1], 32, {}, &memory}(in);
    REQUIRE(out.size() == static_cast<size_t>(32 * x));
    for (int lane = 0; lane < 32; ++lane)
      for (int r = 0; r < 4; ++r) {
        uint32_t want = c["out"].at(static_cast<size_t>(lane * 4 + r)).get<uint32_t>();
        CHECK((r < x ? out[static_cast<size_t>(r * 32 + lane)] : 0u) == want);
      }
  }
}

TEST_CASE("intrinsic shfl.sync bfly and idx across the lanes of each warp") {
  std::vector<uint32_t> values(64);
  for (uint32_t l = 0; l < 64; ++l) values[l] = f32_bits(static_cast<float>(l) + 0.5f);
  for (int64_t mask : {1, 2, 4, 8, 16, 31}) {
    std::vector<uint32_t> out = Run{IntrinsicId::ShflBfly, 64, {mask}}(values);
    for (uint32_t l = 0; l < 64; ++l) CHECK(out[l] == values[(l & ~31u) | ((l & 31u) ^ static_cast<uint32_t>(mask))]);
  }
  std::vector<uint32_t> in = values;
  for (uint32_t l = 0; l < 64; ++l) in.push_back((l * 7 + 3) % 40);  // source lanes, some >= 32
  std::vector<uint32_t> out = Run{IntrinsicId::ShflIdx, 64}(in);
  for (uint32_t l = 0; l < 64; ++l) CHECK(out[l] == values[(l & ~31u) | (((l * 7 + 3) % 40) & 31u)]);
  // A butterfly reduction over the 4 lanes sharing an mma row: every lane ends with the sum.
  std::vector<uint32_t> row(32);
  for (uint32_t l = 0; l < 32; ++l) row[l] = f32_bits(static_cast<float>(l));
  for (int64_t mask : {1, 2}) {
    std::vector<uint32_t> other = Run{IntrinsicId::ShflBfly, 32, {mask}}(row);
    for (size_t l = 0; l < 32; ++l) row[l] = f32_bits(bits_f32(row[l]) + bits_f32(other[l]));
  }
  for (uint32_t l = 0; l < 32; ++l) CHECK(bits_f32(row[l]) == static_cast<float>(4 * (l & ~3u) + 6));
}

// ---- thread-scope intrinsics --------------------------------------------------------------------

TEST_CASE("intrinsic cvt.rn.f16x2.f32: every recorded pair, a in the upper half") {
  json data = load_vectors("cvt_rn_f16x2_f32.json");
  const json& x = data["x"];
  const json& d = data["d"];
  REQUIRE(d.size() == 32);
  std::vector<uint32_t> in(64);
  for (size_t l = 0; l < 32; ++l) {
    in[l] = f32_bits(x[2 * l].get<float>());
    in[32 + l] = f32_bits(x[2 * l + 1].get<float>());
  }
  std::vector<uint32_t> out = Run{IntrinsicId::CvtRnF16x2F32}(in);
  for (size_t l = 0; l < 32; ++l) {
    CAPTURE(l);
    CHECK(out[l] == d[l].get<uint32_t>());
    CHECK(f16_bits_to_f32(static_cast<uint16_t>(out[l] >> 16)) == x[2 * l].get<float>());
  }
  std::vector<uint32_t> bf = Run{IntrinsicId::CvtRnBf16x2F32, 1}({f32_bits(1.0f), f32_bits(-2.0f)});
  CHECK(bf[0] == 0x3f80c000u);
}

TEST_CASE("intrinsic ex2.approx: exp2 rounded to float, specials") {
  std::vector<float> x{0.0f, 10.0f, -126.0f, -149.0f, 0.5f, -std::numeric_limits<float>::infinity(), 128.0f};
  std::vector<uint32_t> in;
  for (float v : x) in.push_back(f32_bits(v));
  std::vector<uint32_t> out = Run{IntrinsicId::Ex2Approx, static_cast<int>(x.size())}(in);
  CHECK(bits_f32(out[0]) == 1.0f);
  CHECK(bits_f32(out[1]) == 1024.0f);
  CHECK(bits_f32(out[2]) == std::ldexp(1.0f, -126));
  CHECK(out[3] == 1u);  // the smallest subnormal: no flush to zero
  CHECK(bits_f32(out[4]) == static_cast<float>(std::sqrt(2.0)));
  CHECK(out[5] == 0u);
  CHECK(std::isinf(bits_f32(out[6])));
}

TEST_CASE("intrinsic cp.async 16 bytes: element index into the buffer, shared destination") {
  TestMemory memory;
  memory.shared.assign(128, 0);
  std::vector<uint8_t> g(256);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint8_t>(i);
  memory.global = {{}, g};
  // Lane 0: f32 elements 8..11 -> shared 32; lane 1: element 60 -> shared 96 (index as lo, hi words).
  std::vector<uint32_t> in{32, 96, 8, 60, 0, 0};
  Run{IntrinsicId::CpAsync16, 2, {}, &memory, 1, 4}(in);
  for (size_t b = 0; b < 16; ++b) {
    CHECK(memory.shared[32 + b] == 32 + b);
    CHECK(memory.shared[96 + b] == 240 + b);
  }
  CHECK_THROWS(Run{IntrinsicId::CpAsync16, 2, {}, &memory, 1, 0}(in));  // elem_bytes unset
  for (IntrinsicId id : {IntrinsicId::CpAsyncCommit, IntrinsicId::CpAsyncWait, IntrinsicId::MbarrierInit,
                         IntrinsicId::MbarrierExpectTx, IntrinsicId::MbarrierTryWait, IntrinsicId::MbarrierArrive}) {
    std::vector<uint32_t> none(intrinsic_info(id).ins.size(), 0);
    CHECK(Run{id, 1, {1}}(none).empty());
  }
}

// ---- TMA ----------------------------------------------------------------------------------------

namespace {

using emmy::test::kTmaCols;
using emmy::test::kTmaRows;
using emmy::test::swizzle_named;
using emmy::test::tma_map;

TestMemory tma_memory(size_t shared_bytes) {
  TestMemory memory;
  std::vector<uint16_t> g(kTmaRows * kTmaCols);
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<uint16_t>(i);  // gmem[r][c] = r * 256 + c
  memory.global = {u16_bytes(g)};
  memory.shared.assign(shared_bytes, 0xee);
  return memory;
}

}  // namespace

TEST_CASE("intrinsic TMA 2-D box copy and swizzle: every recorded case, every smem element") {
  json data = load_vectors("tma_swizzle.json");
  REQUIRE(data["cases"].size() == 4);
  for (const json& c : data["cases"]) {
    std::string name = c["swizzle"].get<std::string>();
    CAPTURE(name);
    uint32_t cols = c["box_cols"].get<uint32_t>(), rows = c["box_rows"].get<uint32_t>();
    int32_t c0 = c["c0"].get<int32_t>(), c1 = c["c1"].get<int32_t>();
    const json& smem = c["smem"];
    REQUIRE(smem.size() == static_cast<size_t>(cols) * rows);
    TmaMap map = tma_map(cols, rows, swizzle_named(name));
    // Through the table's semantics: destination 0, mbarrier word unused, coordinates.
    TestMemory memory = tma_memory(smem.size() * 2);
    std::vector<uint32_t> in{0, 0, static_cast<uint32_t>(c0), static_cast<uint32_t>(c1)};
    Run{IntrinsicId::TmaLoad2d, 1, {0}, &memory, -1, 0, &map}(in);
    for (size_t i = 0; i < smem.size(); ++i) {
      uint32_t v = smem[i].get<uint32_t>();
      CAPTURE(i);
      CHECK(memory.shared16(i) == v);
      // The swizzle alone: the element's box-relative byte offset lands at byte 2i.
      uint32_t offset = ((v / 256 - static_cast<uint32_t>(c1)) * cols + (v % 256 - static_cast<uint32_t>(c0))) * 2;
      CHECK(tma_swizzle_byte_offset(offset, map.swizzle) == 2 * i);
    }
  }
}

TEST_CASE("intrinsic TMA box copy fills out-of-bounds elements with zero") {
  for (Swizzle swizzle : {Swizzle::None, Swizzle::B128}) {
    for (std::pair<int64_t, int64_t> at :
         {std::pair<int64_t, int64_t>{-8, -3}, {kTmaCols - 40, kTmaRows - 5}, {300, 2}}) {
      const int64_t c0 = at.first, c1 = at.second;  // a copy: clang 14 cannot capture bindings
      CAPTURE(c0);
      CAPTURE(c1);
      TmaMap map = tma_map(64, 16, swizzle);
      TestMemory memory = tma_memory(1024 + 64 * 16 * 2);
      tma_box_copy(map, std::array<int64_t, 2>{c0, c1}, 1024, memory);
      for (uint32_t r = 0; r < 16; ++r)
        for (uint32_t col = 0; col < 64; ++col) {
          int64_t gr = c1 + r, gc = c0 + col;
          bool inside =
              gr >= 0 && gr < static_cast<int64_t>(kTmaRows) && gc >= 0 && gc < static_cast<int64_t>(kTmaCols);
          uint16_t want = inside ? static_cast<uint16_t>(gr * 256 + gc) : 0;
          uint32_t byte = 1024 + tma_swizzle_byte_offset((r * 64 + col) * 2, swizzle);
          CHECK(memory.shared16(byte / 2) == want);
        }
      for (size_t i = 0; i < 512; ++i) CHECK(memory.shared16(i) == 0xeeee);  // nothing below the box
    }
  }
}

// ---- wgmma ----------------------------------------------------------------------------------------

namespace {

constexpr uint32_t kWgA = 1024, kWgB = 9216;  // the recorded images' shared addresses (from the descriptors)

// A descriptor's two words, each the same in the 128 threads (operand-major, as IntrinsicCall).
std::vector<uint32_t> broadcast_desc(uint64_t desc) {
  std::vector<uint32_t> in;
  for (uint32_t w : {static_cast<uint32_t>(desc), static_cast<uint32_t>(desc >> 32)})
    for (int t = 0; t < 128; ++t) in.push_back(w);
  return in;
}

std::vector<uint32_t> wgmma_inputs(const std::vector<uint32_t>& a_words, uint64_t desc_b, const std::vector<float>& c) {
  std::vector<uint32_t> in = a_words, b = broadcast_desc(desc_b);
  in.insert(in.end(), b.begin(), b.end());
  for (int i = 0; i < 32 && !c.empty(); ++i)  // no c: a row without accumulator operands
    for (int t = 0; t < 128; ++t) in.push_back(f32_bits(c[static_cast<size_t>(t * 32 + i)]));
  return in;
}

std::vector<float> thread_major(const std::vector<uint32_t>& out) {  // out[i * 128 + t] -> v[t * 32 + i]
  std::vector<float> v(out.size());
  for (size_t i = 0; i < 32; ++i)
    for (size_t t = 0; t < 128; ++t) v[t * 32 + i] = bits_f32(out[i * 128 + t]);
  return v;
}

}  // namespace

TEST_CASE("intrinsic wgmma m64n64k16: every recorded case (no swizzle, 128-byte swizzle) bit for bit") {
  json data = load_vectors("wgmma_m64n64k16_f32_f16_f16.json");
  REQUIRE(data["cases"].size() == 4);
  for (const json& cs : data["cases"]) {
    std::string swz = cs["swizzle"].get<std::string>();
    CAPTURE(swz);
    const int steps = cs["K"].get<int>() / 16, mode = swz == "none" ? 0 : 1;
    TestMemory memory;
    memory.shared.assign(kWgB + 8192, 0xee);
    auto place = [&](const json& words, uint32_t at) {
      for (size_t i = 0; i < words.size(); ++i) {
        uint16_t w = static_cast<uint16_t>(words[i].get<uint32_t>());
        std::memcpy(memory.shared.data() + at + 2 * i, &w, 2);
      }
    };
    place(cs["smem_a"], kWgA);
    place(cs["smem_b"], kWgB);
    std::vector<float> acc = cs["c"].get<std::vector<float>>();
    const uint32_t lbo = cs["lbo"].get<uint32_t>(), sbo = cs["sbo"].get<uint32_t>();
    for (int s = 0; s < steps; ++s) {
      uint64_t da = std::stoull(cs["descs"][static_cast<size_t>(2 * s)].get<std::string>(), nullptr, 16);
      uint64_t db = std::stoull(cs["descs"][static_cast<size_t>(2 * s + 1)].get<std::string>(), nullptr, 16);
      // The encoding: a k16 step advances the start by 32 bytes (swizzled) or two core matrices.
      uint32_t step = mode == 1 ? 32u * static_cast<uint32_t>(s) : 2 * lbo * static_cast<uint32_t>(s);
      CHECK(wgmma_descriptor(kWgA + step, lbo, sbo, mode) == da);
      CHECK(wgmma_descriptor(kWgB + step, lbo, sbo, mode) == db);
      acc = thread_major(Run{IntrinsicId::WgmmaSsN64, 128, {0, 0}, &memory}(wgmma_inputs(broadcast_desc(da), db, acc)));
    }
    std::vector<float> want = cs["d"].get<std::vector<float>>();
    REQUIRE(acc.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(acc[i] == want[i]);
    }
  }
}

TEST_CASE("intrinsic wgmma: A from registers equals A from shared memory; an N-major B equals its K-major copy") {
  // Small integers (exact): A 64 x 16 K-major swizzled at 0, B 64 x 16 K-major at 8192 and the
  // same B N-major (k rows of 64 elements) at 16384.
  TestMemory memory;
  memory.shared.assign(24576, 0);
  auto put = [&](uint32_t addr, float v) {
    uint16_t h = f32_to_f16_bits(v);
    std::memcpy(memory.shared.data() + addr, &h, 2);
  };
  auto a_at = [](int m, int k) { return static_cast<float>((m * 7 + k * 3) % 9 - 4); };
  auto b_at = [](int n, int k) { return static_cast<float>((n * 5 + k * 11) % 7 - 3); };
  const uint64_t da = wgmma_descriptor(0, 16, 1024, 1), db = wgmma_descriptor(8192, 16, 1024, 1);
  const uint64_t dbn = wgmma_descriptor(16384, 8192, 1024, 1);
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < 16; ++k) {
      put(wgmma_operand_byte(da, m, k, false), a_at(m, k));
      put(wgmma_operand_byte(db, m, k, false), b_at(m, k));
      put(wgmma_operand_byte(dbn, m, k, true), b_at(m, k));
    }
  std::vector<uint32_t> regs(4 * 128);  // the A fragments: the mma.m16n8k16 A map per warp
  for (int t = 0; t < 128; ++t)
    for (int e = 0; e < 8; ++e) {
      FragmentCoord p = mma_a_coord(t % 32, e);
      uint32_t h = f32_to_f16_bits(a_at(16 * (t / 32) + p.row, p.col));
      regs[static_cast<size_t>((e >> 1) * 128 + t)] |= h << (16 * (e & 1));
    }
  std::vector<float> zero(4096, 0.0f);
  std::vector<float> ss =
      thread_major(Run{IntrinsicId::WgmmaSsN64, 128, {0, 0}, &memory}(wgmma_inputs(broadcast_desc(da), db, zero)));
  std::vector<float> rs =
      thread_major(Run{IntrinsicId::WgmmaRsN64, 128, {0, 0}, &memory}(wgmma_inputs(regs, db, zero)));
  std::vector<float> rn =
      thread_major(Run{IntrinsicId::WgmmaRsN64, 128, {0, 1}, &memory}(wgmma_inputs(regs, dbn, zero)));
  // The row without C (scale-d false) takes no accumulator operands and writes A B alone.
  std::vector<uint32_t> no_c = wgmma_inputs(broadcast_desc(da), db, {});
  REQUIRE(no_c.size() == 4 * 128);
  std::vector<float> z = thread_major(Run{IntrinsicId::WgmmaSsN64Z, 128, {0, 0}, &memory}(no_c));
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 32; ++i) {
      FragmentCoord q = wgmma_c_coord(t, i);
      float want = 0;
      for (int k = 0; k < 16; ++k) want += a_at(q.row, k) * b_at(q.col, k);
      CAPTURE(t);
      CAPTURE(i);
      size_t at = static_cast<size_t>(t * 32 + i);
      CHECK(ss[at] == want);
      CHECK(rs[at] == want);
      CHECK(rn[at] == want);
      CHECK(z[at] == want);
    }
  // Every (row, col) of the 64 x 64 accumulator is held exactly once.
  std::vector<int> seen(64 * 64, 0);
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 32; ++i) ++seen[static_cast<size_t>(wgmma_c_coord(t, i).row * 64 + wgmma_c_coord(t, i).col)];
  for (int v : seen) CHECK(v == 1);
}

// ---- numerics -----------------------------------------------------------------------------------

TEST_CASE("numeric f16: all 65536 bit patterns round trip through f32") {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    float f = f16_bits_to_f32(bits);
    if (f32_to_f16_bits(f) != bits) FAIL_CHECK("f16 bits 0x" << std::hex << b << " do not round trip");
    bool nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0;
    CHECK(std::isnan(f) == nan);
  }
  CHECK(f16_bits_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f16_bits_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_bits_to_f32(0xfc00) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("numeric f16 and bf16: round to nearest even, subnormals, overflow") {
  auto f = [](double v) { return static_cast<float>(v); };
  CHECK(f32_to_f16_bits(f(1 + std::ldexp(1.0, -11))) == 0x3c00);      // tie, even below
  CHECK(f32_to_f16_bits(f(1 + 3 * std::ldexp(1.0, -11))) == 0x3c02);  // tie, even above
  CHECK(f32_to_f16_bits(f(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20))) == 0x3c01);
  CHECK(f32_to_f16_bits(std::ldexp(1.0f, -25)) == 0x0000);  // half the least subnormal: tie to 0
  CHECK(f32_to_f16_bits(3 * std::ldexp(1.0f, -26)) == 0x0001);
  CHECK(f32_to_f16_bits(3 * std::ldexp(1.0f, -25)) == 0x0002);                       // 1.5 ulp: tie to even 2
  CHECK(f32_to_f16_bits(f(std::ldexp(1.0, -14) - std::ldexp(1.0, -25))) == 0x0400);  // up to min normal
  CHECK(f32_to_f16_bits(-0.0f) == 0x8000);
  CHECK(f32_to_f16_bits(65504.0f) == 0x7bff);
  CHECK(f32_to_f16_bits(65519.99f) == 0x7bff);
  CHECK(f32_to_f16_bits(65520.0f) == 0x7c00);  // tie at the top: overflow
  CHECK(f32_to_f16_bits(-1e30f) == 0xfc00);
  CHECK(f32_to_bf16_bits(f(1 + std::ldexp(1.0, -8))) == 0x3f80);
  CHECK(f32_to_bf16_bits(f(1 + 3 * std::ldexp(1.0, -8))) == 0x3f82);
  CHECK(f32_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(f32_to_bf16_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(f32_to_bf16_bits(bits_f32(0x00010000)) == 0x0001);  // bf16 subnormal, exact
  CHECK(f32_to_bf16_bits(bits_f32(0x00018000)) == 0x0002);  // subnormal tie to even
}

TEST_CASE("numeric f16 conversion is the nearest value, ties to even, over a sweep of floats") {
  auto exact = [](uint16_t h) { return static_cast<double>(f16_bits_to_f32(h)); };
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
    float x = bits_f32(static_cast<uint32_t>(b));
    if (std::isnan(x) || std::isinf(x)) continue;
    uint16_t h = f32_to_f16_bits(x);
    uint16_t mag = h & 0x7fff;
    if (mag == 0x7c00) {
      if (std::fabs(x) < 65520.0f) FAIL_CHECK("overflow too early at " << x);
      continue;
    }
    double err = std::fabs(exact(h) - x);
    bool ok = true;
    for (uint16_t n : {static_cast<uint16_t>(h + 1), static_cast<uint16_t>(h - 1)}) {
      if ((n & 0x7fff) > 0x7bff || (n & 0x8000) != (h & 0x8000)) continue;
      double other = std::fabs(exact(n) - x);
      ok = ok && (err < other || (err == other && (h & 1) == 0));
    }
    if (mag == 0) ok = ok && std::fabs(x) <= std::ldexp(1.0, -25);
    if (!ok) FAIL_CHECK("f32 0x" << std::hex << b << " -> f16 0x" << h << " is not the nearest even");
  }
}

TEST_CASE("numeric bf16: every pattern round trips, NaN stays NaN and quiet, infinities kept") {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    bool nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    float f = bf16_bits_to_f32(bits);
    CHECK(std::isnan(f) == nan);
    uint16_t back = f32_to_bf16_bits(f);
    if (nan ? back != (bits | 0x40) : back != bits) FAIL_CHECK("bf16 bits 0x" << std::hex << b);
  }
  CHECK(f32_to_bf16_bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(f32_to_bf16_bits(bits_f32(0x7f800001)) == 0x7fc0);  // payload below bf16's bits: still a NaN
  CHECK(f32_to_bf16_bits(bits_f32(0xffc00000)) == 0xffc0);
  CHECK(f32_to_bf16_bits(bits_f32(0x7fa12345)) == 0x7fe1);  // signalling NaN made quiet
  CHECK(f32_to_f16_bits(bits_f32(0x7f800001)) == 0x7e00);   // f16: payload lost, quiet bit keeps it NaN
}

TEST_CASE("numeric round_to: one rounding from double, integer wrap, pred") {
  // Rounding the double to float first would land on the tie and round down to 1.
  CHECK(round_to(ScalarType::F16, 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) == 1 + std::ldexp(1.0, -10));
  CHECK(round_to(ScalarType::BF16, 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)) == 1 + std::ldexp(1.0, -7));
  CHECK(round_to(ScalarType::F16, 1 + std::ldexp(1.0, -11)) == 1.0);
  CHECK(round_to(ScalarType::F16, 1e6) == std::numeric_limits<double>::infinity());
  CHECK(round_to(ScalarType::F16, 1e-300) == 0.0);
  CHECK(std::isnan(round_to(ScalarType::BF16, std::nan(""))));
  CHECK(round_to(ScalarType::F32, 0.1) == static_cast<double>(0.1f));
  CHECK(round_to(ScalarType::F64, 0.1) == 0.1);
  CHECK(round_to(ScalarType::I32, -1.7) == -1.0);
  CHECK(round_to(ScalarType::I32, 2147483648.0) == -2147483648.0);
  CHECK(round_to(ScalarType::I32, 4294967297.0) == 1.0);
  CHECK(round_to(ScalarType::I32, -2147483649.0) == 2147483647.0);
  CHECK(round_to(ScalarType::U32, -1.0) == 4294967295.0);
  CHECK(round_to(ScalarType::U32, 4294967296.5) == 0.0);
  CHECK(round_to(ScalarType::I64, std::ldexp(1.0, 63)) == -std::ldexp(1.0, 63));
  CHECK(round_to(ScalarType::I64, -12345.9) == -12345.0);
  CHECK(round_to(ScalarType::I64, std::nan("")) == 0.0);
  CHECK(round_to(ScalarType::Pred, 0.5) == 1.0);
  CHECK(round_to(ScalarType::Pred, 0.0) == 0.0);
  CHECK(f32_bits(1.0f) == 0x3f800000u);
  CHECK(bits_f32(0xc0000000u) == -2.0f);
}
