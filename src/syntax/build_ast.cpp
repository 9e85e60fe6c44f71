// Builds the AST from ANTLR's parse tree; no ANTLR type escapes this file and token_checks.*.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "EmmyLexer.h"
#include "EmmyParser.h"
#include "antlr4-runtime.h"
#include "support/utf8.hpp"
#include "syntax/parse.hpp"
#include "syntax/token_checks.hpp"

namespace emmy {
namespace {

using P = EmmyParser;
constexpr size_t kDocChannel = 2;
constexpr size_t kErrorChannel = 3;
constexpr uint32_t kMaxExprDepth = 1000;  // the AST's height: the later passes' recursion

std::string describe_token(const antlr4::Token* t) {
  if (t->getType() == antlr4::Token::EOF) return "end of file";
  return fmt::format("'{}'", t->getText());
}

// A token (not a rule: its getText would build the text of the whole subtree) spelled `text`.
bool is_token(antlr4::tree::ParseTree* node, std::string_view text) {
  auto* t = dynamic_cast<antlr4::tree::TerminalNode*>(node);
  return t && t->getText() == text;
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

// Walks the parse tree of a clean parse and produces AST nodes.
class Builder {
 public:
  Builder(std::string_view text, uint32_t file, const OffsetMap& map, antlr4::CommonTokenStream& tokens,
          Diagnostics& diags)
      : text_(text), file_(file), map_(map), tokens_(tokens), diags_(diags) {}

  ast::Module module(P::ModuleContext* ctx) {
    ast::Module m;
    m.file = file_;
    for (P::ItemContext* item : ctx->item()) {
      if (auto* c = item->importDecl())
        m.items.push_back(import_decl(c));
      else if (auto* c = item->opDecl())
        m.items.push_back(op_decl(c));
      else if (auto* c = item->monoidDecl())
        m.items.push_back(monoid_decl(c));
      else if (auto* c = item->scheduleDecl())
        m.items.push_back(schedule_decl(c));
    }
    m.expr_count = next_id_ - 1;
    return m;
  }

 private:
  SourceRange range(antlr4::ParserRuleContext* c) const {
    uint32_t b = map_.byte(c->getStart()->getStartIndex());
    antlr4::Token* stop = c->getStop();
    uint32_t e =
        (stop && stop->getStopIndex() + 1 > c->getStart()->getStartIndex()) ? map_.byte(stop->getStopIndex() + 1) : b;
    return {file_, b, e};
  }
  SourceRange range(antlr4::tree::TerminalNode* t) const { return range(t->getSymbol()); }
  SourceRange range(antlr4::Token* t) const {
    return {file_, map_.byte(t->getStartIndex()), map_.byte(t->getStopIndex() + 1)};
  }
  ast::Ident ident(antlr4::tree::TerminalNode* t) const { return {t->getText(), range(t)}; }

  // The `///` lines directly above an item: a blank line or another comment ends the
  // block, so a file's header comment does not become its first item's doc.
  std::vector<std::string> doc_before(antlr4::ParserRuleContext* c) const {
    std::vector<std::string> lines;
    for (size_t i = c->getStart()->getTokenIndex(); i-- > 0;) {
      antlr4::Token* t = tokens_.get(i);
      if (t->getChannel() == kDocChannel) {
        std::string s = t->getText().substr(3);
        if (!s.empty() && s[0] == ' ') s.erase(0, 1);
        lines.insert(lines.begin(), s);
      } else {
        std::string text = t->getText();
        if (t->getType() != EmmyLexer::WS || std::count(text.begin(), text.end(), '\n') > 1) break;
      }
    }
    return lines;
  }

  ast::ImportDecl import_decl(P::ImportDeclContext* c) {
    ast::ImportDecl d;
    for (auto* id : c->ID()) d.path.push_back(ident(id));
    d.range = range(c);
    return d;
  }

  ast::Dim dim(P::DimContext* c) {
    ast::Dim d;
    d.range = range(c);
    if (c->ID())
      d.name = c->ID()->getText();
    else if (c->INT())
      d.value = int_literal(c->INT()->getSymbol(), d.range);
    else {
      d.computed = std::make_shared<const ast::Expr>(expr(c->expr()));  // named in op_decl
      d.text = std::string(source_text(range(c->expr())));
    }
    return d;
  }

  int64_t int_literal(antlr4::Token* t, SourceRange r) {
    std::string s = t->getText();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
      diags_.error("E003", r, fmt::format("integer literal {} does not fit in 64 bits", s))
          .hint("integers range up to 9223372036854775807");
      bad_literal_ = true;
      return 0;
    }
    return v;
  }

  std::vector<ast::Param> params(P::ParamListContext* c) {
    std::vector<ast::Param> out;
    if (!c) return out;
    for (P::ParamContext* p : c->param()) {
      ast::Param param;
      param.name = ident(p->ID(0));
      param.dtype = ident(p->ID(1));
      param.has_shape = p->children.size() > 3;  // name ':' dtype '[' ...
      for (P::DimContext* d : p->dim()) param.dims.push_back(dim(d));
      out.push_back(std::move(param));
    }
    return out;
  }

  ast::OpDecl op_decl(P::OpDeclContext* c) {
    ast::OpDecl op;
    op.doc = doc_before(c);
    op.name = ident(c->ID());
    // Either list may be empty, so paramList(0) is the outputs of `op f() -> (y: ...)`: the
    // side of '->' tells them apart.
    bool after_arrow = false;
    for (antlr4::tree::ParseTree* child : c->children) {
      if (auto* list = dynamic_cast<P::ParamListContext*>(child))
        (after_arrow ? op.outputs : op.params) = params(list);
      else if (is_token(child, "->"))
        after_arrow = true;
    }
    for (P::StmtContext* s : c->stmt()) {
      if (auto* l = s->letStmt())
        op.body.push_back(let_stmt(l));
      else
        op.body.push_back(assign_stmt(s->assignStmt()));
    }
    op.range = range(c);
    name_computed_dims(c, op);
    return op;
  }

  // A computed dim's size gets a name of its own, `<tensor>_dim<k>`, unlike every word of the op.
  void name_computed_dims(P::OpDeclContext* c, ast::OpDecl& op) {
    std::set<std::string> words;
    const size_t last = c->getStop() ? c->getStop()->getTokenIndex() : c->getStart()->getTokenIndex();
    for (size_t t = c->getStart()->getTokenIndex(); t <= last && t < tokens_.size(); ++t)
      if (tokens_.get(t)->getType() == EmmyLexer::ID) words.insert(tokens_.get(t)->getText());
    for (auto* list : {&op.params, &op.outputs})
      for (ast::Param& p : *list)
        for (size_t k = 0; k < p.dims.size(); ++k) {
          if (!p.dims[k].computed) continue;
          std::string name = fmt::format("{}_dim{}", p.name.name, k);
          while (words.count(name)) name += "_";
          words.insert(name);
          p.dims[k].name = name;
        }
  }

  ast::LetStmt let_stmt(P::LetStmtContext* c) { return {ident(c->ID()), expr(c->expr())}; }

  ast::AssignStmt assign_stmt(P::AssignStmtContext* c) {
    ast::AssignStmt a;
    a.target = ident(c->ID());
    a.bracketed = c->children.size() > 1 && c->children[1]->getText() == "[";
    if (auto* list = c->exprList())
      for (auto* e : list->expr()) a.indices.push_back(expr(e));
    a.value = expr(c->expr());
    a.range = range(c);
    return a;
  }

  ast::Expr node(ast::ExprKind kind, SourceRange r) {
    ast::Expr e;
    e.kind = kind;
    e.range = r;
    e.id = next_id_++;
    height_.push_back(0);  // a leaf; sealed() sets an operator's
    return e;
  }

  // Records the height of `e`'s subtree, its operands built; the first node to pass
  // kMaxExprDepth is reported at `at` (every later pass recurses on the tree).
  ast::Expr sealed(ast::Expr e, SourceRange at) {
    uint32_t below = 0;
    for (const ast::Expr& a : e.args) below = std::max(below, height_[a.id]);
    for (const ast::Expr& w : e.where_) below = std::max(below, height_[w.id]);
    height_[e.id] = below + 1;
    if (below + 1 > kMaxExprDepth && !too_deep_) {
      too_deep_ = true;
      diags_.error("E004", at, fmt::format("expression nested more than {} levels deep", kMaxExprDepth))
          .note(e.range, "each operator of a chain such as a + b + c nests one level deeper")
          .hint("split the expression with 'let' bindings, e.g. let s = a + b + c; ... = s + d + e");
    }
    return e;
  }

  ast::Expr binary(antlr4::tree::ParseTree* op, ast::Expr lhs, ast::Expr rhs) {
    SourceRange r{file_, lhs.range.begin, rhs.range.end};
    ast::Expr e = node(ast::ExprKind::Binary, r);
    e.text = op->getText();
    e.args.push_back(std::move(lhs));
    e.args.push_back(std::move(rhs));
    auto* token = dynamic_cast<antlr4::tree::TerminalNode*>(op);
    auto* rule = dynamic_cast<antlr4::ParserRuleContext*>(op);
    return sealed(std::move(e), token ? range(token) : rule ? range(rule) : r);
  }

  // Folds `x (op y)*` left-associatively; operators are the odd children. A chain too deep
  // for the later passes stops at the operator that passes the limit.
  template <typename Operand, typename Fn>
  ast::Expr fold_left(antlr4::ParserRuleContext* c, const std::vector<Operand*>& operands, Fn&& sub) {
    ast::Expr acc = sub(operands[0]);
    for (size_t i = 1; i < operands.size() && !too_deep_; ++i)
      acc = binary(c->children[2 * i - 1], std::move(acc), sub(operands[i]));
    return acc;
  }

  ast::Expr expr(P::ExprContext* c) { return or_expr(c->orExpr()); }
  ast::Expr or_expr(P::OrExprContext* c) {
    return fold_left(c, c->andExpr(), [&](P::AndExprContext* x) { return and_expr(x); });
  }
  ast::Expr and_expr(P::AndExprContext* c) {
    return fold_left(c, c->cmpExpr(), [&](P::CmpExprContext* x) { return cmp_expr(x); });
  }
  ast::Expr cmp_expr(P::CmpExprContext* c) {
    return fold_left(c, c->addExpr(), [&](P::AddExprContext* x) { return add_expr(x); });
  }
  ast::Expr add_expr(P::AddExprContext* c) {
    return fold_left(c, c->mulExpr(), [&](P::MulExprContext* x) { return mul_expr(x); });
  }
  ast::Expr mul_expr(P::MulExprContext* c) {
    return fold_left(c, c->unaryExpr(), [&](P::UnaryExprContext* x) { return unary_expr(x); });
  }
  ast::Expr unary_expr(P::UnaryExprContext* c) {
    if (auto* p = c->postfixExpr()) return postfix_expr(p);
    ast::Expr e = node(ast::ExprKind::Unary, range(c));
    e.text = c->children[0]->getText();
    e.args.push_back(unary_expr(c->unaryExpr()));
    SourceRange at = e.range;
    return sealed(std::move(e), at);
  }

  ast::Expr postfix_expr(P::PostfixExprContext* c) {
    ast::Expr acc = primary(c->primary());
    for (P::PostfixContext* pf : c->postfix()) {
      if (too_deep_) break;
      SourceRange r{file_, acc.range.begin, range(pf).end};
      if (auto* ix = dynamic_cast<P::IndexPostfixContext*>(pf)) {
        ast::Expr e = node(ast::ExprKind::Index, r);
        e.args.push_back(std::move(acc));
        if (auto* list = ix->indexList())
          for (P::IndexContext* i : list->index()) {
            if (i->expr())
              e.args.push_back(expr(i->expr()));
            else
              e.args.push_back(node(ast::ExprKind::Slice, range(i)));
          }
        acc = sealed(std::move(e), range(pf));
      } else {
        auto* f = dynamic_cast<P::FieldPostfixContext*>(pf);
        ast::Expr e = node(ast::ExprKind::Field, r);
        e.text = f->ID()->getText();
        e.callee_range = range(f->ID());
        e.args.push_back(std::move(acc));
        acc = sealed(std::move(e), range(pf));
      }
    }
    return acc;
  }

  ast::Expr primary(P::PrimaryContext* c) {
    SourceRange r = range(c);
    if (auto* x = dynamic_cast<P::IntLitContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Int, r);
      e.text = x->getText();
      e.int_value = int_literal(x->INT()->getSymbol(), r);
      return e;
    }
    if (auto* x = dynamic_cast<P::FloatLitContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Float, r);
      e.text = x->getText();
      e.float_value = std::strtod(e.text.c_str(), nullptr);
      if (!std::isfinite(e.float_value)) {
        diags_.error("E003", r, fmt::format("number {} is too large for f64", e.text))
            .hint("write inf for an infinite value");
        bad_literal_ = true;
      }
      return e;
    }
    if (dynamic_cast<P::BoolLitContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Bool, r);
      e.text = c->getText();
      e.int_value = e.text == "true";
      return e;
    }
    if (dynamic_cast<P::InfLitContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Inf, r);
      e.text = "inf";
      return e;
    }
    if (auto* x = dynamic_cast<P::ReduceCallContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Reduce, r);
      e.text = x->ID(0)->getText();
      e.callee_range = range(x->ID(0));
      for (size_t i = 1; i < x->ID().size(); ++i) e.axes.push_back(ident(x->ID(i)));
      if (x->expr()) e.where_.push_back(expr(x->expr()));
      for (auto* a : x->exprList()->expr()) e.args.push_back(expr(a));
      return sealed(std::move(e), r);
    }
    if (auto* x = dynamic_cast<P::CallContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Call, r);
      e.text = x->ID()->getText();
      e.callee_range = range(x->ID());
      if (auto* list = x->exprList())
        for (auto* a : list->expr()) e.args.push_back(expr(a));
      return sealed(std::move(e), r);
    }
    if (auto* x = dynamic_cast<P::NameContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Name, r);
      e.text = x->ID()->getText();
      return e;
    }
    if (auto* x = dynamic_cast<P::ParenContext*>(c)) return expr(x->expr());
    auto* x = dynamic_cast<P::TupleContext*>(c);
    ast::Expr e = node(ast::ExprKind::Tuple, r);
    e.args.push_back(expr(x->expr()));
    if (auto* list = x->exprList())
      for (auto* a : list->expr()) e.args.push_back(expr(a));
    return sealed(std::move(e), r);
  }

  std::vector<ast::Field> fields(P::FieldListContext* c) {
    std::vector<ast::Field> out;
    for (P::FieldContext* f : c->field()) {
      ast::Field field{ident(f->ID(0)), ident(f->ID(1)), std::nullopt};
      if (f->dim()) {
        field.vector_dim = dim(f->dim());
        if (field.vector_dim->computed) {
          diags_.error("E065", field.vector_dim->range, "a monoid field's length is a size name or a number")
              .hint("name the length (`v: f32[E]`); only an op's output dims may be computed");
          field.vector_dim->computed.reset();
          field.vector_dim->value = 1;  // reported: stands for a length from here on
        }
      }
      out.push_back(std::move(field));
    }
    return out;
  }

  ast::MonoidDecl monoid_decl(P::MonoidDeclContext* c) {
    ast::MonoidDecl m;
    m.doc = doc_before(c);
    m.name = ident(c->ID());
    m.fields = fields(c->fieldList());
    m.range = range(c);
    for (P::MonoidMemberContext* mem : c->monoidMember()) {
      if (auto* x = dynamic_cast<P::IdentityMemberContext*>(mem)) {
        if (m.identity) duplicate_member("identity", range(x), m.identity_range);
        m.identity = expr(x->expr());
        m.identity_range = range(x);
      } else if (auto* x = dynamic_cast<P::LiftMemberContext*>(mem)) {
        if (m.lift_value) duplicate_member("lift", range(x), m.lift_range);
        m.lift_params = fields(x->fieldList());
        m.lift_value = expr(x->expr());
        m.lift_range = range(x);
      } else if (auto* x = dynamic_cast<P::CombineMemberContext*>(mem)) {
        if (m.has_combine) duplicate_member("combine", range(x), m.combine_range);
        m.has_combine = true;
        m.combine_lhs = ident(x->ID(0));
        m.combine_rhs = ident(x->ID(1));
        m.combine_lets.clear();
        for (auto* l : x->letStmt()) m.combine_lets.push_back(let_stmt(l));
        m.combine_yield = expr(x->expr());
        m.combine_range = range(x);
      } else if (auto* x = dynamic_cast<P::AssumeMemberContext*>(mem)) {
        m.assumes.push_back(ident(x->ID()));
      }
    }
    return m;
  }

  void duplicate_member(const char* what, SourceRange here, SourceRange first) {
    diags_.error("E040", here, fmt::format("monoid defines '{}' twice", what))
        .note(first, "first defined here")
        .hint("keep one definition");
  }

  ast::ScheduleDecl schedule_decl(P::ScheduleDeclContext* c) {
    ast::ScheduleDecl s;
    s.doc = doc_before(c);
    s.op = ident(c->ID(0));
    s.target = ident(c->ID(1));
    if (auto* str = c->STRING()) {
      std::string t = str->getText();
      s.label = ast::Ident{t.substr(1, t.size() - 2), range(str)};
    }
    if (auto* guard = c->expr()) s.guard = expr(guard);
    if (P::AutoBodyContext* body = c->autoBody()) {
      const ast::Ident word = ident(body->ID());
      if (word.name == "auto")
        s.automatic = word.range;
      else
        diags_
            .error("E002", word.range,
                   fmt::format("expected '{{' or 'auto' after the block's header, found '{}'", word.name))
            .hint("list the knobs in braces (`{ TILE=...; }`) or write `auto;` for the auto-scheduler's choice");
    }
    for (P::KnobEntryContext* k : c->knobEntry()) {
      ast::KnobEntry e;
      e.knob = ident(k->ID(0));
      if (k->ID().size() > 1) e.site = ident(k->ID(1));
      e.range = range(k);
      P::KnobValueContext* v = k->knobValue();
      if (v->children.empty()) {
        uint32_t at = map_.byte(v->getStart()->getStartIndex());  // the ';'
        e.value_range = {file_, at, at};
      } else {
        e.value_range = range(v);
        e.value = std::string(source_text(e.value_range));
      }
      s.entries.push_back(std::move(e));
    }
    s.range = range(c);
    return s;
  }

  std::string_view source_text(SourceRange r) const { return text_.substr(r.begin, r.end - r.begin); }

  std::string_view text_;
  uint32_t file_;
  const OffsetMap& map_;
  antlr4::CommonTokenStream& tokens_;
  Diagnostics& diags_;
  uint32_t next_id_ = 1;
  std::vector<uint32_t> height_{0};  // by expr id: operators on the longest path down (x[i] is 1)

 public:
  bool bad_literal_ = false;  // an E003 was reported: that literal is stored as 0
  bool too_deep_ = false;     // an E004 was reported: the expression was cut short
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

