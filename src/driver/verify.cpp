#include "driver/verify.hpp"

#include <ostream>
#include <regex>

#include <fmt/format.h>

namespace emmy {
namespace {

struct Expectation {
  Severity severity;
  int line = 0;
  int column = 0;  // 0 = any
  std::string text;
  int written_at = 0;
  bool met = false;
};

// Occurrences of `expected-error` / `expected-warning` in a line, well-formed or not.
size_t mentions(const std::string& text) {
  size_t n = 0;
  for (const char* word : {"expected-error", "expected-warning"})
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// `malformed` gets the lines that mention an expectation the pattern does not read, which
// would otherwise be ignored silently.
std::vector<Expectation> read_expectations(const SourceFile& f, std::vector<int>& malformed) {
  static const std::regex re(R"(expected-(error|warning)(@([+-]?[0-9]+))?(:([0-9]+))?\s*\{\{(.*?)\}\})");
  std::vector<Expectation> out;
  for (int line = 1; line <= f.line_count(); ++line) {
    std::string text(f.line_text(line));
    size_t before = out.size();
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
      const std::smatch& m = *it;
      Expectation e;
      e.severity = m[1] == "error" ? Severity::Error : Severity::Warning;
      int offset = m[3].matched ? std::stoi(m[3].str()) : 0;
      bool relative = m[3].matched && (m[3].str()[0] == '+' || m[3].str()[0] == '-');
      e.line = m[3].matched && !relative ? offset : line + offset;
      e.column = m[5].matched ? std::stoi(m[5].str()) : 0;
      e.text = m[6];
      e.written_at = line;
      out.push_back(std::move(e));
    }
    if (out.size() - before < mentions(text)) malformed.push_back(line);
  }
  return out;
}

}  // namespace

bool verify_diagnostics(const Diagnostics& diags, uint32_t file, std::ostream& out) {
  const SourceFile& f = diags.sources().file(file);
  std::vector<int> malformed;
  std::vector<Expectation> expected = read_expectations(f, malformed);
  bool ok = malformed.empty();
  for (int line : malformed)
    out << fmt::format("{}:{}: malformed expectation; write // expected-error@+1:12 {{{{E023: message text}}}}\n",
                       f.path(), line);
  for (const Diagnostic& d : diags.all()) {
    if (d.severity == Severity::Note) continue;
    LineCol lc = d.range.valid() ? diags.sources().file(d.range.file).line_col(d.range.begin) : LineCol{};
    std::string full = fmt::format("{}: {}", d.code, d.message);
    bool matched = false;
    for (Expectation& e : expected) {
      if (e.met || e.severity != d.severity || d.range.file != file || e.line != lc.line) continue;
      if (e.column && e.column != lc.column) continue;
      if (full.find(e.text) == std::string::npos) continue;
      e.met = matched = true;
      break;
    }
    if (!matched) {
      ok = false;
      out << "unexpected diagnostic:\n" << diags.render_one(d);
    }
  }
  for (const Expectation& e : expected) {
    if (e.met) continue;
    ok = false;
    out << fmt::format("{}:{}: expected {} at line {}{} was not produced: {{{{{}}}}}\n", f.path(), e.written_at,
                       e.severity == Severity::Error ? "error" : "warning", e.line,
                       e.column ? fmt::format(", column {}", e.column) : "", e.text);
  }
  if (expected.empty() && ok) {
    out << fmt::format("{}: --verify found no expected-error lines; the file must expect at least one diagnostic\n",
                       f.path());
    return false;
  }
  return ok;
}

}  // namespace emmy
