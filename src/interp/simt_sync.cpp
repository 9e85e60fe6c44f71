// The SIMT interpreter's synchronization: the warps' vector clocks (what orders one warp's
// shared accesses before another's), barriers named and not, blocking a fiber, and the
// register budgets setmaxnreg moves between warpgroups.
#include "interp/simt_block.hpp"

namespace emmy::simt_detail {

void join(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

// A new block: everything before it is ordered before everything in it; registers as the
// launch allocates them (the register file split evenly, 8 a thread at a time, 256 at most),
// and no register free for setmaxnreg.inc but those a setmaxnreg.dec releases (a block that
// waits for the rest of the register file hangs on the GPU).
void Block::start_clocks() {
  ++smem_.now;
  for (Clock& c : clocks_) c.assign(static_cast<size_t>(warps_), smem_.now);
  const int cta_warps = std::max((cta_threads_ + kWarp - 1) / kWarp, 1);  // registers go to whole warps
  const int each = std::min(256, kRegisterFile / (cta_warps * kWarp) / 8 * 8);
  std::fill(wg_regs_.begin(), wg_regs_.end(), each);
  std::fill(free_registers_.begin(), free_registers_.end(), 0);  // each CTA's SM's
}

// An arrival of `warp`: its accesses so far, and what it was ordered after, join `into`.
void Block::release(int32_t warp, Clock& into) {
  ++smem_.now;
  Clock& c = clocks_[static_cast<size_t>(warp)];
  c[static_cast<size_t>(warp)] = smem_.now;
  join(into, c);
}

void Block::acquire(int32_t warp, const Clock& from) { join(clocks_[static_cast<size_t>(warp)], from); }

void Block::acquire_lanes(const Lanes& lanes, const Clock& from) {
  int32_t last = -1;
  for (int32_t t : lanes)
    if (warp_of(t) != last) acquire(last = warp_of(t), from);
}

// Every warp at one barrier: each one's accesses before it are ordered before all after it.
void Block::sync_all() {
  ++smem_.now;
  for (Clock& c : clocks_) std::fill(c.begin(), c.end(), smem_.now);
}

void Block::block_until(int32_t thread, const std::function<bool()>& ready, const std::function<std::string()>& what) {
  if (ready()) return;
  Registers* mine = regs_;
  std::optional<std::string> dead = fibers_.wait(ready, what);
  regs_ = mine;
  if (dead) fail(thread, *dead);
}

// bar.sync / bar.arrive id, count (and __syncthreads from several fibers): the lanes arrive;
// the generation completes at `count` threads, and its waiters acquire every arrival's release.
void Block::arrive_barrier(int id, int64_t count, const Lanes& lanes, bool wait) {
  NamedBarrier& b = bars_[static_cast<size_t>(id)];
  if (b.arrived == 0) b.expected = count;
  if (b.expected != count)
    fail(lanes[0], fmt::format("barrier {} for {} threads while {} threads of a barrier for {} arrived", id, count,
                               b.arrived, b.expected));
  b.arrived += static_cast<int64_t>(lanes.size());
  if (b.arrived > b.expected)
    fail(lanes[0], fmt::format("{} threads arrive at barrier {}, which is for {}", b.arrived, id, b.expected));
  b.who.insert(b.who.end(), lanes.begin(), lanes.end());
  int32_t last = -1;
  for (int32_t t : lanes)
    if (warp_of(t) != last) release(last = warp_of(t), b.released);
  const uint64_t generation = b.generation;
  if (b.arrived == b.expected) {
    ++b.generation;
    b.completed = std::move(b.released);
    b.released.clear();
    b.arrived = 0;
    b.who.clear();
  } else if (wait) {
    block_until(
        lanes[0], [&b, generation] { return b.generation != generation; },
        [this, &b, id] {
          if (id != 0)
            return fmt::format("barrier {} never completes: {} of its {} threads arrive (bar.sync {}, {})", id,
                               b.arrived, b.expected, id, b.expected);
          Lanes sorted = b.who;
          std::sort(sorted.begin(), sorted.end());
          int32_t missing = 0;
          while (missing < threads_ && std::binary_search(sorted.begin(), sorted.end(), missing)) ++missing;
          return fmt::format("barrier divergence: {} of {} threads reach the barrier (thread {} does not)", b.arrived,
                             b.expected, missing % cta_threads_);
        });
  }
  if (wait) acquire_lanes(lanes, b.completed);
}

void Block::arrive_ctas(int id, int64_t count, const Lanes& lanes, bool wait) {
  if (launch_.cluster == 1) return arrive_barrier(id, count, lanes, wait);
  std::vector<std::pair<int, Lanes>> parts;  // (the CTA's barrier, its lanes)
  for (int32_t t : lanes) {
    const int slot = cta_of(t) * kNamedBarriers + id;
    if (parts.empty() || parts.back().first != slot) parts.push_back({slot, {}});
    parts.back().second.push_back(t);
  }
  std::vector<uint64_t> generations;
  for (const auto& [slot, mine] : parts) {
    generations.push_back(bars_[static_cast<size_t>(slot)].generation);
    arrive_barrier(slot, count, mine, false);
  }
  if (!wait) return;
  for (size_t i = 0; i < parts.size(); ++i) {
    const NamedBarrier& b = bars_[static_cast<size_t>(parts[i].first)];
    const uint64_t generation = generations[i];
    block_until(
        parts[i].second[0], [&b, generation] { return b.generation != generation; },
        [&b, id] {
          return fmt::format("barrier {} of a CTA never completes: {} of its {} threads arrive", id, b.arrived,
                             b.expected);
        });
    acquire_lanes(parts[i].second, b.completed);
  }
}

// setmaxnreg: a warpgroup's registers a thread go down (to the register file's free rest) or
// up, waiting until other warpgroups freed enough.
void Block::set_max_registers(const kir::IntrinsicInfo& info, int64_t regs, const Lanes& lanes) {
  if (regs < 24 || regs > 256 || regs % 8 != 0)
    fail(lanes[0], fmt::format("{} {}: the count must be a multiple of 8 in [24, 256]", info.name, regs));
  const bool up = info.id == IntrinsicId::SetmaxnregInc;
  for (size_t p = 0; p < lanes.size(); p += 4 * kWarp) {
    const int32_t first = lanes[p];
    if (first % (4 * kWarp) != 0 || p + 4 * kWarp > lanes.size() || lanes[p + 4 * kWarp - 1] != first + 4 * kWarp - 1)
      fail(first, fmt::format("{} in divergent code: warpgroup {} has inactive lanes", info.name, first / (4 * kWarp)));
    int& have = wg_regs_[static_cast<size_t>(first / (4 * kWarp))];
    int64_t& free_registers = free_registers_[static_cast<size_t>(cta_of(first))];
    if (up ? regs < have : regs > have)
      fail(first, fmt::format("{} {} {} the warpgroup's {} registers a thread", info.name, regs,
                              up ? "is below" : "is above", have));
    const int64_t delta = (regs - have) * 4 * kWarp;
    if (up)
      block_until(
          first, [&free_registers, delta] { return free_registers >= delta; },
          [this, &info, regs, delta, first, &free_registers] {
            return fmt::format(
                "{} {} of warpgroup {} waits for {} registers, {} of them are free (another "
                "warpgroup must setmaxnreg.dec first)",
                info.name, regs, (first % cta_threads_) / (4 * kWarp), delta, free_registers);
          });
    free_registers -= delta;
    have = static_cast<int>(regs);
  }
}

// The named barriers and setmaxnreg; false for any other intrinsic.
bool Block::synchronizing(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                          const std::vector<uint32_t>& in) {
  switch (info.id) {
    case IntrinsicId::BarSync:
    case IntrinsicId::BarArrive: {
      // The id, warp by warp: one barrier for the whole warp (lanes of other warps may name another).
      const auto id = static_cast<int64_t>(static_cast<int32_t>(in[0])), count = s.imm[0];
      for (size_t k = 1; k < lanes.size(); ++k)
        if (in[k] != in[0]) {
          if (warp_of(lanes[k]) == warp_of(lanes[0]))
            fail(lanes[k], fmt::format("{} with barrier {} in a warp whose thread {} names barrier {}", info.name,
                                       static_cast<int32_t>(in[k]), lanes[0], id));
          fail(lanes[k], fmt::format("{} names barrier {} in warp {} and {} in warp {} of one fiber: the warps must "
                                     "run apart (a branch between them, or a loop the interpreter splits)",
                                     info.name, id, warp_of(lanes[0]), static_cast<int32_t>(in[k]), warp_of(lanes[k])));
        }
      if (id < 0 || id >= kNamedBarriers || count < kWarp || count % kWarp != 0 || count > cta_threads_)
        fail(lanes[0], fmt::format("{} {}, {}: the barrier is 0 to {}, the count a multiple of 32 up to the block's {}",
                                   info.name, id, count, kNamedBarriers - 1, cta_threads_));
      arrive_ctas(static_cast<int>(id), count, lanes, info.id == IntrinsicId::BarSync);
      return true;
    }
    case IntrinsicId::ClusterSync:  // every thread of every CTA of the cluster: a barrier of its own
      arrive_barrier(kNamedBarriers * launch_.cluster, threads_, lanes, true);
      return true;
    case IntrinsicId::SetmaxnregInc:
    case IntrinsicId::SetmaxnregDec: set_max_registers(info, s.imm[0], lanes); return true;
    default: return false;
  }
}

}  // namespace emmy::simt_detail
