// The tensor-core tier (the class its files share): a loop-IR kernel whose contraction fits the knobs' mma.sync atom
// becomes a block of warps holding m16n8k16 fragments — a plain contraction with its
// epilogue (matmul), or a fold of a max-rescaled sum whose key is a contraction and whose
// vector field contracts again (the online softmax: scores on the tensor cores, P repacked
// from the C to the A layout in registers, row statistics reduced across the lanes sharing
// a row). Fragment layouts, the repack and the lane butterflies all come from the intrinsic
// table's lane maps; nothing here knows which op it lowers.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "algebra/fold_form.hpp"
#include "ir/expr_facts.hpp"
#include "ir/intrinsics.hpp"
#include "lower/kernel/builder.hpp"
#include "lower/kernel/mma/layout.hpp"
#include "lower/kernel/plan.hpp"
#include "support/diagnostics.hpp"

namespace emmy::lower::detail {

class MmaTier {
 public:
  MmaTier(KernelBuilder& b, const MmaTile& tile, std::optional<MmaStage> stage) : b_(b), t_(tile), stage_(stage) {}

  // Plans the kernel (false with `why` where the tier refuses it), then emits it: emission
  // reads the plan and cannot fail.
  bool build(const lir::Kernel& k, kir::Kernel& out, kir::Program& program, std::string& why);
  const KernelPlan& plan_made() const { return plan_; }
  // After a refusal: whether the kernel held no contraction of two inputs at all (nothing to tile).
  bool no_contraction() const { return no_contraction_; }

 private:
  // ---- matching --------------------------------------------------------------------------
  bool reject(std::string why);

  // A read of a global tensor (an input, or what an earlier kernel wrote) whose elements the atom
  // takes as they are.
  bool is_operand(const Expr& e) const;

  // Finds the one contraction sum(d: row * col) in `e` (inlining register intermediates on
  // the way) and returns `e` with it replaced by kContracted.
  // Finds up to `most` such contractions, each replaced by contracted_reg(its rank), the factors
  // its axis does not change kept outside it.
  // With `several_axes`, a sum over several axes is one too (Contraction::outer).
  std::optional<Expr> extract(const Expr& e, const std::string& row_axis, const std::string& col_axis,
                              std::vector<Contraction>& found, size_t most, bool several_axes = false);
  // `e` without its casts and its factors that `axis` does not change (appended to `factors` as
  // (operator, factor): e = core op1 f1 op2 f2 ...); the core.
  static const Expr& peel_factors(const Expr& e, const std::string& axis,
                                  std::vector<std::pair<std::string, Expr>>& factors);
  // The contractions of `e`, up to `most`, the first's `around` set (nothing where `e` is not so).
  std::vector<Contraction> contractions_in(const Expr& e, const std::string& row_axis, const std::string& col_axis,
                                           size_t most, bool several_axes = false);

  std::optional<Contraction> contraction_in(const Expr& e, const std::string& row_axis, const std::string& col_axis,
                                            bool several_axes = false);

  // The kernel's shape: a fold over a max-rescaled sum (inside a register tile of its vector
  // field, or alone), or a contraction followed by stores.
  bool plan(const lir::Kernel& k);
  // The decisions the emitters read, recorded in plan_: the key bound, where the row operand
  // waits, and every slab (plan_slab).
  bool plan_staging();

  static bool is_or_flag(const algebra::MonoidTerms& m, size_t f);

  // OVERLAP=1 on a fold: applied (plan_.overlap), or refused with the reason (plan_.no_overlap).
  void plan_overlap();
  // WSPEC: producer warps (plan_.producer_threads) and their register budgets, or the reason
  // it is refused (plan_.no_wspec).
  void plan_wspec();
  // PINGPONG=1: the warpgroups taking turns (plan_.turns), or why not (plan_.no_pingpong).
  void plan_pingpong();
  // RASTER: a contraction's tiles in groups along one axis (plan_.raster_*), or why not.
  void plan_raster();
  // CLUSTER: a contraction's CTAs in clusters sharing one operand's tile (plan_.cluster_*), or
  // why not (cluster.cpp). The tile counts a cluster walks (the shared axis's divided by its
  // CTAs); a CTA's tile along that axis from its cluster's; whether a slab is the shared one;
  // and the arrivals a consumer makes on the free mbarriers of the cluster's other CTAs.
  void plan_cluster();
  K cluster_tiles(const K& tiles, char axis) const;
  K cluster_tile(const K& tile, char axis) const;
  bool shared_by_cluster(const std::string& slab_array) const;
  std::vector<kir::Stmt> peer_arrivals(const K& buf) const;
  // The block's row and column tiles from `block` (its index among one batch index's tiles) in
  // RASTER's order.
  std::pair<K, K> raster_tiles(const K& block, const K& row_tiles, const K& col_tiles);
  // The turns' named barriers: 2 + the warpgroup (0 is __syncthreads, 1 the consumers' under
  // WSPEC), each of the warpgroup waiting its turn and the one before it handing over.
  static constexpr int kTurnBarrier0 = 2, kTurnThreads = 2 * 4 * kWarp;
  static constexpr int kCrewBarrier0 = 8;  // a warpgroup crew's barrier: 8 + its warpgroup
  // The registers a producer thread keeps under CLUSTER (it places its run of the shared tile's
  // boxes, and with PERSIST walks the clusters' tiles): with 24 ptxas spills 28-40 bytes there
  // (128 x 128 and 128 x 256 tiles, WSPEC + PERSIST; tests/unit/test_cluster.cpp checks none).
  static constexpr int kClusterProducerRegisters = 56;
  // A persistent contraction's own epilogue buffer holds at least 1/kEpiloguePasses of its tile.
  static constexpr int kEpiloguePasses = 4;
  // Named barrier `2 + warpgroup` (mine) or the next warpgroup's, round robin: PINGPONG's turns.
  K turn_barrier(bool next);
  // The thread's warpgroup (I64): its warp row / 4.
  K warpgroup() const;

