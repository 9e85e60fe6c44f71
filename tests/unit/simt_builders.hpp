// Builders for hand-made kernel-IR programs and a SIMT run's error, shared by the interpreter's
// tests (test_simt.cpp, test_simt_roles.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/simt.hpp"
#include "ir/kernel.hpp"

namespace simt_test {

using namespace emmy;
using kir::BinOp;
using kir::Expr;
using kir::IntrinsicId;
using kir::ScalarType;
using kir::Space;
using kir::Special;
using kir::Stmt;

constexpr ScalarType F16 = ScalarType::F16, F32 = ScalarType::F32, I32 = ScalarType::I32, I64 = ScalarType::I64,
                     U32 = ScalarType::U32;

// ---- IR shorthands ------------------------------------------------------------------------------

inline Expr add(Expr a, Expr b) { return kir::binary(BinOp::Add, std::move(a), std::move(b)); }
inline Expr mul(Expr a, Expr b) { return kir::binary(BinOp::Mul, std::move(a), std::move(b)); }
inline Expr lt(Expr a, Expr b) { return kir::binary(BinOp::Lt, std::move(a), std::move(b)); }
inline Expr eq(Expr a, Expr b) { return kir::binary(BinOp::Eq, std::move(a), std::move(b)); }
inline Expr bin(BinOp op, Expr a, Expr b) { return kir::binary(op, std::move(a), std::move(b)); }
inline Expr tid() { return kir::special(Special::ThreadIdx); }
inline Expr lane() { return kir::special(Special::LaneId); }
inline Expr i64(Expr e) { return kir::cast(std::move(e), I64); }
inline Expr reg(const std::string& name, ScalarType type, int elem = -1) {
  return kir::var(kir::Reg{name, elem}, type);
}
inline Expr n_param() { return kir::param("N", I64); }
inline Expr gload(const std::string& buffer, Expr index, ScalarType type = F32) {
  return kir::load(Space::Global, buffer, std::move(index), type);
}
inline Expr sload(const std::string& array, Expr index, ScalarType type = F32) {
  return kir::load(Space::Shared, array, std::move(index), type);
}
inline Stmt gstore(const std::string& buffer, Expr index, Expr value) {
  return kir::store(Space::Global, buffer, std::move(index), std::move(value));
}
inline Stmt sstore(const std::string& array, Expr index, Expr value) {
  return kir::store(Space::Shared, array, std::move(index), std::move(value));
}
// blockIdx * threads + threadIdx, as i64.
inline Expr global_index(int threads) {
  return add(mul(i64(kir::special(Special::BlockIdx)), kir::ci(threads, I64)), i64(tid()));
}
// ceil(N / threads) blocks.
inline Expr blocks_over_n(int threads) {
  return bin(BinOp::Div, add(n_param(), kir::ci(threads - 1, I64)), kir::ci(threads, I64));
}

inline kir::Param buffer_param(std::string name, ScalarType type, bool is_const) {
  kir::Param p;
  p.kind = kir::Param::Kind::Buffer;
  p.name = std::move(name);
  p.type = type;
  p.is_const = is_const;
  return p;
}

inline kir::Param scalar_param(std::string name) {
  kir::Param p;
  p.kind = kir::Param::Kind::Scalar;
  p.name = std::move(name);
  p.type = I64;
  return p;
}

inline kir::Buffer buffer(std::string name, kir::Buffer::Role role, ScalarType type, std::vector<std::string> dims) {
  kir::Buffer b;
  b.name = std::move(name);
  b.role = role;
  b.type = type;
  b.dims = std::move(dims);
  return b;
}
constexpr auto In = kir::Buffer::Role::Input;
constexpr auto Out = kir::Buffer::Role::Output;

inline kir::SharedArray shared(std::string name, ScalarType type, int64_t count, int align = 16) {
  return kir::SharedArray{std::move(name), type, count, align};
}

// One kernel of `threads` threads; its params: every buffer (inputs const) and N if sized.
inline kir::Program program(std::vector<kir::Buffer> buffers, int threads, Expr grid, std::vector<Stmt> body,
                            std::vector<kir::SharedArray> smem = {}, std::vector<kir::Param> extra = {}) {
  kir::Program p;
  p.op = "test";
  kir::Kernel k;
  k.name = "k_test";
  k.block_threads = threads;
  k.grid_x = std::move(grid);
  for (const kir::Buffer& b : buffers) k.params.push_back(buffer_param(b.name, b.type, b.role == In));
  k.params.push_back(scalar_param("N"));
  for (kir::Param& e : extra) k.params.push_back(std::move(e));
  k.shared = std::move(smem);
  k.body = std::move(body);
  p.buffers = std::move(buffers);
  p.kernels.push_back(std::move(k));
  return p;
}

// Exactly representable test data: multiples of 1/8 in [-2, 2], from a fixed LCG.
inline std::vector<double> values(size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (double& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<double>(static_cast<int>((seed >> 16) % 33) - 16) / 8.0;
  }
  return v;
}

inline HostTensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<double> data) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

// The message of the SimtError the run raises, or "(no error)".
inline std::string simt_error(const kir::Program& p, const SizeBindings& sizes, TensorMap buffers,
                              const SimtOptions& o = {}) {
  try {
    run_simt(p, sizes, buffers, o);
  } catch (const SimtError& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace simt_test
