// The parser's error reporting (syntax_errors.hpp): the syntax error listener, the error
// strategy, and the lexer's errors.
#include "syntax/syntax_errors.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "EmmyLexer.h"
#include "syntax/parse.hpp"

namespace emmy {
namespace {

using P = EmmyParser;

std::string describe_token(const antlr4::Token* t) {
  if (t->getType() == antlr4::Token::EOF) return "end of file";
  return fmt::format("'{}'", t->getText());
}

bool is_open(const std::string& s) { return s == "(" || s == "[" || s == "{"; }
bool is_close(const std::string& s) { return s == ")" || s == "]" || s == "}"; }
std::string closer_of(const std::string& open) { return open == "(" ? ")" : open == "[" ? "]" : "}"; }
bool starts_declaration(const std::string& s) { return s == "import" || s == "op" || s == "monoid" || s == "schedule"; }

bool is_comparison(const std::string& s) {
  return s == "==" || s == "!=" || s == "<" || s == "<=" || s == ">" || s == ">=";
}

// How the construct being parsed is written: the hint of a syntax error inside it.
std::string construct_hint(antlr4::ParserRuleContext* ctx, bool wants_expression) {
  for (; ctx; ctx = dynamic_cast<antlr4::ParserRuleContext*>(ctx->parent)) {
    switch (ctx->getRuleIndex()) {
      case P::RuleImportDecl: return "an import is written: import std.monoids;";
      case P::RuleDim: return "a dim is a size name (N) or a positive integer, e.g. x: f32[N, 64]";
      case P::RuleParam:
      case P::RuleParamList: return "a parameter is written name: dtype[dims], e.g. q: f16[S, D]";
      case P::RuleOpDecl: return "an op is written: op name(x: f32[N]) -> (y: f32[N]) { y[i] = ...; }";
      case P::RuleLetStmt: return "a let is written: let name = expression;";
      case P::RuleStmt:
      case P::RuleAssignStmt: return "a statement is written: name[i, j] = expression; or let name = expression;";
      case P::RuleExpr:
      case P::RuleExprList:
      case P::RuleIndexList:
      case P::RuleIndex:
      case P::RulePrimary:
        return wants_expression ? "an operand is a name, a number, x[i], f(x), sum(j: ...) or (expression)"
                                : "check the operators and brackets of this expression";
      case P::RuleField:
      case P::RuleFieldList: return "a monoid field is written name: dtype or name: dtype[E]";
      case P::RuleMonoidMember:
        if (dynamic_cast<P::CombineMemberContext*>(ctx))
          return "combine is written: combine(a, b) { let ...; yield (...); }";
        if (dynamic_cast<P::LiftMemberContext*>(ctx)) return "a lift is written: lift(x: f32, v: f32[E]) = (...);";
        if (dynamic_cast<P::IdentityMemberContext*>(ctx)) return "an identity is written: identity = (value, ...);";
        if (dynamic_cast<P::AssumeMemberContext*>(ctx))
          return "an assumption is written: assume associative; or assume commutative;";
        [[fallthrough]];
      case P::RuleMonoidDecl:
        return "a monoid holds identity = ...; lift(x: f32) = ...; combine(a, b) { yield ...; } and assume ...;";
      case P::RuleScheduleDecl:
      case P::RuleKnobEntry:
      case P::RuleKnobValue: return "a schedule is written: schedule op for sm_90 { KNOB = value; }";
      case P::RuleModule:
      case P::RuleItem: return "a file holds import, op, monoid and schedule declarations";
      default: break;
    }
  }
  return "a file holds import, op, monoid and schedule declarations";
}

// Turns ANTLR's syntax errors into E002 diagnostics with a hint. Only the first error of
// a statement is reported: the parser's recovery makes the next ones its echoes.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
 public:
  SyntaxErrorListener(Diagnostics& diags, uint32_t file, const OffsetMap& map, antlr4::CommonTokenStream& tokens)
      : diags_(diags), file_(file), map_(map), tokens_(tokens) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* bad, size_t, size_t, const std::string& msg,
                   std::exception_ptr) override {
    if (!bad) {
      diags_.error("E002", {file_, 0, 0}, msg).hint("a file holds import, op, monoid and schedule declarations");
      return;
    }
    size_t index = bad->getTokenIndex();
    size_t start = statement_start(index);
    bool echo = last_ && !boundary_in(*last_, index);
    last_ = index;
    if (echo || lexical_error_in(start, index)) return;  // already explained

    auto* parser = dynamic_cast<antlr4::Parser*>(recognizer);
    std::vector<std::string> expected = expected_tokens(parser);
    auto wants = [&](const std::string& t) { return std::find(expected.begin(), expected.end(), t) != expected.end(); };
    // After an error the parser may leave a block early; the block's own '}' is then no news.
    if (bad->getText() == "}" && wants("'op'") && opened_before("}", 0, index)) return;
    std::string what = describe_token(bad);
    const std::string text = bad->getType() == antlr4::Token::EOF ? "" : bad->getText();

    // A bracket left open when the statement ends or the line breaks: say where its closer is missing.
    antlr4::Token* prev = previous_default_token(index);
    bool new_line = prev && prev->getLine() < bad->getLine();
    if (antlr4::Token* open = unclosed_in(start, index)) {
      std::string close = closer_of(open->getText());
      bool ends = text == ";" || text == "{" || text == "}" || bad->getType() == antlr4::Token::EOF;
      if (ends || (new_line && !is_close(text))) {
        SourceRange at = ends ? at_token(bad) : after(prev);
        if (!ends) last_.reset();  // the statement on the next line is judged on its own
        diags_
            .error("E002", at,
                   ends ? fmt::format("expected '{}' before {}", close, what)
                        : fmt::format("expected '{}' after this", close))
            .note(range_of(open), fmt::format("to close this '{}'", open->getText()))
            .hint(fmt::format("add the missing '{}'", close));
        return;
      }
    }
    // A missing ';' is reported where it is missing: right after the previous token.
    if (wants("';'") && new_line) {
      last_.reset();  // the parser goes on as if the ';' were there: the next statement is fresh
      Diagnostic& d = diags_.error("E002", after(prev), "expected ';' after this");
      if (hides_rest_of_line(prev))
        d.hint("end it with ';'; the '//' after it starts a comment, which hides the rest of the line");
      else
        d.hint("end the statement with ';'");
      return;
    }
    if (wants("'}'") && starts_declaration(text)) {
      if (antlr4::Token* open = unclosed_in(0, index); open && open->getText() == "{") {
        diags_.error("E002", at_token(bad), fmt::format("expected '}}' before '{}'", text))
            .note(range_of(open), "to close this '{'")
            .hint("add the missing '}'");
        return;
      }
    }
    if (bad->getType() == antlr4::Token::EOF) {
      if (antlr4::Token* open = unclosed_in(0, index)) {
        diags_
            .error("E002", at_token(bad), fmt::format("unexpected end of file: '{}' is never closed", open->getText()))
            .note(range_of(open), "opened here")
            .hint(fmt::format("add the missing '{}'", closer_of(open->getText())));
        return;
      }
    }
    // A closer without its opener.
    if (is_close(text) && !opened_before(text, text == "}" ? 0 : start, index)) {
      diags_.error("E002", at_token(bad), fmt::format("unexpected '{}': it closes nothing", text))
          .hint("remove it, or add the opening bracket it was meant to close");
      return;
    }
    if (wants("a name") && is_keyword(text)) {
      diags_.error("E002", at_token(bad), fmt::format("'{}' is a reserved word and cannot be a name", text))
          .hint(fmt::format("choose another name; the reserved words are {}", fmt::join(keywords(), ", ")));
      return;
    }
    if (is_comparison(text) && comparison_in(start, index)) {
      diags_.error("E002", at_token(bad), "comparisons do not chain")
          .hint("join two comparisons with '&&', e.g. a < b && b < c");
      return;
    }
    std::string message = fmt::format("unexpected {}", what);
    if (!expected.empty() && expected.size() <= 8)
      message +=
          fmt::format("; expected {}",
                      expected.size() == 1 ? expected[0] : "one of " + fmt::format("{}", fmt::join(expected, ", ")));
    std::string hint = wants("';'") && expected.size() == 1 ? "statements and declarations end with ';'"
                       : wants("'let'")
                           ? "a statement is written: name[i, j] = expression; or let name = expression;"
                           : construct_hint(parser ? parser->getContext() : nullptr, wants("an expression"));
    diags_.error("E002", at_token(bad), message).hint(hint);
  }

