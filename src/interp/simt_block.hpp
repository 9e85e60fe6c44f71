// The SIMT interpreter's state, private to src/interp: lane values and their arithmetic
// (simt_values.cpp), the program's buffers and a block's registers, and the Block that runs one
// thread block, its threads in lockstep until a branch between warps waits on a barrier (then
// each side is a fiber: simt_fibers.cpp) — its statements and expressions (simt_exec.cpp),
// memory and races (simt_memory.cpp), intrinsics and the asynchronous ordering (simt_async.cpp),
// barriers and register budgets (simt_sync.cpp); simt.cpp runs the program.
#pragma once

#include "interp/simt.hpp"
#include "support/ieee_rules.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "ir/launch_expr.hpp"
#include "ir/numeric.hpp"

namespace emmy::simt_detail {

using kir::dtype_of;

using kir::BinOp;
using kir::Expr;
using kir::IntrinsicId;
using kir::ScalarType;
using kir::Stmt;
using kir::UnOp;

constexpr int kWarp = 32;
constexpr int kBanks = 32;
constexpr int kMaxBlockThreads = 1024;

// The active threads of a block, ascending.
using Lanes = std::vector<int32_t>;

// One value per active lane: doubles for the float types (holding exactly the rounded value),
// int64 for the others (pred 0/1, u32 zero-extended, i32 sign-extended).
struct Vals {
  ScalarType type = ScalarType::F32;
  std::vector<double> f;
  std::vector<int64_t> i;
  size_t size() const { return f.size() + i.size(); }
};

// Values and arithmetic (simt_values.cpp).
bool is_f(ScalarType t);
Vals make_vals(ScalarType type, size_t n);
bool truth(const Vals& v, size_t k);
int64_t wrap_int(ScalarType t, int64_t v);
int64_t float_to_int(ScalarType t, double v);
double int_to_float(ScalarType t, int64_t v);
Vals convert(Vals v, ScalarType to);
int int_rank(ScalarType t);
std::optional<ScalarType> common_type(ScalarType a, ScalarType b);
bool is_shift(BinOp op);
bool is_bitwise(BinOp op);
bool is_logical(BinOp op);
// One node over every lane, computed in T (float for f32/f16/bf16, double for f64) or, for
// integers, in S; int_binary returns the first lane that faults (kNoLane: none).
template <class T>
void float_unary(UnOp op, std::vector<double>& v);
template <class T>
void float_binary(BinOp op, const std::vector<double>& a, const std::vector<double>& b, std::vector<double>& out);
constexpr size_t kNoLane = static_cast<size_t>(-1);
template <class S>
size_t int_binary(BinOp op, const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out);
template <class V>
void compare(BinOp op, const std::vector<V>& a, const std::vector<V>& b, std::vector<int64_t>& out);
void round_lanes(Vals& v);
// Bytes of an element, and a lane's value as 32-bit words.
double decode_float(ScalarType t, const uint8_t* p);
int64_t decode_int(ScalarType t, const uint8_t* p);
void encode_float(ScalarType t, double v, uint8_t* p);
void encode_int(ScalarType t, int64_t v, uint8_t* p);
std::pair<uint32_t, uint32_t> to_words(const Vals& v, size_t k);
void from_words(Vals& v, size_t k, uint32_t lo, uint32_t hi);
int type_words(ScalarType t);
int total_words(const std::vector<ScalarType>& types);
int64_t warp_bank_conflicts(std::span<const uint32_t> addrs, int bytes);

// ---- program-level state ----------------------------------------------------------------------

// A global buffer: raw bytes of its element type.
struct Global {
  std::string name;
  ScalarType type = ScalarType::F32;
  std::vector<int64_t> shape;
  int64_t count = 0;
  std::vector<uint8_t> bytes;
};

struct SharedSlot {
  ScalarType type = ScalarType::F32;
  int64_t count = 0;
  uint32_t offset = 0;
};

struct ScalarParam {
  ScalarType type = ScalarType::I64;
  int64_t value = 0;
};

// What a block of one launch needs: the kernel, its bound parameters and shared layout.
struct Launch {
  const kir::Kernel* kernel = nullptr;
  std::vector<Global>* globals = nullptr;
  std::unordered_map<std::string, int> buffer_of;  // Buffer parameter -> globals index
  std::unordered_map<std::string, ScalarParam> scalars;
  std::unordered_map<std::string, kir::TmaMap> maps;
  std::unordered_map<std::string, SharedSlot> shared;
  uint32_t shared_bytes = 0;   // a CTA's arrays, end to end (its window)
  uint32_t shared_stride = 0;  // ... rounded up to the widest array's alignment: where the next CTA's starts
  int64_t grid = 0;
  // CLUSTER: CTAs a cluster (1: none). A cluster runs as one Block: its CTAs' threads side by
  // side (CTA r's are r * block_threads ..), each CTA's shared memory at r * shared_stride.
  int cluster = 1;
  bool race_check = true;
  // The `if` statements whose branches may block (a barrier, an mbarrier wait, a named barrier,
  // setmaxnreg.inc): split between warps, their sides run as fibers.
  std::unordered_set<const Stmt*> blocking_ifs;
  // The loops that hold a named barrier whose id differs between warps (warpgroups taking turns):
  // each warpgroup runs them as a fiber of its own.
  std::unordered_set<const Stmt*> turn_loops;
};

enum class Pending : uint8_t { None, CpAsync, Tma };

// The shadow of one shared byte: the asynchronous copy still to land in it, and for the race
// check who wrote it when, and when it was last read (times of SharedScratch::now).
struct ByteState {
  uint32_t write_time = 0, last_read = 0;
  int32_t writer = -1;  // a thread; -1: every thread may read it (a landed TMA box)
  Pending pending = Pending::None;
};

// Shared memory of the block (or cluster) being run, reused by the blocks of a launch. `now` counts the
// releases (arrivals at barriers and mbarriers) of the launch and stamps every access; it keeps
// increasing across blocks, so an older block's stamps read as ordered before everything.
struct SharedScratch {
  std::vector<uint8_t> data;
  std::vector<ByteState> state;
  uint32_t now = 0;
  std::vector<std::vector<uint32_t>> reads;  // reads[warp][byte]: when the warp last read it (sized on first read)
};

// Happens-before between the warps of a block, a vector clock a warp: clock[w][x] is the time
// before which warp x's accesses are ordered before warp w's next one.
using Clock = std::vector<uint32_t>;
void join(Clock& into, const Clock& from);

struct AsyncWrite {
  uint32_t addr = 0;
  std::vector<uint8_t> bytes;
};

// The cp.async groups of one thread: committed ones, oldest first, and the open one.
// A register element a wgmma writes asynchronously: its name, which declaration of the name
// (the stack's depth), and its slot.
class Registers;
struct PendingReg {
  Registers* owner = nullptr;  // the register set (a fiber's) that declares it
  std::string name;
  size_t depth = 0;
  size_t slot = 0;
};

struct ThreadAsync {
  std::vector<std::vector<AsyncWrite>> committed;
  std::vector<AsyncWrite> open;
  // wgmma accumulators in flight: readable (but by another wgmma) only after the
  // wgmma.wait_group that retires their commit group.
  std::vector<std::vector<PendingReg>> wgmma_committed;
  std::vector<PendingReg> wgmma_open;
};

struct Mbarrier {
  int64_t count = 0;                 // arrivals per phase
  int64_t pending = 0;               // arrivals the current phase still needs
  int64_t tx = 0;                    // transaction bytes expected minus bytes issued in the current phase
  uint32_t phase = 0;                // phases completed
  std::vector<AsyncWrite> inflight;  // TMA boxes of the current phase
  std::vector<AsyncWrite> landing;   // boxes of completed phases: they land at the next wait
  Clock arrived;                     // the releases of the current phase's arrivals
  Clock completed;                   // ... of every completed phase: what a waiter acquires
  int32_t init_warp = 0;             // the warp that initialised it, and when: another CTA of a
  uint32_t init_time = 0;            // cluster uses it only once that is ordered before (a cluster barrier)
};

// A hardware barrier (bar.sync / bar.arrive id, n; id 0 is also __syncthreads): arrivals of
// the current generation, and what its completion orders.
struct NamedBarrier {
  int64_t expected = 0;  // threads of the current generation (0: none arrived yet)
  int64_t arrived = 0;
  Lanes who;  // the threads that arrived
  uint64_t generation = 0;
  Clock released;   // the arrivals' releases
  Clock completed;  // the last completed generation's: what its waiters acquire
};
constexpr int kNamedBarriers = 16;
constexpr int kRegisterFile = 65536;  // 32-bit registers of an SM: what setmaxnreg moves between warpgroups

constexpr uint8_t kInFlight = 2;      // Register::init of a wgmma accumulator before its wait_group
constexpr uint8_t kReadInFlight = 3;  // ... of a wgmma's A operand in registers before its wait_group

struct Register {
  ScalarType type = ScalarType::F32;
  int count = 1;
  std::vector<double> f;  // [elem * threads + thread]
  std::vector<int64_t> i;
  std::vector<uint8_t> init;  // 0 never written, 1 written, kInFlight
};

// The registers in scope: a stack per name (inner declarations shadow outer ones); a fiber's
// own declarations sit over its parent's registers.
class Registers {
 public:
  explicit Registers(int threads, Registers* parent = nullptr) : threads_(threads), parent_(parent) {}
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() {
    for (const std::string& name : scopes_.back()) stacks_[name].pop_back();
    scopes_.pop_back();
  }
  Register& declare(const std::string& name, ScalarType type, int count) {
    Register r;
    r.type = type;
    r.count = count;
    size_t n = static_cast<size_t>(count) * static_cast<size_t>(threads_);
    if (is_f(type))
      r.f.resize(n);
    else
      r.i.resize(n);
    r.init.assign(n, 0);
    scopes_.back().push_back(name);
    return stacks_[name].emplace_back(std::move(r));
  }
  Register* find(const std::string& name) {
    auto it = stacks_.find(name);
    if (it == stacks_.end() || it->second.empty()) return parent_ == nullptr ? nullptr : parent_->find(name);
    return &it->second.back();
  }
  // The register set that declares the `name` in scope, how many declarations of `name` it
  // holds, and the depth-th (1-based) one, if still there.
  Registers* owner(const std::string& name) {
    auto it = stacks_.find(name);
    if (it == stacks_.end() || it->second.empty()) return parent_ == nullptr ? nullptr : parent_->owner(name);
    return this;
  }
  size_t depth(const std::string& name) const {
    auto it = stacks_.find(name);
    return it == stacks_.end() ? 0 : it->second.size();
  }
  Register* at(const std::string& name, size_t depth) {
    auto it = stacks_.find(name);
    return it == stacks_.end() || it->second.size() < depth || depth == 0 ? nullptr : &it->second[depth - 1];
  }

