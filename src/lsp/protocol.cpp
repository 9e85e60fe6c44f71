// Content-Length framing of JSON-RPC messages (protocol.hpp).
#include "lsp/protocol.hpp"

#include <istream>
#include <ostream>

namespace emmy::lsp {

std::optional<nlohmann::json> read_message(std::istream& in) {
  std::optional<size_t> length;
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    any = true;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;  // the end of the header
    const size_t colon = line.find(':');
    if (colon == std::string::npos) throw ProtocolError("a header line without ':': " + line);
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "content-length") {
      try {
        length = std::stoul(line.substr(colon + 1));
      } catch (const std::exception&) {
        throw ProtocolError("a Content-Length that is not a number: " + line);
      }
    }
  }
  if (!any) return std::nullopt;
  if (!length) throw ProtocolError("a message without Content-Length");
  std::string body(*length, '\0');
  in.read(body.data(), static_cast<std::streamsize>(*length));
  if (static_cast<size_t>(in.gcount()) != *length) return std::nullopt;  // cut short: the stream ended
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw ProtocolError(std::string("a body that is not JSON: ") + e.what());
  }
}

void write_message(std::ostream& out, const nlohmann::json& message) {
  const std::string body = message.dump();
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

}  // namespace emmy::lsp