  bool plan_fold(const lir::Kernel& k, const lir::Stmt& fold);

  // The body as one fold: its one reduction whose elements read another (the contraction) — a
  // built-in's (max(j: q . k), argmax, a sum of f(q . k)) or a user monoid's record read as
  // r.field — becomes the body's first statement, a fold, and the statements read its carrier;
  // nullopt for anything else (a plain contraction, two reductions).
  std::optional<std::vector<lir::Stmt>> body_as_fold(const std::vector<lir::Stmt>& body);
  // Whether `e` holds a reduction, its register intermediates inlined.
  bool reads_a_reduction(const Expr& e) const;

  // A summed field's lift split as a weight times a value input read at the fold's and the tile's
  // axes: the value and the weight's contractions (up to two, the first's `around` the weight
  // with each as contracted_reg(its rank)); none where the lift is not so.
  struct SummedParts {
    Expr value;
    std::vector<Contraction> contractions;
  };
  std::optional<SummedParts> summed_parts(const Expr& prod, const std::string& fold_axis, const std::string& tile_axis);
  // A plain sum whose one field is a vector: its lift a weight of the contraction (first_.around)
  // times a value read (sigmoid attention's sigmoid(s) * v[j, e]).
  bool plan_summed(const lir::Stmt& fold, size_t f);
  // Sibling folds (to_loops' sibling sums, dk and dv over the same keys at the same rows): a body
  // of two register tiles or more, each a fold over the same key axis, predicate and range. The
  // loops (none where the body is not so); then the tiles after the first planned as siblings_:
  // plain sums whose weights read the kernel's contractions (two at most, shared by text).
  static std::vector<const lir::Stmt*> sibling_loops(const std::vector<lir::Stmt>& body);
  bool plan_siblings(const std::vector<const lir::Stmt*>& loops);
  static std::string sibling_role(size_t i) { return "value" + std::to_string(i + 2); }
  // Whether every register tile (the fold's and its siblings') covers an axis no longer than a
  // contraction's, which the launch bounds by `bound` (k-steps x 16): one pass, at column 0.
  bool siblings_in_one_pass(int bound) const;
  // The siblings' accumulators, zero (fm x their n-atoms C fragments each).
  std::vector<std::string> sibling_carriers(int fm);
  // A key block's update of each sibling: its P from the block's scores (sc, and sc2 for the
  // second contraction), masked where the first's is, then P @ its value into its accumulator.
  // (`tile0`: each sibling's first column this pass.)
  void emit_sibling_updates(const std::vector<std::string>& accs, const std::vector<K>& tile0, int fm, int fn,
                            const std::string& sc, const std::string& sc2, const std::string& pf, const std::string& vf,
                            const K& j0, const K& keys, const K& buf, bool masked);
  // After the keys: each sibling's results and stores (staged through its own value slab).
  void emit_sibling_results(const std::vector<std::string>& accs, const std::vector<K>& tile0, int fm, const K& rows);
  // What every tensor-core fold needs of its register tile and carrier types.
  bool plan_fold_checks(const lir::Stmt& fold);

  // general_: every field's lift with the one contraction they share replaced (first_).
  bool plan_general_lifts(const lir::Stmt& fold);

  // Whether the read's last subscript is the bare index `axis` (its contiguous axis).
  static bool innermost_is(const Expr& read, const std::string& axis);

  // The body: statements computed per output element (the epilogue chain) and stores, one of
  // which holds the contraction; the others read it through registers.
  bool plan_contraction(const lir::Kernel& k);

  // The atoms sum a contraction's products in their own order, and a fold's key blocks
  // combine in trees: both reorder the reduction, which its monoid's laws must allow.
  void require_reorder(const algebra::MonoidTerms& terms, const std::string& what);

  // ---- emission helpers -----------------------------------------------------------------
  void emit(kir::Stmt s) { b_.emit(std::move(s)); }
  K let(const std::string& name, K v) { return b_.let(name, std::move(v)); }
  static K i64(int64_t v) { return kir::ci(v, I64); }
  static K add(K a, K b) { return kir::binary(kir::BinOp::Add, std::move(a), std::move(b)); }
  static K mul(K a, K b) { return kir::binary(kir::BinOp::Mul, std::move(a), std::move(b)); }
  static K lt(K a, K b) { return kir::binary(kir::BinOp::Lt, std::move(a), std::move(b)); }
  static K ceil_div(K a, int64_t b) { return kir::binary(kir::BinOp::Div, add(std::move(a), i64(b - 1)), i64(b)); }
  static K ceil_div_by(K a, K b);
  static K elem(const std::string& array, int i, ScalarType t) { return kir::var({array, i}, t); }

  // base + row0 + row_g * group + row_t * thread (I64).
  K lane_coord(K base, int off, int g, int t) const;

  // Binds `at` to its element index in the current scope: clamped into the axis.
  void bind(const AxisAt& at, const K& index);

  // One 16-bit operand element as f32: `read` at the two bound axes; zero past the end of
  // an axis that pads (the contraction's), clamped elsewhere.
  K operand_value(const Expr& read, const AxisAt& r, const K& ri, const AxisAt& c, const K& ci);

  // Loads fragment registers array[off .. off + regs) of the lane map `fn` (rows and columns
  // of the atom's operand) from global memory, packing element pairs with cvt.rn.
  void load_fragment(const Expr& read, CoordFn fn, int regs, const std::string& array, int off, const AxisAt& r,
                     const AxisAt& c);

  void mma(const std::string& acc, int acc_off, const std::string& a, int a_off, const std::string& b, int b_off);

  // v <- op(v, partner's v) over the butterflies that stay within a row of C.
  void row_allreduce(const K& v, kir::BinOp op);

