// Builds the AST from ANTLR's parse tree; no ANTLR type escapes this file.
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "EmmyLexer.h"
#include "EmmyParser.h"
#include "antlr4-runtime.h"
#include "syntax/parse.hpp"

namespace emmy {
namespace {

using P = EmmyParser;
constexpr size_t kDocChannel = 2;
constexpr size_t kErrorChannel = 3;
constexpr int kMaxNesting = 200;

// ANTLR counts characters in code points; diagnostics count bytes.
class OffsetMap {
public:
  explicit OffsetMap(std::string_view text) {
    bool ascii = true;
    for (unsigned char c : text) ascii = ascii && c < 0x80;
    if (ascii) return;
    for (uint32_t i = 0; i < text.size(); ++i)
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts_.push_back(i);
    starts_.push_back(static_cast<uint32_t>(text.size()));
  }
  uint32_t byte(size_t cp) const {
    if (starts_.empty()) return static_cast<uint32_t>(cp);
    return starts_[std::min(cp, starts_.size() - 1)];
  }

private:
  std::vector<uint32_t> starts_;
};

// Index of the first byte that breaks UTF-8, or npos.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    if (n > 1 && c < 0xC2 && n == 2) return i;  // overlong
    i += n;
  }
  return std::string_view::npos;
}

std::string describe_token(const antlr4::Token* t) {
  if (t->getType() == antlr4::Token::EOF) return "end of file";
  return fmt::format("'{}'", t->getText());
}

// Turns ANTLR's syntax errors into E002 diagnostics with a hint.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(Diagnostics& diags, uint32_t file, const OffsetMap& map, antlr4::CommonTokenStream& tokens)
      : diags_(diags), file_(file), map_(map), tokens_(tokens) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* bad, size_t, size_t, const std::string& msg,
                   std::exception_ptr) override {
    auto* parser = dynamic_cast<antlr4::Parser*>(recognizer);
    SourceRange at = range_of(bad);
    std::string expected;
    bool wants_semicolon = false;
    if (parser) {
      antlr4::misc::IntervalSet want = parser->getExpectedTokens();
      std::vector<std::string> names;
      for (size_t t : want.toList()) {
        std::string n = parser->getVocabulary().getDisplayName(t);
        if (n == "';'") wants_semicolon = true;
        names.push_back(n == "ID" ? "a name" : n == "INT" ? "an integer" : n == "FLOAT" ? "a number" : n == "STRING" ? "a string" : n == "EOF" ? "end of file" : n);
      }
      if (!names.empty() && names.size() <= 8) {
        expected = names.size() == 1 ? names[0] : "one of " + fmt::format("{}", fmt::join(names, ", "));
      }
    }
    // A missing ';' is reported where it is missing: right after the previous token.
    if (wants_semicolon && bad && bad->getTokenIndex() > 0) {
      antlr4::Token* prev = previous_default_token(bad->getTokenIndex());
      if (prev && prev->getLine() < bad->getLine()) {
        uint32_t end = map_.byte(prev->getStopIndex() + 1);
        diags_.error("E002", {file_, end, end}, "expected ';' after this")
            .hint("end the statement with ';'");
        return;
      }
    }
    std::string message = bad ? fmt::format("unexpected {}", describe_token(bad)) : msg;
    if (!expected.empty()) message += fmt::format("; expected {}", expected);
    Diagnostic& d = diags_.error("E002", at, message);
    if (wants_semicolon) d.hint("statements and declarations end with ';'");
  }

