// Emmy's departures from IEEE arithmetic: the difference inside exp, NaN through max and min.
#include "support/ieee_rules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace emmy {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double exp_difference(double a, double b) { return a == kNegInf && b == kNegInf ? kNegInf : a - b; }
double max_nan(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double min_nan(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }

}  // namespace emmy
