// The SIMT interpreter's statements (one exec_<kind> each) and expressions, in lockstep over a block's lanes.
#include "interp/simt_block.hpp"

namespace emmy::simt_detail {

void store_lanes(Register& r, int elem, const Vals& v, const Lanes& lanes, int threads) {
  size_t base = static_cast<size_t>(elem) * static_cast<size_t>(threads);
  for (size_t k = 0; k < lanes.size(); ++k) {
    size_t at = base + static_cast<size_t>(lanes[k]);
    if (is_f(r.type))
      r.f[at] = v.f[k];
    else
      r.i[at] = v.i[k];
    r.init[at] = 1;
  }
}

// ---- statements ----------------------------------------------------------------------------------

void Block::exec_body(const std::vector<Stmt>& body, const Lanes& lanes) {
  regs_->push_scope();
  for (const Stmt& s : body) exec(s, lanes);
  regs_->pop_scope();
}

void Block::exec(const Stmt& s, const Lanes& lanes) {
  switch (s.kind) {
    case Stmt::Kind::Decl: return exec_decl(s, lanes);
    case Stmt::Kind::Assign: return exec_assign(s, lanes);
    case Stmt::Kind::Store: return exec_store(s, lanes);
    case Stmt::Kind::For: return exec_for(s, lanes);
    case Stmt::Kind::If: return exec_if(s, lanes);
    case Stmt::Kind::Barrier: return exec_barrier(lanes);
    case Stmt::Kind::Intrinsic: return exec_intrinsic(s, lanes);
    case Stmt::Kind::Comment: return;
    case Stmt::Kind::VecLoad:
    case Stmt::Kind::VecStore: return exec_vector(s, lanes);
  }
}

void Block::exec_decl(const Stmt& s, const Lanes& lanes) {
  if (s.count < 1) fail(lanes[0], fmt::format("register {} declared with {} elements", s.reg.name, s.count));
  std::optional<Vals> init;
  if (!s.args.empty()) init = convert(eval(s.args[0], lanes), s.type);
  Register& r = regs_->declare(s.reg.name, s.type, s.count);
  if (init)
    for (int e = 0; e < s.count; ++e) store_lanes(r, e, *init, lanes, threads_);
}

void Block::exec_assign(const Stmt& s, const Lanes& lanes) {
  Vals v = eval(s.args[0], lanes);
  int elem = 0;
  Register& r = reg(s.reg, lanes[0], &elem);
  check_not_in_flight(r, elem, s.reg, lanes);
  store_lanes(r, elem, convert(std::move(v), r.type), lanes, threads_);
}

// A write to an accumulator a wgmma still writes races with it (the wgmma's result may land after),
// and so does a write to an A operand a wgmma still reads from registers.
void Block::check_not_in_flight(const Register& r, int elem, const kir::Reg& name, const Lanes& lanes) {
  const size_t base = static_cast<size_t>(elem) * static_cast<size_t>(threads_);
  for (int32_t t : lanes) {
    const uint8_t state = r.init[base + static_cast<size_t>(t)];
    if (state == kInFlight || state == kReadInFlight)
      fail(t, fmt::format("write of {}{} before wgmma.wait_group: it is the {} of a wgmma still in flight", name.name,
                          name.elem < 0 ? std::string() : fmt::format("[{}]", name.elem),
                          state == kInFlight ? "accumulator" : "A operand (registers)"));
  }
}

void Block::exec_store(const Stmt& s, const Lanes& lanes) {
  Vals idx = eval_index(s.args[0], lanes);
  Vals val = eval(s.args[1], lanes);
  if (s.space == kir::Space::Global)
    store_global(s, idx, std::move(val), lanes);
  else
    store_shared(s, idx, std::move(val), lanes);
}

void Block::exec_for(const Stmt& s, const Lanes& lanes) {
  if (is_f(s.type) || s.type == ScalarType::Pred)
    fail(lanes[0], fmt::format("loop variable {} must be i32, i64 or u32", s.reg.name));
  if (s.step <= 0) fail(lanes[0], fmt::format("loop over {} has step {} (must be positive)", s.reg.name, s.step));
  constexpr int32_t kGroup = 4 * kWarp;
  if (launch_.turn_loops.contains(&s) && lanes.front() / kGroup != lanes.back() / kGroup) {
    // Warpgroups taking turns at named barriers: each runs the loop apart, the first first.
    std::vector<Lanes> groups;
    for (int32_t t : lanes) {
      if (groups.empty() || groups.back().front() / kGroup != t / kGroup) groups.emplace_back();
      groups.back().push_back(t);
    }
    std::vector<std::function<void()>> parts;
    std::vector<const Lanes*> of;
    for (const Lanes& g : groups) {
      parts.push_back([this, &s, &g] { exec_for(s, g); });
      of.push_back(&g);
    }
    return run_apart(parts, of);
  }
  regs_->push_scope();
  Vals lo = convert(eval(s.args[0], lanes), s.type);
  store_lanes(regs_->declare(s.reg.name, s.type, 1), 0, lo, lanes, threads_);
  Expr cond = kir::binary(BinOp::Lt, kir::var(kir::Reg{s.reg.name, -1}, s.type), s.args[1]);
  Lanes live = lanes;
  while (true) {
    Vals c = eval(cond, live);
    Lanes next;
    for (size_t k = 0; k < live.size(); ++k)
      if (c.i[k] != 0) next.push_back(live[k]);
    if (next.empty()) break;
    live = std::move(next);
    exec_body(s.body, live);
    Register* r = regs_->find(s.reg.name);
    for (int32_t t : live) r->i[static_cast<size_t>(t)] = wrap_int(s.type, r->i[static_cast<size_t>(t)] + s.step);
  }
  regs_->pop_scope();
}

void Block::exec_if(const Stmt& s, const Lanes& lanes) {
  Vals c = eval(s.args[0], lanes);
  Lanes yes, no;
  for (size_t k = 0; k < lanes.size(); ++k) (truth(c, k) ? yes : no).push_back(lanes[k]);
  const bool both = !yes.empty() && !no.empty() && !s.orelse.empty();
  if (both && launch_.blocking_ifs.contains(&s)) return exec_apart(s, yes, no);
  if (!yes.empty()) exec_body(s.body, yes);
  if (!no.empty() && !s.orelse.empty()) exec_body(s.orelse, no);
}

// The two sides of a branch that may block run as fibers: one side may wait for what the other
// does (a producer's copies, a consumer's release of a buffer, a named barrier of both).
void Block::exec_apart(const Stmt& s, const Lanes& yes, const Lanes& no) {
  run_apart({[&] { exec_body(s.body, yes); }, [&] { exec_body(s.orelse, no); }}, {&yes, &no});
}

// Parts of a block that run as fibers, each with its own registers over the enclosing ones.
void Block::run_apart(const std::vector<std::function<void()>>& parts, const std::vector<const Lanes*>& lanes) {
  Registers* outer = regs_;
  std::vector<std::string> labels;
  for (const Lanes* l : lanes)  // "threads 0-255" (a contiguous range), else the first and the count
    labels.push_back(l->back() - l->front() + 1 == static_cast<int32_t>(l->size())
                         ? fmt::format("threads {}-{}", l->front(), l->back())
                         : fmt::format("{} threads from {}", l->size(), l->front()));
  std::vector<std::function<void()>> fibers;
  for (const std::function<void()>& part : parts) {
    Registers& regs = fiber_regs_.emplace_back(threads_, outer);
    fibers.push_back([this, &regs, &part] {
      regs_ = &regs;
      part();
    });
  }
  try {
    fibers_.run(std::move(fibers), std::move(labels));
  } catch (...) {
    regs_ = outer;
    throw;
  }
  regs_ = outer;
}

// __syncthreads: every thread of the block, in one fiber or arriving from several (each CTA of
// a cluster its own).
void Block::exec_barrier(const Lanes& lanes) {
  if (launch_.cluster == 1 && static_cast<int>(lanes.size()) == threads_) return sync_all();
  arrive_ctas(0, cta_threads_, lanes, true);
}

// A vector access: `count` elements of a global buffer or shared array to or from a register
// array, one access per thread that the GPU faults on unless its byte address is a multiple of
// its size.
void Block::exec_vector(const Stmt& s, const Lanes& lanes) {
  bool load = s.kind == Stmt::Kind::VecLoad;
  Vals idx = eval_index(s.args[0], lanes);
  Register* r = regs_->find(s.reg.name);
  if (r == nullptr) fail(lanes[0], fmt::format("register {} is not declared", s.reg.name));
  if (r->count != s.count || r->type != s.type)
    fail(lanes[0], fmt::format("vector access of {} {} through register array {} of {} {}", s.count,
                               kir::type_name(s.type), s.reg.name, r->count, kir::type_name(r->type)));
  if (s.space == kir::Space::Shared) return exec_shared_vector(s, idx, *r, lanes);
  Global& g = (*launch_.globals)[static_cast<size_t>(buffer_index(s.name, lanes[0]))];
  if (g.type != s.type)
    fail(lanes[0], fmt::format("vector {} of {} {} buffer {} of {}", load ? "load" : "store", s.count,
                               kir::type_name(s.type), g.name, kir::type_name(g.type)));
  if (!load)
    if (const kir::Param* p = kernel_.find_param(s.name); p != nullptr && p->is_const)
      fail(lanes[0], fmt::format("vector store to buffer {}, a const parameter", s.name));
  auto bytes = static_cast<size_t>(kir::type_bytes(g.type));
  size_t width = bytes * static_cast<size_t>(s.count);
  for (size_t k = 0; k < lanes.size(); ++k) {
    int64_t first = idx.i[k];
    if (first < 0 || first + s.count > g.count)
      fail(lanes[k], fmt::format("global vector {} out of bounds: buffer {} elements [{}, {}) ({} elements)",
                                 load ? "load" : "store", g.name, first, first + s.count, g.count));
    if ((static_cast<size_t>(first) * bytes) % width != 0)
      fail(lanes[k],
           fmt::format("misaligned vector {}: {} bytes of buffer {} at byte {} (element {}), not a "
                       "multiple of {}; the GPU faults on it",
                       load ? "load" : "store", width, g.name, static_cast<size_t>(first) * bytes, first, width));
    uint8_t* at = g.bytes.data() + static_cast<size_t>(first) * bytes;
    if (load)
      unpack_lane(s, *r, lanes[k], at);
    else
      pack_lane(s, *r, lanes[k], at);
  }
}

void Block::exec_shared_vector(const Stmt& s, const Vals& idx, Register& r, const Lanes& lanes) {
  bool load = s.kind == Stmt::Kind::VecLoad;
  const SharedSlot& sl = slot(s.name, lanes[0]);
  if (sl.type != s.type)
    fail(lanes[0], fmt::format("vector {} of {} {} shared {} of {}", load ? "load" : "store", s.count,
                               kir::type_name(s.type), s.name, kir::type_name(sl.type)));
  const uint32_t width = static_cast<uint32_t>(kir::type_bytes(s.type)) * static_cast<uint32_t>(s.count);
  Vals last = idx;  // the last element of each lane's access, bounds-checked with the first
  for (int64_t& i : last.i) i += s.count - 1;
  std::vector<uint32_t> addrs = shared_addrs(sl, s.name, idx, lanes);
  shared_addrs(sl, s.name, last, lanes);
  count_shared(lanes, addrs, static_cast<int>(width));
  std::vector<uint8_t> word(width);
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (addrs[k] % width != 0)
      fail(lanes[k], fmt::format("misaligned shared vector {}: {} bytes at {}, not a multiple of {}",
                                 load ? "load" : "store", width, describe_shared(addrs[k]), width));
    if (load) {
      shared_read(lanes[k], at(lanes[k], addrs[k]), word.data(), width);
      unpack_lane(s, r, lanes[k], word.data());
    } else {
      pack_lane(s, r, lanes[k], word.data());
      shared_write(lanes[k], at(lanes[k], addrs[k]), word.data(), width);
    }
  }
}