// Lexical errors ride on the error channel so the parser can go on; report them here.
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

}  // namespace

ast::Module parse_module(const SourceManager& sources, uint32_t file, Diagnostics& diags) {
  const std::string& text = sources.file(file).text();
  ast::Module empty;
  empty.file = file;
  if (text.size() > kMaxSourceBytes) {  // the parser holds ~30 bytes a byte of source
    diags
        .error("E006", {file, 0, 1}, fmt::format("source file is larger than {} MiB, the limit", kMaxSourceBytes >> 20))
        .hint("split it into modules (import a.b loads a/b.emmy), or generate less");
    return empty;
  }
  if (size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    diags.error("E001", {file, static_cast<uint32_t>(bad), static_cast<uint32_t>(bad + 1)}, "source is not valid UTF-8")
        .hint("save the file as UTF-8");
    return empty;
  }
  OffsetMap map(text);
  antlr4::ANTLRInputStream input(text);
  EmmyLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  int before = diags.error_count();
  report_lexical_errors(tokens, map, file, diags);
  if (!names_ok(tokens, map, file, diags) || !nesting_ok(tokens, map, file, diags)) return empty;  // token_checks.hpp

  EmmyParser parser(&tokens);
  parser.setErrorHandler(std::make_shared<ErrorStrategy>());
  parser.removeErrorListeners();
  SyntaxErrorListener listener(diags, file, map, tokens);
  parser.addErrorListener(&listener);
  P::ModuleContext* tree = parser.module();
  if (diags.error_count() > before) return empty;

  Builder builder(text, file, map, tokens, diags);
  ast::Module m = builder.module(tree);
  if (builder.bad_literal_ || builder.too_deep_) return empty;  // a literal stored as 0, a cut expression
  return m;
}

}  // namespace emmy
