// `emmyc lsp`: a Language Server Protocol server over stdio. It keeps the open documents' text
// and answers from a fresh check of a document at each request (parse, check and prove take
// milliseconds): diagnostics as emmyc check reports them, hover, go to definition, completion,
// and formatting as emmyc fmt formats. Columns are UTF-16 code units, as LSP counts them.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace emmy::lsp {

struct ServerOptions {
  std::vector<std::string> stdlib_dirs;  // where `import std.X` looks
  std::string version;                   // emmyc's, for serverInfo
};

class Server {
 public:
  explicit Server(ServerOptions options) : options_(std::move(options)) {}
  // One incoming message (request or notification); the messages to send back, in order
  // (a request's response, diagnostics notifications).
  std::vector<nlohmann::json> handle(const nlohmann::json& message);
  bool exited() const { return exited_; }
  int exit_code() const { return shutdown_ ? 0 : 1; }

 private:
  nlohmann::json request(const std::string& method, const nlohmann::json& params);
  std::vector<nlohmann::json> notification(const std::string& method, const nlohmann::json& params);
  nlohmann::json diagnostics(const std::string& uri) const;

  ServerOptions options_;
  std::map<std::string, std::string> documents_;  // uri -> text
  bool initialized_ = false, shutdown_ = false, exited_ = false;
};

// Reads messages from `in` and answers on `out` until `exit` or the end of the input; the
// process's exit code (0 after shutdown, 1 otherwise).
int serve(std::istream& in, std::ostream& out, const ServerOptions& options);

}  // namespace emmy::lsp