// Lane t's register array (s.count elements of s.type) from or into consecutive bytes at `at`.
void Block::unpack_lane(const Stmt& s, Register& r, int32_t t, const uint8_t* at) {
  const auto bytes = static_cast<size_t>(kir::type_bytes(s.type));
  for (int e = 0; e < s.count; ++e) {
    size_t slot = static_cast<size_t>(e) * static_cast<size_t>(threads_) + static_cast<size_t>(t);
    const uint8_t* p = at + static_cast<size_t>(e) * bytes;
    if (is_f(s.type))
      r.f[slot] = decode_float(s.type, p);
    else
      r.i[slot] = decode_int(s.type, p);
    r.init[slot] = 1;
  }
}

void Block::pack_lane(const Stmt& s, const Register& r, int32_t t, uint8_t* at) {
  const auto bytes = static_cast<size_t>(kir::type_bytes(s.type));
  for (int e = 0; e < s.count; ++e) {
    size_t slot = static_cast<size_t>(e) * static_cast<size_t>(threads_) + static_cast<size_t>(t);
    if (!r.init[slot]) fail(t, fmt::format("vector store of uninitialized register {}[{}]", s.reg.name, e));
    uint8_t* p = at + static_cast<size_t>(e) * bytes;
    if (is_f(s.type))
      encode_float(s.type, r.f[slot], p);
    else
      encode_int(s.type, r.i[slot], p);
  }
}

