#include "support/diagnostics.hpp"
#include "support/utf8.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace emmy {

Diagnostic& Diagnostics::error(std::string code, SourceRange range, std::string message) {
  diags_.push_back({Severity::Error, std::move(code), range, std::move(message), {}, {}});
  return diags_.back();
}

Diagnostic& Diagnostics::warning(std::string code, SourceRange range, std::string message) {
  diags_.push_back({Severity::Warning, std::move(code), range, std::move(message), {}, {}});
  return diags_.back();
}

int Diagnostics::error_count() const {
  return static_cast<int>(std::count_if(diags_.begin(), diags_.end(), [](const Diagnostic& d) {
    return d.severity == Severity::Error;
  }));
}

namespace {

struct Style {
  const char* bold = "";
  const char* red = "";
  const char* yellow = "";
  const char* cyan = "";
  const char* reset = "";
};

Style style_for(bool color) {
  if (!color) return {};
  return {"\033[1m", "\033[1;31m", "\033[1;35m", "\033[1;36m", "\033[0m"};
}

// `path:line:col: ` or empty when the range has no location.
std::string location(const SourceManager& sm, SourceRange r) {
  if (!r.valid()) return "";
  const SourceFile& f = sm.file(r.file);
  LineCol lc = f.line_col(r.begin);
  return fmt::format("{}:{}:{}: ", f.path(), lc.line, lc.column);
}


// The line as shown (invalid bytes as '?'), and the display column of each byte offset.
struct ShownLine {
  std::string text;
  std::vector<size_t> column_of;  // byte offset -> display column; size = bytes + 1
};

ShownLine show(std::string_view line) {
  ShownLine out;
  size_t col = 0;
  for (size_t i = 0; i < line.size();) {
    size_t n = utf8_sequence_length(line, i);
    for (size_t k = 0; k < std::max<size_t>(n, 1); ++k) out.column_of.push_back(col);
    if (n == 0) out.text += '?';
    else out.text.append(line.substr(i, n));
    i += std::max<size_t>(n, 1);
    ++col;
  }
  out.column_of.push_back(col);
  return out;
}

// Lines longer than this (generated or minified sources) are shown as a window around the range.
constexpr size_t kLongLine = 240;
constexpr size_t kBeforeRange = 60;

// The source line with a caret under the range (clipped to the first line), aligned by
// characters, not bytes; a very long line shows a window of it, cut with "...".
void snippet(std::ostringstream& out, const SourceManager& sm, SourceRange r, const Style& st) {
  if (!r.valid()) return;
  const SourceFile& f = sm.file(r.file);
  LineCol lc = f.line_col(r.begin);
  std::string_view full = f.line_text(lc.line);
  size_t begin = std::min(static_cast<size_t>(lc.column - 1), full.size());
  size_t end = std::min(full.size(), begin + (r.end > r.begin ? r.end - r.begin : 1));
  size_t from = 0, to = full.size();
  if (full.size() > kLongLine) {
    auto boundary = [&](size_t i) {
      while (i > 0 && i < full.size() && (static_cast<unsigned char>(full[i]) & 0xC0) == 0x80) --i;
      return i;
    };
    from = boundary(begin > kBeforeRange ? begin - kBeforeRange : 0);
    to = boundary(std::min(full.size(), from + kLongLine));
    end = std::min(end, to);
  }
  const std::string lead = from > 0 ? "..." : "", trail = to < full.size() ? "..." : "";
  std::string_view line = full.substr(from, to - from);
  begin -= from;
  end -= from;
  ShownLine shown = show(line);
  std::string gutter = std::to_string(lc.line);
  out << fmt::format(" {} | {}{}{}\n", gutter, lead, shown.text, trail);
  size_t first = shown.column_of[begin];
  size_t width = std::max<size_t>(1, shown.column_of[end] - first);
  std::string pad(lead.size(), ' ');
  for (size_t i = 0; i < begin;) {  // keep tabs so the caret lines up under them
    size_t n = std::max<size_t>(utf8_sequence_length(line, i), 1);
    pad += line[i] == '\t' ? '\t' : ' ';
    i += n;
  }
  out << fmt::format(" {} | {}{}^{}{}\n", std::string(gutter.size(), ' '), pad, st.red, std::string(width - 1, '~'),
                     st.reset);
}

}  // namespace

std::string Diagnostics::render_one(const Diagnostic& d, bool color) const {
  Style st = style_for(color);
  std::ostringstream out;
  const char* kind = d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note";
  const char* kc = d.severity == Severity::Error ? st.red : st.yellow;
  std::string code = d.code.empty() ? "" : "[" + d.code + "]";
  out << st.bold << location(sources_, d.range) << kc << kind << code << st.reset << st.bold << ": "
      << d.message << st.reset << "\n";
  snippet(out, sources_, d.range, st);
  for (const DiagnosticNote& n : d.notes) {
    out << location(sources_, n.range) << st.cyan << "note" << st.reset << ": " << n.message << "\n";
    snippet(out, sources_, n.range, st);
  }
  if (!d.help.empty()) out << "  " << st.cyan << "help" << st.reset << ": " << d.help << "\n";
  return out.str();
}

void Diagnostics::render(std::ostream& out, bool color) const {
  for (const Diagnostic& d : diags_) out << render_one(d, color);
}

void internal_error(const char* file, int line, const std::string& what) {
  // Thrown, not aborted: the command's guard reports it as an internal error, exit status 1.
  throw std::logic_error(fmt::format("internal compiler error at {}:{}: {} (a bug in Emmy, not in your program)",
                                     file, line, what));
}

}  // namespace emmy
