// The intrinsic table: every GPU instruction the kernel IR may call, as ONE entry each —
// operand counts and types, the scope it executes at, how the CUDA printer spells it, and
// its CPU semantics, which the SIMT interpreter runs and the PTX vectors of
// shared/data/ptx check bit for bit.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/kernel.hpp"

namespace emmy::kir {

enum class IntrinsicId : uint8_t {
  MmaF16F32,   // mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32   d[4] <- a[4], b[2], c[4]
  MmaBf16F32,  // mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d[4] <- a[4], b[2], c[4]
  MmaF16F16,   // mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16   d[2] <- a[4], b[2], c[2]
  LdmatrixX1,  // ldmatrix.sync.aligned.m8n8.x1.shared.b16   d[1] <- smem byte address
  LdmatrixX2,  //                                 .x2          d[2]
  LdmatrixX4,  //                                 .x4          d[4]
  LdmatrixX1Trans,
  LdmatrixX2Trans,
  LdmatrixX4Trans,
  CvtRnF16x2F32,     // cvt.rn.f16x2.f32 d, a, b: a in the UPPER half      d <- a, b (f32)
  CvtRnBf16x2F32,    // cvt.rn.bf16x2.f32 d, a, b
  ShflBfly,          // shfl.sync.bfly.b32 d, v, lanemask, 0x1f, membermask   d <- v, imm[0] = lane mask
  ShflIdx,           // shfl.sync.idx.b32  d, v, srclane, 0x1f, membermask    d <- v, srclane (per lane)
  Ex2Approx,         // ex2.approx.f32 (flush-to-zero not set)
  CpAsync16,         // cp.async.cg.shared.global 16 bytes: smem byte address, global buffer + byte offset
  CpAsyncCommit,     // cp.async.commit_group
  CpAsyncWait,       // cp.async.wait_group imm[0]
  MbarrierInit,      // mbarrier.init.shared.b64 [addr], imm[0] = arrival count
  MbarrierExpectTx,  // mbarrier.arrive.expect_tx.shared.b64 [addr], bytes
  MbarrierTryWait,   // mbarrier.try_wait.parity.shared.b64 [addr], phase  (loops until done)
  MbarrierArrive,    // mbarrier.arrive.shared.b64 [addr]: one arrival, no bytes
  TmaLoad2d,         // cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes;
                     // imm[0]: 0, or the cluster's CTAs (a bit each) the box goes to (.multicast::cluster),
                     // landing at the same shared offsets and completing on the same mbarrier in each
  TmaLoad3d,         // .3d: the same with three coordinates
  TmaLoad4d,         // .4d
  TmaLoad5d,         // .5d
  // Atomic read-modify-write of one element of the Stmt's global buffer: element index, value.
  AtomicAddF32,  // atomicAdd(float*)
  AtomicAddF64,  // atomicAdd(double*)
  AtomicAddI32,  // atomicAdd(int*)
  AtomicMaxF32,  // max of floats by their bits: atomicMax(int*) for v >= +0, atomicMin(unsigned*) below
  AtomicMinF32,  // min of floats: atomicMin(int*) for v >= +0, atomicMax(unsigned*) below
  AtomicMaxI32,  // atomicMax(int*)
  AtomicMinI32,  // atomicMin(int*)
  ShflBflyI32,   // shfl.sync.bfly.b32 of an i32                       d <- v, imm[0] = lane mask
  ShflBflyF64,   // two shfl.sync.bfly.b32 (low, high word) of an f64  d <- v, imm[0] = lane mask
                 // (an i64 moves as two ShflBflyI32: an I64 operand means a global index here)
  // Warpgroup MMA (sm_90a): D[64 x N] = A[64 x 16] * B[16 x N] + C, f32 accumulators in the
  // warpgroup accumulator map (wgmma_c_coord), B in shared memory through a matrix descriptor
  // (wgmma_operand_byte), A in registers (Rs: the mma.m16n8k16 A fragment of each warp's 16
  // rows) or shared memory (Ss). imm[0] = 1 for bf16 operands, imm[1] = 1 for an N-major B.
  WgmmaRsN64,   // d[32] <- a[4], desc_b (two words: low, high), c[32]
  WgmmaRsN128,  // d[64] <- a[4], desc_b, c[64]
  WgmmaSsN64,   // d[32] <- desc_a (two words), desc_b, c[32]
  WgmmaSsN128,  // d[64] <- desc_a, desc_b, c[64]
  WgmmaRsN256,  // d[128] <- a[4], desc_b, c[128]
  WgmmaSsN256,  // d[128] <- desc_a, desc_b, c[128]
  WgmmaRsN80,   // The key blocks and value tiles between (FA-3's 128 x 176, 192 x 144, 128 x 80):
  WgmmaSsN80,   // d[N / 2] <- a[4] or desc_a, desc_b, c[N / 2] as above
  WgmmaRsN96,
  WgmmaSsN96,
  WgmmaRsN144,
  WgmmaSsN144,
  WgmmaRsN176,
  WgmmaSsN176,
  WgmmaRsN192,
  WgmmaSsN192,
  WgmmaSsN64Z,  // The Ss rows without C: d[N / 2] <- desc_a, desc_b (wgmma's scale-d false,
  WgmmaSsN80Z,  // D = A B): a block's first k-step, whose accumulators need no zeroing first
  WgmmaSsN96Z,
  WgmmaSsN128Z,
  WgmmaSsN144Z,
  WgmmaSsN176Z,
  WgmmaSsN192Z,
  WgmmaSsN256Z,
  WgmmaFence,       // wgmma.fence.sync.aligned: registers and shared memory written before it are
                    // what the next wgmma reads
  WgmmaCommit,      // wgmma.commit_group.sync.aligned
  WgmmaWait,        // wgmma.wait_group.sync.aligned imm[0]
  FenceProxyAsync,  // fence.proxy.async.shared::cta: generic-proxy shared writes (cp.async, st.shared)
                    // visible to the async proxy (wgmma's operand reads)
  RegFence,         // d <- v (f32), pinned in place: the compiler moves no use of a wgmma result
                    // above the wait that completes it
  // Warp specialization (whole warps): a hardware barrier of imm[0] threads (a multiple of 32),
  // the operand its id (0 to 15, warp-uniform; 0 is __syncthreads' too), and a warpgroup's
  // register budget.
  BarSync,        // bar.sync id, imm[0]: arrive and wait for the generation to complete
  BarArrive,      // bar.arrive id, imm[0]: arrive only (a producer's signal, a turn passed)
  SetmaxnregInc,  // setmaxnreg.inc.sync.aligned.u32 imm[0]: up to imm[0] registers a thread, waiting for them
  SetmaxnregDec,  // setmaxnreg.dec.sync.aligned.u32 imm[0]: down to imm[0], freeing the rest
  // Thread-block clusters (CLUSTER): one arrival on the mbarrier at the same shared offset in CTA
  // `cta` of the cluster (mapa, then mbarrier.arrive.shared::cluster), and every thread of the
  // cluster meeting (barrier.cluster.arrive.release, barrier.cluster.wait.acquire), the mbarriers
  // initialised before it visible to the whole cluster (fence.mbarrier_init.release.cluster).
  MbarrierArrivePeer,  // [addr], cta
  ClusterSync,
  // Distributed shared memory (COOP=.../k<K>): d <- the value at shared byte address `addr` of
  // CTA `cta` of the cluster (mapa, then ld.shared::cluster), 32 or 64 bits.
  DsmemLdF32,  // d (f32) <- [addr], cta
  DsmemLdI32,  // d (i32)
  DsmemLdF64,  // d (f64, two words)
  DsmemLdI64,  // d (i64, two words)
  Count,
};

// The bytes an intrinsic may touch, provided by whoever executes it (the interpreter).
// Addresses are byte offsets: shared from the block's shared base, global from a buffer's base.
class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  virtual void read_shared(uint32_t byte_addr, void* dst, uint32_t bytes) = 0;
  virtual void write_shared(uint32_t byte_addr, const void* src, uint32_t bytes) = 0;
  virtual void read_global(int buffer, uint64_t byte_offset, void* dst, uint32_t bytes) = 0;
  // Shared bytes of CTA `cta` of the thread's cluster (distributed shared memory); a port
  // without a cluster refuses.
  virtual void read_cluster_shared(uint32_t /*cta*/, uint32_t /*byte_addr*/, void* /*dst*/, uint32_t /*bytes*/) {
    throw std::logic_error("this memory port does not read another CTA's shared memory");
  }
  // Atomics write global memory; a port that only reads (a test's) refuses.
  virtual void write_global(int /*buffer*/, uint64_t /*byte_offset*/, const void* /*src*/, uint32_t /*bytes*/) {
    throw std::logic_error("this memory port does not write global memory");
  }
};