// ---- expressions ---------------------------------------------------------------------------------

Vals Block::eval(const Expr& e, const Lanes& lanes) {
  Vals v = eval_node(e, lanes);
  if (v.type != e.type)
    fail(lanes.empty() ? -1 : lanes[0],
         fmt::format("IR type mismatch: a {} typed {} computes {}", kExprKinds[static_cast<size_t>(e.kind)],
                     kir::type_name(e.type), kir::type_name(v.type)));
  return v;
}

Vals Block::eval_node(const Expr& e, const Lanes& lanes) {
  switch (e.kind) {
    case Expr::Kind::Const: return eval_const(e, lanes.size());
    case Expr::Kind::Var: return eval_var(e, lanes);
    case Expr::Kind::Special: return eval_special(e, lanes);
    case Expr::Kind::Param: return eval_param(e, lanes);
    case Expr::Kind::Unary: return eval_unary(e, lanes);
    case Expr::Kind::Binary: return is_logical(e.bin) ? eval_logical(e, lanes) : eval_binary(e, lanes);
    case Expr::Kind::Select: return eval_select(e, lanes);
    case Expr::Kind::Cast: return convert(eval(e.args[0], lanes), e.type);
    case Expr::Kind::Load: return eval_load(e, lanes);
    case Expr::Kind::SharedAddr: return eval_shared_addr(e, lanes);
  }
  return {};
}

