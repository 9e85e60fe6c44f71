#include "syntax/print_ast.hpp"

#include <fmt/format.h>

namespace emmy {
namespace {

std::string join_exprs(const std::vector<ast::Expr>& xs, size_t from, const char* sep, const AstAnnotator* n) {
  std::string s;
  for (size_t i = from; i < xs.size(); ++i) s += (i > from ? sep : "") + print_expr(xs[i], n);
  return s;
}

std::string dims(const std::vector<ast::Dim>& ds) {
  std::string s;
  for (const ast::Dim& d : ds)
    s += (s.empty() ? "" : ", ") + (d.computed       ? fmt::format("{} = {}", d.name, print_expr(*d.computed, nullptr))
                                    : d.is_literal() ? std::to_string(d.value)
                                                     : d.name);
  return s;
}

std::string param(const ast::Param& p) {
  return p.has_shape ? fmt::format("{}: {}[{}]", p.name.name, p.dtype.name, dims(p.dims))
                     : fmt::format("{}: {}", p.name.name, p.dtype.name);
}

std::string field(const ast::Field& f) {
  return f.vector_dim ? fmt::format("{}: {}[{}]", f.name.name, f.dtype.name, dims({*f.vector_dim}))
                      : fmt::format("{}: {}", f.name.name, f.dtype.name);
}

std::string fields(const std::vector<ast::Field>& fs) {
  std::string s;
  for (const ast::Field& f : fs) s += (s.empty() ? "" : ", ") + field(f);
  return s;
}

void print_doc(std::string& out, const std::vector<std::string>& doc) {
  for (const std::string& line : doc) out += fmt::format("  doc \"{}\"\n", line);
}

void print_op(std::string& out, const ast::OpDecl& op, const AstAnnotator* n);

void print_grad(std::string& out, const ast::GradDecl& g, const AstAnnotator* n) {
  std::string wrt;
  for (const ast::Ident& x : g.wrt) wrt += ", " + x.name;
  std::string saved;
  for (const ast::Ident& x : g.saved) saved += (saved.empty() ? " saving " : ", ") + x.name;
  out += fmt::format("derived op {} = {}({}{}){}\n", g.name.name, g.fn.name, g.of.name, wrt, saved);
  print_doc(out, g.doc);
  if (n) out += n->on_grad(g);
}

void print_op(std::string& out, const ast::OpDecl& op, const AstAnnotator* n) {
  out += fmt::format("op {}\n", op.name.name);
  print_doc(out, op.doc);
  for (const ast::Param& p : op.params) out += fmt::format("  in {}\n", param(p));
  for (const ast::Param& p : op.outputs) out += fmt::format("  out {}\n", param(p));
  for (const ast::Stmt& s : op.body) {
    if (const auto* let = std::get_if<ast::LetStmt>(&s)) {
      std::string note = n ? n->on_let(op, *let) : "";
      out += fmt::format("  let {}{} = {}\n", let->name.name, note, print_expr(let->value, n));
    } else {
      const auto& a = std::get<ast::AssignStmt>(s);
      std::string lhs =
          a.bracketed ? fmt::format("{}[{}]", a.target.name, join_exprs(a.indices, 0, ", ", n)) : a.target.name;
      std::string note = n ? n->on_assign(op, a) : "";
      out += fmt::format("  assign {}{} = {}\n", lhs, note, print_expr(a.value, n));
    }
  }
}

void print_monoid(std::string& out, const ast::MonoidDecl& m, const AstAnnotator* n) {
  out += fmt::format("monoid {}\n", m.name.name);
  print_doc(out, m.doc);
  for (const ast::Field& f : m.fields) out += fmt::format("  field {}\n", field(f));
  if (m.identity) out += fmt::format("  identity {}\n", print_expr(*m.identity, n));
  if (m.lift_value) out += fmt::format("  lift ({}) = {}\n", fields(*m.lift_params), print_expr(*m.lift_value, n));
  if (m.has_combine) {
    out += fmt::format("  combine ({}, {})\n", m.combine_lhs.name, m.combine_rhs.name);
    for (const ast::LetStmt& l : m.combine_lets)
      out += fmt::format("    let {} = {}\n", l.name.name, print_expr(l.value, n));
    out += fmt::format("    yield {}\n", print_expr(*m.combine_yield, n));
  }
  for (const ast::Ident& a : m.assumes) out += fmt::format("  assume {}\n", a.name);
}

void print_schedule(std::string& out, const ast::ScheduleDecl& s) {
  out += fmt::format("schedule {} for {}{}{}\n", s.op.name, s.target.name,
                     s.label ? fmt::format(" as \"{}\"", s.label->name) : "",
                     s.guard ? " where " + print_expr(*s.guard, nullptr) : "");
  print_doc(out, s.doc);
  if (s.automatic) out += "  auto\n";
  for (const ast::KnobEntry& k : s.entries)
    out += fmt::format("  knob {}{} = {}\n", k.knob.name, k.site ? "@" + k.site->name : "", k.value);
}

}  // namespace

std::string print_expr(const ast::Expr& e, const AstAnnotator* n) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::Int:
    case K::Float:
    case K::Bool:
    case K::Inf:
    case K::Name: return e.text;
    case K::Slice: return ":";
    case K::Index: return fmt::format("{}[{}]", print_expr(e.args[0], n), join_exprs(e.args, 1, ", ", n));
    case K::Field: return fmt::format("{}.{}", print_expr(e.args[0], n), e.text);
    case K::Unary: return fmt::format("({} {})", e.text == "-" ? "neg" : e.text, print_expr(e.args[0], n));
    case K::Binary: return fmt::format("({} {} {})", e.text, print_expr(e.args[0], n), print_expr(e.args[1], n));
    case K::Call: return fmt::format("({}{}{})", e.text, e.args.empty() ? "" : " ", join_exprs(e.args, 0, " ", n));
    case K::Tuple: return fmt::format("(tuple {})", join_exprs(e.args, 0, " ", n));
    case K::Reduce: {
      std::string axes;
      for (const ast::Ident& a : e.axes) axes += (axes.empty() ? "" : ", ") + a.name;
      std::string where = e.where_.empty() ? "" : " where " + print_expr(e.where_[0], n);
      std::string note = n ? n->on_reduce(e) : "";
      return fmt::format("({} [{}]{}{} {})", e.text, axes, note, where, join_exprs(e.args, 0, " ", n));
    }
  }
  return "?";
}

std::string print_op_decl(const ast::OpDecl& op, const AstAnnotator* n) {
  std::string out;
  print_op(out, op, n);
  return out;
}

std::string print_module(const ast::Module& m, const AstAnnotator* n) {
  std::string out;
  for (const ast::Item& item : m.items) {
    if (const auto* i = std::get_if<ast::ImportDecl>(&item))
      out += fmt::format("import {}\n", i->dotted());
    else if (const auto* o = std::get_if<ast::OpDecl>(&item))
      print_op(out, *o, n);
    else if (const auto* mo = std::get_if<ast::MonoidDecl>(&item))
      print_monoid(out, *mo, n);
    else if (const auto* g = std::get_if<ast::GradDecl>(&item))
      print_grad(out, *g, n);
    else
      print_schedule(out, std::get<ast::ScheduleDecl>(item));
  }
  return out;
}

}  // namespace emmy
