// Unit tests of the language server: the base protocol's framing, the lifecycle and its errors,
// and the answers on a document (diagnostics, hover, definition, completion, formatting).
#include <doctest/doctest.h>

#include <sstream>

#include "lsp/analysis.hpp"
#include "lsp/protocol.hpp"
#include "lsp/server.hpp"

using namespace emmy::lsp;
using nlohmann::json;

namespace {

const std::vector<std::string> kStdlib = {std::string(EMMY_SOURCE_DIR) + "/stdlib"};

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}
json notify(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

const std::string kText =
    "import std.nn;\n"
    "\n"
    "op probs(x: f16[N, C]) -> (y: f16[N, C]) {\n"
    "  y[n, c] = softmax(x)[n, c];\n"
    "}\n"
    "\n"
    "schedule probs for sm_90 {\n"
    "  COOP = t128/v8;\n"
    "}\n";

}  // namespace

TEST_CASE("lsp protocol: Content-Length framing both ways, and what it refuses") {
  std::stringstream io;
  write_message(io, {{"jsonrpc", "2.0"}, {"method", "x"}});
  write_message(io, {{"n", 1}});
  CHECK(io.str().starts_with("Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"));
  CHECK(read_message(io)->at("method") == "x");
  CHECK(read_message(io)->at("n") == 1);
  CHECK_FALSE(read_message(io));  // the end
  std::istringstream no_length("Content-Type: x\r\n\r\n{}");
  CHECK_THROWS_AS(read_message(no_length), ProtocolError);
  std::istringstream bad_json("Content-Length: 3\r\n\r\n{x}");
  CHECK_THROWS_AS(read_message(bad_json), ProtocolError);
  std::istringstream short_body("Content-Length: 10\r\n\r\n{}");
  CHECK_FALSE(read_message(short_body));
}

TEST_CASE("lsp server: initialize first, unknown methods, shutdown then exit") {
  Server server({kStdlib, "test"});
  json early = server.handle(request(1, "textDocument/hover"))[0];
  CHECK(early["error"]["code"] == -32002);
  json init = server.handle(request(2, "initialize", {{"capabilities", json::object()}}))[0];
  CHECK(init["result"]["capabilities"]["hoverProvider"] == true);
  CHECK(init["result"]["serverInfo"]["name"] == "emmyc");
  CHECK(server.handle(notify("initialized", json::object())).empty());
  CHECK(server.handle(request(3, "workspace/symbol", {{"query", ""}}))[0]["error"]["code"] == -32601);
  json closed = server.handle(
      request(4, "textDocument/hover",
              {{"textDocument", {{"uri", "file:///nowhere.emmy"}}}, {"position", {{"line", 0}, {"character", 0}}}}))[0];
  CHECK(closed["error"]["code"] == -32602);
  CHECK(server.handle(request(5, "textDocument/hover", {{"nonsense", 1}}))[0]["error"]["code"] == -32602);
  CHECK(server.handle(request(6, "shutdown"))[0]["result"].is_null());
  CHECK(server.handle(request(7, "initialize"))[0]["error"]["code"] == -32600);
  CHECK_FALSE(server.exited());
  server.handle(notify("exit", json::object()));
  CHECK(server.exited());
  CHECK(server.exit_code() == 0);
  Server abrupt({kStdlib, "test"});
  abrupt.handle(notify("exit", json::object()));
  CHECK(abrupt.exit_code() == 1);  // exit without shutdown
}

TEST_CASE("lsp server: a document's diagnostics on open and change, cleared on close") {
  Server server({kStdlib, "test"});
  server.handle(request(1, "initialize"));
  const std::string uri = "file:///tmp/doc.emmy";
  std::string bad = kText;
  bad.replace(bad.find("softmax(x)"), 10, "softmax(w)");
  std::vector<json> out =
      server.handle(notify("textDocument/didOpen", {{"textDocument", {{"uri", uri}, {"version", 1}, {"text", bad}}}}));
  REQUIRE(out.size() == 1);
  CHECK(out[0]["method"] == "textDocument/publishDiagnostics");
  json diags = out[0]["params"]["diagnostics"];
  REQUIRE(diags.size() == 1);
  CHECK(diags[0]["range"]["start"] == json{{"line", 3}, {"character", 20}});
  CHECK(diags[0]["range"]["end"] == json{{"line", 3}, {"character", 21}});
  CHECK(diags[0]["severity"] == 1);
  out = server.handle(notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", 2}}},
                                                        {"contentChanges", {{{"text", kText}}}}}));
  CHECK(out[0]["params"]["diagnostics"].empty());
  out = server.handle(notify("textDocument/didClose", {{"textDocument", {{"uri", uri}}}}));
  CHECK(out[0]["params"]["diagnostics"].empty());
}

TEST_CASE("lsp analysis: columns in UTF-16 code units past non-ASCII comments") {
  // "  /* ×𝑥 */ " is 2 + 3 + 2 + 4 + 3 bytes but 2 + 3 + 1 + 2 + 3 UTF-16 units: y is at unit 12
  // (its hover finds the tensor) and the unknown z's diagnostic starts at unit 19.
  const std::string text = "op f(x: f32[N]) -> (y: f32[N]) {\n  /* \u00d7\U0001d465 */ y[n] = z[n];\n}\n";
  Analysis a("/tmp/u.emmy", text, kStdlib);
  json d = a.diagnostics();
  REQUIRE(d.size() >= 1);
  CHECK(d[0]["range"]["start"] == json{{"line", 1}, {"character", 19}});
  std::optional<json> h = a.hover({1, 12});
  REQUIRE(h);
  CHECK((*h)["contents"]["value"] == "`y: f32[N]` (output of f)");
}

