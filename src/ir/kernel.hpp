// The kernel IR: one thread block's SIMT program, shared by the CUDA printer and the
// CPU interpreter (shared/design/KERNEL_IR.md). Value-semantic nodes; no pointers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/warning.hpp"

namespace emmy::kir {

// Scalar types of registers, buffers and parameters. U32 doubles as the b32 register that
// holds a packed pair of 16-bit values (f16x2, bf16x2) for intrinsics.
enum class ScalarType : uint8_t { Pred, I32, I64, U32, F16, BF16, F32, F64 };
std::string_view type_name(ScalarType type);                                  // "f32"
std::string_view cuda_type(ScalarType type);                                  // "float", "__half", "long long"...
constexpr bool is_float(ScalarType type) { return type >= ScalarType::F16; }  // F16, BF16, F32, F64 (the enum's order)
int type_bytes(ScalarType type);                                              // Pred: 1

// Per-thread values of the launch.
enum class Special : uint8_t { ThreadIdx, BlockIdx, BlockDim, GridDim, LaneId, WarpId };
std::string_view special_name(Special special);  // "threadIdx.x", "lane"

// Exp2Ftz: f32 only, PTX ex2.approx.ftz.f32 (FAST_EXP's exponential: one MUFU.EX2, subnormal
// inputs read as 0 and subnormal results flushed to 0, no slow path for them).
enum class UnOp : uint8_t { Neg, Not, Abs, Exp, Exp2, Log, Sqrt, Rsqrt, Tanh, Erf, Sigmoid, Floor, Ceil, Exp2Ftz };
// The enumerators grouped by family, as laid out by hand.
// clang-format off
enum class BinOp : uint8_t {
  Add, Sub, Mul, Div, Rem, Min, Max, Pow,
  Lt, Le, Gt, Ge, Eq, Ne, And, Or,
  Shl, Shr, BitAnd, BitOr, BitXor,
};
// clang-format on
std::string_view unop_name(UnOp op);    // "exp"
std::string_view binop_name(BinOp op);  // "+", "max"
bool is_comparison(BinOp op);           // result type Pred

// Memory a load or store addresses. Registers are not memory: they are named values.
enum class Space : uint8_t { Global, Shared };

// A register, or one element of a register array (a fragment). Arrays are indexed by
// constants only: a run-time index would make the GPU spill the array to local memory.
struct Reg {
  std::string name;
  int elem = -1;  // -1: a scalar register
  bool operator==(const Reg&) const = default;
};

struct Expr;

// An expression's operands (at most three): one array shared by the copies of the expression and
// copied only when one of them writes to it, so that copying a tree costs a reference count (the
// kernel builders copy index and value trees freely). Read through the const accessors; write
// through mut() or push_back, which first give this expression its own array.
class Operands {
 public:
  Operands() = default;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Expr& operator[](size_t i) const;
  const Expr* begin() const;
  const Expr* end() const;
  const Expr& front() const;
  const Expr& back() const;
  Expr& mut(size_t i);    // operand i, to write
  std::span<Expr> mut();  // every operand, to write
  void push_back(Expr e);
  void pop_back();
  void reserve(size_t n);