 private:
  int threads_;
  Registers* parent_;
  std::unordered_map<std::string, std::deque<Register>> stacks_;
  std::vector<std::vector<std::string>> scopes_;
};

// The fibers of a block: lanes that run apart, each side of a branch between warps that may
// block. One runs at a time and switches only where it blocks, to the next one in a fixed
// order that can go on, so a run is deterministic; none able to go on is a deadlock.
class Fibers {
 public:
  // `format` makes a deadlock's message an error of the kernel and block.
  explicit Fibers(std::function<std::string(const std::string&)> format);
  ~Fibers();
  Fibers(const Fibers&) = delete;
  Fibers& operator=(const Fibers&) = delete;
  // Runs the parts as fibers, the first first, the calling fiber waiting until all finished;
  // rethrows the first error any of them raised. `labels` name each part's threads in a
  // deadlock's report.
  void run(std::vector<std::function<void()>> parts, std::vector<std::string> labels);
  // Blocks the calling fiber until ready() holds; nullopt once it does, else (no fiber can go
  // on) the deadlock: each blocked fiber's what(), the caller's first.
  std::optional<std::string> wait(const std::function<bool()>& ready, const std::function<std::string()>& what);

 private:
  struct Fiber {
    std::function<bool()> ready;  // empty: runnable
    std::function<std::string()> what;
    std::string label;  // "threads 256-383"; empty: the block's
    bool done = false;
    std::thread thread;
  };
  struct Cancelled {};
  void entry(size_t id, const std::function<void()>& part);
  bool runnable(size_t id) const;
  std::optional<size_t> next_after(size_t id) const;
  std::string deadlock(size_t first) const;
  void cancel(std::exception_ptr error);
  void join(size_t first, size_t last);

