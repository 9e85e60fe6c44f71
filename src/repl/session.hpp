// The REPL's definitions: every import, op, monoid and schedule block entered so far, as text,
// and the checks that admit a new input against them.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "algebra/classify.hpp"
#include "sema/sema.hpp"
#include "support/diagnostics.hpp"

namespace emmy::repl {

// One definition: `key` names it ("op softmax", "schedule softmax for sm_90 as \"t128\""), so
// that a later one with the same key replaces it.
struct Definition {
  std::string key;
  std::string text;                          // its source, doc comments included
  std::string origin;                        // where it was entered: "<input 3>" or a file's path
  std::string name;                          // the op or monoid it defines; a schedule block: its op
  std::set<std::string, std::less<>> words;  // every name its text mentions (the definitions it may use)
};

// A program checked from the session's definitions (or with a new input), kept alive together
// with the sources its diagnostics and AST point into.
struct CheckedSession {
  SourceManager sources;
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<CheckedProgram> program;
  algebra::ProgramLaws laws;
};

class Session {
 public:
  // `error_limit`: the errors shown per input (0: all).
  explicit Session(std::vector<std::string> stdlib_dirs, int error_limit = kDefaultErrorLimit)
      : stdlib_dirs_(std::move(stdlib_dirs)), error_limit_(error_limit) {}

  struct Added {
    std::string key;
    bool redefined = false;  // it replaced a definition with the same key
  };
  // Checks `text`, named `origin` in diagnostics, beside the definitions it may depend on or
  // affect (those it names, those that name what it defines, then what they name, and every
  // import; a definition it redefines left out), so that a session of n definitions costs
  // n checks of a few, not n checks of all. When it checks, its definitions replace or join the
  // session's and are returned; otherwise the diagnostics go to `err`, with carets in `text`,
  // and the session is unchanged.
  std::optional<std::vector<Added>> define(const std::string& origin, const std::string& text, std::ostream& err,
                                           bool color);

  // Every definition as one source: imports first, then the rest in the order entered.
  std::string source() const;
  const std::vector<Definition>& definitions() const { return definitions_; }

  // The session checked as one program (nullopt-like: diags has errors when it does not check).
  std::unique_ptr<CheckedSession> check() const;

 private:
  std::vector<std::string> stdlib_dirs_;
  int error_limit_ = kDefaultErrorLimit;
  std::vector<Definition> definitions_;
  // Caches of pure results, so that check() stays const and each check costs what it adds: the
  // laws proved so far, by monoid; and the files imported so far, parsed (each check adds them
  // to its sources first, so that their source ids are their places here, plus one).
  struct Imported {
    std::string path;
    FileId file;
    std::string text;
    ast::Module module;
  };
  mutable algebra::LawMemo laws_;
  mutable std::vector<Imported> imported_;
  std::unique_ptr<CheckedSession> check_with(const std::string& origin, const std::string& text,
                                             const std::vector<const Definition*>& beside) const;
  void learn_imports(const CheckedSession& c) const;
};

// Braces still open at the end of `text` (comments and strings skipped): the REPL reads more
// lines while this is positive.
int open_braces(const std::string& text);

}  // namespace emmy::repl