 private:
  void own(size_t capacity);  // a unique array of at least `capacity` operands
  std::shared_ptr<Expr[]> items_;
  uint32_t size_ = 0, capacity_ = 0;
};

struct Expr {
  enum class Kind : uint8_t {
    Const,       // fval / ival of `type`
    Var,         // reg
    Special,     // special (i32)
    Param,       // a scalar kernel parameter: name
    Unary,       // un, args[0]
    Binary,      // bin, args[0], args[1]
    Select,      // args[0] (pred) ? args[1] : args[2]
    Cast,        // args[0] converted to `type`: to a float type rounding to nearest even; from a
                 // float to an integer toward zero, saturating, NaN to 0 (C casts, cvt.rzi)
    Load,        // space, name = buffer (global: a pointer parameter; shared: a shared array),
                 // args[0] = element index (I64 for global, I32 for shared)
    SharedAddr,  // U32 byte address, in the shared window, of element args[0] of shared
                 // array `name` (the operand of ldmatrix, cp.async, mbarrier, TMA)
  };
  Kind kind = Kind::Const;
  ScalarType type = ScalarType::F32;
  double fval = 0;
  int64_t ival = 0;
  Reg reg;
  std::string name;
  Special special = Special::ThreadIdx;
  UnOp un = UnOp::Neg;
  BinOp bin = BinOp::Add;
  Space space = Space::Global;
  Operands args;
};

inline const Expr& Operands::operator[](size_t i) const { return items_[i]; }
inline const Expr* Operands::begin() const { return items_.get(); }
inline const Expr* Operands::end() const { return items_.get() + size_; }
inline const Expr& Operands::front() const { return items_[0]; }
inline const Expr& Operands::back() const { return items_[size_ - 1]; }

// Builders: they fix the result type (Binary: the operands' type, Pred for comparisons).
Expr cf(double value, ScalarType type = ScalarType::F32);
Expr ci(int64_t value, ScalarType type = ScalarType::I32);
Expr var(Reg reg, ScalarType type);
Expr special(Special which);
Expr param(std::string name, ScalarType type);
Expr unary(UnOp op, Expr a);
Expr binary(BinOp op, Expr a, Expr b);
Expr select(Expr pred, Expr a, Expr b);
Expr cast(Expr a, ScalarType type);
Expr load(Space space, std::string buffer, Expr index, ScalarType type);
Expr shared_addr(std::string array, Expr index);

enum class Scope : uint8_t { Thread, Warp, Warpgroup, Block };  // Warpgroup: 4 aligned warps (wgmma)

// Who unrolls a loop: the compiler behind the printer as it sees fit (NVVM, ptxas), the
// printers completely (constant bounds), or nobody (cold loops whose unrolled copies would only
// cost compile time and code size: `#pragma unroll 1`, PTX's "nounroll").
enum class Unroll : uint8_t { Compiler, Full, Never };

struct Stmt {
  enum class Kind : uint8_t {
    Decl,       // reg.name of `type`, `count` elements (1 = scalar); args[0] = initial value
                // of every element (optional)
    Assign,     // reg = args[0]
    Store,      // space, name = buffer; args[0] = element index, args[1] = value
    For,        // reg.name (an I32 or I64 register of `type`) from args[0] while < args[1],
                // step `step`; `unroll` (who unrolls it); body
    If,         // args[0] (pred): body, else orelse
    Barrier,    // __syncthreads(): every thread of the block, none inside divergent code
    Intrinsic,  // intrinsic (an IntrinsicId), outs, args = inputs, imm; name = the global
                // buffer (cp.async) or tensor-map parameter (TMA) it reads, if any
    Comment,    // text: printed above the next statement
    VecLoad,    // `count` consecutive elements of buffer `name` in `space` (a global buffer, I64
                // index, or a shared array, I32 index) from element args[0] into the register
                // array reg.name (declared before, `count` elements of `type`), as one access of
                // count * type_bytes(type) bytes (2, 4, 8 or 16), which must be aligned to its
                // size: the index a multiple of `count` (global bases are 256-aligned, shared
                // arrays at least 16)
    VecStore,   // the register array reg.name into `count` consecutive elements of `name` from
                // element args[0]: one aligned access, as VecLoad
  };
  Kind kind = Kind::Comment;
  ScalarType type = ScalarType::F32;
  Reg reg;
  int count = 1;
  std::string name;
  Space space = Space::Global;
  int step = 1;
  Unroll unroll = Unroll::Compiler;
  int intrinsic = -1;
  std::vector<Reg> outs;
  std::vector<int64_t> imm;
  std::vector<Expr> args;
  std::vector<Stmt> body, orelse;
  std::string text;
};

// `s` without its nested statements (body, orelse): a pass that rebuilds them copies this much.
// A field added to Stmt is added here.
Stmt without_children(const Stmt& s);
Stmt decl(std::string name, ScalarType type, int count = 1);
Stmt decl(std::string name, ScalarType type, Expr init, int count = 1);
Stmt assign(Reg reg, Expr value);
Stmt store(Space space, std::string buffer, Expr index, Expr value);
Stmt for_loop(std::string var, ScalarType type, Expr lo, Expr hi, std::vector<Stmt> body,
              Unroll unroll = Unroll::Compiler);
Stmt if_then(Expr pred, std::vector<Stmt> then, std::vector<Stmt> orelse = {});
Stmt barrier();
Stmt comment(std::string text);
Stmt vec_load(std::string array, ScalarType type, int count, std::string buffer, Expr index,
              Space space = Space::Global);
Stmt vec_store(std::string buffer, Expr index, std::string array, ScalarType type, int count,
               Space space = Space::Global);

// Walkers. visit calls f on a node and every node below it, parents first; map_children
// rebuilds a node with f applied to each operand (one level: f recurses if it wants to).
void visit(const Expr& e, const std::function<void(const Expr&)>& f);
Expr map_children(const Expr& e, const std::function<Expr(const Expr&)>& f);
// Every statement of `body` and those nested in it (For and If bodies, else branches), parents
// first; and every expression node of those statements.
void visit(const std::vector<Stmt>& body, const std::function<void(const Stmt&)>& f);
void visit_exprs(const std::vector<Stmt>& body, const std::function<void(const Expr&)>& f);
// The statements of `body` with f applied to each; f sees a statement after its nested
// statement lists were mapped, and may return any number of statements in its place. (Taken by
// value: a caller done with `body` moves it in, and no statement is copied.)
std::vector<Stmt> map_stmts(std::vector<Stmt> body, const std::function<std::vector<Stmt>(Stmt)>& f);

// A kernel parameter: a global buffer (pointer) or a scalar (sizes are I64 scalars, so a
// new sequence length is a new argument, not a new kernel).
// A TensorMap parameter is a TMA descriptor of one whole buffer (`map_of`, its declared shape,
// row-major): the host encodes it at launch from the buffer's address and sizes; `box` is the
// extent one copy moves per dimension, innermost first.
enum class Swizzle : uint8_t { None, B32, B64, B128 };
constexpr int kTmaMaxRank = 5;
struct Param {
  enum class Kind : uint8_t { Buffer, Scalar, TensorMap };  // TensorMap: __grid_constant__ CUtensorMap
  Kind kind = Kind::Buffer;
  std::string name;
  ScalarType type = ScalarType::F32;
  bool is_const = true;  // buffers the kernel only reads
  std::string map_of;    // TensorMap: the buffer
  std::vector<int> box;  // TensorMap: innermost first, one per dimension of the buffer
  Swizzle swizzle = Swizzle::None;
};

struct SharedArray {
  std::string name;
  ScalarType type = ScalarType::F32;
  int64_t count = 0;
  int align = 16;
};

struct Kernel {
  std::string name;              // k_<op>[_<part>]_<schedule hash>
  std::vector<std::string> doc;  // what the kernel does, printed above it
  std::vector<Param> params;
  int block_threads = 128;
  // __launch_bounds__'s second argument (0: not given). 1 lets ptxas use every register a
  // thread needs instead of spilling to reach an occupancy nobody asked for.
  int min_blocks_per_sm = 0;
  // Blocks in x: an I64 expression over the Scalar params only (evaluated at launch).
  Expr grid_x;
  // PERSIST: grid_x counts tiles, which each CTA walks from blockIdx.x in steps of gridDim.x; the
  // launch starts no more CTAs than the device holds at once (the interpreter: SimtOptions::sms).
  bool persistent = false;
  // CLUSTER: CTAs a thread-block cluster along x (1: none); grid_x is a multiple of it, and the
  // CTAs of a cluster are blockIdx.x = c * cluster + rank (rank = blockIdx.x % cluster).
  int cluster = 1;
  std::vector<SharedArray> shared;
  std::vector<Stmt> body;
  const Param* find_param(std::string_view name) const;
};

// A buffer the program's launches read or write: an op input or output, or an
// intermediate that a cut materializes in global memory.
struct Buffer {
  enum class Role : uint8_t { Input, Output, Temp };
  std::string name;
  Role role = Role::Input;
  ScalarType type = ScalarType::F32;
  std::vector<std::string> dims;  // size names or decimal literals, outermost first
};

// A size the program's kernels handle only up to `max` (a register tile sized at compile
// time, e.g. the contraction length a tensor-core schedule keeps in registers).
struct SizeLimit {
  std::string size;
  int64_t max = 0;
  std::string why;  // the knob that sets it and how to lift it
};

// What runs, in order: each kernel once; its parameters bind by name to buffers and sizes.
struct Program {
  std::string op;
  std::string knobs;               // the knob list it was lowered with, canonical text
  std::vector<std::string> sizes;  // the size names, bound at launch (B, H, S, ...)
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<SizeLimit> limits;
  std::vector<Warning> warnings;  // schedule parts the kernels could not honour, and why (W054, W055, W053)
};

// Shared memory: each array at its alignment, in order. Past the 48 KB a kernel may declare
// statically, the arrays are carved out of the dynamic shared window (launched with that many
// bytes and the function's opt-in raised to it).
constexpr int64_t kStaticSharedBytes = 48 * 1024;
std::vector<int64_t> shared_offsets(const Kernel& kernel);  // byte offset of each array
int64_t shared_bytes(const Kernel& kernel);
inline bool uses_dynamic_shared(const Kernel& kernel) { return shared_bytes(kernel) > kStaticSharedBytes; }

// The first limit the sizes break, as a one-line message; nullopt when all hold.
std::optional<std::string> check_limits(const Program& program, const std::map<std::string, int64_t>& sizes);

}  // namespace emmy::kir
