// The Language Server Protocol's base protocol: JSON-RPC messages framed by a Content-Length
// header, over a byte stream (stdin/stdout for `emmyc lsp`).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace emmy::lsp {

// The next message, or nullopt at the end of the stream. A header without Content-Length or a
// body that is not JSON throws ProtocolError.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
std::optional<nlohmann::json> read_message(std::istream& in);
void write_message(std::ostream& out, const nlohmann::json& message);

}  // namespace emmy::lsp