 private:
  // The expected tokens in words; every token that starts an expression becomes "an expression".
  static std::vector<std::string> expected_tokens(antlr4::Parser* parser) {
    std::vector<std::string> names;
    if (!parser) return names;
    for (size_t t : parser->getExpectedTokens().toList()) {
      std::string n = parser->getVocabulary().getDisplayName(t);
      names.push_back(n == "ID"       ? "a name"
                      : n == "INT"    ? "an integer"
                      : n == "FLOAT"  ? "a number"
                      : n == "STRING" ? "a string"
                      : n == "EOF"    ? "end of file"
                                      : n);
    }
    auto has = [&](const char* t) { return std::find(names.begin(), names.end(), t) != names.end(); };
    if (has("a name") && has("an integer") && has("a number") && has("'('")) {
      static const std::set<std::string> starts = {"a name", "an integer", "a number", "'('",  "'-'",
                                                   "'!'",    "'true'",     "'false'",  "'inf'"};
      std::erase_if(names, [&](const std::string& n) { return starts.count(n) > 0; });
      names.insert(names.begin(), "an expression");
    }
    return names;
  }

  static bool is_keyword(const std::string& s) {
    const std::vector<std::string>& k = keywords();
    return std::find(k.begin(), k.end(), s) != k.end();
  }

