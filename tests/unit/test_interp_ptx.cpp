// The SIMT interpreter end to end against the hardware-recorded PTX vectors of tests/data/ptx:
// kernels load each lane's registers from global buffers, run the intrinsic statement through
// run_simt, store the results, and every output word must match the recording bit for bit.
//
// Bits survive the host boundary as follows: raw 32-bit words travel in U32 kernel buffers
// (HostTensor i64 values in, i64 values out, exact); f32 operands and results in F32 buffers
// (a double holds every float exactly; JSON has no NaN, whose payload this path would not
// keep); 16-bit patterns (ldmatrix's shared tile, the TMA tensor) as packed pairs in U32 words,
// low half first, which is the byte layout of the u16 array.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <ios>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "interp/simt.hpp"
#include "ir/intrinsics.hpp"
#include "ir/numeric.hpp"
#include "tma_vectors.hpp"

using namespace emmy;
using kir::BinOp;
using kir::Expr;
using kir::IntrinsicId;
using kir::ScalarType;
using kir::Space;
using kir::Special;
using kir::Stmt;
using nlohmann::json;

namespace {

constexpr ScalarType F32 = ScalarType::F32, I32 = ScalarType::I32, I64 = ScalarType::I64, U32 = ScalarType::U32;
constexpr int kWarp = 32;

// ---- IR shorthands ------------------------------------------------------------------------------

Expr c(int v) { return kir::ci(v); }
Expr cu(uint32_t v) { return kir::ci(v, U32); }
Expr tid() { return kir::special(Special::ThreadIdx); }
Expr lane() { return kir::special(Special::LaneId); }
Expr add(Expr a, Expr b) { return kir::binary(BinOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return kir::binary(BinOp::Mul, std::move(a), std::move(b)); }
Expr eq(Expr a, Expr b) { return kir::binary(BinOp::Eq, std::move(a), std::move(b)); }
Expr i64(Expr e) { return kir::cast(std::move(e), I64); }
Expr reg(const std::string& name, ScalarType type, int elem = -1) { return kir::var(kir::Reg{name, elem}, type); }

// `per_thread` * thread + `r`, as a global (i64) index; `thread` is the lane or threadIdx.
Expr slot(Expr thread, int per_thread, int r) { return i64(add(mul(std::move(thread), c(per_thread)), c(r))); }

Expr gload(const std::string& buffer, Expr index, ScalarType type) {
  return kir::load(Space::Global, buffer, std::move(index), type);
}
Stmt gstore(const std::string& buffer, Expr index, Expr value) {
  return kir::store(Space::Global, buffer, std::move(index), std::move(value));
}

// Registers name[0..count).
std::vector<kir::Reg> regs(const std::string& name, int count) {
  std::vector<kir::Reg> out;
  for (int r = 0; r < count; ++r) out.push_back(kir::Reg{name, r});
  return out;
}

// The register array name[count] of `type`, element r loaded from buffer[lane * count + r].
std::vector<Stmt> load_regs(const std::string& name, ScalarType type, int count) {
  std::vector<Stmt> body{kir::decl(name, type, count)};
  for (int r = 0; r < count; ++r)
    body.push_back(kir::assign(kir::Reg{name, r}, gload(name, slot(lane(), count, r), type)));
  return body;
}

// Stores register array name[count] to buffer[lane * count + r].
std::vector<Stmt> store_regs(const std::string& buffer, const std::string& name, ScalarType type, int count) {
  std::vector<Stmt> body;
  for (int r = 0; r < count; ++r) body.push_back(gstore(buffer, slot(lane(), count, r), reg(name, type, r)));
  return body;
}

void append(std::vector<Stmt>& body, std::vector<Stmt> more) {
  for (Stmt& s : more) body.push_back(std::move(s));
}

// ---- programs -----------------------------------------------------------------------------------

kir::Buffer buffer(std::string name, kir::Buffer::Role role, ScalarType type, int64_t count) {
  kir::Buffer b;
  b.name = std::move(name);
  b.role = role;
  b.type = type;
  b.dims = {std::to_string(count)};
  return b;
}
constexpr auto In = kir::Buffer::Role::Input;
constexpr auto Out = kir::Buffer::Role::Output;

kir::Param param_of(const kir::Buffer& b) {
  kir::Param p;
  p.kind = kir::Param::Kind::Buffer;
  p.name = b.name;
  p.type = b.type;
  p.is_const = b.role == In;
  return p;
}

kir::Param tensor_map_param(std::string name) {
  kir::Param p;
  p.kind = kir::Param::Kind::TensorMap;
  p.name = std::move(name);
  return p;
}

// One block of `threads` threads; a parameter per buffer, then `extra`.
kir::Program program(std::vector<kir::Buffer> buffers, int threads, std::vector<Stmt> body,
                     std::vector<kir::SharedArray> smem = {}, std::vector<kir::Param> extra = {}) {
  kir::Kernel k;
  k.name = "k_ptx";
  k.block_threads = threads;
  k.grid_x = kir::ci(1, I64);
  for (const kir::Buffer& b : buffers) k.params.push_back(param_of(b));
  for (kir::Param& p : extra) k.params.push_back(std::move(p));
  k.shared = std::move(smem);
  k.body = std::move(body);
  kir::Program p;
  p.op = "ptx";
  p.buffers = std::move(buffers);
  p.kernels.push_back(std::move(k));
  return p;
}

// ---- host data ----------------------------------------------------------------------------------

json load_vectors(const std::string& file) {
  std::ifstream in(std::string(EMMY_SOURCE_DIR) + "/tests/data/ptx/" + file);
  REQUIRE_MESSAGE(in.good(), "missing " << file);
  return json::parse(in);
}

// Raw 32-bit words as an i64 tensor (for a U32 kernel buffer).
HostTensor word_tensor(const std::vector<uint32_t>& words) {
  HostTensor t;
  t.dtype = DType::I64;
  t.shape = {static_cast<int64_t>(words.size())};
  for (uint32_t w : words) t.data.push_back(static_cast<double>(w));
  return t;
}

// Floats as an f32 tensor.
HostTensor float_tensor(const json& values) {
  HostTensor t;
  t.dtype = DType::F32;
  t.shape = {static_cast<int64_t>(values.size())};
  for (const json& v : values) t.data.push_back(static_cast<double>(v.get<float>()));
  return t;
}

// A JSON array's elements as 32-bit words: unsigned integers as they are, floats as their bits.
std::vector<uint32_t> json_words(const json& values, bool as_float) {
  std::vector<uint32_t> out;
  for (const json& v : values) out.push_back(as_float ? kir::f32_bits(v.get<float>()) : v.get<uint32_t>());
  return out;
}

// An output tensor's elements as 32-bit words: a U32 buffer's values, or an F32 buffer's bits.
std::vector<uint32_t> output_words(const HostTensor& t) {
  REQUIRE((t.dtype == DType::I64 || t.dtype == DType::F32));
  std::vector<uint32_t> out;
  for (double v : t.data)
    out.push_back(t.dtype == DType::F32 ? kir::f32_bits(static_cast<float>(v))
                                        : static_cast<uint32_t>(static_cast<int64_t>(v)));
  return out;
}

// "0x" and the word in hex.
std::string hex(uint32_t word) {
  std::ostringstream out;
  out << "0x" << std::hex << word;
  return out.str();
}

// Checks `got` against `want` word for word; a mismatch names the first differing word.
void check_words(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want) {
  REQUIRE(got.size() == want.size());
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && wrong++ == 0) first = i;
  CHECK_MESSAGE(wrong == 0, wrong << " of " << got.size() << " words differ; first: word " << first << " got "
                                  << hex(got[first]) << ", recorded " << hex(want[first]));
}

// ---- mma.sync.m16n8k16 --------------------------------------------------------------------------

// Lane l: a[4], b[2], c[acc] from a[4l + r], b[2l + r], c[acc l + r]; the mma; d[acc l + r].
kir::Program mma_program(IntrinsicId id, bool f32_acc) {
  const int acc = f32_acc ? 4 : 2;
  const ScalarType acc_type = f32_acc ? F32 : U32;
  std::vector<Stmt> body;
  append(body, load_regs("a", U32, 4));
  append(body, load_regs("b", U32, 2));
  append(body, load_regs("c", acc_type, acc));
  body.push_back(kir::decl("d", acc_type, acc));
  std::vector<Expr> args;
  for (int r = 0; r < 4; ++r) args.push_back(reg("a", U32, r));
  for (int r = 0; r < 2; ++r) args.push_back(reg("b", U32, r));
  for (int r = 0; r < acc; ++r) args.push_back(reg("c", acc_type, r));
  body.push_back(intrinsic(id, regs("d", acc), std::move(args)));
  append(body, store_regs("out", "d", acc_type, acc));
  return program({buffer("a", In, U32, 4 * kWarp), buffer("b", In, U32, 2 * kWarp),
                  buffer("c", In, acc_type, acc * kWarp), buffer("out", Out, acc_type, acc * kWarp)},
                 kWarp, std::move(body));
}

// Runs every case of `file` through the interpreter; returns how many ran.
int check_mma_file(const std::string& file, IntrinsicId id, bool f32_acc) {
  json data = load_vectors(file);
  const kir::Program p = mma_program(id, f32_acc);
  int n = 0;
  for (const json& cs : data["cases"]) {
    CAPTURE(file);
    CAPTURE(n);
    TensorMap io{{"a", word_tensor(json_words(cs["a"], false))},
                 {"b", word_tensor(json_words(cs["b"], false))},
                 {"c", f32_acc ? float_tensor(cs["c"]) : word_tensor(json_words(cs["c"], false))}};
    run_simt(p, {}, io);
    check_words(output_words(io.at("out")), json_words(cs["d"], f32_acc));
    ++n;
  }
  return n;
}

// ---- ldmatrix ----------------------------------------------------------------------------------

constexpr int kSmemHalves = 4096;  // smem[i] = i for i < 4096 covers every recorded row address

IntrinsicId ldmatrix_id(int x, bool trans) {
  switch (x) {
    case 1: return trans ? IntrinsicId::LdmatrixX1Trans : IntrinsicId::LdmatrixX1;
    case 2: return trans ? IntrinsicId::LdmatrixX2Trans : IntrinsicId::LdmatrixX2;
    case 4: return trans ? IntrinsicId::LdmatrixX4Trans : IntrinsicId::LdmatrixX4;
    default: throw std::invalid_argument("ldmatrix x" + std::to_string(x));
  }
}

// The warp copies the packed halves `smem` into shared s, syncs, and each lane calls ldmatrix
// with the byte address of element rowoff[lane] of s; out[4 lane + r] = d[r], 0 past x.
kir::Program ldmatrix_program(int x, bool trans) {
  constexpr int words = kSmemHalves / 2;
  Expr at = add(tid(), mul(reg("j", I32), c(kWarp)));
  std::vector<Stmt> body{
      kir::for_loop("j", I32, c(0), c(words / kWarp),
                    {kir::store(Space::Shared, "s", at, gload("smem", i64(at), U32))}),
      kir::barrier(),
      kir::decl("addr", U32, add(kir::shared_addr("s", c(0)), mul(gload("rowoff", i64(lane()), U32), cu(2)))),
      kir::decl("d", U32, x),
      intrinsic(ldmatrix_id(x, trans), regs("d", x), {reg("addr", U32)}),
  };
  for (int r = 0; r < 4; ++r) body.push_back(gstore("out", slot(lane(), 4, r), r < x ? reg("d", U32, r) : cu(0)));
  return program({buffer("smem", In, U32, words), buffer("rowoff", In, U32, kWarp), buffer("out", Out, U32, 4 * kWarp)},
                 kWarp, std::move(body), {kir::SharedArray{"s", U32, words, 16}});
}

// smem[i] = i as 16-bit values, two to a word, low half first.
std::vector<uint32_t> ramp_pairs(size_t halves) {
  std::vector<uint32_t> words(halves / 2);
  for (size_t k = 0; k < words.size(); ++k)
    words[k] = static_cast<uint32_t>(2 * k) | static_cast<uint32_t>(2 * k + 1) << 16;
  return words;
}

// ---- cvt.rn.f16x2.f32 ---------------------------------------------------------------------------

// Lane l converts (x[2l], x[2l + 1]) and stores the packed pair to out[l].
kir::Program cvt_program() {
  std::vector<Stmt> body{
      kir::decl("hi", F32, gload("x", slot(lane(), 2, 0), F32)),
      kir::decl("lo", F32, gload("x", slot(lane(), 2, 1), F32)),
      kir::decl("d", U32),
      intrinsic(IntrinsicId::CvtRnF16x2F32, {kir::Reg{"d"}}, {reg("hi", F32), reg("lo", F32)}),
      gstore("out", i64(lane()), reg("d", U32)),
  };
  return program({buffer("x", In, F32, 2 * kWarp), buffer("out", Out, U32, kWarp)}, kWarp, std::move(body));
}

// ---- TMA ----------------------------------------------------------------------------------------

using test::kTmaCols;
using test::kTmaRows;
using test::swizzle_named;
using test::tma_map;
constexpr uint32_t kTmaThreads = 128;

// Thread 0 inits the mbarrier, expects the box's bytes and issues the TMA load of the box at
// (c0, c1) into `tile` (1024-byte aligned); every thread waits on phase 0, then the block
// copies the tile, `words` packed pairs, to out.
kir::Program tma_program(uint32_t words, int c0, int c1) {
  Expr bar = kir::shared_addr("bar", c(0));
  Expr at = add(tid(), mul(reg("j", I32), c(kTmaThreads)));
  std::vector<Stmt> body{
      kir::if_then(eq(tid(), c(0)), {intrinsic(IntrinsicId::MbarrierInit, {}, {bar}, {1})}),
      kir::barrier(),
      kir::if_then(eq(tid(), c(0)), {intrinsic(IntrinsicId::MbarrierExpectTx, {}, {bar, cu(4 * words)}),
                                     intrinsic(IntrinsicId::TmaLoad2d, {},
                                               {kir::shared_addr("tile", c(0)), bar, c(c0), c(c1)}, {0}, "gmap")}),
      intrinsic(IntrinsicId::MbarrierTryWait, {}, {bar, cu(0)}),
      kir::for_loop("j", I32, c(0), c(static_cast<int>(words / kTmaThreads)),
                    {gstore("out", i64(at), kir::load(Space::Shared, "tile", at, U32))}),
  };
  return program({buffer("gmem", In, U32, kTmaRows * kTmaCols / 2), buffer("out", Out, U32, words)}, kTmaThreads,
                 std::move(body), {kir::SharedArray{"tile", U32, words, 1024}, kir::SharedArray{"bar", I64, 1, 8}},
                 {tensor_map_param("gmap")});
}

// The recorded smem (one 16-bit element per entry) packed two to a word, low half first.
std::vector<uint32_t> packed_smem(const json& smem) {
  std::vector<uint32_t> words(smem.size() / 2);
  for (size_t k = 0; k < words.size(); ++k)
    words[k] = smem[2 * k].get<uint32_t>() | smem[2 * k + 1].get<uint32_t>() << 16;
  return words;
}

// Runs one recorded TMA case; checks every smem element.
void check_tma_case(const json& cs) {
  const uint32_t cols = cs["box_cols"].get<uint32_t>(), rows = cs["box_rows"].get<uint32_t>();
  const json& smem = cs["smem"];
  REQUIRE(smem.size() == static_cast<size_t>(cols) * rows);
  const auto words = static_cast<uint32_t>(smem.size() / 2);
  REQUIRE(words % kTmaThreads == 0);
  SimtOptions options;
  options.tensor_maps["gmap"] = tma_map(cols, rows, swizzle_named(cs["swizzle"].get<std::string>()));
  TensorMap io{{"gmem", word_tensor(ramp_pairs(static_cast<size_t>(kTmaRows) * kTmaCols))}};
  run_simt(tma_program(words, cs["c0"].get<int>(), cs["c1"].get<int>()), {}, io, options);
  check_words(output_words(io.at("out")), packed_smem(smem));
}

}  // namespace

