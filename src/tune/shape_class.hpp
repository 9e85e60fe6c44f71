// Shape classes: the tuning database's key for sizes. Small sizes (a head dim, a channel count)
// shape the kernels and stay exact; larger ones matter by magnitude and round to the nearest
// power of two. A class is the text "B=1,D=64,H~8,S~4096" (sizes by name; '=' exact, '~'
// rounded), its distance to another the log2 ratios of the rounded sizes, and a set of tuned
// classes splits each rounded size at the midpoints (in log2) between neighbouring classes: the
// guards of the schedule blocks `emmyc tune --shapes --write` writes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tune/database.hpp"

namespace emmy::tune {

// Sizes up to this stay exact in a class: a schedule for head dim 64 may not serve 128.
inline constexpr int64_t kExactSizesUpTo = 256;

struct ShapeClass {
  struct Size {
    int64_t value = 0;   // exact, or the power of two it rounds to
    bool exact = false;  // '=' (kept as given) or '~' (rounded)
  };
  std::map<std::string, Size> sizes;
  std::string text() const;  // "B=1,D=64,S~4096"
};

ShapeClass shape_class(const std::map<std::string, int64_t>& sizes);
// The class of a text that shape_class().text() wrote; nullopt when it is not one.
std::optional<ShapeClass> parse_shape_class(const std::string& text);
// How far apart two classes are: the sum of |log2(a / b)| over their rounded sizes; nullopt when
// they name other sizes or differ in an exact one (no tuned schedule carries over then).
std::optional<double> class_distance(const ShapeClass& a, const ShapeClass& b);

// One guard a class of `classes` (in order): each rounded size bounded by the midpoints (in log2)
// between this class's value and the nearest smaller and larger values other classes with the
// same exact sizes hold (unbounded past the smallest and the largest), each exact size equal. A
// size only one class holds is left out; a class that nothing would bound then keeps the sizes
// that round to it ("S >= 2897 && S < 5793"); one of no sizes at all gets "1 == 1".
std::vector<std::string> class_guards(const std::vector<ShapeClass>& classes);

// The tuned problem nearest to `key` in `db`: the same op, file, target, device, dtype and
// scalar values (the problem's text after ';'), another class at the least class_distance, with
// an ok point; nullopt when there is none. The distance with it.
struct NearestClass {
  Database::Entry entry;
  double distance = 0;
};
std::optional<NearestClass> nearest_class(const Database& db, const TuneKey& key);

}  // namespace emmy::tune
