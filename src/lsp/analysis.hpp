// One document checked for the language server: its diagnostics, and what hover, go to
// definition and completion find at a position. Positions are LSP's (0-based line, and the
// column in UTF-16 code units, as LSP counts them by default).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace emmy::lsp {

struct Position {
  int line = 0, character = 0;
};

// "file:///a/b.emmy" -> "/a/b.emmy" (percent-escapes decoded); a path -> "file://" + it.
std::string path_of_uri(const std::string& uri);
std::string uri_of_path(const std::string& path);

class Analysis {
 public:
  Analysis(const std::string& path, const std::string& text, const std::vector<std::string>& stdlib_dirs);
  ~Analysis();
  Analysis(const Analysis&) = delete;
  Analysis& operator=(const Analysis&) = delete;

  nlohmann::json diagnostics() const;                           // LSP Diagnostic[] of the document
  std::optional<nlohmann::json> hover(Position at) const;       // Hover, or none
  std::optional<nlohmann::json> definition(Position at) const;  // Location, or none
  nlohmann::json completion(Position at) const;                 // CompletionItem[]

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The whole document formatted as emmyc fmt formats it: TextEdit[] (empty when it is formatted
// already), or nullopt when it does not lex.
std::optional<nlohmann::json> format_edits(const std::string& text);

}  // namespace emmy::lsp