private:
  SourceRange range_of(antlr4::Token* t) const {
    if (!t) return {file_, 0, 0};
    if (t->getType() == antlr4::Token::EOF) {
      uint32_t b = map_.byte(t->getStartIndex());
      return {file_, b, b};
    }
    return {file_, map_.byte(t->getStartIndex()), map_.byte(t->getStopIndex() + 1)};
  }
  antlr4::Token* previous_default_token(size_t index) const {
    while (index > 0) {
      --index;
      antlr4::Token* t = tokens_.get(index);
      if (t->getChannel() == antlr4::Token::DEFAULT_CHANNEL) return t;
    }
    return nullptr;
  }

  Diagnostics& diags_;
  uint32_t file_;
  const OffsetMap& map_;
  antlr4::CommonTokenStream& tokens_;
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
      if (auto* c = item->importDecl()) m.items.push_back(import_decl(c));
      else if (auto* c = item->opDecl()) m.items.push_back(op_decl(c));
      else if (auto* c = item->monoidDecl()) m.items.push_back(monoid_decl(c));
      else if (auto* c = item->scheduleDecl()) m.items.push_back(schedule_decl(c));
    }
    m.expr_count = next_id_ - 1;
    return m;
  }

private:
  SourceRange range(antlr4::ParserRuleContext* c) const {
    uint32_t b = map_.byte(c->getStart()->getStartIndex());
    antlr4::Token* stop = c->getStop();
    uint32_t e = (stop && stop->getStopIndex() + 1 > c->getStart()->getStartIndex())
                     ? map_.byte(stop->getStopIndex() + 1)
                     : b;
    return {file_, b, e};
  }
  SourceRange range(antlr4::tree::TerminalNode* t) const { return range(t->getSymbol()); }
  SourceRange range(antlr4::Token* t) const {
    return {file_, map_.byte(t->getStartIndex()), map_.byte(t->getStopIndex() + 1)};
  }
  ast::Ident ident(antlr4::tree::TerminalNode* t) const { return {t->getText(), range(t)}; }

  std::vector<std::string> doc_before(antlr4::ParserRuleContext* c) const {
    std::vector<std::string> lines;
    for (antlr4::Token* t : tokens_.getHiddenTokensToLeft(c->getStart()->getTokenIndex(), kDocChannel)) {
      std::string s = t->getText().substr(3);
      if (!s.empty() && s[0] == ' ') s.erase(0, 1);
      lines.push_back(s);
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
    if (c->ID()) d.name = c->ID()->getText();
    else d.value = int_literal(c->INT()->getSymbol(), d.range);
    return d;
  }

  int64_t int_literal(antlr4::Token* t, SourceRange r) {
    std::string s = t->getText();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
      diags_.error("E003", r, fmt::format("integer literal {} does not fit in 64 bits", s))
          .hint("integers range up to 9223372036854775807");
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
    op.params = params(c->paramList(0));
    op.outputs = params(c->paramList(1));
    for (P::StmtContext* s : c->stmt()) {
      if (auto* l = s->letStmt()) op.body.push_back(let_stmt(l));
      else op.body.push_back(assign_stmt(s->assignStmt()));
    }
    op.range = range(c);
    return op;
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
    return e;
  }

  ast::Expr binary(std::string op, ast::Expr lhs, ast::Expr rhs) {
    SourceRange r{file_, lhs.range.begin, rhs.range.end};
    ast::Expr e = node(ast::ExprKind::Binary, r);
    e.text = std::move(op);
    e.args.push_back(std::move(lhs));
    e.args.push_back(std::move(rhs));
    return e;
  }

  // Folds `x (op y)*` left-associatively; operators are the odd children.
  template <typename Operand, typename Fn>
  ast::Expr fold_left(antlr4::ParserRuleContext* c, const std::vector<Operand*>& operands, Fn&& sub) {
    ast::Expr acc = sub(operands[0]);
    for (size_t i = 1; i < operands.size(); ++i) {
      std::string op = c->children[2 * i - 1]->getText();
      acc = binary(op, std::move(acc), sub(operands[i]));
    }
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
    return e;
  }

  ast::Expr postfix_expr(P::PostfixExprContext* c) {
    ast::Expr acc = primary(c->primary());
    for (P::PostfixContext* pf : c->postfix()) {
      SourceRange r{file_, acc.range.begin, range(pf).end};
      if (auto* ix = dynamic_cast<P::IndexPostfixContext*>(pf)) {
        ast::Expr e = node(ast::ExprKind::Index, r);
        e.args.push_back(std::move(acc));
        if (auto* list = ix->indexList())
          for (P::IndexContext* i : list->index()) {
            if (i->expr()) e.args.push_back(expr(i->expr()));
            else e.args.push_back(node(ast::ExprKind::Slice, range(i)));
          }
        acc = std::move(e);
      } else {
        auto* f = dynamic_cast<P::FieldPostfixContext*>(pf);
        ast::Expr e = node(ast::ExprKind::Field, r);
        e.text = f->ID()->getText();
        e.callee_range = range(f->ID());
        e.args.push_back(std::move(acc));
        acc = std::move(e);
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
      if (!std::isfinite(e.float_value))
        diags_.error("E003", r, fmt::format("number {} is too large for f64", e.text))
            .hint("write inf for an infinite value");
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
      return e;
    }
    if (auto* x = dynamic_cast<P::CallContext*>(c)) {
      ast::Expr e = node(ast::ExprKind::Call, r);
      e.text = x->ID()->getText();
      e.callee_range = range(x->ID());
      if (auto* list = x->exprList())
        for (auto* a : list->expr()) e.args.push_back(expr(a));
      return e;
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
    return e;
  }

  std::vector<ast::Field> fields(P::FieldListContext* c) {
    std::vector<ast::Field> out;
    for (P::FieldContext* f : c->field()) {
      ast::Field field{ident(f->ID(0)), ident(f->ID(1)), std::nullopt};
      if (f->dim()) field.vector_dim = dim(f->dim());
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
};

// Lexical errors ride on the error channel so the parser can go on; report them here.
void report_lexical_errors(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file,
                           Diagnostics& diags) {
  for (antlr4::Token* t : tokens.getTokens()) {
    if (t->getChannel() != kErrorChannel) continue;
    SourceRange r{file, map.byte(t->getStartIndex()), map.byte(t->getStopIndex() + 1)};
    if (t->getType() == EmmyLexer::UNTERMINATED_COMMENT) {
      r.end = r.begin + 2;
      diags.error("E001", r, "block comment is never closed").hint("close it with '*/'");
    } else {
      diags.error("E001", r, fmt::format("unexpected character '{}'", t->getText()))
          .hint("Emmy source uses ASCII operators; remove or replace this character");
    }
  }
}

// ANTLR's recursive descent has no depth limit: refuse pathological nesting up front.
bool nesting_ok(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags) {
  int depth = 0;
  for (antlr4::Token* t : tokens.getTokens()) {
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    std::string s = t->getText();
    if (s == "(" || s == "[" || s == "{" || s == "-" || s == "!") ++depth;
    else if (s == ")" || s == "]" || s == "}") depth = std::max(0, depth - 1);
    else if (s == ";") depth = 0;
    if (depth > kMaxNesting) {
      SourceRange r{file, map.byte(t->getStartIndex()), map.byte(t->getStopIndex() + 1)};
      diags.error("E004", r, fmt::format("expression nested more than {} levels deep", kMaxNesting))
          .hint("split the expression with 'let' bindings");
      return false;
    }
  }
  return true;
}

}  // namespace

ast::Module parse_module(const SourceManager& sources, uint32_t file, Diagnostics& diags) {
  const std::string& text = sources.file(file).text();
  ast::Module empty;
  empty.file = file;
  if (size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    diags.error("E001", {file, static_cast<uint32_t>(bad), static_cast<uint32_t>(bad + 1)},
                "source is not valid UTF-8")
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
  if (!nesting_ok(tokens, map, file, diags)) return empty;

  EmmyParser parser(&tokens);
  parser.removeErrorListeners();
  SyntaxErrorListener listener(diags, file, map, tokens);
  parser.addErrorListener(&listener);
  P::ModuleContext* tree = parser.module();
  if (diags.error_count() > before) return empty;

  return Builder(text, file, map, tokens, diags).module(tree);
}

}  // namespace emmy