  // ---- shared-memory staging --------------------------------------------------------------
  // A slab's planned shape: which axis is contiguous, its transport and swizzle. plan_slab
  // decides it (refusing a read with no contiguous axis, or a swizzle the tile cannot take),
  // make_slab builds the slab from it at emission.
  struct SlabChoice {
    Expr read;
    bool y_inner = false, strided = false, tma = false, swizzled = false;
    int rows = 0, cols = 0, depth = 0;
    std::string no_tma;
  };
  bool plan_slab(const std::string& role, const Expr& read, const tir::Axis& x, int x_extent, const tir::Axis& y,
                 int y_extent, int depth, bool swizzled);
  Slab make_slab(const std::string& name, const std::string& role, const AxisAt& x, const AxisAt& y);
  // A value slab (`role`: the fold's or a sibling's, x the keys, y its tile's axis), planned by
  // plan_slab; where it is the same tile as a column slab's, it shares that slab's buffers
  // (slab_shares_): sharing_slab is then the column slab read at the value's axes, nothing filled.
  bool plan_value_slab(const std::string& role, const Expr& read, const tir::Axis& keys, int chunk,
                       const tir::Axis& tile_axis, int tile);
  std::optional<Slab> sharing_slab(const std::string& role, const AxisAt& x, const AxisAt& y) const;
  // A chosen slab's row pitch and tiles kept (what make_slab allocates), and the bytes of shared
  // memory the planned slabs take together: a lower bound of the kernel's.
  static int slab_pitch(const SlabChoice& c) { return c.swizzled ? c.cols : c.cols + 8; }
  int slab_buffers(const SlabChoice& c) const { return c.depth > 0 ? c.depth : stage_->depth; }
  int64_t planned_slab_bytes() const;
  // W055 where STAGE asked for TMA and the slab's tiles come by cp.async (once a reason).
  void note_no_tma(const SlabChoice& c);

  static K i32(K e) { return as(std::move(e), ScalarType::I32); }

  // ---- TMA ----------------------------------------------------------------------------------
  // A streamed tile is one box per 64-column panel of the tensor it reads: rows along one
  // subscript, the panel along the last (the 128-byte swizzle: wgmma's layout, and ldmatrix's
  // rows in distinct banks), every other subscript one index. Why `s` is not such a box (empty:
  // it is).
  std::string tma_refusal(const SlabChoice& s) const;

  // The TensorMap parameter of `s`'s boxes (one per tensor and box shape).
  // (rows: the box's rows, where a CLUSTER CTA brings a share of each box's; 0: the slab's.)
  std::string tensor_map_param(const Slab& s, int rows = 0);

  // A `full` mbarrier a ring buffer, armed by the thread that issues the buffer's boxes and
  // waited on by every thread; each thread keeps each buffer's phase parity in a bit of one
  // register.
  void tma_setup();

  // A `free` mbarrier a ring buffer, which every thread arrives at once done with the buffer and
  // the issuing thread waits on before refilling it (a ring without a block barrier a tile); the
  // issuer's parities start at 1: a fresh buffer counts as released.
  void tma_free_setup();

  // `depth` mbarriers of `count` arrivals initialised by thread 0 at the top of the kernel, and
  // the register of their phase bits; `spare` more after them (an arrival nobody waits for: the
  // overlapped contraction's first tile, which releases no buffer).
  void init_mbarriers(const std::string& why, const std::string& bars, const std::string& phases, int count,
                      int64_t bits, int spare = 0);

  // Whether `s`'s tensor has no elements (a dimension of size 0, which no tensor map encodes: the
  // host passes an empty one, kir::tma_map_of), hoisted; nullopt where its sizes are literals.
  std::optional<K> map_empty(const Slab& s);

  // The issuing thread (thread 0, or with WSPEC the producers' first) arms buffer `buf`'s
  // mbarrier with the tiles' bytes and issues their boxes; the tile of a tensor without elements
  // (every box of it zeros) it writes as zeros itself. With `wait_free` (a ring), the issuer
  // first waits until every thread released the buffer.
  void tma_fill(const std::vector<const Slab*>& slabs, const K& buf, const K& origin, bool wait_free);

  // Waits on mbarrier `bars`[buf] for the phase parity in bit `buf` of `phases`, then flips it.
  void wait_phase(const std::string& bars, const std::string& phases, const K& buf);

  bool wgmma() const { return t_.wgmma_n > 0; }

  // A wgmma operand: A in four registers of `regs` from `off` (each warp's mma A fragment) or in
  // shared memory through `desc`; B through `desc`, N-major or K-major.
  struct AOperand {
    std::string regs;
    int off = 0;
    std::optional<std::pair<K, K>> desc;
  };
  struct BOperand {
    std::pair<K, K> desc;
    bool n_major = false;
  };

  // k16 step `step` of a K-major swizzled slab: 32 bytes a step within a 64-column panel, then
  // the next panel (rows of 128 bytes).
  static int64_t k_major_step_bytes(const Slab& s, int step);

  // The B operand for k16 step `step` of a swizzled slab whose rows (K-major: the contiguous axis
  // is the contraction's, `k_axis`) or columns (N-major) are B's N.
  BOperand b_operand(const Slab& s, const K& buf, const std::string& k_axis, int step);

  // A descriptor's two words: the start address field of base + byte_off (shared bytes, U32)
  // over the fixed fields (offsets and swizzle) of `fixed`.
  std::pair<K, K> descriptor_words(const K& base, int64_t byte_off, uint64_t fixed);

  // The A operand from shared memory: the warpgroup's 64 rows of a K-major swizzled slab (rows:
  // the output's, columns: the contraction's), k16 step `step`.
  AOperand a_operand(const Slab& s, int step, const K& buf);

