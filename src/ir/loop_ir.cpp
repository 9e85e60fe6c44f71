// The loop IR's printer (`emmyc compile --ir loop`).
#include "ir/loop_ir.hpp"

#include <fmt/format.h>

namespace emmy::lir {
namespace {

std::string axes_text(const std::vector<tir::Axis>& axes) {
  std::vector<std::string> parts;
  for (const tir::Axis& a : axes) parts.push_back(fmt::format("{}<{}", a.name, a.size));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void print_stmt(const Stmt& s, int depth, std::string& out) {
  std::string pad(2 * depth, ' ');
  switch (s.kind) {
    case Stmt::Kind::Loop:
      out += fmt::format("{}for {}<{}{} {{\n", pad, s.axis.name, s.axis.size,
                         s.tile > 1 ? fmt::format(" tile {}", s.tile) : "");
      for (const Stmt& b : s.body) print_stmt(b, depth + 1, out);
      out += pad + "}\n";
      return;
    case Stmt::Kind::Compute: out += fmt::format("{}%{} = {}\n", pad, s.reg, tir::print_expr(s.value)); return;
    case Stmt::Kind::Store:
      out += fmt::format("{}{}{}[{}] {} {}\n", pad, s.atomic.empty() ? "store " : "atomic " + s.atomic + " ", s.tensor,
                         axes_text(s.vars), s.atomic.empty() ? "=" : "<-", tir::print_expr(s.value));
      return;
    case Stmt::Kind::Fold: {
      std::vector<std::string> fields;
      for (const CarrierField& f : s.fields)
        fields.push_back(fmt::format("{}: {}{} <- {}", f.name, dtype_name(f.dtype), f.per_tile ? "[tile]" : "",
                                     tir::print_expr(f.lift)));
      out += fmt::format(
          "{}fold {}<{}{}{} monoid {} carry ({}) {{\n", pad, s.axis.name, s.axis.size,
          s.range.size() == 2 ? fmt::format(" in [{}, {})", tir::print_expr(s.range[0]), tir::print_expr(s.range[1]))
                              : "",
          s.where.empty() ? "" : " where " + tir::print_expr(s.where[0]), s.monoid, fmt::join(fields, "; "));
      for (size_t i = 0; i < s.fields.size() && i < s.terms.combine.size(); ++i)
        out += fmt::format("{}  {} = {}\n", pad, s.fields[i].name, s.terms.combine[i].str());
      out += pad + "}\n";
      for (const Stmt& r : s.results) print_stmt(r, depth, out);
      return;
    }
  }
}

}  // namespace

std::string print_program(const Program& program) {
  std::string out = fmt::format("loop_program {}\n", program.tensors.op);
  for (const std::string& d : program.decisions) out += "  // " + d + "\n";
  for (const Kernel& k : program.kernels) {
    out += fmt::format("kernel {} threads({}) {{\n",
                       k.name.empty() ? program.tensors.op : program.tensors.op + "_" + k.name, axes_text(k.threads));
    for (const Stmt& s : k.body) print_stmt(s, 1, out);
    out += "}\n";
  }
  return out;
}

void visit(const std::vector<Stmt>& body, const std::function<void(const Stmt&)>& f) {
  for (const Stmt& s : body) {
    f(s);
    visit(s.results, f);
    visit(s.body, f);
  }
}

void visit(std::vector<Stmt>& body, const std::function<void(Stmt&)>& f) {
  for (Stmt& s : body) {
    f(s);
    visit(s.results, f);
    visit(s.body, f);
  }
}

void visit_exprs(const Stmt& s, const std::function<void(const tir::Expr&)>& f) {
  f(s.value);
  for (const tir::Expr& w : s.where) f(w);
  for (const tir::Expr& r : s.range) f(r);
  for (const CarrierField& c : s.fields) f(c.lift);
}

}  // namespace emmy::lir