  antlr4::Token* default_token(size_t i) const {
    antlr4::Token* t = tokens_.get(i);
    return t->getChannel() == antlr4::Token::DEFAULT_CHANNEL ? t : nullptr;
  }

  // Whether a ';', '{' or '}' lies in [from, to): the end of one statement and the start of another.
  bool boundary_in(size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i)
      if (antlr4::Token* t = default_token(i); t && (t->getText() == ";" || t->getText() == "{" || t->getText() == "}"))
        return true;
    return false;
  }

  // The first token of the statement holding token `index`: just after the last ';', '{' or '}'.
  size_t statement_start(size_t index) const {
    for (size_t i = index; i > 0; --i)
      if (antlr4::Token* t = default_token(i - 1);
          t && (t->getText() == ";" || t->getText() == "{" || t->getText() == "}"))
        return i;
    return 0;
  }

  bool lexical_error_in(size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i)
      if (tokens_.get(i)->getChannel() == kErrorChannel) return true;
    return false;
  }

  bool comparison_in(size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i)
      if (antlr4::Token* t = default_token(i); t && is_comparison(t->getText())) return true;
    return false;
  }

  // The innermost bracket opened in [from, to) and not closed there; '{' counts only from 0.
  antlr4::Token* unclosed_in(size_t from, size_t to) const {
    std::vector<antlr4::Token*> open;
    for (size_t i = from; i < to; ++i) {
      antlr4::Token* t = default_token(i);
      if (!t) continue;
      std::string s = t->getText();
      if (is_open(s) && (s != "{" || from == 0))
        open.push_back(t);
      else if (is_close(s) && !open.empty() && closer_of(open.back()->getText()) == s)
        open.pop_back();
    }
    return open.empty() ? nullptr : open.back();
  }

  bool opened_before(const std::string& close, size_t from, size_t to) const {
    int depth = 0;
    for (size_t i = from; i < to; ++i) {
      antlr4::Token* t = default_token(i);
      if (!t) continue;
      if (closer_of(t->getText()) == close && is_open(t->getText()))
        ++depth;
      else if (t->getText() == close)
        depth = std::max(0, depth - 1);
    }
    return depth > 0;
  }

  // Whether a '//' comment follows `t` on its line.
  bool hides_rest_of_line(antlr4::Token* t) const {
    for (size_t i = t->getTokenIndex() + 1; i < tokens_.size(); ++i) {
      antlr4::Token* n = tokens_.get(i);
      if (n->getType() == EmmyLexer::LINE_COMMENT) return n->getLine() == t->getLine();
      if (n->getType() != EmmyLexer::WS || n->getText().find('\n') != std::string::npos) return false;
    }
    return false;
  }

  SourceRange at_token(antlr4::Token* t) const { return range_of(t); }
  SourceRange after(antlr4::Token* t) const {
    uint32_t end = map_.byte(t->getStopIndex() + 1);
    return {file_, end, end};
  }
  SourceRange range_of(antlr4::Token* t) const {
    if (t->getType() == antlr4::Token::EOF) {
      uint32_t b = map_.byte(t->getStartIndex());
      return {file_, b, b};
    }
    return {file_, map_.byte(t->getStartIndex()), map_.byte(t->getStopIndex() + 1)};
  }
  antlr4::Token* previous_default_token(size_t index) const {
    while (index > 0) {
      --index;
      if (antlr4::Token* t = default_token(index)) return t;
    }
    return nullptr;
  }

  Diagnostics& diags_;
  uint32_t file_;
  const OffsetMap& map_;
  antlr4::CommonTokenStream& tokens_;
  std::optional<size_t> last_;  // token index of the previous syntax error
};