// A TMA tensor map (cuTensorMapEncodeTiled's arguments that matter to the semantics): a
// tensor of `rank` dimensions, dimension 0 innermost (contiguous), and the box one copy moves.
struct TmaMap {
  int buffer = -1;  // which global buffer (MemoryPort numbering)
  int rank = 2;
  std::array<uint64_t, kTmaMaxRank> dims{};     // elements per dimension
  std::array<uint64_t, kTmaMaxRank> strides{};  // bytes from index i to i + 1 of dimension d >= 1
  std::array<uint32_t, kTmaMaxRank> box{};      // the box's extent per dimension (1 where unused)
  uint32_t elem_bytes = 2;
  Swizzle swizzle = Swizzle::None;
  // Nonzero where the buffer's rows break the hardware's 16-byte stride rule: the host copies
  // them first into a scratch buffer, one row every `staged_pitch` bytes (the row rounded up to
  // 16), and the map (its strides) is over that copy. The kernel never sees the difference.
  uint64_t staged_pitch = 0;
};

// The rows of a buffer (its innermost dimension; all outer dimensions flattened) a staged
// map's scratch copy holds, and each row's bytes in the buffer itself.
uint64_t tma_staged_rows(const TmaMap& map);
uint64_t tma_row_bytes(const TmaMap& map);

