// The SIMT interpreter: a block's threads advance in lockstep, every register a vector over
// them; shared memory, asynchronous copies, mbarriers, bank conflicts and races are modelled
// (the Block: simt_block.hpp; its parts: simt_values, simt_exec, simt_memory, simt_async).
#include "interp/simt_block.hpp"

namespace emmy {
namespace simt_detail {

void Port::read_shared(uint32_t byte_addr, void* dst, uint32_t bytes) {
  block_.shared_read(thread_, base_ + byte_addr, dst, bytes);
}

void Port::write_shared(uint32_t byte_addr, const void* src, uint32_t bytes) {
  written_ += bytes;
  if (mode_ == Mode::Direct) return block_.shared_write(thread_, base_ + byte_addr, src, bytes);
  AsyncWrite w = block_.queue_write(thread_, base_ + byte_addr, src, bytes,
                                    mode_ == Mode::CpAsync ? Pending::CpAsync : Pending::Tma);
  if (mode_ == Mode::CpAsync)
    block_.queue_cp_async(thread_, std::move(w));
  else
    mbarrier_->inflight.push_back(std::move(w));
}

void Port::read_global(int buffer, uint64_t byte_offset, void* dst, uint32_t bytes) {
  block_.global_read(thread_, buffer, byte_offset, dst, bytes, mode_ == Mode::CpAsync);
}

void Port::read_cluster_shared(uint32_t cta, uint32_t byte_addr, void* dst, uint32_t bytes) {
  block_.cluster_shared_read(thread_, cta, byte_addr, dst, bytes);
}

void Port::write_global(int buffer, uint64_t byte_offset, const void* src, uint32_t bytes) {
  block_.global_write(thread_, buffer, byte_offset, src, bytes);
}

void Block::run() {
  Lanes all(static_cast<size_t>(threads_));
  std::iota(all.begin(), all.end(), 0);
  start_clocks();
  std::fill(smem_.data.begin(), smem_.data.end(), uint8_t{0xff});
  exec_body(kernel_.body, all);
  drop_pending();
}

// Asynchronous copies never waited for are dropped with the block; their bytes stop pending.
void Block::drop_pending() {
  auto clear = [this](const std::vector<AsyncWrite>& writes) {
    for (const AsyncWrite& w : writes)
      for (size_t b = 0; b < w.bytes.size(); ++b) smem_.state[w.addr + b].pending = Pending::None;
  };
  for (const ThreadAsync& a : async_) {
    clear(a.open);
    for (const auto& group : a.committed) clear(group);
  }
  for (const auto& [addr, m] : mbarriers_) {
    clear(m.inflight);
    clear(m.landing);
  }
}

std::string Block::describe_shared(uint32_t addr) const {
  const uint32_t stride = std::max<uint32_t>(launch_.shared_stride, 1), cta = addr / stride;
  const std::string of = launch_.cluster > 1 ? fmt::format(" of CTA {} of the cluster", cta) : "";
  addr %= stride;
  for (const auto& [name, s] : launch_.shared) {
    auto bytes = static_cast<uint32_t>(kir::type_bytes(s.type));
    if (addr >= s.offset && addr < s.offset + s.count * bytes)
      return fmt::format("shared {}[{}]{}", name, (addr - s.offset) / bytes, of);
  }
  return fmt::format("shared byte {}{}", addr, of);
}

}  // namespace simt_detail

namespace {

using namespace simt_detail;

// ---- the program -------------------------------------------------------------------------------

int64_t dim_value(const std::string& dim, const SizeBindings& sizes, const std::string& buffer) {
  bool literal = !dim.empty() && std::all_of(dim.begin(), dim.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (literal && dim.size() <= 18) return std::stoll(dim);
  auto it = sizes.find(dim);
  if (literal || it == sizes.end()) throw SimtError(fmt::format("buffer {}: dimension '{}' is not bound", buffer, dim));
  return it->second;
}

Global make_global(const kir::Buffer& b, const SizeBindings& sizes, const TensorMap& buffers) {
  Global g;
  g.name = b.name;
  g.type = b.type;
  g.count = 1;
  for (const std::string& dim : b.dims) {
    g.shape.push_back(dim_value(dim, sizes, b.name));
    if (g.shape.back() < 0) throw SimtError(fmt::format("buffer {}: dimension {} is negative", b.name, dim));
    g.count *= g.shape.back();
  }
  auto bytes = static_cast<size_t>(kir::type_bytes(b.type));
  g.bytes.assign(static_cast<size_t>(g.count) * bytes, uint8_t{0xff});  // NaN / -1 poison
  if (b.role != kir::Buffer::Role::Input) return g;
  auto it = buffers.find(b.name);
  if (it == buffers.end()) throw SimtError(fmt::format("input buffer {} is not given", b.name));
  const HostTensor& t = it->second;
  if (t.shape != g.shape || static_cast<int64_t>(t.data.size()) != g.count)
    throw SimtError(fmt::format("input buffer {}: the tensor's shape does not match the buffer's dims", b.name));
  bool int_ok = !is_f(b.type) && !is_float(t.dtype);
  if (t.dtype != dtype_of(b.type) && !(b.type == ScalarType::U32 && int_ok))
    throw SimtError(
        fmt::format("input buffer {} is {}, the tensor is {}", b.name, kir::type_name(b.type), dtype_name(t.dtype)));
  for (size_t k = 0; k < t.data.size(); ++k) {
    uint8_t* at = g.bytes.data() + k * bytes;
    if (is_f(b.type))
      encode_float(b.type, kir::round_to(b.type, t.data[k]), at);
    else
      encode_int(b.type, wrap_int(b.type, static_cast<int64_t>(t.data[k])), at);
  }
  return g;
}

HostTensor to_host(const Global& g) {
  HostTensor t;
  t.dtype = dtype_of(g.type);
  t.shape = g.shape;
  // As the GPU's outputs are read back: a bool byte other than 0 or 1 (the 0xff poison of an
  // element never written) reads as NaN, so that the check reports it.
  t.data = kir::decode_values(g.type, g.bytes.data(), static_cast<size_t>(g.count));
  return t;
}

// grid_x, with the scalar parameters bound for this launch.
int64_t eval_launch_expr(const Expr& e, const Launch& launch) {
  std::map<std::string, int64_t> scalars;
  for (const auto& [name, p] : launch.scalars) scalars[name] = p.value;
  auto v = kir::evaluate_launch_expr(e, scalars);
  if (const auto* what = std::get_if<std::string>(&v))
    throw SimtError(fmt::format("kernel {}: grid_x {}", launch.kernel->name, *what));
  return std::get<int64_t>(v);
}

// Whether a statement may block its warps: a barrier, an mbarrier wait, a named barrier's sync,
// setmaxnreg.inc, a cluster's barrier, or a statement holding one. The `if`s that do are collected, and the loops
// holding a named barrier whose id is not a constant (warps taking turns).
struct Blocking {
  bool blocks = false, turns = false;
};
Blocking may_block(const Stmt& s, Launch& l) {
  if (s.kind == Stmt::Kind::Barrier) return {true, false};
  if (s.kind == Stmt::Kind::Intrinsic) {
    auto id = static_cast<IntrinsicId>(s.intrinsic);
    const bool named = id == IntrinsicId::BarSync || id == IntrinsicId::BarArrive;
    return {id == IntrinsicId::MbarrierTryWait || id == IntrinsicId::BarSync || id == IntrinsicId::SetmaxnregInc ||
                id == IntrinsicId::ClusterSync,
            named && !s.args.empty() && s.args[0].kind != Expr::Kind::Const};
  }
  Blocking b;
  for (const std::vector<Stmt>* list : {&s.body, &s.orelse})
    for (const Stmt& x : *list) {
      Blocking inner = may_block(x, l);
      b.blocks = b.blocks || inner.blocks;
      b.turns = b.turns || inner.turns;
    }
  if (b.blocks && s.kind == Stmt::Kind::If) l.blocking_ifs.insert(&s);
  if (b.turns && s.kind == Stmt::Kind::For) l.turn_loops.insert(&s);
  return b;
}

// The scratch copy a staged map is over, made as the host makes it before the launch: the
// buffer's rows, each at the map's pitch (the gap past a row poisoned: the map never reads it).
Global staged_copy(const Global& g, const kir::TmaMap& m, const std::string& map) {
  Global copy{fmt::format("{} (staged for {})", g.name, map), g.type, g.shape, g.count, {}};
  const uint64_t rows = kir::tma_staged_rows(m), row = kir::tma_row_bytes(m);
  copy.bytes.assign(rows * m.staged_pitch, uint8_t{0xff});
  for (uint64_t r = 0; r < rows; ++r)
    std::memcpy(copy.bytes.data() + r * m.staged_pitch, g.bytes.data() + r * row, row);
  return copy;
}

Launch make_launch(const kir::Kernel& k, std::vector<Global>& globals, const SizeBindings& sizes,
                   const SimtOptions& options) {
  Launch l;
  l.kernel = &k;
  l.globals = &globals;
  l.race_check = options.race_check;
  if (k.block_threads < 1 || k.block_threads > kMaxBlockThreads)
    throw SimtError(fmt::format("kernel {}: {} threads per block", k.name, k.block_threads));
  for (const kir::Param& p : k.params) {
    if (p.kind == kir::Param::Kind::Buffer) {
      auto it = std::find_if(globals.begin(), globals.end(), [&](const Global& g) { return g.name == p.name; });
      if (it == globals.end())
        throw SimtError(fmt::format("kernel {}: parameter {} names no program buffer", k.name, p.name));
      if (it->type != p.type)
        throw SimtError(fmt::format("kernel {}: parameter {} is {}, the buffer is {}", k.name, p.name,
                                    kir::type_name(p.type), kir::type_name(it->type)));
      l.buffer_of[p.name] = static_cast<int>(it - globals.begin());
    } else if (p.kind == kir::Param::Kind::Scalar) {
      auto it = sizes.find(p.name);
      if (it == sizes.end())
        throw SimtError(fmt::format("kernel {}: scalar parameter {} is not bound", k.name, p.name));
      l.scalars[p.name] = {p.type, is_f(p.type) ? it->second : wrap_int(p.type, it->second)};
    } else {
      // A map the test gave, else the one the host would encode from the parameter; a map the
      // sizes do not allow is kept with buffer -1 (the kernel must not copy through it).
      if (auto it = options.tensor_maps.find(p.name); it != options.tensor_maps.end()) {
        if (it->second.buffer < 0 || static_cast<size_t>(it->second.buffer) >= globals.size())
          throw SimtError(fmt::format("kernel {}: tensor map {} names buffer #{}", k.name, p.name, it->second.buffer));
        l.maps[p.name] = it->second;
        continue;
      }
      auto g = std::find_if(globals.begin(), globals.end(), [&](const Global& x) { return x.name == p.map_of; });
      if (g == globals.end())
        throw SimtError(
            fmt::format("kernel {}: tensor map {} is over {}, not a buffer of the program", k.name, p.name, p.map_of));
      auto map = kir::tma_map_of(p, g->type, g->shape, static_cast<int>(g - globals.begin()));
      if (!std::holds_alternative<kir::TmaMap>(map)) {
        l.maps[p.name] = kir::TmaMap{};
        continue;
      }
      kir::TmaMap& m = l.maps[p.name] = std::get<kir::TmaMap>(map);
      if (m.staged_pitch != 0) {
        m.buffer = static_cast<int>(globals.size());
        globals.push_back(staged_copy(*g, m, p.name));
      }
    }
  }
  uint64_t offset = 0, widest = 16;
  for (const kir::SharedArray& a : k.shared) {
    uint64_t align = static_cast<uint64_t>(std::max(a.align, kir::type_bytes(a.type)));
    widest = std::max(widest, align);
    offset = (offset + align - 1) / align * align;
    l.shared[a.name] = {a.type, a.count, static_cast<uint32_t>(offset)};
    offset += static_cast<uint64_t>(a.count) * static_cast<uint64_t>(kir::type_bytes(a.type));
    if (offset > (uint64_t{1} << 31))
      throw SimtError(fmt::format("kernel {}: shared array {} is too large", k.name, a.name));
  }
  l.shared_bytes = static_cast<uint32_t>(offset);
  // (Each CTA of a cluster has its window at a multiple of it: its arrays aligned as in the first.)
  l.shared_stride = static_cast<uint32_t>((offset + widest - 1) / widest * widest);
  for (const Stmt& s : k.body) may_block(s, l);
  l.grid = eval_launch_expr(k.grid_x, l);
  if (l.grid < 0) throw SimtError(fmt::format("kernel {}: grid_x is {}", k.name, l.grid));
  l.cluster = k.cluster;
  if (l.cluster < 1 || l.cluster > 8 || static_cast<int64_t>(l.cluster) * k.block_threads > 8 * kMaxBlockThreads)
    throw SimtError(fmt::format("kernel {}: a cluster of {} CTAs", k.name, l.cluster));
  if (l.cluster > 1 && k.block_threads % kWarp != 0)
    throw SimtError(
        fmt::format("kernel {}: a cluster of CTAs of {} threads (not whole warps)", k.name, k.block_threads));
  if (l.grid % l.cluster != 0)
    throw SimtError(
        fmt::format("kernel {}: grid_x {} is not a multiple of its cluster's {} CTAs", k.name, l.grid, l.cluster));
  if (k.persistent) {  // the CTAs walk the tiles (whole clusters of them: at least one)
    const int64_t all = l.grid;
    l.grid = std::min(l.grid, options.sms);
    l.grid = std::max<int64_t>(l.grid - l.grid % l.cluster, std::min<int64_t>(l.cluster, all));
  }
  return l;
}

std::vector<int64_t> block_order(int64_t grid, const SimtOptions& options, size_t kernel_index) {
  std::vector<int64_t> order(static_cast<size_t>(grid));
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle_blocks) {
    std::mt19937_64 rng(options.seed + kernel_index);
    std::shuffle(order.begin(), order.end(), rng);
  }
  return order;
}

}  // namespace

SimtReport run_simt(const kir::Program& program, const SizeBindings& sizes, TensorMap& buffers,
                    const SimtOptions& options) {
  if (auto broken = kir::check_limits(program, sizes)) throw std::runtime_error(*broken);
  std::vector<Global> globals;
  for (const kir::Buffer& b : program.buffers) globals.push_back(make_global(b, sizes, buffers));
  SimtReport report;
  for (size_t ki = 0; ki < program.kernels.size(); ++ki) {
    const kir::Kernel& k = program.kernels[ki];
    Launch launch = make_launch(k, globals, sizes, options);
    SharedScratch smem;
    const auto cluster = static_cast<size_t>(launch.cluster);
    smem.data.resize(launch.shared_stride * cluster);
    smem.state.resize(launch.shared_stride * cluster);
    smem.reads.resize(static_cast<size_t>((k.block_threads + kWarp - 1) / kWarp) * cluster);
    // A cluster's CTAs run together, as one Block.
    for (int64_t b : block_order(launch.grid / launch.cluster, options, ki)) {
      Block(launch, smem, b, report).run();
      report.blocks += launch.cluster;
      report.threads += int64_t{k.block_threads} * launch.cluster;
    }
  }
  for (size_t i = 0; i < program.buffers.size(); ++i)
    if (program.buffers[i].role == kir::Buffer::Role::Output) buffers[program.buffers[i].name] = to_host(globals[i]);
  return report;
}

}  // namespace emmy
