// The SIMT interpreter's intrinsics: the table's semantics, cp.async and TMA queues, mbarriers, wgmma groups.
#include "interp/simt_block.hpp"

namespace emmy::simt_detail {

// ---- intrinsics --------------------------------------------------------------------------------

const kir::IntrinsicInfo& Block::intrinsic(const Stmt& s, int32_t thread) const {
  if (s.intrinsic < 0 || s.intrinsic >= static_cast<int>(IntrinsicId::Count))
    fail(thread, fmt::format("unknown intrinsic #{}", s.intrinsic));
  const kir::IntrinsicInfo& info = kir::intrinsic_info(static_cast<IntrinsicId>(s.intrinsic));
  if (s.args.size() != info.ins.size() || s.outs.size() != info.outs.size() ||
      s.imm.size() != static_cast<size_t>(info.imms))
    fail(thread,
         fmt::format("{} takes {} inputs, {} outputs and {} immediates; the statement has {}, {} and {}", info.name,
                     info.ins.size(), info.outs.size(), info.imms, s.args.size(), s.outs.size(), s.imm.size()));
  return info;
}

// The operands as raw words, lane-major within each word: in[w * lanes + k].
std::vector<uint32_t> Block::operand_words(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes) {
  size_t n = lanes.size();
  std::vector<uint32_t> in(static_cast<size_t>(total_words(info.ins)) * n);
  size_t row = 0;
  for (size_t o = 0; o < info.ins.size(); ++o) {
    Vals v = convert(eval(s.args[o], lanes), info.ins[o]);
    bool wide = type_words(info.ins[o]) == 2;
    for (size_t k = 0; k < n; ++k) {
      auto [lo, hi] = to_words(v, k);
      in[row * n + k] = lo;
      if (wide) in[(row + 1) * n + k] = hi;
    }
    row += wide ? 2 : 1;
  }
  return in;
}

void Block::write_outs(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                       const std::vector<uint32_t>& out) {
  size_t n = lanes.size(), row = 0;
  for (size_t o = 0; o < info.outs.size(); ++o) {
    ScalarType t = info.outs[o];
    bool wide = type_words(t) == 2;
    Vals v = make_vals(t, n);
    for (size_t k = 0; k < n; ++k) from_words(v, k, out[row * n + k], wide ? out[(row + 1) * n + k] : 0);
    row += wide ? 2 : 1;
    int elem = 0;
    Register& r = reg(s.outs[o], lanes[0], &elem);
    if (r.type != t)
      fail(lanes[0], fmt::format("output {} of {} is {}, register {} is {}", o, info.name, kir::type_name(t),
                                 s.outs[o].name, kir::type_name(r.type)));
    if (kir::wgmma_n(info.id) == 0) check_not_in_flight(r, elem, s.outs[o], lanes);
    store_lanes(r, elem, v, lanes, threads_);
  }
}

void Block::call(const kir::IntrinsicInfo& info, kir::IntrinsicCall& c, int32_t thread) {
  if (info.semantics == nullptr) fail(thread, fmt::format("intrinsic {} has no CPU semantics", info.name));
  try {
    info.semantics(c);
  } catch (const SimtError&) {
    throw;
  } catch (const std::exception& e) {
    fail(thread, fmt::format("{}: {}", info.name, e.what()));
  }
}

// A collective runs once per group of `group` lanes (a warp, or a warpgroup of four), all active.
void Block::run_warps(const kir::IntrinsicInfo& info, const Lanes& lanes, const std::vector<uint32_t>& in,
                      std::vector<uint32_t>& out, std::span<const int64_t> imm, int group) {
  size_t n = lanes.size(), in_rows = in.size() / n, out_rows = out.size() / n, g = static_cast<size_t>(group);
  for (size_t p = 0; p < n; p += g) {
    int32_t first = lanes[p];
    if (first % group != 0 || p + g > n || lanes[p + g - 1] != first + group - 1)
      fail(first, fmt::format("{0}-collective {1} in divergent code: {0} {2} has inactive lanes",
                              group == kWarp ? "warp" : "warpgroup", info.name, first / group));
    std::vector<uint32_t> win(in_rows * g), wout(out_rows * g);
    for (size_t r = 0; r < in_rows; ++r)
      std::copy_n(in.begin() + static_cast<ptrdiff_t>(r * n + p), g, win.begin() + static_cast<ptrdiff_t>(r * g));
    Port port(*this, first, Port::Mode::Direct, cta_base(cta_of(first)));
    kir::IntrinsicCall c = make_call(win, wout, group, imm, &port);
    call(info, c, first);
    for (size_t r = 0; r < out_rows; ++r)
      std::copy_n(wout.begin() + static_cast<ptrdiff_t>(r * g), g, out.begin() + static_cast<ptrdiff_t>(r * n + p));
  }
}

// cp.async and TMA: each thread's copy is computed now and queued; its bytes pend until the
// thread's wait_group (cp.async) or the wait on the mbarrier phase that counts it (TMA).
void Block::issue_async(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                        const std::vector<uint32_t>& in) {
  size_t n = lanes.size(), rows = in.size() / n;
  bool tma = kir::tma_rank(info.id) > 0;
  const kir::TmaMap* map = nullptr;
  int buffer = -1;
  if (tma) {
    auto it = launch_.maps.find(s.name);
    if (it == launch_.maps.end()) fail(lanes[0], fmt::format("{} is not a tensor-map parameter of the kernel", s.name));
    if (it->second.buffer < 0)
      fail(lanes[0], fmt::format("a TMA copy through tensor map {}, which the sizes do not allow", s.name));
    if (kir::tma_rank(info.id) != it->second.rank)
      fail(lanes[0], fmt::format("a TMA copy of {} coordinates through tensor map {} of rank {}",
                                 kir::tma_rank(info.id), s.name, it->second.rank));
    map = &it->second;
  } else {
    buffer = buffer_index(s.name, lanes[0]);
  }
  // A TMA copy's CTAs: its own, or (imm[0], a bit each) those of the cluster it multicasts to,
  // each getting the box at the same offsets and the bytes on its mbarrier at the same offset.
  const int64_t multicast = tma && !s.imm.empty() ? s.imm[0] : 0;
  if (multicast < 0 || multicast >= (int64_t{1} << launch_.cluster))
    fail(lanes[0], fmt::format("{} multicast to CTAs {:#x} of a cluster of {}", info.name, multicast, launch_.cluster));
  for (size_t k = 0; k < n; ++k) {
    std::vector<uint32_t> one(rows);
    for (size_t r = 0; r < rows; ++r) one[r] = in[r * n + k];
    for (int cta = 0; cta < launch_.cluster; ++cta) {
      if (multicast ? (multicast >> cta & 1) == 0 : cta != cta_of(lanes[k])) continue;
      Mbarrier* m = tma ? &mbarrier(lanes[k], cta_base(cta) + one[1]) : nullptr;
      if (m != nullptr && cta != cta_of(lanes[k])) check_peer_init(lanes[k], cta_base(cta) + one[1], *m);
      Port port(*this, lanes[k], tma ? Port::Mode::Tma : Port::Mode::CpAsync, cta_base(cta), m);
      kir::IntrinsicCall c = make_call(one, {}, 1, s.imm, &port);
      c.buffer = buffer;
      if (!tma)
        c.elem_bytes = static_cast<uint32_t>(kir::type_bytes((*launch_.globals)[static_cast<size_t>(buffer)].type));
      c.tensor_map = map;
      call(info, c, lanes[k]);
      if (m != nullptr) {
        ++report_.tma_copies;
        m->tx -= port.bytes_written();
        try_complete(*m);
      }
    }
  }
}

// (addr: in the cluster's shared memory.)
Mbarrier& Block::mbarrier(int32_t t, uint32_t addr) {
  auto it = mbarriers_.find(addr);
  if (it == mbarriers_.end()) fail(t, fmt::format("mbarrier at {} used before mbarrier.init", describe_shared(addr)));
  return it->second;
}

void Block::check_peer_init(int32_t t, uint32_t addr, const Mbarrier& m) {
  if (clocks_[static_cast<size_t>(warp_of(t))][static_cast<size_t>(m.init_warp)] < m.init_time)
    fail(t, fmt::format("the mbarrier at {} is used from another CTA of the cluster before a cluster barrier "
                        "ordered its mbarrier.init",
                        describe_shared(addr)));
}

// The phase completes once every arrival came and the issued bytes match the expected ones;
// its TMA boxes then land at the next wait, and its waiters acquire what its arrivals released.
void Block::try_complete(Mbarrier& m) {
  if (m.pending != 0 || m.tx != 0) return;
  ++m.phase;
  m.pending = m.count;
  for (AsyncWrite& w : m.inflight) m.landing.push_back(std::move(w));
  m.inflight.clear();
  join(m.completed, m.arrived);
  m.arrived.clear();
}

std::string Block::mbarrier_wait_text(uint32_t addr, uint32_t parity) {
  const Mbarrier& m = mbarriers_.at(addr);
  return fmt::format(
      "mbarrier wait never returns: phase {} of the mbarrier at {} (waited on with parity {}) still needs {} "
      "arrival(s) and {} transaction byte(s){}",
      m.phase, describe_shared(addr), parity & 1, m.pending, m.tx,
      m.tx < 0 ? " (negative: more bytes issued than expected)" : "");
}

// The wait blocks the fiber until the phase of the other parity completes; then the phase's
// boxes land and the waiter is ordered after every access its arrivals made before arriving.
void Block::wait_mbarrier(int32_t t, uint32_t addr, uint32_t parity) {
  Mbarrier& m = mbarrier(t, addr);
  block_until(
      t, [&m, parity] { return (m.phase & 1) != (parity & 1); },
      [this, addr, parity] { return mbarrier_wait_text(addr, parity); });
  for (const AsyncWrite& w : m.landing) land(w, -1);
  m.landing.clear();
  acquire(warp_of(t), m.completed);
}

// commit/wait_group and the mbarrier operations, which order copies and compute nothing:
// the interpreter gives them their meaning here. Returns false for any other intrinsic.
bool Block::ordering(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes,
                     const std::vector<uint32_t>& in) {
  size_t n = lanes.size();
  for (size_t k = 0; k < n; ++k) {
    int32_t t = lanes[k];
    ThreadAsync& a = async_[static_cast<size_t>(t)];
    uint32_t addr = in.size() >= n ? in[k] : 0, word1 = in.size() >= 2 * n ? in[n + k] : 0;
    switch (info.id) {
      case IntrinsicId::CpAsyncCommit:
        a.committed.push_back(std::move(a.open));
        a.open.clear();
        break;
      case IntrinsicId::CpAsyncWait:
        while (static_cast<int64_t>(a.committed.size()) > s.imm[0]) {
          for (const AsyncWrite& w : a.committed.front()) land(w, t);
          a.committed.erase(a.committed.begin());
        }
        break;
      case IntrinsicId::MbarrierInit: {
        addr = at(t, addr);
        check_window(t, addr, 8);
        auto it = mbarriers_.find(addr);
        if (it != mbarriers_.end() && (!it->second.inflight.empty() || !it->second.landing.empty()))
          fail(t, fmt::format("mbarrier.init of the mbarrier at {} while its TMA copies are in flight",
                              describe_shared(addr)));
        if (s.imm[0] < 1) fail(t, fmt::format("mbarrier.init with arrival count {}", s.imm[0]));
        Mbarrier& m = mbarriers_[addr];
        m = Mbarrier{};
        m.count = m.pending = s.imm[0];
        m.init_warp = warp_of(t);
        m.init_time = ++smem_.now;
        clocks_[static_cast<size_t>(m.init_warp)][static_cast<size_t>(m.init_warp)] = m.init_time;
        break;
      }
      case IntrinsicId::MbarrierExpectTx: {
        Mbarrier& m = mbarrier(t, at(t, addr));
        m.tx += word1;
        release(warp_of(t), m.arrived);
        --m.pending;
        try_complete(m);
        break;
      }
      case IntrinsicId::MbarrierTryWait: wait_mbarrier(t, at(t, addr), word1); break;
      case IntrinsicId::MbarrierArrive:
      case IntrinsicId::MbarrierArrivePeer: {
        // A peer's: the mbarrier at the same offset in CTA `word1` of the cluster.
        const bool peer = info.id == IntrinsicId::MbarrierArrivePeer;
        if (peer && word1 >= static_cast<uint32_t>(launch_.cluster))
          fail(t, fmt::format("{} to CTA {} of a cluster of {}", info.name, word1, launch_.cluster));
        const uint32_t where = peer ? cta_base(static_cast<int>(word1)) + addr : at(t, addr);
        Mbarrier& m = mbarrier(t, where);
        if (peer && static_cast<int>(word1) != cta_of(t)) check_peer_init(t, where, m);
        release(warp_of(t), m.arrived);
        --m.pending;
        try_complete(m);
        break;
      }
      default: return false;
    }
  }
  if (!info.outs.empty())
    write_outs(s, info, lanes, std::vector<uint32_t>(static_cast<size_t>(total_words(info.outs)) * n, 1));
  return true;
}

void Block::exec_intrinsic(const Stmt& s, const Lanes& lanes) {
  const kir::IntrinsicInfo& info = intrinsic(s, lanes[0]);
  const bool wgmma = kir::wgmma_n(info.id) > 0;
  wgmma_operands_ = wgmma;  // a wgmma reads the accumulator an earlier one of its chain writes
  std::vector<uint32_t> in = operand_words(s, info, lanes);
  wgmma_operands_ = false;
  if (info.id == IntrinsicId::WgmmaCommit || info.id == IntrinsicId::WgmmaWait) wgmma_groups(s, info, lanes);
  if (info.id == IntrinsicId::CpAsync16 || kir::tma_rank(info.id) > 0) return issue_async(s, info, lanes, in);
  if (ordering(s, info, lanes, in) || synchronizing(s, info, lanes, in)) return;
  size_t n = lanes.size();
  std::vector<uint32_t> out(static_cast<size_t>(total_words(info.outs)) * n);
  if (info.scope == kir::Scope::Warp || info.scope == kir::Scope::Warpgroup) {
    run_warps(info, lanes, in, out, s.imm, info.scope == kir::Scope::Warp ? kWarp : 4 * kWarp);
  } else if (info.scope == kir::Scope::Thread) {
    Port port(*this, lanes[0], Port::Mode::Direct, cta_base(cta_of(lanes[0])));
    kir::IntrinsicCall c = make_call(in, out, static_cast<int>(n), s.imm, &port);
    if (!s.name.empty()) {  // an atomic's buffer: its index operand counts elements
      c.buffer = buffer_index(s.name, lanes[0]);
      c.elem_bytes = static_cast<uint32_t>(kir::type_bytes((*launch_.globals)[static_cast<size_t>(c.buffer)].type));
    }
    call(info, c, lanes[0]);
  } else {
    fail(lanes[0], fmt::format("block-scope intrinsic {} is not supported", info.name));
  }
  write_outs(s, info, lanes, out);
  if (wgmma) mark_in_flight(s, info, lanes);
}

// The accumulator registers of a wgmma, and its A operand's where it reads A from registers, are
// in flight until the wait_group that retires its group.
void Block::mark_in_flight(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes) {
  auto mark = [&](const kir::Reg& name, uint8_t state) {
    int elem = 0;
    Register& r = reg(name, lanes[0], &elem);
    Registers* owner = regs_->owner(name.name);
    const size_t depth = owner->depth(name.name);
    for (int32_t t : lanes) {
      const size_t slot = static_cast<size_t>(elem) * static_cast<size_t>(threads_) + static_cast<size_t>(t);
      if (r.init[slot] == kInFlight) continue;  // an accumulator stays one
      r.init[slot] = state;
      async_[static_cast<size_t>(t)].wgmma_open.push_back({owner, name.name, depth, slot});
    }
  };
  for (size_t o = 0; o < info.outs.size(); ++o) mark(s.outs[o], kInFlight);
  if (!kir::wgmma_a_in_registers(info.id)) return;
  for (int a = 0; a < 4; ++a)  // the A fragment: the first four operands, registers of the warp's mma A layout
    if (s.args[static_cast<size_t>(a)].kind == Expr::Kind::Var) mark(s.args[static_cast<size_t>(a)].reg, kReadInFlight);
}

// wgmma.commit_group closes each thread's open group; wait_group N retires all but the newest N.
void Block::wgmma_groups(const Stmt& s, const kir::IntrinsicInfo& info, const Lanes& lanes) {
  for (int32_t t : lanes) {
    ThreadAsync& a = async_[static_cast<size_t>(t)];
    if (info.id == IntrinsicId::WgmmaCommit) {
      a.wgmma_committed.push_back(std::move(a.wgmma_open));
      a.wgmma_open.clear();
      continue;
    }
    while (static_cast<int64_t>(a.wgmma_committed.size()) > s.imm[0]) {
      for (const PendingReg& p : a.wgmma_committed.front())
        if (Register* r = p.owner->at(p.name, p.depth);
            r != nullptr && (r->init[p.slot] == kInFlight || r->init[p.slot] == kReadInFlight))
          r->init[p.slot] = 1;
      a.wgmma_committed.erase(a.wgmma_committed.begin());
    }
  }
}

}  // namespace emmy::simt_detail
