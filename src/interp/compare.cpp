// The check of a computed tensor against the reference, element by element and in L2.
#include "interp/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "support/parallel_chunks.hpp"

namespace emmy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One element's verdict: its absolute error, how far past its bound it is (err / bound: above 1
// is off), and whether `got` is non-finite where the reference is finite.
struct Element {
  double err = 0;
  double excess = 0;
  bool off = false;
  bool non_finite = false;
};

// `scale_bound`: what every finite element may be off by whatever its own size (rel_l2 times the
// reference's RMS, see compare).
Element judge(double g, double r, const Tolerance& t, double scale_bound) {
  if (std::isnan(r)) return std::isnan(g) ? Element{} : Element{kInf, kInf, true, false};
  if (std::isinf(r)) return g == r ? Element{} : Element{kInf, kInf, true, false};
  if (!std::isfinite(g)) return Element{kInf, kInf, true, true};
  const double err = std::fabs(g - r);
  const double bound = t.atol + t.rtol * std::fabs(r) + scale_bound;
  const double excess = err == 0 ? 0 : bound > 0 ? err / bound : kInf;
  return Element{err, excess, err > bound, false};
}

// Per chunk, merged in chunk order: the sums, counts and the first index of the worst element
// are the same on any number of threads.
struct Partial {
  double err2 = 0, ref2 = 0, max_abs = 0, worst_excess = -1;
  size_t worst = 0, off = 0, non_finite = 0, ref_nan = 0, ref_inf = 0;
  bool mismatch = false;  // the reference is NaN or infinite and `got` differs
};

void add(Partial& p, size_t i, double g, double r, const Tolerance& t, double scale_bound) {
  const Element e = judge(g, r, t, scale_bound);
  if (std::isfinite(r) && std::isfinite(g)) {
    p.err2 += e.err * e.err;
    p.ref2 += r * r;
  }
  p.ref_nan += std::isnan(r);
  p.ref_inf += std::isinf(r);
  p.mismatch = p.mismatch || (!std::isfinite(r) && e.off);
  p.off += e.off;
  p.non_finite += e.non_finite;
  p.max_abs = std::max(p.max_abs, e.err);
  if (e.excess > p.worst_excess) {
    p.worst_excess = e.excess;
    p.worst = i;
  }
}

// A value as the failure line shows it: NaN without its sign (the 0xff poison is a negative NaN).
std::string value_text(double v) { return std::isnan(v) ? std::string("nan") : fmt::format("{:.6g}", v); }

std::string shape_str(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string percent(size_t part, size_t whole) {
  const double p = 100.0 * static_cast<double>(part) / static_cast<double>(std::max<size_t>(whole, 1));
  return p >= 10 || p == 0 ? fmt::format("{:.0f}%", p) : fmt::format("{:.2g}%", p);
}

// Non-empty when the reference is NaN or infinite in more than the allowed fraction.
std::string reference_error(const Partial& total, size_t elements, const Tolerance& t) {
  const size_t bad = total.ref_nan + total.ref_inf;
  if (elements == 0 || static_cast<double>(bad) <= t.max_non_finite_reference * static_cast<double>(elements))
    return "";
  std::string what = total.ref_inf == 0   ? fmt::format("NaN in {}", percent(total.ref_nan, elements))
                     : total.ref_nan == 0 ? fmt::format("infinite in {}", percent(total.ref_inf, elements))
                                          : fmt::format("NaN or infinite in {}", percent(bad, elements));
  return fmt::format("the reference is {} of the elements ({} of {}; at most {} allowed): these inputs check nothing",
                     what, bad, elements, fmt::format("{:g}%", 100 * t.max_non_finite_reference));
}

}  // namespace

Comparison compare(const HostTensor& got, const HostTensor& ref, const Tolerance& tolerance) {
  Comparison c;
  if (got.shape != ref.shape || got.data.size() != ref.data.size()) {
    c.shape_error = fmt::format("shape {} ({} values) differs from the reference's {} ({} values)",
                                shape_str(got.shape), got.data.size(), shape_str(ref.shape), ref.data.size());
    return c;
  }
  // An element of a sum whose terms cancel is near zero while its rounding error is that of the
  // terms: such an element is judged against the output's scale (the RMS of the finite reference
  // elements), being off by at most what the whole output may be off on average.
  std::vector<double> sums(chunk_count(ref.data.size()), 0.0);
  std::vector<size_t> counts(sums.size(), 0);
  parallel_chunks(ref.data.size(), [&](size_t chunk, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      if (std::isfinite(ref.data[i])) {
        sums[chunk] += ref.data[i] * ref.data[i];
        ++counts[chunk];
      }
  });
  double sum = 0;
  size_t count = 0;
  for (size_t k = 0; k < sums.size(); ++k) {
    sum += sums[k];
    count += counts[k];
  }
  c.reference_rms = count ? std::sqrt(sum / static_cast<double>(count)) : 0;
  const double scale_bound = tolerance.rel_l2 * c.reference_rms;
  std::vector<Partial> parts(chunk_count(ref.data.size()));
  parallel_chunks(ref.data.size(), [&](size_t chunk, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) add(parts[chunk], i, got.data[i], ref.data[i], tolerance, scale_bound);
  });
  Partial total;
  for (const Partial& p : parts) {
    total.err2 += p.err2;
    total.ref2 += p.ref2;
    total.off += p.off;
    total.non_finite += p.non_finite;
    total.ref_nan += p.ref_nan;
    total.ref_inf += p.ref_inf;
    total.mismatch = total.mismatch || p.mismatch;
    total.max_abs = std::max(total.max_abs, p.max_abs);
    if (p.worst_excess > total.worst_excess) {
      total.worst_excess = p.worst_excess;
      total.worst = p.worst;
    }
  }
  c.elements = ref.data.size();
  // Relative to the reference's norm, but never to less than atol per element: an output that
  // is near zero everywhere is not judged against its own tiny norm.
  const double floor = tolerance.atol * std::sqrt(static_cast<double>(c.elements));
  c.rel_l2 = total.mismatch ? kInf : std::sqrt(total.err2) / std::max({std::sqrt(total.ref2), floor, 1e-300});
  c.max_abs = total.max_abs;
  c.worst = total.worst;
  c.worst_got = c.elements ? got.data[c.worst] : 0;
  c.worst_want = c.elements ? ref.data[c.worst] : 0;
  c.worst_excess = std::max(total.worst_excess, 0.0);
  c.off = total.off;
  c.non_finite = total.non_finite;
  c.reference_nan = total.ref_nan;
  c.reference_inf = total.ref_inf;
  c.reference_error = reference_error(total, c.elements, tolerance);
  c.ok = c.reference_error.empty() && c.off == 0 && c.rel_l2 <= tolerance.rel_l2;
  return c;
}

