// The language server's dispatch: lifecycle, open documents, and each method to its answer.
#include "lsp/server.hpp"

#include <algorithm>
#include <iostream>

#include "lsp/analysis.hpp"
#include "lsp/protocol.hpp"

namespace emmy::lsp {
namespace {

// JSON-RPC's and LSP's error codes.
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInvalidRequest = -32600;
constexpr int kServerNotInitialized = -32002;
constexpr int kInternalError = -32603;

struct RequestError {
  int code;
  std::string message;
};

Position position_of(const nlohmann::json& params) {
  const nlohmann::json& p = params.at("position");
  return {p.at("line").get<int>(), p.at("character").get<int>()};
}

}  // namespace

nlohmann::json Server::diagnostics(const std::string& uri) const {
  nlohmann::json list = nlohmann::json::array();
  if (auto it = documents_.find(uri); it != documents_.end())
    list = Analysis(path_of_uri(uri), it->second, options_.stdlib_dirs).diagnostics();
  return {{"jsonrpc", "2.0"},
          {"method", "textDocument/publishDiagnostics"},
          {"params", {{"uri", uri}, {"diagnostics", list}}}};
}

nlohmann::json Server::request(const std::string& method, const nlohmann::json& params) {
  if (method == "initialize")
    return {{"capabilities",
             {{"textDocumentSync", 1},  // the whole text on each change
              {"hoverProvider", true},
              {"definitionProvider", true},
              {"completionProvider", {{"triggerCharacters", {"=", "@", " "}}}},
              {"documentFormattingProvider", true}}},
            {"serverInfo", {{"name", "emmyc"}, {"version", options_.version}}}};
  if (method == "shutdown") {
    shutdown_ = true;
    return nullptr;
  }
  static constexpr std::string_view kDocumentMethods[] = {"textDocument/hover", "textDocument/definition",
                                                          "textDocument/completion", "textDocument/formatting"};
  if (std::find(std::begin(kDocumentMethods), std::end(kDocumentMethods), method) == std::end(kDocumentMethods))
    throw RequestError{kMethodNotFound, "emmyc lsp does not answer " + method};
  const std::string uri = params.at("textDocument").at("uri").get<std::string>();
  auto doc = documents_.find(uri);
  if (doc == documents_.end()) throw RequestError{kInvalidParams, "the document is not open: " + uri};
  if (method == "textDocument/formatting") {
    std::optional<nlohmann::json> edits = format_edits(doc->second);
    if (!edits) throw RequestError{kInvalidRequest, "the document does not lex: fix its errors to format it"};
    return *edits;
  }
  const Analysis analysis(path_of_uri(uri), doc->second, options_.stdlib_dirs);
  if (method == "textDocument/hover") return analysis.hover(position_of(params)).value_or(nullptr);
  if (method == "textDocument/definition") return analysis.definition(position_of(params)).value_or(nullptr);
  return analysis.completion(position_of(params));
}

std::vector<nlohmann::json> Server::notification(const std::string& method, const nlohmann::json& params) {
  if (method == "exit") {
    exited_ = true;
    return {};
  }
  if (method == "textDocument/didOpen") {
    const nlohmann::json& doc = params.at("textDocument");
    documents_[doc.at("uri").get<std::string>()] = doc.at("text").get<std::string>();
    return {diagnostics(doc.at("uri").get<std::string>())};
  }
  if (method == "textDocument/didChange") {
    const std::string uri = params.at("textDocument").at("uri").get<std::string>();
    const nlohmann::json& changes = params.at("contentChanges");
    if (changes.empty() || !documents_.count(uri)) return {};
    documents_[uri] = changes.back().at("text").get<std::string>();  // full sync: the last is the text
    return {diagnostics(uri)};
  }
  if (method == "textDocument/didClose") {
    const std::string uri = params.at("textDocument").at("uri").get<std::string>();
    documents_.erase(uri);
    return {diagnostics(uri)};  // none: clears the editor's list
  }
  return {};  // initialized, $/cancelRequest, didSave...: nothing to do
}

std::vector<nlohmann::json> Server::handle(const nlohmann::json& message) {
  const std::string method = message.value("method", "");
  const nlohmann::json params = message.value("params", nlohmann::json::object());
  if (!message.contains("id")) {  // a notification: never answered
    try {
      return notification(method, params);
    } catch (const std::exception&) {  // malformed params, or a bug checking the text: nothing to answer to
      return {};
    }
  }
  nlohmann::json response = {{"jsonrpc", "2.0"}, {"id", message.at("id")}};
  try {
    if (shutdown_ && method != "shutdown") throw RequestError{kInvalidRequest, "the server is shutting down"};
    if (!initialized_ && method != "initialize") throw RequestError{kServerNotInitialized, "initialize first"};
    response["result"] = request(method, params);
    if (method == "initialize") initialized_ = true;
  } catch (const RequestError& e) {
    response["error"] = {{"code", e.code}, {"message", e.message}};
  } catch (const nlohmann::json::exception& e) {
    response["error"] = {{"code", kInvalidParams}, {"message", std::string("malformed params: ") + e.what()}};
  } catch (const std::exception& e) {  // a bug in Emmy: answered, and the server goes on
    response["error"] = {{"code", kInternalError}, {"message", std::string("emmyc lsp: internal error: ") + e.what()}};
  }
  return {response};
}

int serve(std::istream& in, std::ostream& out, const ServerOptions& options) {
  Server server(options);
  while (!server.exited()) {
    std::optional<nlohmann::json> message;
    try {
      message = read_message(in);
    } catch (const ProtocolError& e) {
      std::cerr << "emmyc lsp: " << e.what() << "\n";
      return 1;
    }
    if (!message) return 1;  // the client went away without exit
    for (const nlohmann::json& reply : server.handle(*message)) write_message(out, reply);
  }
  return server.exit_code();
}

}  // namespace emmy::lsp