Vals Block::eval_const(const Expr& e, size_t n) const {
  Vals v = make_vals(e.type, n);
  if (is_f(e.type))
    std::fill(v.f.begin(), v.f.end(), kir::round_to(e.type, e.fval));
  else
    std::fill(v.i.begin(), v.i.end(), wrap_int(e.type, e.ival));
  return v;
}

Register& Block::reg(const kir::Reg& r, int32_t thread, int* elem) {
  Register* found = regs_->find(r.name);
  if (found == nullptr) fail(thread, fmt::format("register {} is not declared", r.name));
  if (r.elem < 0 && found->count != 1)
    fail(thread, fmt::format("register array {}[{}] used without an element", r.name, found->count));
  if (r.elem >= found->count)
    fail(thread, fmt::format("register element {}[{}] out of bounds (array of {})", r.name, r.elem, found->count));
  *elem = std::max(r.elem, 0);
  return *found;
}

Vals Block::eval_var(const Expr& e, const Lanes& lanes) {
  int elem = 0;
  Register& r = reg(e.reg, lanes[0], &elem);
  size_t base = static_cast<size_t>(elem) * static_cast<size_t>(threads_);
  size_t n = lanes.size();
  for (size_t k = 0; k < n; ++k) {
    const uint8_t state = r.init[base + static_cast<size_t>(lanes[k])];
    if (!state)
      fail(lanes[k], fmt::format("read of uninitialized register {}{}", e.reg.name,
                                 e.reg.elem < 0 ? std::string() : fmt::format("[{}]", e.reg.elem)));
    if (state == kInFlight && !wgmma_operands_)
      fail(lanes[k], fmt::format("read of {}{} before wgmma.wait_group: it is the accumulator of a wgmma still in "
                                 "flight (commit its group and wait for it first)",
                                 e.reg.name, e.reg.elem < 0 ? std::string() : fmt::format("[{}]", e.reg.elem)));
  }
  Vals v = make_vals(r.type, n);
  if (is_f(r.type))
    for (size_t k = 0; k < n; ++k) v.f[k] = r.f[base + static_cast<size_t>(lanes[k])];
  else
    for (size_t k = 0; k < n; ++k) v.i[k] = r.i[base + static_cast<size_t>(lanes[k])];
  return v;
}