// Operands as raw 32-bit registers, lane-major within an operand: in[o * lanes + l] is
// operand o of lane l. Warp-scope intrinsics are called with lanes = 32 (the whole warp,
// all lanes active); thread-scope ones with any number of lanes, each independent.
// 64-bit operands (a global element index) travel as two words: low, then high.
struct IntrinsicCall {
  std::span<const uint32_t> in;
  std::span<uint32_t> out;
  int lanes = 32;
  std::span<const int64_t> imm;
  MemoryPort* memory = nullptr;
  int buffer = -1;                     // cp.async, atomics: the global buffer (MemoryPort numbering)
  uint32_t elem_bytes = 0;             // cp.async, atomics: bytes per element of `buffer` (its index
                                       // operand counts elements, as `&buffer[index]` does)
  const TmaMap* tensor_map = nullptr;  // TMA
};

// How the CUDA printer calls an intrinsic (the convention every helper_source follows):
//   helper(out_0, ..., out_{n-1}, in_0, ..., in_{m-1}, imm_0, ...);
// outputs are lvalues taken by reference, inputs by value, immediates as integer literals;
// cp.async adds the global pointer `&buffer[index]` in place of its index operand, TMA the
// tensor map parameter's address as its first input.
using IntrinsicSemantics = void (*)(const IntrinsicCall& call);

struct IntrinsicInfo {
  IntrinsicId id;
  std::string_view name;  // "mma_m16n8k16_f16_f32": what --ir kernel prints
  Scope scope;
  std::vector<ScalarType> outs;    // register types of the results, in order
  std::vector<ScalarType> ins;     // operand types, in order
  int imms = 0;                    // immediates in Stmt::imm
  int min_sm = 80;                 // needs sm_<min_sm> or newer
  std::string_view helper;         // the CUDA helper function the printer calls
  std::string_view helper_source;  // its definition, emitted in the preamble when used
  IntrinsicSemantics semantics;
};

const IntrinsicInfo& intrinsic_info(IntrinsicId id);

// An Intrinsic statement: results into `outs`, operands `ins`, immediates `imm`; `name` is
// the global buffer (cp.async) or tensor-map parameter (TMA) it reads, if any.
Stmt intrinsic(IntrinsicId id, std::vector<Reg> outs, std::vector<Expr> ins, std::vector<int64_t> imm = {},
               std::string name = {});
const std::vector<IntrinsicInfo>& intrinsic_table();

