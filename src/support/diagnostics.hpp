// User-facing diagnostics: error codes, source ranges, notes and fix hints, rendered
// as `file:line:col: error[E023]: message`, the source line and a caret.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "support/source.hpp"

namespace emmy {

enum class Severity { Error, Warning, Note };

struct DiagnosticNote {
  SourceRange range;  // may be invalid: a note without a location
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;  // "E023"; empty for notes
  SourceRange range;
  std::string message;
  std::vector<DiagnosticNote> notes;
  std::string help;  // how to fix it, one line

  Diagnostic& note(SourceRange r, std::string msg) {
    notes.push_back({r, std::move(msg)});
    return *this;
  }
  Diagnostic& hint(std::string h) {
    help = std::move(h);
    return *this;
  }
};

// The errors emmyc, the REPL and the API keep per compilation (emmyc --error-limit N).
constexpr int kDefaultErrorLimit = 20;

// Collects diagnostics of one compilation; passes report into it and go on, so that
// one run shows every independent error. With an error limit (0 = none), the errors past
// it (and every warning after them) are counted, not kept: render() ends with a line
// saying how many were left out.
class Diagnostics {
 public:
  explicit Diagnostics(const SourceManager& sources, int error_limit = 0)
      : sources_(sources), error_limit_(error_limit) {}

  Diagnostic& error(std::string code, SourceRange range, std::string message);
  Diagnostic& warning(std::string code, SourceRange range, std::string message);

  // Every error reported, the ones past the limit included.
  int error_count() const { return errors_; }
  bool has_errors() const { return errors_ > 0; }
  // The limit was reached: what is reported now is only counted (passes may stop early).
  bool at_limit() const { return error_limit_ > 0 && errors_ >= error_limit_; }
  int left_out() const { return left_out_; }  // errors and warnings past the limit
  void set_error_limit(int limit) { error_limit_ = limit; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  const SourceManager& sources() const { return sources_; }

  // Renders every diagnostic in the order reported. `color` adds ANSI colors.
  void render(std::ostream& out, bool color = false) const;
  std::string render_one(const Diagnostic& d, bool color = false) const;

 private:
  Diagnostic& add(Diagnostic d);

  const SourceManager& sources_;
  std::vector<Diagnostic> diags_;
  int error_limit_ = 0;
  int errors_ = 0;
  int left_out_ = 0;
  Diagnostic dropped_;  // what a report past the limit fills in, then forgets
};

// An internal compiler error: a broken invariant, never a user mistake.
[[noreturn]] void internal_error(const char* file, int line, const std::string& what);

}  // namespace emmy

#define EMMY_INTERNAL_ASSERT(cond, what)                             \
  do {                                                               \
    if (!(cond)) ::emmy::internal_error(__FILE__, __LINE__, (what)); \
  } while (0)