// Two changes to ANTLR's recovery. It may delete one unexpected token; deleting a ';', '{'
// or '}' merges two statements and turns the next, correct one into a second error, so
// those are kept. And a token that starts no declaration (or no statement of an op body)
// makes it give up on the rest of the file (the op); instead, skip to the next
// declaration (statement) and go on, so that later errors are reported too.
class ErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  void sync(antlr4::Parser* recognizer) override {
    if (inErrorRecoveryMode(recognizer)) return;
    antlr4::Token* t = recognizer->getCurrentToken();
    antlr4::ParserRuleContext* ctx = recognizer->getContext();
    bool top = dynamic_cast<P::ModuleContext*>(ctx) != nullptr;
    // (is_token, not getText(): a rule's text would print a whole statement at every sync.)
    antlr4::tree::ParseTree* last = ctx->children.empty() ? nullptr : ctx->children.back();
    bool body =
        dynamic_cast<P::OpDeclContext*>(ctx) != nullptr && (is_token(last, "{") || dynamic_cast<P::StmtContext*>(last));
    if (t->getType() == antlr4::Token::EOF || !(top || body) ||
        recognizer->getExpectedTokens().contains(t->getType())) {
      antlr4::DefaultErrorStrategy::sync(recognizer);
      return;
    }
    recognizer->notifyErrorListeners(t, "", nullptr);
    if (body && starts_declaration(t->getText())) return;  // a '}' is missing: end the op here, parse the next item
    beginErrorCondition(recognizer);
    for (antlr4::Token* c = t; c->getType() != antlr4::Token::EOF; c = recognizer->getCurrentToken()) {
      std::string s = c->getText();
      if (top ? starts_declaration(s) : s == "}") break;
      recognizer->consume();
      if (body && s == ";") break;
    }
    endErrorCondition(recognizer);
  }

 protected:
  antlr4::Token* singleTokenDeletion(antlr4::Parser* recognizer) override {
    std::string next = recognizer->getCurrentToken()->getText();
    if (next == ";" || next == "{" || next == "}") return nullptr;
    return antlr4::DefaultErrorStrategy::singleTokenDeletion(recognizer);
  }
};

// The code point of one UTF-8 encoded character.
uint32_t code_point(std::string_view c) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(c[i])); };
  if (c.empty()) return 0;
  if (b(0) < 0x80 || c.size() < 2) return b(0);
  if (c.size() == 2) return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
  if (c.size() == 3) return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
  return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
}

// Characters that slip in from papers and word processors, with the ASCII to write instead.
std::string character_hint(std::string_view c, uint32_t cp) {
  static const std::pair<uint32_t, const char*> kLookalikes[] = {
      {0x00A0, "a space"}, {0x00D7, "'*'"},  {0x00B7, "'*'"},  {0x2212, "'-'"},  {0x2013, "'-'"},
      {0x00F7, "'/'"},     {0x2264, "'<='"}, {0x2265, "'>='"}, {0x2260, "'!='"}, {0x201C, "'\"'"},
      {0x201D, "'\"'"},    {0x2227, "'&&'"}, {0x2228, "'||'"}, {0x00AC, "'!'"},
  };
  for (const auto& [from, to] : kLookalikes)
    if (cp == from) return fmt::format("write {} instead", to);
  if (c == "\"") return "strings appear only as schedule names: schedule op for sm_90 as \"name\" { ... }";
  return cp < 0x80 ? "this character has no meaning in Emmy; remove it"
                   : "Emmy source uses ASCII outside comments; remove or replace this character";
}

}  // namespace

// A token (not a rule: its getText would build the text of the whole subtree) spelled `text`.
bool is_token(antlr4::tree::ParseTree* node, std::string_view text) {
  auto* t = dynamic_cast<antlr4::tree::TerminalNode*>(node);
  return t && t->getText() == text;
}

void report_lexical_errors(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags) {
  for (antlr4::Token* t : tokens.getTokens()) {
    if (t->getChannel() != kErrorChannel) continue;
    SourceRange r{file, map.byte(t->getStartIndex()), map.byte(t->getStopIndex() + 1)};
    if (t->getType() == EmmyLexer::UNTERMINATED_COMMENT) {
      r.end = r.begin + 2;
      diags.error("E001", r, "block comment is never closed").hint("close it with '*/'");
    } else {
      std::string c = t->getText();
      uint32_t cp = code_point(c);
      const bool plain = cp >= 0x20 && cp < 0x7F;  // a control character is named by its code point too
      std::string shown = plain ? fmt::format("'{}'", c) : fmt::format("'{}' (U+{:04X})", c, cp);
      diags.error("E001", r, fmt::format("unexpected character {}", shown)).hint(character_hint(c, cp));
    }
  }
}

std::unique_ptr<antlr4::ANTLRErrorListener> report_syntax_errors(EmmyParser& parser, Diagnostics& diags, uint32_t file,
                                                                 const OffsetMap& map,
                                                                 antlr4::CommonTokenStream& tokens) {
  parser.setErrorHandler(std::make_shared<ErrorStrategy>());
  parser.removeErrorListeners();
  auto listener = std::make_unique<SyntaxErrorListener>(diags, file, map, tokens);
  parser.addErrorListener(listener.get());
  return listener;
}

}  // namespace emmy
