#include "support/diagnostics.hpp"
#include "support/utf8.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace emmy {

Diagnostic& Diagnostics::add(Diagnostic d) {
  const bool past = at_limit();
  if (d.severity == Severity::Error) ++errors_;
  if (past) {
    ++left_out_;
    dropped_ = std::move(d);
    return dropped_;
  }
  diags_.push_back(std::move(d));
  return diags_.back();
}

Diagnostic& Diagnostics::error(std::string code, SourceRange range, std::string message) {
  return add({Severity::Error, std::move(code), range, std::move(message), {}, {}});
}

Diagnostic& Diagnostics::warning(std::string code, SourceRange range, std::string message) {
  return add({Severity::Warning, std::move(code), range, std::move(message), {}, {}});
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

// The line as shown (invalid bytes as '?', control characters but tab as their Unicode
// control pictures: NUL as U+2400 '\u2400'), and the display column of each byte offset.
struct ShownLine {
  std::string text;
  std::vector<size_t> column_of;  // byte offset -> display column; size = bytes + 1
};

// U+2400 + c for a C0 control character c, U+2421 for DEL, in UTF-8; "" for the others.
std::string control_picture(unsigned char c) {
  if (c == '\t' || (c >= 0x20 && c != 0x7F)) return "";
  const unsigned code = c == 0x7F ? 0x2421u : 0x2400u + c;
  return {static_cast<char>(0xE0 | (code >> 12)), static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
          static_cast<char>(0x80 | (code & 0x3F))};
}

// A message with its control characters (a NUL from the source) as control pictures; tabs and
// newlines kept.
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    std::string pic = c == '\n' ? "" : control_picture(static_cast<unsigned char>(c));
    if (pic.empty())
      out += c;
    else
      out += pic;
  }
  return out;
}

ShownLine show(std::string_view line) {
  ShownLine out;
  size_t col = 0;
  for (size_t i = 0; i < line.size();) {
    size_t n = utf8_sequence_length(line, i);
    for (size_t k = 0; k < std::max<size_t>(n, 1); ++k) out.column_of.push_back(col);
    if (n == 0)
      out.text += '?';
    else if (std::string pic = control_picture(static_cast<unsigned char>(line[i])); n == 1 && !pic.empty())
      out.text += pic;
    else
      out.text.append(line.substr(i, n));
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
      << printable(d.message) << st.reset << "\n";
  snippet(out, sources_, d.range, st);
  for (const DiagnosticNote& n : d.notes) {
    out << location(sources_, n.range) << st.cyan << "note" << st.reset << ": " << printable(n.message) << "\n";
    snippet(out, sources_, n.range, st);
  }
  if (!d.help.empty()) out << "  " << st.cyan << "help" << st.reset << ": " << printable(d.help) << "\n";
  return out.str();
}

void Diagnostics::render(std::ostream& out, bool color) const {
  for (const Diagnostic& d : diags_) out << render_one(d, color);
  if (left_out_ == 0) return;
  Style st = style_for(color);
  out << fmt::format(
      "{}{}error{}{}: too many errors emitted, stopping now: {} more not shown (the limit is {} "
      "errors; emmyc --error-limit N changes it, 0 = no limit){}\n",
      st.bold, st.red, st.reset, st.bold, left_out_, error_limit_, st.reset);
}

void internal_error(const char* file, int line, const std::string& what) {
  // Thrown, not aborted: the command's guard reports it as an internal error, exit status 1.
  throw std::logic_error(
      fmt::format("internal compiler error at {}:{}: {} (a bug in Emmy, not in your program)", file, line, what));
}

}  // namespace emmy