Vals Block::eval_special(const Expr& e, const Lanes& lanes) const {
  Vals v = make_vals(ScalarType::I32, lanes.size());
  for (size_t k = 0; k < lanes.size(); ++k) {
    int32_t t = lanes[k];
    switch (e.special) {
      case kir::Special::ThreadIdx: v.i[k] = t % cta_threads_; break;
      case kir::Special::BlockIdx: v.i[k] = id_ * launch_.cluster + cta_of(t); break;
      case kir::Special::BlockDim: v.i[k] = cta_threads_; break;
      case kir::Special::GridDim: v.i[k] = launch_.grid; break;
      case kir::Special::LaneId: v.i[k] = t & (kWarp - 1); break;
      case kir::Special::WarpId: v.i[k] = (t % cta_threads_) >> 5; break;
    }
  }
  return v;
}

Vals Block::eval_param(const Expr& e, const Lanes& lanes) const {
  auto it = launch_.scalars.find(e.name);
  if (it == launch_.scalars.end()) fail(lanes[0], fmt::format("{} is not a scalar parameter of the kernel", e.name));
  Vals v = make_vals(it->second.type, lanes.size());
  if (is_f(v.type))
    std::fill(v.f.begin(), v.f.end(), int_to_float(v.type, it->second.value));
  else
    std::fill(v.i.begin(), v.i.end(), it->second.value);
  return v;
}

Vals Block::eval_unary(const Expr& e, const Lanes& lanes) {
  Vals v = eval(e.args[0], lanes);
  if (e.un == UnOp::Not) {
    Vals out = make_vals(ScalarType::Pred, lanes.size());
    for (size_t k = 0; k < lanes.size(); ++k) out.i[k] = truth(v, k) ? 0 : 1;
    return out;
  }
  if (v.type == ScalarType::F64) {
    float_unary<double>(e.un, v.f);
  } else if (is_f(v.type)) {
    float_unary<float>(e.un, v.f);
    round_lanes(v);
  } else if (v.type != ScalarType::Pred && (e.un == UnOp::Neg || e.un == UnOp::Abs)) {
    for (int64_t& x : v.i)
      x = wrap_int(v.type, (e.un == UnOp::Abs && x >= 0) ? x : static_cast<int64_t>(0ULL - static_cast<uint64_t>(x)));
  } else {
    fail(lanes[0], fmt::format("{} of a {} value", kir::unop_name(e.un), kir::type_name(v.type)));
  }
  return v;
}

