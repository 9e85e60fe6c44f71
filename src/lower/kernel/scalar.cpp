// The scalar tier's statements and kernels: one thread a point of the thread space, loops,
// folds and register tiles; the kernel's name, launch shape and parameters.
#include "lower/kernel/builder.hpp"

#include <set>

namespace emmy::lower::detail {

void KernelBuilder::stmt(const lir::Stmt& s) {
  switch (s.kind) {
    case lir::Stmt::Kind::Compute: {
      if (s.value.kind != Expr::Kind::Reg) emit(kir::comment(fmt::format("{} = {}", s.reg, tir::print_expr(s.value))));
      quiet_reduce_ = s.value.kind == Expr::Kind::Reduce;
      K v = lower(s.value);
      scopes_.back().regs[s.reg] = let(unclashed(s.reg), v);
      // A row maximum over a whole axis: exp(e - m) of its own elements needs no -inf test
      // (exp_below_row_max).
      if (s.value.kind == Expr::Kind::Reduce && s.value.op == "max" && s.value.axes.size() == 1 &&
          s.value.where.empty() && s.value.args.size() == 1)
        scopes_.back().maxima[s.reg] = s.value;
      return;
    }
    case lir::Stmt::Kind::Store: {
      const tir::Tensor& t = *p_.tensors.find(s.tensor);
      std::vector<K> idx;
      for (const tir::Axis& a : s.vars) idx.push_back(*find_index(a.name));
      K v = as(lower(s.value), scalar_of(t.dtype));
      if (!s.atomic.empty()) return emit(atomic_store(s, t, linear_index(t, idx), v));
      if (coop_on()) return coop_store(t, idx, v);
      emit(kir::store(kir::Space::Global, s.tensor, linear_index(t, idx), v));
      return;
    }
    case lir::Stmt::Kind::Loop: {
      invert_row_divisors(s);
      AxesBound bound(bound_axes_, {s.axis});
      return coop_top() ? coop_loop(s) : loop(s);
    }
    case lir::Stmt::Kind::Fold: return fold(s, 1);
  }
}

// Under FAST_EXP=1, a division inside a loop by a float register computed before it (softmax's
// row sum l) becomes a multiply by the register's reciprocal, computed once before the loop:
// x * (1 / l) is within 1.5 ulp of x / l, but for divisors below 2^-126 in magnitude (their
// reciprocal overflows), which FAST_EXP's ex2.ftz flushes alike.
void KernelBuilder::invert_row_divisors(const lir::Stmt& s) {
  if (!knobs_.fast_exp) return;
  std::set<std::string> divisors, assigned;
  lir::visit(s.body, [&](const lir::Stmt& b) {
    if (b.kind == lir::Stmt::Kind::Compute) assigned.insert(b.reg);
    for (const lir::Stmt& r : b.results) assigned.insert(r.reg);
    lir::visit_exprs(b, [&](const Expr& e) {
      tir::visit(e, [&](const Expr& x) {
        if (x.kind == Expr::Kind::Binary && x.op == "/" && x.args[1].kind == Expr::Kind::Reg)
          divisors.insert(x.args[1].name);
      });
    });
  });
  for (const std::string& d : divisors) {
    const K* v = assigned.count(d) ? nullptr : find_reg(d);
    if (!v || !kir::is_float(v->type) || find_reciprocal(*v)) continue;
    const ScalarType t = compute_type(v->type);
    scopes_.back().reciprocal[render_key(*v)] =
        let(fresh("inv_" + d), kir::binary(kir::BinOp::Div, kir::cf(1, t), as(*v, t)));
  }
}

kir::Stmt KernelBuilder::atomic_store(const lir::Stmt& s, const tir::Tensor& t, K index, K value) {
  std::optional<kir::IntrinsicId> id = kir::atomic_intrinsic(s.atomic, scalar_of(t.dtype));
  if (!id) internal_error(__FILE__, __LINE__, fmt::format("no atomic {} of {}", s.atomic, dtype_name(t.dtype)));
  return kir::intrinsic(*id, {}, {std::move(index), std::move(value)}, {}, s.tensor);
}

void KernelBuilder::loop(const lir::Stmt& s, std::optional<K> start, int threads) {
  bool carries =
      std::any_of(s.body.begin(), s.body.end(), [](const lir::Stmt& b) { return b.kind == lir::Stmt::Kind::Fold; });
  if (s.tile <= 1 && !carries) {
    emit(kir::comment(fmt::format("for every {} < {}", s.axis.name, s.axis.size)));
    for (kir::Stmt& st : axis_loops({s.axis}, [&] {
           for (const lir::Stmt& b : s.body) stmt(b);
         }))
      emit(std::move(st));
    return;
  }
  // A register tile: tile elements per iteration, each statement unrolled per element,
  // indices clamped so loads stay in bounds and stores guarded for the tail.
  std::string base = s.tile > 1 ? s.axis.name + "0" : s.axis.name;
  K size = size_value(s.axis.size);
  if (s.tile > 1)
    emit(kir::comment(
        fmt::format("{} in register tiles of {} (TILE@{}=f{})", s.axis.name, s.tile, s.axis.name, s.tile)));
  else
    emit(kir::comment(fmt::format("for every {} < {}", s.axis.name, s.axis.size)));
  std::vector<kir::Stmt> body = nested([&] {
    K b = kir::var({base}, ScalarType::I64);
    tile_ = s.tile;
    tile_base_ = b;
    tile_size_ = size;
    tile_axis_ = s.axis.name;
    // Statements of the row that do not read the tile's axis (a log-sum-exp beside the fold's
    // vector result) run once, in the loop's first tile: the thread that owns it (COOP's lane 0).
    auto of_the_row = [&](const lir::Stmt& st) {
      return (st.kind == lir::Stmt::Kind::Compute || st.kind == lir::Stmt::Kind::Store) &&
             !tir::uses_index(st.value, s.axis.name) &&
             std::none_of(st.vars.begin(), st.vars.end(), [&](const tir::Axis& a) { return a.name == s.axis.name; });
    };
    for (size_t i = 0; i < s.body.size(); ++i) {
      const lir::Stmt& st = s.body[i];
      if (st.kind == lir::Stmt::Kind::Fold) {
        fold(st, s.tile);
        continue;
      }
      if (of_the_row(st)) {
        size_t end = i;
        while (end < s.body.size() && of_the_row(s.body[end])) ++end;
        std::vector<kir::Stmt> once = nested([&] {
          for (size_t r = i; r < end; ++r) stmt(s.body[r]);
        });
        emit(kir::if_then(kir::binary(kir::BinOp::Eq, b, kir::ci(0, ScalarType::I64)), std::move(once)));
        i = end - 1;
        continue;
      }
      for (int u = 0; u < s.tile; ++u) {
        K e = s.tile > 1 ? kir::binary(kir::BinOp::Add, b, kir::ci(u, ScalarType::I64)) : b;
        std::vector<kir::Stmt> one = nested([&] {
          bind_tile_element(u);
          scopes_.back().index[s.axis.name] = e;
          stmt(st);
        });
        if (s.tile == 1) {
          for (kir::Stmt& x : one) emit(std::move(x));
          continue;
        }
        emit(kir::if_then(kir::binary(kir::BinOp::Lt, e, size), std::move(one)));
      }
    }
    tile_ = 1;
    tile_arrays_.clear();  // the tile's carrier arrays die with its loop
  });
  kir::Stmt f =
      kir::for_loop(base, ScalarType::I64, start.value_or(kir::ci(0, ScalarType::I64)), size, std::move(body));
  f.step = std::max(1, s.tile) * threads;
  emit(std::move(f));
}

void KernelBuilder::bind_tile_element(int u) {
  for (const auto& [name, reg] : tile_arrays_)
    scopes_.back().regs[name] = kir::var({reg.first, tile_ > 1 ? u : -1}, reg.second);
}

void KernelBuilder::fold(const lir::Stmt& s, int tile) {
  AxesBound bound(bound_axes_, {s.axis});
  std::vector<std::string> names;
  for (const lir::CarrierField& f : s.fields) names.push_back(f.name);
  emit(kir::comment(fmt::format("one pass over {} carrying ({}) through the proved monoid {}", s.axis.name,
                                fmt::join(names, ", "), s.monoid)));
  // Carrier registers: per-tile fields are arrays of `tile`.
  std::vector<K> scalars(s.fields.size());
  std::vector<std::string> array_names(s.fields.size());
  for (size_t i = 0; i < s.fields.size(); ++i) {
    const lir::CarrierField& f = s.fields[i];
    ScalarType t = scalar_of(f.dtype);
    K init = as(term_value(s.terms.identity[i], {}, t), t);
    std::string reg = "run_" + f.name;
    if (f.per_tile) {
      emit(kir::decl(reg, t, init, tile));
      array_names[i] = reg;
      tile_arrays_[reg] = {reg, t};
    } else {
      scalars[i] = let(reg, init);
    }
  }
  auto elem_of = [&](size_t i, int u) {
    if (!s.fields[i].per_tile) return scalars[i];
    return kir::var({array_names[i], tile > 1 ? u : -1}, scalar_of(s.fields[i].dtype));
  };
  // Whether this thread's fold combined an element: for COOP's shares, and where the identity
  // must not meet a value (algebra::identity_unsafe: the fold starts from its first element).
  const bool first_element = algebra::identity_unsafe(s.terms);
  const bool per_tile =
      std::any_of(s.fields.begin(), s.fields.end(), [](const lir::CarrierField& f) { return f.per_tile; });
  const bool coop = coop_top() && tile == 1 && !per_tile && s.range.empty();
  std::optional<K> has;
  if ((coop && !algebra::identity_exact(s.terms)) || first_element)
    has = let(fresh("has"), kir::ci(0, ScalarType::Pred));
  auto element = [&] {
    auto body = [&] {
      // Lift the element once for scalar fields, once per tile element for per-tile ones.
      std::vector<std::vector<K>> lifted(s.fields.size());
      for (size_t i = 0; i < s.fields.size(); ++i)
        for (int u = 0; u < (s.fields[i].per_tile ? tile : 1); ++u) {
          if (s.fields[i].per_tile) bind_clamped(u);
          lifted[i].push_back(
              let(fresh("lift_" + s.fields[i].name), as(lower(s.fields[i].lift), scalar_of(s.fields[i].dtype))));
        }
      // New values from the old ones, then assign: the combine reads a whole old carrier.
      std::vector<std::vector<K>> next(s.fields.size());
      for (size_t i = 0; i < s.fields.size(); ++i)
        for (int u = 0; u < (s.fields[i].per_tile ? tile : 1); ++u) {
          std::map<std::string, K> env;
          for (size_t j = 0; j < s.fields.size(); ++j) {
            int uj = s.fields[j].per_tile ? u : 0;
            env["a." + s.fields[j].name] = elem_of(j, s.fields[j].per_tile ? u : 0);
            env["b." + s.fields[j].name] = lifted[j][uj];
          }
          ScalarType t = scalar_of(s.fields[i].dtype);
          K v = as(term_value(s.terms.combine[i], env, t), t);
          if (first_element) v = kir::select(*has, v, lifted[i][s.fields[i].per_tile ? u : 0]);
          next[i].push_back(let(fresh("next_" + s.fields[i].name), v));
        }
      for (size_t i = 0; i < s.fields.size(); ++i)
        for (size_t u = 0; u < next[i].size(); ++u) emit(kir::assign(elem_of(i, static_cast<int>(u)).reg, next[i][u]));
      if (has) emit(kir::assign(has->reg, kir::ci(1, ScalarType::Pred)));
    };
    if (s.where.empty()) return body();
    emit(kir::if_then(as(lower(s.where[0]), ScalarType::Pred), nested(body)));
  };
  if (coop) {
    CarrierSpec spec;
    spec.fields = names;
    for (const lir::CarrierField& f : s.fields) spec.types.push_back(scalar_of(f.dtype));
    spec.identity = s.terms.identity;
    spec.combine = s.terms.combine;
    spec.lift = s.terms.lift;
    coop_reduce(s.monoid, {s.axis}, spec, scalars, has, element);
  } else {
    std::vector<kir::Stmt> loop = axis_loops({s.axis}, element);
    if (s.range.size() == 2)  // a split's group: only [lo, hi) of the axis
      for (size_t b = 0; b < 2; ++b) loop.front().args[b] = as(lower(s.range[b]), ScalarType::I64);
    for (kir::Stmt& st : loop) emit(std::move(st));
  }
  for (size_t i = 0; i < s.fields.size(); ++i)
    if (!s.fields[i].per_tile) scopes_.back().regs["run_" + s.fields[i].name] = scalars[i];
  for (const lir::Stmt& r : s.results) stmt(r);
}

void KernelBuilder::bind_clamped(int u) {
  if (tile_ == 1) {
    scopes_.back().index[tile_axis_] = tile_base_;
    return;
  }
  K e = kir::binary(kir::BinOp::Add, tile_base_, kir::ci(u, ScalarType::I64));
  K last = kir::binary(kir::BinOp::Sub, tile_size_, kir::ci(1, ScalarType::I64));
  scopes_.back().index[tile_axis_] = kir::binary(kir::BinOp::Min, e, last);
  scopes_.back().memo.clear();
}

kir::Kernel KernelBuilder::kernel(const lir::Kernel& k, kir::Program& program) {
  kir::Kernel out;
  std::string part = k.name.empty() ? "" : "_" + k.name;
  uint64_t h = 1469598103934665603ull;
  for (char c : program.knobs + part) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  // A long op or statement name is cut (NVRTC and the driver take kernel names, not novels);
  // the hash then covers the whole name.
  std::string base = p_.tensors.op + part;
  if (base.size() > 96) {
    for (char c : base) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    base.resize(96);
  }
  out.name = fmt::format("k_{}_{:06x}", base, h & 0xffffff);
  out.doc = k.doc;
  KernelPlan plan;
  plan.kernel = out.name;
  if (knobs_.mma && !k.scalar_tier) {
    std::string why;
    counter_ = 0;
    // The tier builds into a copy: a refusal leaves neither its shared arrays and tensor-map
    // parameters in the kernel the scalar tier then builds, nor its limits and warnings.
    kir::Kernel attempt = out;
    const size_t warnings = program.warnings.size(), limits = program.limits.size(), laws = law_warnings_.size();
    struct OnTensorCores {  // COOP off while the tier builds, also when it throws
      bool& on;
      explicit OnTensorCores(bool& flag) : on(flag) { on = true; }
      ~OnTensorCores() { on = false; }
    };
    bool built = false;
    {
      OnTensorCores scope(in_tensor_core_);
      built = mma_kernel(k, attempt, program, why, plan);
    }
    if (built) {
      plan.kernel = out.name;
      plans_.push_back(std::move(plan));
      if (bodies_ == KernelBodies::All)
        collect_params(attempt, program);
      else
        loop_params(k, attempt, program);
      return attempt;
    }
    const bool no_contraction = plan.no_contraction;
    plan = KernelPlan();
    plan.kernel = out.name;
    plan.refused = why;
    plan.no_contraction = no_contraction;
    program.warnings.resize(warnings);
    program.limits.resize(limits);
    law_warnings_.resize(laws);
    // Located at the TILE setting that asked for tensor cores.
    KnobLocation at;
    if (auto use = knobs_.uses.find(Knob::Tile); use != knobs_.uses.end())
      at = knob_location(use->second.origin, use->second.setting);
    (no_contraction ? untileable_ : program.warnings)
        .push_back({"W054",
                    fmt::format("{} (kernel {}): {}; it runs on the scalar tier (--ir plan shows the plan)",
                                knobs_.atom, out.name, why),
                    at.where, at.snippet});
  }
  out.block_threads = knobs_.block_threads;
  out.min_blocks_per_sm = 1;
  plan.block_threads = out.block_threads;
  plan.tier = coop_on() ? KernelPlan::Tier::CoopRows : KernelPlan::Tier::Scalar;
  if (coop_on()) {
    plan.coop_threads = knobs_.coop_threads;
    plan.coop_vec = knobs_.coop_vec;
    plan.cluster = knobs_.coop_cluster > 1 ? knobs_.coop_cluster : 0;
    plan.persistent = knobs_.persist;
  }
  plans_.push_back(std::move(plan));
  K total = kir::ci(1, ScalarType::I64);
  for (size_t i = 0; i < k.threads.size(); ++i)
    total = i == 0 ? size_value(k.threads[i].size) : kir::binary(kir::BinOp::Mul, total, size_value(k.threads[i].size));
  // A thread a point of the thread space, or under COOP a row of N threads.
  const int points = coop_on() ? out.block_threads / knobs_.coop_threads : out.block_threads;
  out.grid_x = kir::binary(kir::BinOp::Div, kir::binary(kir::BinOp::Add, total, kir::ci(points - 1, ScalarType::I64)),
                           kir::ci(points, ScalarType::I64));
  if (bodies_ == KernelBodies::None) {
    loop_params(k, out, program);
    return out;
  }

  std::vector<kir::Stmt> body;
  blocks_ = {&body};
  scopes_ = {{}};
  counter_ = 0;
  if (coop_on()) {
    coop_kernel(k, out, total);
    out.min_blocks_per_sm = cache_min_blocks(out);
    out.body = std::move(body);
    if (bodies_ == KernelBodies::All)
      collect_params(out, program);
    else  // (a ranking's row cache leaves its bodies out)
      loop_params(k, out, program);
    return out;
  }
  emit(kir::comment("the flat thread id and the point of the thread space it owns"));
  K gid = let("gid", kir::binary(kir::BinOp::Add,
                                 kir::binary(kir::BinOp::Mul, as(kir::special(kir::Special::BlockIdx), ScalarType::I64),
                                             as(kir::special(kir::Special::BlockDim), ScalarType::I64)),
                                 as(kir::special(kir::Special::ThreadIdx), ScalarType::I64)));
  std::vector<kir::Stmt> guarded = nested([&] {
    K rest = gid;
    for (size_t i = k.threads.size(); i-- > 0;) {
      const tir::Axis& a = k.threads[i];
      K v = i == 0 ? rest : kir::binary(kir::BinOp::Rem, rest, size_value(a.size));
      scopes_.back().index[a.name] = let(unclashed(a.name), v);
      if (i > 0) rest = kir::binary(kir::BinOp::Div, rest, size_value(a.size));
    }
    for (const lir::Stmt& s : k.body) stmt(s);
  });
  emit(kir::if_then(kir::binary(kir::BinOp::Lt, gid, total), std::move(guarded)));
  out.body = std::move(body);
  collect_params(out, program);
  return out;
}

void KernelBuilder::loop_params(const lir::Kernel& lk, kir::Kernel& k, const kir::Program& program) const {
  std::set<std::string> loads, stores, inlined;
  std::function<void(const Expr&)> reads = [&](const Expr& top) {
    tir::visit(top, [&](const Expr& e) {
      if (e.kind != Expr::Kind::Read) return;
      if (in_global(e.name)) {
        loads.insert(e.name);
      } else if (const tir::Stmt* def = p_.tensors.def(e.name); def && inlined.insert(e.name).second) {
        reads(def->value);
      }
    });
  };
  lir::visit(lk.body, [&](const lir::Stmt& s) {
    if (s.kind == lir::Stmt::Kind::Store) stores.insert(s.tensor);
    lir::visit_exprs(s, reads);
  });
  for (const kir::Buffer& b : program.buffers)
    if (loads.count(b.name) || stores.count(b.name))
      k.params.push_back({kir::Param::Kind::Buffer, b.name, b.type, !stores.count(b.name), {}, {}});
}

void KernelBuilder::collect_params(kir::Kernel& k, const kir::Program& program) {
  std::set<std::string> loads, stores, sizes;
  auto expr = [&](const K& e) {
    if (e.kind == K::Kind::Load) loads.insert(e.name);
    if (e.kind == K::Kind::Param) sizes.insert(e.name);
  };
  kir::visit(k.body, [&](const kir::Stmt& s) {
    if (s.kind == kir::Stmt::Kind::Store || s.kind == kir::Stmt::Kind::VecStore ||
        (s.kind == kir::Stmt::Kind::Intrinsic && kir::is_atomic(s.intrinsic)))
      stores.insert(s.name);
    if (s.kind == kir::Stmt::Kind::VecLoad) loads.insert(s.name);
  });
  kir::visit_exprs(k.body, expr);
  for (const kir::Buffer& b : program.buffers)
    if (loads.count(b.name) || stores.count(b.name))
      k.params.push_back({kir::Param::Kind::Buffer, b.name, b.type, !stores.count(b.name), {}, {}});
  kir::visit(k.grid_x, expr);
  for (const std::string& s : program.sizes)
    if (sizes.count(s)) k.params.push_back({kir::Param::Kind::Scalar, s, ScalarType::I64, true, {}, {}});
}

}  // namespace emmy::lower::detail