// The global buffers a kernel touches 16 bytes at a time (cp.async chunks, vector loads and
// stores): their base addresses must be 16-byte aligned, which the launch checks.
std::vector<std::string> wide_access_buffers(const Kernel& kernel);

// The atomic that combines a value into global memory with a commutative monoid ("sum",
// "max", "min") for elements of `type`; nullopt where none is correct (the table's rows).
std::optional<IntrinsicId> atomic_intrinsic(std::string_view monoid, ScalarType type);
bool is_atomic(int intrinsic);  // one of the atomic rows: it writes its global buffer
// "sum of f32, f64, i32; max of f32, i32; min of f32, i32": the table, for error messages.
std::string atomic_forms();

// Pure functions behind the table, exposed for tests and for the interpreter.
IntrinsicSemantics intrinsic_semantics(IntrinsicId id);  // the table's `semantics` of `id`

// The mma.m16n8k16 fragment maps (PTX ISA, checked by shared/data/ptx): which matrix element
// element `elem` of lane `lane`'s fragment holds. Register r of a fragment holds elements
// 2r (low half) and 2r + 1 (high half) of A and B; C/D element i is register i (f32) or the
// half i % 2 of register i / 2 (packed f16).
struct FragmentCoord {
  int row = 0, col = 0;
  bool operator==(const FragmentCoord&) const = default;
};
FragmentCoord mma_a_coord(int lane, int elem);  // A 16x16 (m, k), elem 0..7
FragmentCoord mma_b_coord(int lane, int elem);  // B 16x8 (k, n), elem 0..3
FragmentCoord mma_c_coord(int lane, int elem);  // C/D 16x8 (m, n), elem 0..3
// wgmma: the accumulator map (thread t of the warpgroup, register i; 64 x N), the descriptor
// encoding (start, leading and stride byte offsets, swizzle: 0 none, 1 = 128-byte) and the
// shared byte address of operand element (mn, k) a descriptor describes: K-major (the k16
// step's 16 elements of row mn) or, with `mn_major`, N-major (element n of k row k).
FragmentCoord wgmma_c_coord(int thread, int reg);
uint64_t wgmma_descriptor(uint32_t start, uint32_t lbo, uint32_t sbo, int swizzle);
uint32_t wgmma_operand_byte(uint64_t desc, int mn, int k, bool mn_major);
int wgmma_n(IntrinsicId id);  // the N of a Wgmma row (0 for any other intrinsic)
bool wgmma_a_in_registers(IntrinsicId id);
bool wgmma_accumulates(IntrinsicId id);  // D = A B + C (false: D = A B, no C operands)
// The Wgmma row of that N, A and C, if any.
std::optional<IntrinsicId> wgmma_of(int n, bool a_in_registers, bool accumulate = true);
void wgmma_semantics(const IntrinsicCall& call, IntrinsicId id);
std::string wgmma_helper_source(IntrinsicId id);                          // the CUDA helper of a Wgmma row
std::vector<IntrinsicId> wgmma_ids();                                     // every Wgmma row, in the table's order
std::string wgmma_helper_name(IntrinsicId id);                            // emmy_wgmma_{rs,ss}_n<N>
uint32_t tma_swizzle_byte_offset(uint32_t byte_offset, Swizzle swizzle);  // within the box
// The box at coordinates `at` (one per dimension, innermost first) into shared memory, dense
// and row after row, swizzled by the destination address; elements outside the tensor read zero.
void tma_box_copy(const TmaMap& map, std::span<const int64_t> at, uint32_t smem_byte_addr, MemoryPort& memory);
int tma_rank(IntrinsicId id);  // the coordinates of a TmaLoad row (0 for any other intrinsic)
IntrinsicId tma_load_of_rank(int rank);
// A TensorMap parameter's map over its buffer of shape `shape` (outermost first, as the buffer
// declares it), or why the hardware cannot take it (an empty or oversized tensor, a box it does
// not take); `buffer` is the MemoryPort number of the buffer. Rows not a multiple of 16 bytes
// give a staged map (TmaMap::staged_pitch): every host launching the kernel makes that copy.
std::variant<TmaMap, std::string> tma_map_of(const Param& p, ScalarType elem, std::span<const int64_t> shape,
                                             int buffer);

}  // namespace emmy::kir
