// Helpers for unit tests: check a source string and collect its diagnostics.
#pragma once

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "sema/sema.hpp"
#include "support/diagnostics.hpp"

#include <cstdlib>
#include <string_view>

#include "runtime/nvrtc.hpp"

namespace emmy::test {

struct Run {
  SourceManager sources;
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<CheckedProgram> program;

  // Codes of the errors, in order, joined by spaces: "E023 E021".
  std::string codes() const {
    std::string s;
    for (const Diagnostic& d : diags->all()) s += (s.empty() ? "" : " ") + d.code;
    return s;
  }
  std::string rendered() const {
    std::string s;
    for (const Diagnostic& d : diags->all()) s += diags->render_one(d);
    return s;
  }
};

inline std::unique_ptr<Run> check_source(const std::string& text) {
  auto r = std::make_unique<Run>();
  r->diags = std::make_unique<Diagnostics>(r->sources);
  uint32_t id = r->sources.add("test.emmy", text);
  r->program = check_program(r->sources, id, SemaOptions{{std::string(EMMY_SOURCE_DIR) + "/stdlib"}, std::nullopt, {}},
                             *r->diags);
  return r;
}

// Checks a file of the repository (stdlib/, examples/) as emmyc would: its path names it;
// `import std.X` reads `root`/stdlib/X.emmy.
inline std::unique_ptr<Run> check_file(const std::string& path, const std::string& root = EMMY_SOURCE_DIR) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto r = std::make_unique<Run>();
  r->diags = std::make_unique<Diagnostics>(r->sources);
  uint32_t id = r->sources.add(path, text);
  r->program = check_program(r->sources, id, SemaOptions{{root + "/stdlib"}, std::nullopt, {}}, *r->diags);
  return r;
}

// Whether NVRTC can be used; absent, the test is skipped with a message, or fails under
// EMMY_REQUIRE_NVRTC=1 (scripts/test.sh sets it where the CUDA toolkit is installed).
inline bool nvrtc_or_skip() {
  std::string why;
  if (runtime::nvrtc_available(&why)) return true;
  const char* require = std::getenv("EMMY_REQUIRE_NVRTC");
  if (require && std::string_view(require) == "1") FAIL("EMMY_REQUIRE_NVRTC=1 but " << why);
  MESSAGE("skipped: " << why);
  return false;
}

}  // namespace emmy::test