  std::function<std::string(const std::string&)> format_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Fiber> fibers_;  // fiber 0: the thread that runs the block
  size_t running_ = 0;
  bool cancelled_ = false;
  std::exception_ptr error_;
};

void store_lanes(Register& r, int elem, const Vals& v, const Lanes& lanes, int threads);

int32_t warp_of(int32_t thread);
kir::IntrinsicCall make_call(std::span<const uint32_t> in, std::span<uint32_t> out, int lanes,
                             std::span<const int64_t> imm, kir::MemoryPort* memory);

inline constexpr std::array<std::string_view, 10> kExprKinds{
    "constant", "register", "special", "parameter", "unary", "binary", "select", "cast", "load", "shared address"};

// ---- one block ---------------------------------------------------------------------------------

class Block;

// The memory an intrinsic touches: direct, or (cp.async, TMA) queued until its wait.
class Port final : public kir::MemoryPort {
 public:
  enum class Mode { Direct, CpAsync, Tma };
  // `base`: where the shared memory the intrinsic addresses starts in the cluster's (the
  // thread's CTA's; a multicast copy's destination CTA's).
  Port(Block& block, int32_t thread, Mode mode, uint32_t base, Mbarrier* mbarrier = nullptr)
      : block_(block), thread_(thread), mode_(mode), base_(base), mbarrier_(mbarrier) {}
  void read_shared(uint32_t byte_addr, void* dst, uint32_t bytes) override;
  void write_shared(uint32_t byte_addr, const void* src, uint32_t bytes) override;
  void read_global(int buffer, uint64_t byte_offset, void* dst, uint32_t bytes) override;
  void write_global(int buffer, uint64_t byte_offset, const void* src, uint32_t bytes) override;
  void read_cluster_shared(uint32_t cta, uint32_t byte_addr, void* dst, uint32_t bytes) override;
  int64_t bytes_written() const { return written_; }