TEST_CASE("interp ptx: mma.m16n8k16 f16 in, f32 accumulate, every recorded case through run_simt") {
  CHECK(check_mma_file("mma_m16n8k16_row_col_f32_f16_f16_f32.json", IntrinsicId::MmaF16F32, true) == 6);
}

TEST_CASE("interp ptx: mma.m16n8k16 bf16 in, f32 accumulate, every recorded case through run_simt") {
  CHECK(check_mma_file("mma_m16n8k16_row_col_f32_bf16_bf16_f32.json", IntrinsicId::MmaBf16F32, true) == 6);
}

TEST_CASE("interp ptx: mma.m16n8k16 f16 in, packed f16 accumulate, every recorded case through run_simt") {
  CHECK(check_mma_file("mma_m16n8k16_row_col_f16_f16_f16_f16.json", IntrinsicId::MmaF16F16, false) == 6);
}

TEST_CASE("interp ptx: ldmatrix x1/x2/x4, plain and .trans, pitch 64 and 72, from a shared tile") {
  json data = load_vectors("ldmatrix.json");
  REQUIRE(data["cases"].size() == 12);
  const HostTensor smem = word_tensor(ramp_pairs(kSmemHalves));
  for (const json& cs : data["cases"]) {
    const int x = cs["x"].get<int>();
    const bool trans = cs["trans"].get<bool>();
    CAPTURE(x);
    CAPTURE(trans);
    CAPTURE(cs["pitch"].get<int>());
    std::vector<uint32_t> rowoff = json_words(cs["rowoff"], false);
    for (uint32_t off : rowoff) REQUIRE(off + 8 <= static_cast<uint32_t>(kSmemHalves));
    TensorMap io{{"smem", smem}, {"rowoff", word_tensor(rowoff)}};
    run_simt(ldmatrix_program(x, trans), {}, io);
    check_words(output_words(io.at("out")), json_words(cs["out"], false));
  }
}

TEST_CASE("interp ptx: cvt.rn.f16x2.f32, every recorded pair, a in the upper half") {
  json data = load_vectors("cvt_rn_f16x2_f32.json");
  REQUIRE(data["x"].size() == size_t{2 * kWarp});
  REQUIRE(data["d"].size() == size_t{kWarp});
  TensorMap io{{"x", float_tensor(data["x"])}};
  run_simt(cvt_program(), {}, io);
  check_words(output_words(io.at("out")), json_words(data["d"], false));
}

TEST_CASE("interp ptx: TMA 2-D box load with every swizzle mode, every smem element") {
  json data = load_vectors("tma_swizzle.json");
  REQUIRE(data["cases"].size() == 4);
  for (const json& cs : data["cases"]) {
    CAPTURE(cs["swizzle"].get<std::string>());
    check_tma_case(cs);
  }
}