  // acc[0 .. n/2) += A * B, one m64nNk16 wgmma of the warpgroup. The caller brackets a batch
  // with wgmma_fence / wgmma_done.
  // acc (+)= A B; without `accumulate` acc is written, not read (no zeroing before a block's first step).
  void wgmma_step(const std::string& acc, int n, const AOperand& a, const BOperand& b, bool accumulate = true);
  void wgmma_fence() { emit(kir::intrinsic(kir::IntrinsicId::WgmmaFence, {}, {})); }
  // Commits the batch, emits `under` (work for the tensor cores' latency), waits for the batch;
  // the results are pinned after the wait (no use of them moves above it).
  void wgmma_done(const std::string& acc, int regs, const std::function<void()>& under = {});
  void wgmma_commit();
  // wgmma.wait_group `pending`: every group but the newest `pending` complete; acc[0 .. regs),
  // written by the groups it retires, pinned after it.
  void wgmma_wait(int pending, const std::string& acc, int regs);

  // The global element index the slab's read has at (outer, inner), the indices unclamped.
  K element_index(const Slab& s, const K& outer, const K& inner);

  // The threads that fill, stage and store a block's rows of a slab together: the block's (no
  // crew), or a warpgroup's own rows of the row slab, which it alone fills, reads and stages
  // through, synchronising at a named barrier of its own.
  struct Crew {
    K tid;  // I32: the thread's rank in the crew
    int threads = 0;
    K row0;        // I32: the crew's first row of the slab
    int rows = 0;  // its rows
    K barrier;     // I32: its named barrier's id
  };
  // The crews of the row slab under PINGPONG with producer warps: each warpgroup its 64 rows.
  Crew warpgroup_crew();
  // The crew's barrier, its threads, a thread's rank in it and row r of its rows; with no crew
  // (nullptr) the block's.
  static kir::Stmt crew_barrier(const Crew* crew);
  int crew_threads(const Crew* crew) const;
  static K crew_tid(const Crew* crew);
  static K crew_row(const Crew* crew, K r);

  // The block's threads (or the crew's, its rows) copy one tile into buffer `buf`.
  void fill(const Slab& s, const K& buf, const K& outer_base, const K& inner_base, const Crew* crew = nullptr);

  // 16-byte cp.async per chunk of 8 elements where the chunk is inside the tensor and aligned,
  // else element by element through registers with zeros past the ends (ragged sizes, odd strides).
  void fill_by_chunks(const Slab& s, const K& buf, const K& outer_base, const K& inner_base,
                      const Crew* crew = nullptr);

  void commit();
  // With wgmma, each thread's landed copies (generic proxy) are fenced for the tensor cores'
  // operand reads (async proxy) before the barrier publishes them.
  // `tma_buf`: the buffer whose boxes (if the tiles came by TMA) this wait is for; with
  // `boxes_only` every tile of the ring comes by TMA and the full mbarrier is all a thread waits
  // for (the block barrier stays for the cp.async path the sizes may force).
  void wait(int pending, const std::optional<K>& tma_buf = std::nullopt, bool boxes_only = false);

  // A value computed once at the top of the kernel (before every loop): the lane's parts of
  // shared-memory addresses, invariant scales, the same on every trip.
  K hoisted(const std::string& base, K value);

  // `e` with its launch-invariant parts (computed from parameters and constants only, like a
  // score scale 1 / sqrt(D)) hoisted to the top of the kernel: computed once, not per tile.
  K hoist_invariants(K e);

  // A value computed for every score of a block (a key's lift): hoist_invariants, and a float
  // division by a launch-invariant divisor (s / sqrt(D), tanh(s / cap)) as a product with its
  // reciprocal, computed once: within an ulp of the quotient, as the fold's results' 1 / l is.
  K per_score(K e);

  // The key's lift as `contraction * scale` (or `/ scale`), the scale launch-invariant and
  // positive (sdpa's 1 / sqrt(D)): max commutes with it, so the row max runs on the raw scores
  // and is scaled once per row, and the scale folds into the exponential's multiply (FA-2's
  // scale_log2).
  std::optional<K> key_scale(const lir::Stmt& fold);

  // Registers of fragments read from a slab with one ldmatrix: piece m is register `reg` of a
  // fragment of lane map `fn` at (row, col) from the group's origin in the slab's frame;
  // `row_is_outer` says whether the fragment's rows run along the slab's rows.
  struct Piece {
    kir::Reg dest;
    CoordFn fn;
    int reg;
    int row, col;
  };
  // The group's origin (row_dyn, col_dyn) is a run-time offset (a warp's place), I32.
  void drain(const Slab& s, const K& buf, const std::vector<Piece>& pieces, const K& row_dyn, const K& col_dyn,
             bool row_is_outer);

  static K ci32(int64_t v) { return kir::ci(v, ScalarType::I32); }

  // The lane's row address in a swizzled slab (128-byte rows in panels of 64 columns, chunk c of
  // row r at c ^ r % 8): the lane's row of its matrix m (lane % 8, plus the matrix's row offset)
  // and the matrix's column. Block origins and the dynamic row offsets are multiples of 8 rows,
  // so the row's phase r % 8 is lane % 8; the XOR is one instruction a ldmatrix.
  K swizzled_row_address(const Slab& s, const K& buf, const std::vector<std::pair<int, int>>& at, const K& m,
                         const K& outer_dyn, const K& inner_dyn);

  // Whether a drain's dynamic column offset is a multiple of 64 columns on every warp: zero, or
  // the warp's column (row) offset when a warp spans whole panels.
  bool whole_panels(const K& dyn) const;

  // Fragment registers of `n_frags` fragments (regs each) into array[off + f * regs + r]
  // from a slab, four matrices per ldmatrix where they pair up; fragment f sits at
  // (row_dyn, col_dyn) + origin(f).
  void drain_fragments(const Slab& s, const K& buf, CoordFn fn, int regs, int n_frags, const std::string& array,
                       int off, const K& row_dyn, const K& col_dyn,
                       const std::function<std::pair<int, int>(int)>& origin, bool row_is_outer);

  // The tile at `origin` of the streamed axis: its (outer, inner) base, the other axis's fixed.
  static std::pair<K, K> tile_base(const Slab& s, const K& origin);

  void fill_tile(const Slab& s, const K& buf, const K& origin);