 private:
  Block& block_;
  int32_t thread_;
  Mode mode_;
  uint32_t base_;
  Mbarrier* mbarrier_;
  int64_t written_ = 0;
};

class Block {
 public:
  Block(const Launch& launch, SharedScratch& smem, int64_t id, SimtReport& report)
      : launch_(launch),
        kernel_(*launch.kernel),
        smem_(smem),
        id_(id),
        cta_threads_(kernel_.block_threads),
        threads_(kernel_.block_threads * launch.cluster),
        report_(report),
        root_regs_(threads_),
        async_(static_cast<size_t>(threads_)),
        warps_((threads_ + kWarp - 1) / kWarp),
        clocks_(static_cast<size_t>(warps_)),
        bars_(static_cast<size_t>(kNamedBarriers * launch.cluster + 1)),
        wg_regs_(static_cast<size_t>((warps_ + 3) / 4)),
        free_registers_(static_cast<size_t>(launch.cluster)),
        fibers_([this](const std::string& what) {
          return fmt::format("kernel {}: {} ({} {})", kernel_.name, what, launch_.cluster > 1 ? "cluster" : "block",
                             id_);
        }) {}

  void run();

  // A cluster's CTA of thread t, and where that CTA's shared memory starts among the cluster's;
  // a shared address of thread t's (CTA-relative, as the kernel computes it) in the cluster's.
  int cta_of(int32_t t) const { return t / cta_threads_; }
  uint32_t cta_base(int r) const { return static_cast<uint32_t>(r) * launch_.shared_stride; }
  uint32_t at(int32_t t, uint32_t addr) const { return cta_base(cta_of(t)) + addr; }