TEST_CASE("lsp analysis: a derived op's hover is its derived signature, its definition the grad line") {
  const std::string text =
      "import std.nn;\nop softmax_bwd = grad(softmax);\nop twice(x: f16[N, C], dy: f16[N, C]) -> "
      "(z: f16[N, C]) {\n  z[n, c] = softmax_bwd(x, dy)[n, c] * 2;\n}\n";
  Analysis a("/tmp/g.emmy", text, kStdlib);
  CHECK(a.diagnostics().empty());
  std::optional<json> h = a.hover({3, 14});  // softmax_bwd in the call
  REQUIRE(h);
  CHECK((*h)["contents"]["value"].get<std::string>().find(
            "op softmax_bwd(x: f16[N, C], dy: f16[N, C]) -> (dx: f16[N, C])") != std::string::npos);
  std::optional<json> def = a.definition({3, 14});
  REQUIRE(def);
  CHECK((*def)["uri"].get<std::string>().ends_with("/tmp/g.emmy"));
  CHECK((*def)["range"]["start"] == json{{"line", 1}, {"character", 3}});
}

TEST_CASE("lsp analysis: hover, definition, completion, formatting") {
  Analysis a("/tmp/doc.emmy", kText, kStdlib);
  CHECK(a.diagnostics().empty());
  std::optional<json> h = a.hover({2, 9});  // x in the op's header
  REQUIRE(h);
  CHECK((*h)["contents"]["value"] == "`x: f16[N, C]` (input of probs)");
  std::optional<json> op = a.hover({3, 14});  // softmax
  REQUIRE(op);
  CHECK((*op)["contents"]["value"].get<std::string>().find("op softmax(x: f16[N, C]) -> (y: f16[N, C])") !=
        std::string::npos);
  std::optional<json> knob = a.hover({7, 3});  // COOP
  REQUIRE(knob);
  CHECK((*knob)["contents"]["value"].get<std::string>().find("t<N>[/v<V>][/c<R>|/r<R>][/k<K>]") != std::string::npos);
  CHECK_FALSE(a.hover({1, 0}));  // a blank line
  Analysis red("/tmp/red.emmy", "op s(x: f32[N, C]) -> (y: f32[N]) {\n  y[n] = max(c: x[n, c]);\n}\n", kStdlib);
  std::optional<json> maxed = red.hover({1, 10});
  REQUIRE(maxed);
  CHECK((*maxed)["contents"]["value"] == "built-in reduction `max` (f32): associative: proved; commutative: proved");
  Analysis tiles("/tmp/t.emmy", kText + "schedule probs for sm_90a {\n  TILE = a:\n}\n", kStdlib);
  std::vector<std::string> atoms;
  for (const json& i : tiles.completion({10, 9})) atoms.push_back(i["label"]);
  CHECK(std::count(atoms.begin(), atoms.end(), "a:wgmma_m64n128k16_f16") == 1);
  CHECK(std::count(atoms.begin(), atoms.end(), "a:mma_m16n8k16_f16") == 1);
  std::optional<json> def = a.definition({3, 14});
  REQUIRE(def);
  CHECK((*def)["uri"].get<std::string>().ends_with("/stdlib/nn.emmy"));
  std::optional<json> imp = a.definition({0, 9});  // the import
  REQUIRE(imp);
  CHECK((*imp)["uri"].get<std::string>().ends_with("/stdlib/nn.emmy"));
  std::optional<json> local = a.definition({3, 2});  // y: its declaration in the header
  REQUIRE(local);
  CHECK((*local)["range"]["start"]["line"] == 2);
  auto labels = [](const json& items) {
    std::vector<std::string> out;
    for (const json& i : items) out.push_back(i["label"]);
    return out;
  };
  const std::vector<std::string> knobs = labels(a.completion({7, 2}));
  CHECK(std::count(knobs.begin(), knobs.end(), "COOP") == 1);
  const std::vector<std::string> values = labels(a.completion({7, 9}));
  CHECK(std::count(values.begin(), values.end(), "t256/v8") == 1);
  const std::vector<std::string> names = labels(a.completion({3, 2}));
  CHECK(std::count(names.begin(), names.end(), "softmax") == 1);
  CHECK(std::count(names.begin(), names.end(), "x") == 1);
  CHECK(format_edits(kText)->empty());
  json edits = *format_edits("op  f(x: f32[N]) -> (y: f32[N]) { y[n] = x[n]; }\n");
  REQUIRE(edits.size() == 1);
  CHECK(edits[0]["newText"] == "op f(x: f32[N]) -> (y: f32[N]) {\n  y[n] = x[n];\n}\n");
  CHECK_FALSE(format_edits("op f(x: f32[N]) -> (y: f32[N]) { y[n] = x[n] $ 2; }\n"));
}
