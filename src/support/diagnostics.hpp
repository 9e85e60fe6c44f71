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

// Collects diagnostics of one compilation; passes report into it and go on, so that
// one run shows every independent error.
class Diagnostics {
public:
  explicit Diagnostics(const SourceManager& sources) : sources_(sources) {}

  Diagnostic& error(std::string code, SourceRange range, std::string message);
  Diagnostic& warning(std::string code, SourceRange range, std::string message);

  int error_count() const;
  bool has_errors() const { return error_count() > 0; }
  const std::vector<Diagnostic>& all() const { return diags_; }
  const SourceManager& sources() const { return sources_; }

  // Renders every diagnostic in the order reported. `color` adds ANSI colors.
  void render(std::ostream& out, bool color = false) const;
  std::string render_one(const Diagnostic& d, bool color = false) const;

private:
  const SourceManager& sources_;
  std::vector<Diagnostic> diags_;
};

// An internal compiler error: a broken invariant, never a user mistake.
[[noreturn]] void internal_error(const char* file, int line, const std::string& what);

}  // namespace emmy

#define EMMY_INTERNAL_ASSERT(cond, what)                                   \
  do {                                                                     \
    if (!(cond)) ::emmy::internal_error(__FILE__, __LINE__, (what));       \
  } while (0)
