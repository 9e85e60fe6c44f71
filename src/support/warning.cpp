// Warnings of the schedule and lowering stages, rendered with their code.
#include "support/warning.hpp"

namespace emmy {

std::string render_warning(const Warning& w) {
  std::string line = "warning[" + w.code + "]: " + w.text;
  if (w.where.empty()) return line;
  return w.where + ": " + line + (w.snippet.empty() ? "" : "\n" + w.snippet);
}

std::string driver_warning(const Warning& w) { return (w.where.empty() ? "emmyc: " : "") + render_warning(w); }

}  // namespace emmy