  // Fills buffer `buf` with every slab's tile at `origin`: TMA boxes where the slab has a map
  // (the issuer first waiting for the buffer's release with `wait_free`), else cp.async.
  // (Over outer axes too, `origin` is the flat K of outer_point.)
  void fill_stage(const std::vector<const Slab*>& slabs, const K& buf, const K& origin, bool wait_free);
  // A contraction over outer axes as well (first_.outer): the flat K origin's point of them,
  // bound in a new scope (closed by the caller's pop_scope), and the chunked axis's origin.
  K outer_point(const K& flat);
  // The ring's parts, shared by stream_loop and the overlapped fold: the first `dist` tiles'
  // copies into buffers 0 .. dist - 1, a commit group each (with `boxes_only`, what came by
  // cp.async before is published after them); the copy of the tile at `origin` into `buf` where it
  // is inside `size`, one commit group; x in [0, 2 depth) taken mod depth; and this thread done
  // with buffer `buf` (an arrival on its free mbarrier).
  // (With a crew, only its threads wait for what they copied: the row slab's rows are theirs.)
  void ring_prologue(const K& lo, const K& size, int chunk, const std::vector<const Slab*>& slabs, int dist,
                     bool boxes_only, const Crew* crew = nullptr);
  void ring_issue(const K& origin, const K& buf, const K& size, int dist, const std::vector<const Slab*>& slabs,
                  bool boxes_only);
  K ring_wrap(const K& x) const;
  void release(const K& buf);
  std::vector<kir::Stmt> arrive_free(const K& buf) const;  // the arrivals on buffer `buf`'s free mbarriers
  // OVERLAP on a contraction: after the chunk's batch of wgmma (contraction.cpp).
  void overlap_chunk(const K& k0, const K& buf, const std::function<void()>& issue);

  // for v in [0, size) step chunk: compute(v, buf, issue) on the tiles at v. With STAGE the
  // block waits for the tile's copies before computing; with the ring the copies of the next
  // depth - 1 tiles stay in flight under this tile's math. With `late_issue` the compute calls
  // `issue()`, which emits the copy of the tile ahead, once its first mma are issued (the fold:
  // the copies' address math runs under the tensor cores' latency, 3% on hd128; the wgmma
  // matmul by TMA); else the copy goes first (the mma.sync matmul: 8% faster that way with
  // cp.async, 7% with TMA, measured) and `issue` does nothing.
  // With `overlapped` (OVERLAP on a contraction) the ring runs depth - 2 tiles ahead, the compute
  // releases the buffers itself (one tile behind), and the loop leaves the buffer register,
  // one past the last tile's, for the drain after it.
  using Issue = std::function<void()>;
  K stream_loop(const std::string& var, const K& lo, const K& size, int chunk, const std::vector<const Slab*>& slabs,
                bool late_issue, const std::function<void(const K&, const K&, const Issue&)>& compute,
                bool barrier_free = false, bool overlapped = false);

  // ---- the kernel -----------------------------------------------------------------------
  // The lane and warp registers, then the hoisted setup's place in `top` (once a kernel).
  void lane_setup(std::vector<kir::Stmt>& top);
  // The tile `block` names: its row (and column) tile and the other thread axes' indices bound,
  // the lanes set up, the tile's origins (row_block0_, col_block0_, ...).
  void tile_coordinates(const lir::Kernel& k, K block, const K& row_tiles, const K& col_tiles,
                        std::vector<kir::Stmt>& top);
  void emit_kernel(const lir::Kernel& k, kir::Kernel& out, kir::Program& program);
  // The block, its tile extents (rows_per_block_, ...) and C lane map (c_aff_), and the grid: the
  // tiles (row and column tiles times the other thread axes' sizes), times CLUSTER's CTAs.
  struct Launch {
    K row_tiles, col_tiles, tiles;
  };
  Launch launch_shape(const lir::Kernel& k, kir::Kernel& out);
  // A kernel that is ranked, never run (KernelBodies): emit_kernel's launch shape and shared
  // arrays, no body.
  void emit_header(const lir::Kernel& k, kir::Kernel& out);
  // A fold's register bounds on its contracted sizes (program.limits): k-steps of TILE's k deep.
  void fold_limits(kir::Program& program) const;

  AxisAt axis_at(const tir::Axis& a, K base, bool zero) const;

  // The accumulator element (atom a, n-atom n, element e) of a frag_m x n_atoms C tile.
  static int c_index(int a, int n, int e, int n_atoms) { return (a * n_atoms + n) * 4 + e; }

  // ---- a contraction and its epilogue (matmul) --------------------------------------------
  void emit_contraction();

  // ---- a fold of a max-rescaled sum (the online softmax) -------------------------------------
  void emit_fold();

  // Fragment registers a thread of the fold holds: the row operand's (all k-steps when kept,
  // one step when re-read), scores, the vector field's accumulators, and the B and P fragments.
  // Past the budget, kept row fragments would leave the compiler too few registers (255 a
  // thread) for addresses and the softmax: measured, w4x1/f2x8/k4 with Q kept (200) spills.
  static int fold_fragment_regs(int fm, int fn, int ks, int ne, bool keep_rows);

  // `key OP row + c` read off the fold's predicate: the keys a row folds end before row + c
  // (+1 for <=) or start at it. Only comparisons of the bare fold axis with the bare row axis
  // plus a constant qualify; anything else is masked element by element.
  struct KeyBound {
    bool upper = true;   // keys < edge (else keys >= edge)
    int64_t offset = 0;  // edge = the block's last row (upper) or first row (lower) + offset
  };
  std::optional<KeyBound> comparison_bound(const Expr& w, const lir::Stmt& fold) const;
  // The bounds of each conjunct of `w` (a && b && ...) that is such a comparison.
  std::vector<KeyBound> key_bounds(const Expr& w, const lir::Stmt& fold) const;

  std::string field_names() const;

  // A scope for one score element: the row and key axes bound (clamped in addresses, exact in
  // arithmetic) and the contraction's register the score; the caller pops it.
  void enter_score(const K& row, const K& col, const K& score);