Vals Block::eval_binary(const Expr& e, const Lanes& lanes) {
  Vals a = eval(e.args[0], lanes), b = eval(e.args[1], lanes);
  int32_t t0 = lanes[0];
  std::optional<ScalarType> common = is_shift(e.bin) ? a.type : common_type(a.type, b.type);
  if (!common)
    fail(t0, fmt::format("'{}' of {} and {}: CUDA has no common type (cast one operand)", kir::binop_name(e.bin),
                         kir::type_name(a.type), kir::type_name(b.type)));
  bool cmp = kir::is_comparison(e.bin);
  if (!cmp && *common != e.type)
    fail(t0,
         fmt::format("'{}' of {} and {} is {} in CUDA, the IR says {}", kir::binop_name(e.bin), kir::type_name(a.type),
                     kir::type_name(b.type), kir::type_name(*common), kir::type_name(e.type)));
  a = convert(std::move(a), *common);
  if (!is_shift(e.bin)) b = convert(std::move(b), *common);
  size_t n = lanes.size();
  Vals out = make_vals(cmp ? ScalarType::Pred : *common, n);
  if (cmp) {
    if (is_f(*common))
      compare(e.bin, a.f, b.f, out.i);
    else
      compare(e.bin, a.i, b.i, out.i);
    return out;
  }
  if (is_f(*common)) {
    if (is_bitwise(e.bin)) fail(t0, fmt::format("'{}' of {} values", kir::binop_name(e.bin), kir::type_name(*common)));
    if (*common == ScalarType::F64)
      float_binary<double>(e.bin, a.f, b.f, out.f);
    else
      float_binary<float>(e.bin, a.f, b.f, out.f);
    round_lanes(out);
    return out;
  }
  if (is_f(b.type)) fail(t0, fmt::format("shift by a {} amount", kir::type_name(b.type)));
  bool pred_ok = e.bin == BinOp::Min || e.bin == BinOp::Max || e.bin >= BinOp::BitAnd;
  if (e.bin == BinOp::Pow || (*common == ScalarType::Pred && !pred_ok))
    fail(t0, fmt::format("'{}' of {} values", kir::binop_name(e.bin), kir::type_name(*common)));
  size_t bad = *common == ScalarType::I64   ? int_binary<int64_t>(e.bin, a.i, b.i, out.i)
               : *common == ScalarType::U32 ? int_binary<uint32_t>(e.bin, a.i, b.i, out.i)
                                            : int_binary<int32_t>(e.bin, a.i, b.i, out.i);
  if (bad != kNoLane)
    fail(lanes[bad], is_shift(e.bin) ? fmt::format("shift by {} of a {} value", b.i[bad], kir::type_name(*common))
                                     : fmt::format("integer division by zero ('{}')", kir::binop_name(e.bin)));
  return out;
}

// && and ||, short-circuit: the right operand runs only on the lanes that need it.
Vals Block::eval_logical(const Expr& e, const Lanes& lanes) {
  Vals a = eval(e.args[0], lanes);
  bool is_and = e.bin == BinOp::And;
  Lanes rest;
  for (size_t k = 0; k < lanes.size(); ++k)
    if (truth(a, k) == is_and) rest.push_back(lanes[k]);
  Vals b = rest.empty() ? Vals{} : eval(e.args[1], rest);
  Vals out = make_vals(ScalarType::Pred, lanes.size());
  for (size_t k = 0, j = 0; k < lanes.size(); ++k) {
    if (truth(a, k) != is_and) {
      out.i[k] = is_and ? 0 : 1;
    } else {
      out.i[k] = truth(b, j++) ? 1 : 0;
    }
  }
  return out;
}

// p ? a : b evaluates each side only on the lanes that take it (a guarded load stays legal).
Vals Block::eval_select(const Expr& e, const Lanes& lanes) {
  std::optional<ScalarType> type = common_type(e.args[1].type, e.args[2].type);
  if (!type || *type != e.type)
    fail(lanes[0], fmt::format("select of {} and {} typed {}", kir::type_name(e.args[1].type),
                               kir::type_name(e.args[2].type), kir::type_name(e.type)));
  Vals c = eval(e.args[0], lanes);
  Lanes yes, no;
  for (size_t k = 0; k < lanes.size(); ++k) (truth(c, k) ? yes : no).push_back(lanes[k]);
  Vals a = yes.empty() ? make_vals(*type, 0) : convert(eval(e.args[1], yes), *type);
  Vals b = no.empty() ? make_vals(*type, 0) : convert(eval(e.args[2], no), *type);
  Vals out = make_vals(*type, lanes.size());
  for (size_t k = 0, y = 0, z = 0; k < lanes.size(); ++k) {
    bool take = truth(c, k);
    if (is_f(*type))
      out.f[k] = take ? a.f[y++] : b.f[z++];
    else
      out.i[k] = take ? a.i[y++] : b.i[z++];
  }
  return out;
}

Vals Block::eval_index(const Expr& e, const Lanes& lanes) {
  Vals idx = eval(e, lanes);
  if (is_f(idx.type)) fail(lanes[0], fmt::format("memory index of type {}", kir::type_name(idx.type)));
  return idx;
}

int Block::buffer_index(const std::string& name, int32_t thread) const {
  auto it = launch_.buffer_of.find(name);
  if (it == launch_.buffer_of.end()) fail(thread, fmt::format("{} is not a buffer parameter of the kernel", name));
  return it->second;
}

