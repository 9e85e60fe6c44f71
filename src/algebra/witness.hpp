// Witnesses of cases: a rational point where a case's linear premises all hold, by
// Fourier–Motzkin elimination and back-substitution.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "algebra/cases.hpp"

namespace emmy::algebra {

using Point = std::map<std::string, Rational>;

// A point satisfying every premise of `c` (strict ones strictly: the point is interior
// along each variable), or nullopt where the premises are infeasible or too large to
// solve exactly. Premises that mention -inf or +inf are decided by the infinity alone
// and impose nothing on the finite variables. Each variable takes the integer nearest 0
// in its interval where there is one; `variant` picks the variant-th such integer
// counting outward (or a point further inside a bounded interval), so that several
// points of the region can be tried. Variables of `also` that no premise mentions get
// values too.
std::optional<Point> witness(const Case& c, int variant = 0, const std::vector<std::string>& also = {});

}  // namespace emmy::algebra