  // Whether the score at key `col` is folded: inside the keys and the fold's predicate (the
  // element's row and key bound in the current scope).
  K counted(const K& col, const K& keys);

  // A block's mask in 32-bit offsets: `room` keys of the block inside the axis (at most the
  // block), `diag` = j0 - row0 - the key bound's offset (clamped: only its sign near the
  // diagonal matters), and the lane's parts of (col - j0) and (row - row0).
  struct BlockMask {
    K room, diag;
  };
  BlockMask block_mask(const K& j0, const K& keys, int chunk, const std::optional<KeyBound>& bound);
  // Element (a, n, e)'s mask: its key inside the axis and (under the bound) on the kept side:
  // col - row < offset (upper) or >= offset (lower), i.e. dcol - drow + diag < 0 or >= 0.
  K element_mask(const BlockMask& m, int a, int n, int e, const std::optional<KeyBound>& bound);

  // ---- integer lane forms converted to f32 once a block (lane_floats.cpp) -------------------
  struct LaneFloats {
    struct Form {
      std::optional<K> value;        // the block's f32 of the form without its constant
      K bound;                       // an upper bound of |that form| over the launch (I64)
      K terms_small;                 // each term's bound within the limit (the bound's sum cannot overflow)
      int64_t limit = 0;             // 2^24 (f32: integers exact) or 2^31 - 1 (i32)
      int64_t largest_constant = 0;  // the largest |constant| an element adds
    };
    std::map<std::string, K> atom_bounds;  // rendered lane variable -> an upper bound of it
    std::map<std::string, Form> forms;     // by the rendered form
  };
  // The lane variables' bounds in an interior block at key j0: rows, keys, grp and tig.
  LaneFloats lane_floats(const K& j0) const;
  // x's form (its value less its constant, emitted once a block as `type`) and the constant.
  std::optional<std::pair<K, int64_t>> lane_form(const K& x, ScalarType type);
  // x (an integer) as f32 through the block's form, or none where x is not a linear form of
  // bounded lane variables and launch invariants.
  std::optional<K> lane_float(const K& x);
  // An integer comparison as a 32-bit one of the block's form with an immediate, or none.
  std::optional<K> lane_compare(const K& cmp);
  // The launch's test (hoisted) that every form's values stay within its limit; none without
  // forms.
  std::optional<K> lane_floats_exact(const LaneFloats& lf);

  // Calls fn(a, n, e, row, col) for every C element of an fm x fn tile at row0_ / col_base.
  template <class F>
  void for_each_c(int fm, int fn, F&& fnc, const K& col_base) {
    for (int a = 0; a < fm; ++a)
      for (int n = 0; n < fn; ++n)
        for (int e = 0; e < 4; ++e) {
          const LaneAffine& c = c_aff_[e];
          K row = lane_coord(add(row0_, i64(a * kAtomM)), c.row0, c.row_g, c.row_t);
          K col = lane_coord(add(col_base, i64(n * kAtomN)), c.col0, c.col_g, c.col_t);
          fnc(a, n, e, row, col);
        }
  }

  // op over the values as a balanced tree: independent halves, not one long dependent chain.
  static K tree(std::vector<K> v, kir::BinOp op);

  // The row slot (0 or 1) of C element e: which distinct row offset of the lane map it has.
  int slot_of(int e) const { return c_aff_[e].row0 == c_aff_[0].row0 ? 0 : 1; }

  // exp(x - y) as the builder lowers every exp (FAST_EXP=1: exp2 of the scaled difference).
  K exp_of_difference(const K& x, const K& y) const { return b_.exp_value(kir::binary(kir::BinOp::Sub, x, y)); }
  bool fast_exp() const { return b_.knobs().fast_exp; }

  // A key block's math, as emit_fold builds it: the block at j0 in buffer `buf`, its mask or not.
  // `pending` (OVERLAP only): the buffer of the previous block, whose P @ V is issued right after
  // this block's scores and waited for before o's rescale (none for the first block); with
  // OVERLAP this block's P is only repacked, for the next block to issue.
  using BlockMath = std::function<void(const K& j0, const K& buf, bool masked, const std::optional<K>& pending)>;

  // OVERLAP: the key blocks [lo, keys) as consecutive loops, each a straight line (no wgmma group
  // may stay in flight across a branch: ptxas would serialize every wgmma): the first block, the
  // masked blocks before the interior (under a lower key bound), the interior blocks unmasked,
  // the masked blocks after. The ring runs depth - 2 tiles ahead, so the buffer whose P @ V is
  // pending is never refilled; `last_pv` issues and completes the last block's P @ V from its
  // buffer once past the loops. A barrier ends them: the crew's (its own rows of the row slab, and
  // every tile by TMA), else the block's.
  void emit_overlapped_keys(const std::string& var, const K& lo, const K& keys, int chunk,
                            const std::vector<const Slab*>& slabs, const BlockMath& math,
                            const std::function<void(const K& buf)>& last_pv, const Crew* crew = nullptr);
  // The interior blocks' range [begin, end) on the block grid from lo, the same for every warp
  // of the block (the ring's barriers meet): keys no row of the block masks.
  std::pair<K, K> interior_range(const K& lo, const K& keys, int chunk);

  // One key block through the carrier: new row max, rescale factor, p = exp(s - max), the
  // scalar weighted sums across the quad, the vector field's P @ V on the tensor cores.
  void emit_online_update(const std::vector<std::string>& carrier, int fm, int fn, int ne, const std::string& sc,
                          const std::string& pf, const std::string& vf, const K& j0, const K& tile0, const K& buf,
                          const std::optional<K>& pending);

