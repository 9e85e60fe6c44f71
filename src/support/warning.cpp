// Warnings of the schedule and lowering stages, rendered with their code.
#include "support/warning.hpp"

namespace emmy {

std::string render_warning(const Warning& w) { return "warning[" + w.code + "]: " + w.text; }

}  // namespace emmy
