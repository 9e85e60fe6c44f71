// The SIMT interpreter's memory: global and shared accesses, the race and window checks, queued writes.
#include "interp/simt_block.hpp"

namespace emmy::simt_detail {

// ---- memory ----------------------------------------------------------------------------------

void Block::store_global(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes) {
  int buffer = buffer_index(s.name, lanes[0]);
  const kir::Param* p = kernel_.find_param(s.name);
  if (p != nullptr && p->is_const) fail(lanes[0], fmt::format("store to buffer {}, a const parameter", s.name));
  Global& g = (*launch_.globals)[static_cast<size_t>(buffer)];
  val = convert(std::move(val), g.type);
  auto bytes = static_cast<size_t>(kir::type_bytes(g.type));
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (idx.i[k] < 0 || idx.i[k] >= g.count)
      fail(lanes[k],
           fmt::format("global store out of bounds: buffer {} index {} ({} elements)", g.name, idx.i[k], g.count));
    uint8_t* at = g.bytes.data() + static_cast<size_t>(idx.i[k]) * bytes;
    if (is_f(g.type))
      encode_float(g.type, val.f[k], at);
    else
      encode_int(g.type, val.i[k], at);
  }
}

void Block::store_shared(const Stmt& s, const Vals& idx, Vals val, const Lanes& lanes) {
  const SharedSlot& sl = slot(s.name, lanes[0]);
  val = convert(std::move(val), sl.type);
  std::vector<uint32_t> addrs = shared_addrs(sl, s.name, idx, lanes);
  int bytes = kir::type_bytes(sl.type);
  count_shared(lanes, addrs, bytes);
  for (size_t k = 0; k < lanes.size(); ++k) {
    const uint32_t addr = this->at(lanes[k], addrs[k]);
    check_write(lanes[k], addr, static_cast<uint32_t>(bytes), false);
    uint8_t* at = smem_.data.data() + addr;
    if (is_f(sl.type))
      encode_float(sl.type, val.f[k], at);
    else
      encode_int(sl.type, val.i[k], at);
  }
}

// (addr: in the cluster's shared memory; the access stays within one CTA's window.)
void Block::check_window(int32_t t, uint32_t addr, uint32_t bytes) const {
  const uint64_t window = launch_.shared_bytes, stride = launch_.shared_stride;
  const uint64_t local = stride == 0 ? addr : addr % stride;
  if (local + bytes > window || addr / std::max<uint64_t>(stride, 1) >= static_cast<uint64_t>(launch_.cluster))
    fail(t, fmt::format("shared access of {} bytes at byte {} outside the {}-byte shared window", bytes, local,
                        launch_.shared_bytes));
}

// A read of shared bytes by thread t: not before its asynchronous copy landed, and (race
// check) not of bytes another warp wrote unless the write is ordered before this read.
void Block::check_read(int32_t t, uint32_t addr, uint32_t bytes) {
  const int32_t w = warp_of(t);
  std::vector<uint32_t>* reads = nullptr;
  if (launch_.race_check) {
    auto& all = smem_.reads[static_cast<size_t>(w)];
    if (all.empty()) all.assign(smem_.data.size(), 0);
    reads = &all;
  }
  const Clock& clock = clocks_[static_cast<size_t>(w)];
  for (uint32_t b = addr; b < addr + bytes; ++b) {
    ByteState& s = smem_.state[b];
    if (s.pending == Pending::CpAsync)
      fail(t, fmt::format("read before cp.async.wait_group: {} is the destination of a cp.async still in flight",
                          describe_shared(b)));
    if (s.pending == Pending::Tma)
      fail(t, fmt::format("read before the mbarrier wait: {} is the destination of a TMA copy still in flight",
                          describe_shared(b)));
    if (reads == nullptr) continue;
    if (s.writer >= 0 && warp_of(s.writer) != w && s.write_time >= clock[static_cast<size_t>(warp_of(s.writer))])
      fail(t, fmt::format("shared-memory race: {} was written by thread {} with no barrier before this read",
                          describe_shared(b), s.writer));
    (*reads)[b] = smem_.now;
    s.last_read = smem_.now;
  }
}