  // o += P @ V for the block: P, the scores' registers, repacked from C to A fragments (with
  // wgmma, every k16 step's, then one batch reading V in place; overlapped, the repack alone).
  // (`sib`: a sibling's P @ its value, from its slab, at its tile's axis; else the fold's own.)
  struct Sibling;
  void emit_pv(const std::string& orun, int fm, int fn, int ne, const std::string& sc, const std::string& pf,
               const std::string& vf, const K& j0, const K& tile0, const K& buf, const Sibling* sib = nullptr);
  // The wgmma batch o += P @ V with V's tile in buffer `buf` (not committed).
  void issue_pv(const std::string& orun, int fn, int ne, const std::string& pf, const K& buf, const Slab& vs);
  // Overlapped with a P @ V pending: waits for it (o's registers pinned after the wait) and, in a
  // ring of boxes only, releases its buffer.
  void retire_pv(const std::string& orun, int fm, int ne, const std::optional<K>& pending);

  // After the keys: the fold's results and the tile's stores, per C element of the vector
  // field (or per row when there is none), guarded to the rows and tile columns that exist;
  // staged through the ring's slabs, or with producer warps through `row_slab` (when not null:
  // the consumers' own, refilled every pass).
  void emit_fold_results(const std::vector<std::string>& carrier, int fm, int ne, const K& tile0, const K& rows,
                         const Slab* row_slab, const Crew* crew = nullptr);
  // PINGPONG's hand-overs around all of a kernel's key blocks, its tiles' and passes' alike (one
  // chain of turns: a warpgroup done with a tile starts the next while the others finish theirs):
  // the last warpgroup gives the first its first turn; the first takes the last hand-over.
  void turns_begin();
  void turns_end();

  // A rows-only fold's results and stores: per row slot (m-atom a, row r of the lane's two), one
  // thread of the lanes sharing the row; `bind` binds the carrier's registers of the slot.
  void emit_row_results(int fm, const K& rows, const std::vector<lir::Stmt>& stores,
                        const std::function<void(int a, int r)>& bind);

  // ---- a fold of any other proved monoid (general_, general_fold.cpp) ------------------------
  // The lane's carrier, one register a field and row slot (and, where the identity must not
  // meet a value, whether the slot combined anything), at the identity.
  struct LaneCarrier {
    KernelBuilder::CarrierSpec spec;
    std::vector<std::string> regs;  // per field, fm * 2 slots
    std::string has;                // empty: the identity meets values safely
  };
  LaneCarrier general_carrier(int fm);
  // Each score element of the block (its key masked where `ok` says) into its slot's carrier.
  void emit_general_update(const LaneCarrier& c, int fm, int fn, const std::string& sc, const K& j0,
                           const std::function<std::optional<K>(int a, int n, int e, const K& col)>& ok);
  // The lanes sharing a row combined (butterflies over the row-sharing masks), then the results.
  void emit_general_results(const LaneCarrier& c, int fm, const K& rows);

  // ---- stores staged through shared memory ---------------------------------------------------
  // A C element's lanes hold two adjacent columns of eight rows: stored from registers, each
  // warp store touches eight 8-byte pieces of eight rows (2-byte stores, a quarter of each
  // sector; on a one-block-an-SM fold the epilogue was a quarter of the stall samples, all on
  // the load/store queue). Staged in a slab the loop no longer needs, the block's tile leaves
  // as whole 16-byte chunks, consecutive threads on consecutive chunks of a row.
  struct StagedOut {
    std::string array, tensor, col_axis;
    std::vector<std::string> vars;  // the store's subscripts (axis names), the column axis last
    ScalarType type = ScalarType::F32;
    int rows = 0, cols = 0, xor_mod = 1;  // chunk c of row r sits at chunk c ^ (r % xor_mod)
    // The tile in panels of row_elems columns (row r of a panel at r * row_elems), panel_elems
    // apart: one panel of all the columns, or the row slab's own 64-column panels.
    int row_elems = 0;
    int64_t panel_elems = 0;
  };

  // A shared buffer of its own for a block's `rows` x `cols` tile of results, where the target's
  // shared memory holds it beside the kernel's arrays (else nullopt); the caller declares it
  // (`out_->shared`) once something is staged through it.
  std::optional<Slab> epilogue_buffer(int rows, int cols);

  // Staged when the element's statements end with its one store, a plain one of the operands'
  // type contiguous along the column axis, and one of `slabs` (free once the loop is done) holds
  // the block's tile. Says so in a comment of the kernel.
  // With `slab_layout`, the tile takes the slab's own (swizzled) layout, each row where the slab
  // keeps that row: a crew stages through its own rows only.
  std::optional<StagedOut> staged_out(const std::vector<lir::Stmt>& body, const std::string& col_axis, int cols,
                                      const std::vector<const Slab*>& slabs, bool slab_layout = false);
  // staged_out's decision, without the comment.
  std::optional<StagedOut> staged_form(const std::vector<lir::Stmt>& body, const std::string& col_axis, int cols,
                                       const std::vector<const Slab*>& slabs, bool slab_layout = false) const;
  // A contraction's ring the next tile's copies may refill under this tile's epilogue (a
  // persistent kernel's producers, or another CTA of its cluster): the epilogue stages elsewhere.
  bool ring_refilled_under_epilogue() const {
    return !fold_ && plan_.persistent && (plan_.producer_threads > 0 || plan_.cluster > 1);
  }
  // Then through a buffer of its own: the whole tile, or where shared memory holds only part of it
  // beside the ring, the tile in passes of its columns; the buffer and the passes, nullopt where
  // none stages.
  std::optional<std::pair<Slab, int>> own_epilogue();

