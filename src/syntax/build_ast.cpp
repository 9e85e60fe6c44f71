// Builds the AST from ANTLR's parse tree; no ANTLR type escapes this file, token_checks.* and syntax_errors.*.
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
#include "syntax/syntax_errors.hpp"
#include "syntax/token_checks.hpp"

namespace emmy {
namespace {

using P = EmmyParser;
constexpr size_t kDocChannel = 2;
constexpr uint32_t kMaxExprDepth = 1000;  // the AST's height: the later passes' recursion

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
      else if (auto* c = item->derivedOp())
        m.items.push_back(grad_decl(c));
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

  ast::GradDecl grad_decl(P::DerivedOpContext* c) {
    ast::GradDecl g;
    g.doc = doc_before(c);
    g.name = ident(c->ID(0));
    g.fn = ident(c->ID(1));
    g.of = ident(c->ID(2));
    for (size_t k = 3; k < c->ID().size(); ++k) g.wrt.push_back(ident(c->ID(k)));
    if (P::SavingListContext* saving = c->savingList()) {
      const ast::Ident word = ident(saving->ID(0));
      if (word.name != "saving")
        diags_.error("E002", word.range, fmt::format("expected 'saving' or ';' after grad(...), found '{}'", word.name))
            .hint("list the forward tensors the derived op takes instead of recomputing: `saving m, l;`");
      for (size_t k = 1; k < saving->ID().size(); ++k) g.saved.push_back(ident(saving->ID(k)));
    }
    g.range = range(c);
    if (g.fn.name != "grad")
      diags_.error("E002", g.fn.range, fmt::format("expected 'grad' after '{} =', found '{}'", g.name.name, g.fn.name))
          .hint(fmt::format("derive an op with `op {} = grad(OP, INPUT, ...);`", g.name.name));
    return g;
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
  const auto listener = report_syntax_errors(parser, diags, file, map, tokens);
  P::ModuleContext* tree = parser.module();
  if (diags.error_count() > before) return empty;

  Builder builder(text, file, map, tokens, diags);
  ast::Module m = builder.module(tree);
  if (builder.bad_literal_ || builder.too_deep_) return empty;  // a literal stored as 0, a cut expression
  return m;
}

}  // namespace emmy