bool within_peers(const Comparison& kernel, const std::vector<Comparison>& peers, const Tolerance& tolerance) {
  if (kernel.ok || !kernel.shape_error.empty() || !kernel.reference_error.empty() || kernel.non_finite > 0)
    return kernel.ok;
  double worst_peer = 0, worst_peer_l2 = 0;
  for (const Comparison& p : peers) {
    worst_peer = std::max(worst_peer, p.worst_excess);
    worst_peer_l2 = std::max(worst_peer_l2, p.rel_l2);
  }
  // Each figure within its bound, or past it where a peer is past it too, by at most kPeerFactor of it.
  const bool elements = kernel.worst_excess <= 1 || (worst_peer > 1 && kernel.worst_excess <= kPeerFactor * worst_peer);
  const bool l2 = kernel.rel_l2 <= tolerance.rel_l2 ||
                  (worst_peer_l2 > tolerance.rel_l2 && kernel.rel_l2 <= kPeerFactor * worst_peer_l2);
  return elements && l2;
}

std::vector<Comparison> peer_comparisons(const std::string& name, const HostTensor& ref,
                                         const std::vector<TensorMap>& peers, const Tolerance& tolerance) {
  std::vector<Comparison> out;
  for (const TensorMap& p : peers)
    if (auto it = p.find(name); it != p.end()) out.push_back(compare(it->second, ref, tolerance));
  return out;
}

// Elementwise bounds sit above the L2 figure: L2 is an average, one element may be a few
// roundings worse. Each is at least a unit roundoff of the dtype (f16 2^-11, bf16 2^-8), and
// atol is the L2 tolerance itself: an element may be off by what the whole output may be off on
// average, atol at unit scale, rel_l2 times the reference's RMS at any scale (compare: a 16-bit
// program that stores an intermediate, an op call's f16 output, then sums products of it, is
// 1e-3 of the output's RMS off where the terms cancel).
Tolerance tolerance_for(DType dtype) {
  struct Row {
    DType dtype;
    Tolerance tolerance;
  };
  static constexpr Row kTable[] = {
      {DType::F16, {5e-3, 5e-3, 1e-2}}, {DType::BF16, {3e-2, 3e-2, 6e-2}},
      {DType::F32, {1e-5, 1e-5, 1e-4}}, {DType::F64, {1e-12, 1e-12, 1e-10}},
      {DType::Bool, {0, 0, 0}},         {DType::I32, {0, 0, 0}},
      {DType::I64, {0, 0, 0}},
  };
  for (const Row& r : kTable)
    if (r.dtype == dtype) return r.tolerance;
  return Tolerance{};
}

Tolerance tolerance_for(const CheckedOp& op, DType output) {
  Tolerance tol = tolerance_for(output);
  if (tol.rel_l2 == 0) return tol;  // integer and bool outputs are exact whatever they were computed from
  for (const TensorInfo& t : op.tensors)
    if (t.elem.kind == Type::Kind::Scalar && is_float(t.elem.dtype)) {
      const Tolerance other = tolerance_for(t.elem.dtype);
      tol.rel_l2 = std::max(tol.rel_l2, other.rel_l2);
      tol.atol = std::max(tol.atol, other.atol);
      tol.rtol = std::max(tol.rtol, other.rtol);
    }
  return tol;
}

std::string index_text(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<size_t>(std::max<int64_t>(shape[d], 1));
    index[d] = static_cast<int64_t>(flat % extent);
    flat /= extent;
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

std::string failure_reason(const std::string& name, const Comparison& c, const Tolerance& tolerance,
                           const std::vector<int64_t>& shape) {
  if (c.ok) return "";
  if (!c.shape_error.empty()) return c.shape_error;
  std::vector<std::string> why;
  if (!c.reference_error.empty()) why.push_back(c.reference_error);
  if (c.off > 0)
    why.push_back(fmt::format(
        "{} of {} elements off{}, worst {}{}: got {}, want {} (bound {:.1e} + {:.1e}*|want| + {:.1e}*rms, rms {:.3g})",
        c.off, c.elements, c.non_finite ? fmt::format(" ({} non-finite)", c.non_finite) : "", name,
        index_text(c.worst, shape), value_text(c.worst_got), value_text(c.worst_want), tolerance.atol, tolerance.rtol,
        tolerance.rel_l2, c.reference_rms));
  if (c.rel_l2 > tolerance.rel_l2) why.push_back(fmt::format("rel L2 {:.2e} > {:.1e}", c.rel_l2, tolerance.rel_l2));
  return fmt::format("{}", fmt::join(why, "; "));
}

}  // namespace emmy