  // Whether any of the statements (their values, a fold's results) reads a tensor: then an element
  // outside the tensor's bounds must not be computed, and staging it keeps its bounds test; else
  // every element of the tile is staged, in range or not (write_out tests the bounds).
  static bool reads_tensor(const std::vector<lir::Stmt>& stmts);
  // One statement of a C element's epilogue; with shared_scope (unguarded: the elements' statements
  // all in the enclosing scope) a Compute's register renamed apart, its name bound to the new one.
  void element_stmt(const lir::Stmt& s, bool shared_scope);
  // A C element's statements: guarded, under its bounds test `in_range`; else in the enclosing scope.
  void emit_element(bool guarded, const K& in_range, std::vector<kir::Stmt> one);
  // The C elements of a vector field's register tile at `tile0` along `axis`: each bound (its row
  // and column, its carrier registers by `bind`), its results (then `after_results`) and stores,
  // staged through `staged` or stored, under its bounds test where `guarded` (emit_element).
  void emit_tile_elements(int fm, int ne, const K& tile0, const K& rows, const tir::Axis& axis,
                          const std::vector<lir::Stmt>& results, const std::vector<lir::Stmt>& stores,
                          const std::optional<StagedOut>& staged, bool guarded,
                          const std::function<void(int a, int n, int e)>& bind,
                          const std::function<void()>& after_results = {});

  // Element (r, c) of the staged tile (I32): 16-byte chunks XOR-swizzled by the row, so the
  // eight rows of a warp's C store, and the chunks a warp reads out, fall in distinct banks.
  K staged_at(const StagedOut& so, const K& r, const K& c) const;

  // C element (a, n, e) at row warp_rows + 16 a + row0 + grp, column warp_cols + 8 n + col0 +
  // col_t tig of the tile: staged_at folded into a per-lane base (hoisted) and a constant, the
  // chunk warp_cols / 8 + (n ^ (grp % xor_mod)). With `held` (the elements' statements in one
  // scope), an element whose right neighbour in the row comes next is held there, and the pair
  // goes out as one 4-byte store with that neighbour.
  void stage_element(const StagedOut& so, K value, int a, int n, int e, std::optional<K>* held = nullptr);

  // After a barrier, chunk q of the tile (row q / (cols / 8), 8 columns from col0) goes out with
  // one 16-byte load and store where it is whole and aligned in the tensor, else element by element.
  // With a crew, only its rows, by its threads, between its barriers.
  void write_out(const StagedOut& so, const K& col0, const K& rows, const K& cols, const Crew* crew = nullptr);

 public:
  std::vector<lir::Stmt> kernel_body_;

 private:
  KernelBuilder& b_;
  MmaTile t_;
  std::string why_;
  KernelPlan plan_;                                 // what plan() decided, for the emitters and --ir plan
  std::map<std::string, SlabChoice> slab_choices_;  // by role
  std::map<std::string, std::string> slab_shares_;  // a value slab's role -> the column slab's whose buffers it reads
  const lir::Stmt* tile_loop_ = nullptr;
  const lir::Stmt* fold_ = nullptr;
  int contraction_stmt_ = -1;  // the body statement holding the contraction
  struct Pivoted {             // a max-rescaled sum's fields: the pivot (the key) and those it rescales
    size_t key = 0;
    std::vector<size_t> weighted;
    double scale = 1;  // the rescale and the weights are exp(scale·(x - key))
  };
  Pivoted rescaled_;
  // The fold's per-block update. False: from the max-rescaled sum's normal form (the block's
  // max, one rescale, sums of exp(x - max) w, P @ V). True (any other proved monoid, no vector
  // field): each element through the monoid's combine into the lane's carrier, the lanes
  // sharing a row combined once after the last block.
  bool general_ = false;
  bool summed_ = false;              // plan_summed: P is the weight itself, nothing rescaled
  std::vector<Expr> general_lifts_;  // general_: each field's lift, the contraction as kContracted
  std::vector<size_t> flags_;        // or-combined flags riding along the fold
  bool is_flag(size_t f) const { return std::find(flags_.begin(), flags_.end(), f) != flags_.end(); }
  tir::Axis row_axis_, col_axis_;
  Contraction first_;
  // With first_.outer: the chunked axis's extent in whole chunks, the flat K loop's step per point.
  std::optional<K> outer_span_;
  std::optional<Expr> value_read_;
  size_t value_field_ = static_cast<size_t>(-1);
  std::vector<int> masks_;
  LaneAffine c_aff_[4];
  K grp_, tig_, row0_, col0_, warp_m_, warp_n_, row_block0_, col_block0_, group_row0_;
  std::optional<MmaStage> stage_;
  std::optional<Slab> kslab_, vslab_, kslab2_;
  bool no_contraction_ = false;
  std::optional<Contraction> second_;  // plan_summed: a second contraction in the weight (contracted_reg(1))
  // A sibling fold after the first register tile: its loop and fold, its P (the kernel's
  // contraction registers), the input P multiplies and (with STAGE) its slab.
  struct Sibling {
    const lir::Stmt* loop = nullptr;
    const lir::Stmt* fold = nullptr;
    Expr weight, value;
    std::optional<Slab> slab;
  };
  std::vector<Sibling> siblings_;
  std::optional<K> scale_;             // the key lift's positive scale, when it is raw * scale
  std::optional<KeyBound> key_limit_;  // the fold's key bound (causal), read once per kernel
  std::optional<KeyBound> key_other_;  // a bound on the other side (a window: j <= i && j > i - W)
  bool key_exact_ = false;             // the predicate is the bounds' comparisons alone
  K lane32_, warp_rows32_, warp_cols32_;
  std::vector<kir::Stmt>* top_ = nullptr;  // the kernel's outermost block, where hoisted values go
  size_t hoist_at_ = 0;
  std::map<std::string, K> hoisted_;
  kir::Kernel* out_ = nullptr;
  kir::Program* program_ = nullptr;
  std::string tma_bars_, tma_free_, tma_phase_, tma_free_phase_;  // TMA mbarriers and phase bits (empty: no TMA)
  std::optional<K> cta_rank_;                                     // CLUSTER: the CTA's rank in its cluster (I64)
  std::string cluster_slab_;                                      // ... and the slab (array) its CTAs share
  int rows_per_warp_ = 0, cols_per_warp_ = 0;
  int64_t rows_per_block_ = 0, cols_per_block_ = 0;
  LaneFloats* lane_floats_ = nullptr;  // set while an interior block's scores are emitted
};

}  // namespace emmy::lower::detail
