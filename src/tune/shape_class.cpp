// Shape classes of the tuning database: rounding, parsing, distance, and the guards of a set.
#include "tune/shape_class.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace emmy::tune {

std::string ShapeClass::text() const {
  std::vector<std::string> parts;
  for (const auto& [name, s] : sizes) parts.push_back(fmt::format("{}{}{}", name, s.exact ? '=' : '~', s.value));
  return fmt::format("{}", fmt::join(parts, ","));
}

ShapeClass shape_class(const std::map<std::string, int64_t>& sizes) {
  ShapeClass c;
  for (const auto& [name, value] : sizes) {
    if (value <= kExactSizesUpTo) {
      c.sizes[name] = {value, true};
      continue;
    }
    const double log = std::round(std::log2(static_cast<double>(value)));
    c.sizes[name] = {static_cast<int64_t>(std::llround(std::exp2(log))), false};
  }
  return c;
}

std::optional<ShapeClass> parse_shape_class(const std::string& text) {
  ShapeClass c;
  if (!text.empty() && text.back() == ',') return std::nullopt;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    const size_t op = part.find_first_of("=~");
    if (op == std::string::npos || op == 0 || op + 1 == part.size()) return std::nullopt;
    char* stop = nullptr;
    const long long value = std::strtoll(part.c_str() + op + 1, &stop, 10);
    if (*stop || value < 0) return std::nullopt;
    c.sizes[part.substr(0, op)] = {value, part[op] == '='};
    at = end + 1;
  }
  return c;
}

std::optional<double> class_distance(const ShapeClass& a, const ShapeClass& b) {
  if (a.sizes.size() != b.sizes.size()) return std::nullopt;
  double d = 0;
  for (const auto& [name, s] : a.sizes) {
    auto it = b.sizes.find(name);
    if (it == b.sizes.end()) return std::nullopt;
    const ShapeClass::Size& t = it->second;
    if (s.exact || t.exact) {
      if (s.exact != t.exact || s.value != t.value) return std::nullopt;
      continue;
    }
    d += std::abs(std::log2(static_cast<double>(s.value)) - std::log2(static_cast<double>(t.value)));
  }
  return d;
}

namespace {

// The size halfway between two powers of two in log2, rounded up: sizes below it are nearer `lo`.
int64_t midpoint(int64_t lo, int64_t hi) {
  return static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
}

bool same_exact(const ShapeClass& a, const ShapeClass& b) {
  if (a.sizes.size() != b.sizes.size()) return false;
  for (const auto& [name, s] : a.sizes) {
    auto it = b.sizes.find(name);
    if (it == b.sizes.end() || s.exact != it->second.exact || (s.exact && s.value != it->second.value)) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> class_guards(const std::vector<ShapeClass>& classes) {
  std::vector<std::string> out;
  for (const ShapeClass& c : classes) {
    std::vector<std::string> terms;
    for (const auto& [name, s] : c.sizes) {
      if (s.exact) {
        terms.push_back(fmt::format("{} == {}", name, s.value));
        continue;
      }
      std::set<int64_t> values;  // this size in the classes this one's schedules compete with
      for (const ShapeClass& other : classes)
        if (same_exact(c, other)) values.insert(other.sizes.at(name).value);
      auto it = values.find(s.value);
      if (it != values.begin()) terms.push_back(fmt::format("{} >= {}", name, midpoint(*std::prev(it), s.value)));
      if (std::next(it) != values.end())
        terms.push_back(fmt::format("{} < {}", name, midpoint(s.value, *std::next(it))));
    }
    // Nothing bounds it (one class): the sizes that round to it, so that the default (or the
    // auto-schedule) keeps the rest; a class of no sizes at all holds everywhere.
    if (terms.empty())
      for (const auto& [name, s] : c.sizes)
        terms.push_back(fmt::format("{} >= {} && {} < {}", name, std::max<int64_t>(midpoint(s.value / 2, s.value), 1),
                                    name, midpoint(s.value, s.value * 2)));
    out.push_back(terms.empty() ? "1 == 1" : fmt::format("{}", fmt::join(terms, " && ")));
  }
  return out;
}

std::optional<NearestClass> nearest_class(const Database& db, const TuneKey& key) {
  auto split = [](const std::string& problem) {
    const size_t semi = problem.find(';');
    return std::pair{problem.substr(0, semi), semi == std::string::npos ? "" : problem.substr(semi + 1)};
  };
  const auto [cls_text, set] = split(key.shape_class);
  const std::optional<ShapeClass> cls = parse_shape_class(cls_text);
  if (!cls) return std::nullopt;
  std::optional<NearestClass> best;
  for (Database::Entry& e : db.list()) {
    const TuneKey& k = e.key;
    if (!e.best || k.shape_class == key.shape_class || k.op_hash != key.op_hash || k.op != key.op ||
        k.file != key.file || k.target != key.target || k.device != key.device || k.dtype != key.dtype)
      continue;
    const auto [other_text, other_set] = split(k.shape_class);
    const std::optional<ShapeClass> other = parse_shape_class(other_text);
    if (other_set != set || !other) continue;
    const std::optional<double> d = class_distance(*cls, *other);
    if (d && (!best || *d < best->distance)) best = NearestClass{std::move(e), *d};
  }
  return best;
}

}  // namespace emmy::tune
