// Lane forms: in a fold's interior blocks, an integer linear form of the lane's coordinates is
// computed once a block and each score element adds its constant: converted to f32 (ALiBi's
// j - i), instead of each element's 64-bit value through a quarter-rate cvt, exact within 2^24;
// compared (a select's j <= i) in 32 bits against an immediate. The interior test checks once a
// launch that every value stays within those limits.
#include "lower/kernel/mma/tier.hpp"

#include <cstdlib>

namespace emmy::lower::detail {

namespace {

constexpr int64_t kLanes = 32;                // a warp's
constexpr int64_t kExact = int64_t{1} << 24;  // f32 holds every integer of at most this magnitude
constexpr int64_t kInt32 = (int64_t{1} << 31) - 1;

// sum of coefficient * atom, plus a constant; atoms keyed by their rendering.
struct IntForm {
  std::map<std::string, std::pair<K, int64_t>> terms;
  int64_t c = 0;
};

bool is_int(ScalarType t) { return t == ScalarType::I64 || t == ScalarType::I32; }

bool scaled(IntForm& f, int64_t k) {
  if (__builtin_mul_overflow(f.c, k, &f.c)) return false;
  for (auto& [key, term] : f.terms)
    if (__builtin_mul_overflow(term.second, k, &term.second)) return false;
  return true;
}

bool added(IntForm& into, const IntForm& f, int64_t sign) {
  int64_t c = 0;
  if (__builtin_mul_overflow(f.c, sign, &c) || __builtin_add_overflow(into.c, c, &into.c)) return false;
  for (const auto& [key, term] : f.terms) {
    auto [it, fresh] = into.terms.try_emplace(key, term.first, 0);
    if (__builtin_mul_overflow(term.second, sign, &c) ||
        __builtin_add_overflow(it->second.second, c, &it->second.second))
      return false;
    if (it->second.second == 0) into.terms.erase(it);
  }
  return true;
}

// The form of an integer expression: + - and * by a constant over atoms, an atom being a
// variable, a launch invariant, or a widening cast of one. Anything else: none.
std::optional<IntForm> int_form(const K& e) {
  if (!is_int(e.type)) return std::nullopt;
  IntForm f;
  switch (e.kind) {
    case K::Kind::Const: f.c = e.ival; return f;
    case K::Kind::Cast:
      if (e.type == ScalarType::I64 && e.args[0].type == ScalarType::I32) return int_form(e.args[0]);
      break;
    case K::Kind::Binary:
      if (e.bin == kir::BinOp::Add || e.bin == kir::BinOp::Sub) {
        std::optional<IntForm> a = int_form(e.args[0]), b = int_form(e.args[1]);
        if (!a || !b || !added(*a, *b, e.bin == kir::BinOp::Sub ? -1 : 1)) return std::nullopt;
        return a;
      }
      if (e.bin == kir::BinOp::Mul)
        for (int side = 0; side < 2; ++side)
          if (e.args[side].kind == K::Kind::Const) {
            std::optional<IntForm> a = int_form(e.args[1 - side]);
            if (!a || !scaled(*a, e.args[side].ival)) return std::nullopt;
            return a;
          }
      break;
    default: break;
  }
  if (e.kind != K::Kind::Var && !kir::launch_invariant(e)) return std::nullopt;
  f.terms.emplace(KernelBuilder::render_key(e), std::pair{e, int64_t{1}});
  return f;
}

}  // namespace

// x's lane form without its constant, registered in the block's forms as `type` (emitted once),
// and the constant; none where x is not a linear form of bounded lane variables and invariants.
std::optional<std::pair<K, int64_t>> MmaTier::lane_form(const K& x, ScalarType type) {
  const int64_t limit = type == F32 ? kExact : kInt32;
  std::optional<IntForm> f = int_form(x);
  if (!f || f->terms.empty() || std::llabs(f->c) > limit) return std::nullopt;
  // An upper bound of |form - constant| over the launch, each atom's bound times |coefficient|,
  // and the test that no term alone passes the limit (so the bound's sum cannot overflow).
  std::optional<K> bound, base, terms_small;
  for (const auto& [key, term] : f->terms) {
    const auto& [atom, coef] = term;
    const K wide = as(atom, I64);
    std::optional<K> b;
    if (auto known = lane_floats_->atom_bounds.find(key); known != lane_floats_->atom_bounds.end())
      b = known->second;
    else if (kir::launch_invariant(atom))
      b = kir::select(lt(wide, i64(0)), kir::unary(kir::UnOp::Neg, wide), wide);
    if (!b || std::llabs(coef) > limit) return std::nullopt;
    K small = kir::binary(kir::BinOp::And, kir::binary(kir::BinOp::Ge, *b, i64(0)),
                          kir::binary(kir::BinOp::Le, *b, i64(limit / std::llabs(coef))));
    terms_small = terms_small ? kir::binary(kir::BinOp::And, *terms_small, small) : small;
    K scaled_bound = mul(*b, i64(std::llabs(coef)));
    bound = bound ? add(*bound, scaled_bound) : scaled_bound;
    K t = coef == 1 ? wide : mul(wide, i64(coef));
    base = base ? add(*base, t) : t;
  }
  LaneFloats::Form& form = lane_floats_->forms[KernelBuilder::render_key(*base) + (type == F32 ? ":f32" : ":i32")];
  if (!form.value) {
    form.value = let(b_.fresh(type == F32 ? "lane_float" : "lane_int"), as(*base, type));
    form.bound = *bound;
    form.terms_small = *terms_small;
    form.limit = limit;
  }
  form.largest_constant = std::max<int64_t>(form.largest_constant, std::llabs(f->c));
  return std::pair{*form.value, f->c};
}

std::optional<K> MmaTier::lane_float(const K& x) {
  std::optional<std::pair<K, int64_t>> f = lane_form(x, F32);
  if (!f) return std::nullopt;
  return f->second == 0 ? f->first : add(f->first, kir::cf(static_cast<double>(f->second), F32));
}

std::optional<K> MmaTier::lane_compare(const K& cmp) {
  // a op b as (a - b - c) op c in 32 bits, c the difference's constant: one compare with an
  // immediate an element.
  std::optional<std::pair<K, int64_t>> f =
      lane_form(kir::binary(kir::BinOp::Sub, as(cmp.args[0], I64), as(cmp.args[1], I64)), ScalarType::I32);
  if (!f) return std::nullopt;
  return kir::binary(cmp.bin, f->first, kir::ci(-f->second, ScalarType::I32));
}

std::optional<K> MmaTier::lane_floats_exact(const LaneFloats& lf) {
  std::optional<K> ok;
  for (const auto& [key, form] : lf.forms) {
    K within = kir::binary(kir::BinOp::And, form.terms_small,
                           kir::binary(kir::BinOp::Le, add(form.bound, i64(form.largest_constant)), i64(form.limit)));
    ok = ok ? kir::binary(kir::BinOp::And, *ok, within) : within;
  }
  if (!ok) return std::nullopt;
  return hoisted("lane_floats_exact", *ok);
}

MmaTier::LaneFloats MmaTier::lane_floats(const K& j0) const {
  LaneFloats lf;
  const K rows = add(KernelBuilder::size_value(row_axis_.size), i64(rows_per_block_));
  for (const K* r : {&row0_, &group_row0_, &row_block0_})
    if (r->kind == K::Kind::Var) lf.atom_bounds[KernelBuilder::render_key(*r)] = rows;
  lf.atom_bounds[KernelBuilder::render_key(j0)] = KernelBuilder::size_value(fold_->axis.size);
  lf.atom_bounds[KernelBuilder::render_key(grp_)] = i64(kLanes / 4);  // lane / 4
  lf.atom_bounds[KernelBuilder::render_key(tig_)] = i64(4);           // lane % 4
  return lf;
}

}  // namespace emmy::lower::detail