const SharedSlot& Block::slot(const std::string& name, int32_t thread) const {
  auto it = launch_.shared.find(name);
  if (it == launch_.shared.end()) fail(thread, fmt::format("{} is not a shared array of the kernel", name));
  return it->second;
}

std::vector<uint32_t> Block::shared_addrs(const SharedSlot& s, const std::string& name, const Vals& idx,
                                          const Lanes& lanes) {
  std::vector<uint32_t> addrs(lanes.size());
  auto bytes = static_cast<uint32_t>(kir::type_bytes(s.type));
  for (size_t k = 0; k < lanes.size(); ++k) {
    if (idx.i[k] < 0 || idx.i[k] >= s.count)
      fail(lanes[k], fmt::format("shared access out of bounds: {}[{}] (array of {})", name, idx.i[k], s.count));
    addrs[k] = s.offset + static_cast<uint32_t>(idx.i[k]) * bytes;
  }
  return addrs;
}

// Accesses wider than a word are served a phase of 128 bytes at a time (8 lanes of 16 bytes,
// 16 of 8): conflicts count within each phase, so a dense 16-byte warp access counts none.
void Block::count_shared(const Lanes& lanes, const std::vector<uint32_t>& addrs, int bytes) {
  const size_t phase = static_cast<size_t>(bytes > 4 ? 128 / bytes : kWarp);
  for (size_t p = 0; p < lanes.size();) {
    size_t q = p;
    while (q < lanes.size() && warp_of(lanes[q]) == warp_of(lanes[p])) ++q;
    ++report_.shared_accesses;
    for (size_t f = p; f < q; f += phase)
      report_.bank_conflicts += warp_bank_conflicts(std::span(addrs).subspan(f, std::min(phase, q - f)), bytes);
    p = q;
  }
}

Vals Block::eval_load(const Expr& e, const Lanes& lanes) {
  Vals idx = eval_index(e.args[0], lanes);
  size_t n = lanes.size();
  Vals v = make_vals(e.type, n);
  if (e.space == kir::Space::Global) {
    const Global& g = (*launch_.globals)[static_cast<size_t>(buffer_index(e.name, lanes[0]))];
    if (g.type != e.type)
      fail(lanes[0],
           fmt::format("load of {} from buffer {} of {}", kir::type_name(e.type), g.name, kir::type_name(g.type)));
    auto bytes = static_cast<size_t>(kir::type_bytes(g.type));
    for (size_t k = 0; k < n; ++k) {
      if (idx.i[k] < 0 || idx.i[k] >= g.count)
        fail(lanes[k],
             fmt::format("global load out of bounds: buffer {} index {} ({} elements)", g.name, idx.i[k], g.count));
      const uint8_t* p = g.bytes.data() + static_cast<size_t>(idx.i[k]) * bytes;
      if (is_f(g.type))
        v.f[k] = decode_float(g.type, p);
      else
        v.i[k] = decode_int(g.type, p);
    }
    return v;
  }
  const SharedSlot& s = slot(e.name, lanes[0]);
  if (s.type != e.type)
    fail(lanes[0],
         fmt::format("load of {} from shared {} of {}", kir::type_name(e.type), e.name, kir::type_name(s.type)));
  std::vector<uint32_t> addrs = shared_addrs(s, e.name, idx, lanes);
  int bytes = kir::type_bytes(s.type);
  count_shared(lanes, addrs, bytes);
  for (size_t k = 0; k < n; ++k) {
    check_read(lanes[k], at(lanes[k], addrs[k]), static_cast<uint32_t>(bytes));
    const uint8_t* p = smem_.data.data() + at(lanes[k], addrs[k]);
    if (is_f(s.type))
      v.f[k] = decode_float(s.type, p);
    else
      v.i[k] = decode_int(s.type, p);
  }
  return v;
}

Vals Block::eval_shared_addr(const Expr& e, const Lanes& lanes) {
  Vals idx = eval_index(e.args[0], lanes);
  std::vector<uint32_t> addrs = shared_addrs(slot(e.name, lanes[0]), e.name, idx, lanes);
  Vals v = make_vals(ScalarType::U32, lanes.size());
  for (size_t k = 0; k < lanes.size(); ++k) v.i[k] = addrs[k];
  return v;
}

}  // namespace emmy::simt_detail