  // Memory, for Port (addresses in the cluster's shared memory).
  void shared_read(int32_t t, uint32_t addr, void* dst, uint32_t bytes);
  // (addr: CTA-relative, in CTA `cta` of the cluster: distributed shared memory.)
  void cluster_shared_read(int32_t t, uint32_t cta, uint32_t addr, void* dst, uint32_t bytes);
  void shared_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes);
  AsyncWrite queue_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes, Pending kind);
  void queue_cp_async(int32_t t, AsyncWrite write) { async_[static_cast<size_t>(t)].open.push_back(std::move(write)); }
  void global_read(int32_t t, int buffer, uint64_t offset, void* dst, uint32_t bytes, bool cp_async);
  void global_write(int32_t t, int buffer, uint64_t offset, const void* src, uint32_t bytes);

 private:
  [[noreturn]] void fail(int32_t thread, const std::string& what) const {
    throw SimtError(fmt::format("kernel {}: {} (block {}, thread {})", kernel_.name, what,
                                id_ * launch_.cluster + cta_of(thread), thread % cta_threads_));
  }
  std::string describe_shared(uint32_t addr) const;

  // Statements.
  void exec_body(const std::vector<Stmt>& body, const Lanes& lanes);
  void exec(const Stmt& s, const Lanes& lanes);
  void exec_decl(const Stmt& s, const Lanes& lanes);
  void exec_assign(const Stmt& s, const Lanes& lanes);
  void exec_store(const Stmt& s, const Lanes& lanes);
  void exec_for(const Stmt& s, const Lanes& lanes);
  void exec_if(const Stmt& s, const Lanes& lanes);
  void exec_apart(const Stmt& s, const Lanes& yes, const Lanes& no);
  void run_apart(const std::vector<std::function<void()>>& parts, const std::vector<const Lanes*>& lanes);
  void exec_barrier(const Lanes& lanes);
  void exec_intrinsic(const Stmt& s, const Lanes& lanes);
  void exec_vector(const Stmt& s, const Lanes& lanes);
  void exec_shared_vector(const Stmt& s, const Vals& idx, Register& r, const Lanes& lanes);
  void unpack_lane(const Stmt& s, Register& r, int32_t t, const uint8_t* at);
  void pack_lane(const Stmt& s, const Register& r, int32_t t, uint8_t* at);

  // Expressions.
  Vals eval(const Expr& e, const Lanes& lanes);
  Vals eval_node(const Expr& e, const Lanes& lanes);
  Vals eval_const(const Expr& e, size_t n) const;
  Vals eval_var(const Expr& e, const Lanes& lanes);
  Vals eval_special(const Expr& e, const Lanes& lanes) const;
  Vals eval_param(const Expr& e, const Lanes& lanes) const;
  Vals eval_unary(const Expr& e, const Lanes& lanes);
  Vals eval_binary(const Expr& e, const Lanes& lanes);
  Vals eval_logical(const Expr& e, const Lanes& lanes);
  Vals eval_select(const Expr& e, const Lanes& lanes);
  Vals eval_load(const Expr& e, const Lanes& lanes);
  Vals eval_shared_addr(const Expr& e, const Lanes& lanes);
  Vals eval_index(const Expr& e, const Lanes& lanes);

  // Registers and memory.
  Register& reg(const kir::Reg& r, int32_t thread, int* elem);
  int buffer_index(const std::string& name, int32_t thread) const;
  const SharedSlot& slot(const std::string& name, int32_t thread) const;
  std::vector<uint32_t> shared_addrs(const SharedSlot& s, const std::string& name, const Vals& idx, const Lanes& lanes);
  void count_shared(const Lanes& lanes, const std::vector<uint32_t>& addrs, int bytes);
  void check_read(int32_t t, uint32_t addr, uint32_t bytes);
  void check_write(int32_t t, uint32_t addr, uint32_t bytes, bool async);
  void check_window(int32_t t, uint32_t addr, uint32_t bytes) const;
  void land(const AsyncWrite& w, int32_t writer);
  void drop_pending();
  void store_global(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes);
  void store_shared(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes);

  // Intrinsics.
  const kir::IntrinsicInfo& intrinsic(const Stmt& s, int32_t thread) const;
  std::vector<uint32_t> operand_words(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes);
  void write_outs(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& out);
  void call(const kir::IntrinsicInfo& info, kir::IntrinsicCall& c, int32_t thread);
  void run_warps(const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in,
                 std::vector<uint32_t>& out, std::span<const int64_t> imm, int group);
  void issue_async(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in);
  bool ordering(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in);
  void mark_in_flight(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes);
  void check_not_in_flight(const Register& r, int elem, const kir::Reg& name, const Lanes& lanes);
  void wgmma_groups(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes);
  Mbarrier& mbarrier(int32_t t, uint32_t addr);
  // Thread t's use of an mbarrier of another CTA of the cluster: its init ordered before.
  void check_peer_init(int32_t t, uint32_t addr, const Mbarrier& m);
  void try_complete(Mbarrier& m);
  void wait_mbarrier(int32_t t, uint32_t addr, uint32_t parity);
  std::string mbarrier_wait_text(uint32_t addr, uint32_t parity);

  // Barriers, fibers and register budgets (simt_sync.cpp).
  void start_clocks();
  void release(int32_t warp, Clock& into);
  void acquire(int32_t warp, const Clock& from);
  void acquire_lanes(const Lanes& lanes, const Clock& from);
  void sync_all();
  void block_until(int32_t thread, const std::function<bool()>& ready, const std::function<std::string()>& what);
  bool synchronizing(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                     const std::vector<uint32_t>& in);
  void arrive_barrier(int id, int64_t count, const Lanes& lanes, bool wait);
  // Named barrier `id` of each CTA whose threads are among `lanes` (a cluster's CTAs have their
  // own), each CTA's lanes arriving before any waits.
  void arrive_ctas(int id, int64_t count, const Lanes& lanes, bool wait);
  void set_max_registers(const kir::IntrinsicInfo& info, int64_t regs, const Lanes& lanes);

  const Launch& launch_;
  const kir::Kernel& kernel_;
  SharedScratch& smem_;
  int64_t id_;       // the block (the cluster: its CTAs are blocks id_ * cluster ..)
  int cta_threads_;  // a CTA's threads
  int threads_;      // the block's (the cluster's) threads
  SimtReport& report_;
  Registers root_regs_;
  Registers* regs_ = &root_regs_;     // the running fiber's
  std::deque<Registers> fiber_regs_;  // kept to the block's end: a wgmma still in flight names them
  std::vector<ThreadAsync> async_;
  bool wgmma_operands_ = false;  // a wgmma's operands are being read (its chain's accumulator may be in flight)
  std::unordered_map<uint32_t, Mbarrier> mbarriers_;
  int warps_;
  std::vector<Clock> clocks_;            // clocks_[w]: warp w's vector clock
  std::vector<NamedBarrier> bars_;       // by barrier id
  std::vector<int> wg_regs_;             // each warpgroup's registers a thread (setmaxnreg)
  std::vector<int64_t> free_registers_;  // each CTA's register file's rest
  Fibers fibers_;
};

}  // namespace emmy::simt_detail