// A write of shared bytes by thread t (async: the issue of a copy that lands later): every
// earlier access by another warp must be ordered before it.
void Block::check_write(int32_t t, uint32_t addr, uint32_t bytes, bool async) {
  const int32_t w = warp_of(t);
  const Clock& clock = clocks_[static_cast<size_t>(w)];
  uint32_t oldest = UINT32_MAX;  // the reads before it are ordered for every warp
  for (size_t x = 0; x < clock.size(); ++x)
    if (static_cast<int32_t>(x) != w) oldest = std::min(oldest, clock[x]);
  for (uint32_t b = addr; b < addr + bytes; ++b) {
    ByteState& s = smem_.state[b];
    if (s.pending != Pending::None)
      fail(t, fmt::format("{} into {} while an asynchronous copy into it is still in flight",
                          async ? "asynchronous copy" : "store", describe_shared(b)));
    if (!launch_.race_check) continue;
    if (s.writer >= 0 && warp_of(s.writer) != w && s.write_time >= clock[static_cast<size_t>(warp_of(s.writer))])
      fail(t, fmt::format(
                  "shared-memory race: {} was written by thread {} and again by this thread with no barrier between",
                  describe_shared(b), s.writer));
    if (s.last_read >= oldest)
      for (size_t x = 0; x < clock.size(); ++x) {
        const auto& reads = smem_.reads[x];
        if (static_cast<int32_t>(x) == w || reads.empty() || reads[b] < clock[x]) continue;
        fail(t, fmt::format("shared-memory race: {} is overwritten after warp {} read it, with no barrier between",
                            describe_shared(b), x));
      }
    if (!async) {
      s.writer = t;
      s.write_time = smem_.now;
    }
  }
}

void Block::shared_read(int32_t t, uint32_t addr, void* dst, uint32_t bytes) {
  check_window(t, addr, bytes);
  check_read(t, addr, bytes);
  std::memcpy(dst, smem_.data.data() + addr, bytes);
}

void Block::cluster_shared_read(int32_t t, uint32_t cta, uint32_t addr, void* dst, uint32_t bytes) {
  if (cta >= static_cast<uint32_t>(launch_.cluster))
    fail(t, fmt::format("ld.shared::cluster from CTA {} of a cluster of {}", cta, launch_.cluster));
  if (launch_.shared_bytes != 0 && addr + bytes > launch_.shared_bytes)
    fail(t, fmt::format("ld.shared::cluster of {} bytes at byte {} outside the {}-byte shared window", bytes, addr,
                        launch_.shared_bytes));
  shared_read(t, cta_base(static_cast<int>(cta)) + addr, dst, bytes);
}

void Block::shared_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes) {
  check_window(t, addr, bytes);
  check_write(t, addr, bytes, false);
  std::memcpy(smem_.data.data() + addr, src, bytes);
}

AsyncWrite Block::queue_write(int32_t t, uint32_t addr, const void* src, uint32_t bytes, Pending kind) {
  check_window(t, addr, bytes);
  if (kind == Pending::CpAsync && addr % 16 != 0)
    fail(t, fmt::format("cp.async destination {} is not 16-byte aligned", describe_shared(addr)));
  check_write(t, addr, bytes, true);
  for (uint32_t b = addr; b < addr + bytes; ++b) smem_.state[b].pending = kind;
  AsyncWrite w;
  w.addr = addr;
  w.bytes.assign(static_cast<const uint8_t*>(src), static_cast<const uint8_t*>(src) + bytes);
  return w;
}

// The copy lands: its bytes stop pending and count as written by `writer` (-1: every thread).
void Block::land(const AsyncWrite& w, int32_t writer) {
  std::memcpy(smem_.data.data() + w.addr, w.bytes.data(), w.bytes.size());
  for (size_t b = 0; b < w.bytes.size(); ++b) {
    ByteState& s = smem_.state[w.addr + b];
    s.pending = Pending::None;
    s.writer = writer;
    s.write_time = smem_.now;
  }
}

void Block::global_read(int32_t t, int buffer, uint64_t offset, void* dst, uint32_t bytes, bool cp_async) {
  if (buffer < 0 || static_cast<size_t>(buffer) >= launch_.globals->size())
    fail(t, fmt::format("asynchronous copy from global buffer #{}, which does not exist", buffer));
  const Global& g = (*launch_.globals)[static_cast<size_t>(buffer)];
  if (offset + bytes > g.bytes.size())
    fail(t, fmt::format("global read out of bounds: buffer {} bytes [{}, {}) ({} bytes)", g.name, offset,
                        offset + bytes, g.bytes.size()));
  if (cp_async && offset % 16 != 0)
    fail(t, fmt::format("cp.async source (buffer {} byte {}) is not 16-byte aligned", g.name, offset));
  std::memcpy(dst, g.bytes.data() + offset, bytes);
}

// An atomic's write: in bounds, into a buffer the kernel may write.
void Block::global_write(int32_t t, int buffer, uint64_t offset, const void* src, uint32_t bytes) {
  if (buffer < 0 || static_cast<size_t>(buffer) >= launch_.globals->size())
    fail(t, fmt::format("atomic on global buffer #{}, which does not exist", buffer));
  Global& g = (*launch_.globals)[static_cast<size_t>(buffer)];
  const kir::Param* p = kernel_.find_param(g.name);
  if (p != nullptr && p->is_const) fail(t, fmt::format("atomic on buffer {}, a const parameter", g.name));
  if (offset + bytes > g.bytes.size())
    fail(t, fmt::format("global atomic out of bounds: buffer {} bytes [{}, {}) ({} bytes)", g.name, offset,
                        offset + bytes, g.bytes.size()));
  std::memcpy(g.bytes.data() + offset, src, bytes);
}

}  // namespace emmy::simt_detail
