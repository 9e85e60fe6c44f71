// Derives the op of every `op NAME = grad(OF, x, ...)` declaration: checks the declaration
// against OF, flattens OF, takes the reverse-mode derivative, and parses the derived op's source
// text into its module, where it is checked like any op.
#include <fmt/format.h>

#include "sema/grad.hpp"
#include "sema/passes.hpp"
#include "support/suggest.hpp"
#include "syntax/parse.hpp"

namespace emmy::sema {
namespace {

constexpr const char* kGradHelp =
    "derive with `op NAME = grad(OP, INPUT, ...);`: the inputs listed are float inputs "
    "of OP (none listed: all of them)";

// Numbers a derived op's expressions on from `next`, unique within the module that declared it.
uint32_t renumber(ast::Expr& e, uint32_t next) {
  e.id = next++;
  for (ast::Expr& a : e.args) next = renumber(a, next);
  for (ast::Expr& w : e.where_) next = renumber(w, next);
  return next;
}

uint32_t renumber(ast::OpDecl& op, uint32_t next) {
  for (ast::Stmt& s : op.body) {
    if (auto* let = std::get_if<ast::LetStmt>(&s)) {
      next = renumber(let->value, next);
      continue;
    }
    auto& a = std::get<ast::AssignStmt>(s);
    for (ast::Expr& i : a.indices) next = renumber(i, next);
    next = renumber(a.value, next);
  }
  return next;
}

class Deriver {
 public:
  Deriver(SourceManager& sources, CheckedProgram& program, Globals& globals,
          const std::map<std::string, CheckedMonoid>& monoids, Diagnostics& diags)
      : sources_(sources), program_(program), globals_(globals), monoids_(monoids), diags_(diags) {}

  void run() {
    for (size_t mi = 0; mi < program_.modules.size(); ++mi) {
      uint32_t next_id = program_.modules[mi].ast.expr_count + 1;
      for (const ast::Item& item : program_.modules[mi].ast.items)
        if (const auto* g = std::get_if<ast::GradDecl>(&item)) next_id = derive(*g, mi, next_id);
    }
  }

 private:
  // The checked op of a name, checked on the side (its errors are reported where it is checked).
  const CheckedOp* checked(const std::string& name) {
    if (auto it = scratch_.find(name); it != scratch_.end()) return it->second ? &*it->second : nullptr;
    auto op = globals_.ops.find(name);
    if (op == globals_.ops.end()) return nullptr;
    scratch_[name] = std::nullopt;  // a call cycle ends here (E039 says so)
    Diagnostics quiet(sources_);
    CheckedOp c = check_op(*op->second, globals_, monoids_, quiet);
    if (quiet.has_errors()) return nullptr;
    for (const auto& [callee, _] : c.calls)
      if (!checked(callee)) return nullptr;
    scratch_[name] = std::move(c);
    return &*scratch_[name];
  }

  uint32_t derive(const ast::GradDecl& g, size_t module, uint32_t next_id) {
    if (g.fn.name != "grad") return next_id;  // the parser said so
    if (globals_.ops.count(g.name.name)) {
      auto earlier = declared_.find(g.name.name);  // a derived op's name is at its grad line
      diags_.error("E011", g.name.range, fmt::format("op '{}' is already defined", g.name.name))
          .note(earlier != declared_.end() ? earlier->second : globals_.ops.at(g.name.name)->name.range,
                "first defined here")
          .hint("rename one of them");
      return next_id;
    }
    if (!globals_.ops.count(g.of.name)) {
      std::vector<std::string> names;
      for (const auto& [n, _] : globals_.ops) names.push_back(n);
      const std::string near = closest_name(g.of.name, names);
      diags_.error("E066", g.of.range, fmt::format("grad of an unknown op '{}'", g.of.name))
          .hint(near.empty() ? std::string(kGradHelp) : fmt::format("did you mean '{}'?", near));
      return next_id;
    }
    const CheckedOp* of = checked(g.of.name);
    if (!of) return next_id;  // its own errors are reported when it is checked
    std::vector<std::string> wrt;
    if (!wrt_inputs(g, *of, wrt)) return next_id;
    const grad::Straight flat = grad::flatten(*of, [this](const std::string& n) { return checked(n); });
    std::vector<std::string> saved;
    if (!saved_tensors(g, flat, saved)) return next_id;
    auto derived = grad::derive(flat, {g.name.name, wrt, g.of.name, saved, globals_.monoids});
    if (const auto* failure = std::get_if<grad::Failure>(&derived)) {
      diags_.error("E067", failure->at.valid() ? failure->at : g.range, failure->message)
          .note(g.range, fmt::format("derived for op {} here", g.name.name))
          .hint(failure->hint);
      return next_id;
    }
    const LoadedModule& host = program_.modules[module];
    const uint32_t file = sources_.add(fmt::format("{}#{}", sources_.file(host.ast.file).path(), g.name.name),
                                       std::get<std::string>(derived));
    ast::Module parsed = parse_module(sources_, file, diags_);
    if (parsed.items.size() != 1 || !std::holds_alternative<ast::OpDecl>(parsed.items[0])) return next_id;
    next_id = renumber(std::get<ast::OpDecl>(parsed.items[0]), next_id);
    LoadedModule& m = program_.modules[module];
    m.derived.push_back(std::move(parsed));
    const ast::OpDecl& op = std::get<ast::OpDecl>(m.derived.back().items[0]);
    globals_.ops[op.name.name] = &op;
    globals_.op_module[op.name.name] = module;
    declared_[op.name.name] = g.name.range;
    return next_id;
  }

  // `saving a, b`: tensors the forward op computes (outputs and intermediates, by their names in
  // the flat op: an inlined call's are `callee1_name`), each once, none a monoid carrier.
  bool saved_tensors(const ast::GradDecl& g, const grad::Straight& flat, std::vector<std::string>& saved) {
    std::vector<std::string> computed;
    for (const grad::Line& l : flat.lines)
      if (!l.is_let && !flat.tensors.at(l.name).declared.empty()) computed.push_back(l.name);
    for (const ast::Ident& x : g.saved) {
      if (std::find(computed.begin(), computed.end(), x.name) == computed.end()) {
        const std::string near = closest_name(x.name, computed);
        diags_.error("E066", x.range, fmt::format("op {} computes no tensor '{}' to save", g.of.name, x.name))
            .hint(near.empty() ? fmt::format("it computes {}", fmt::join(computed, ", "))
                               : fmt::format("did you mean '{}'? (it computes {})", near, fmt::join(computed, ", ")));
        return false;
      }
      if (std::find(saved.begin(), saved.end(), x.name) != saved.end()) {
        diags_.error("E066", x.range, fmt::format("'{}' is saved twice", x.name)).hint("list each tensor once");
        return false;
      }
      saved.push_back(x.name);
    }
    return true;
  }

  // The inputs derived for: those listed (each a float input of the op, once), or every float input.
  bool wrt_inputs(const ast::GradDecl& g, const CheckedOp& of, std::vector<std::string>& wrt) {
    std::vector<std::string> inputs, floats;
    for (const ast::Param& p : of.decl->params) {
      inputs.push_back(p.name.name);
      const TensorInfo* t = of.find(p.name.name);
      if (t && t->elem.is_numeric() && is_float(t->elem.dtype)) floats.push_back(p.name.name);
    }
    if (g.wrt.empty()) {
      wrt = floats;
      if (!wrt.empty()) return true;
      diags_.error("E066", g.of.range, fmt::format("op {} has no float input to differentiate by", g.of.name))
          .hint("grad derives with respect to f16, bf16, f32 or f64 inputs");
      return false;
    }
    for (const ast::Ident& x : g.wrt) {
      const bool input = std::find(inputs.begin(), inputs.end(), x.name) != inputs.end();
      if (!input) {
        diags_.error("E066", x.range, fmt::format("'{}' is not an input of op {}", x.name, g.of.name))
            .note(of.decl->name.range, fmt::format("its inputs are {}", fmt::join(inputs, ", ")))
            .hint(kGradHelp);
        return false;
      }
      if (std::find(floats.begin(), floats.end(), x.name) == floats.end()) {
        diags_
            .error("E066", x.range,
                   fmt::format("input '{}' of op {} is not a float tensor: it has no derivative", x.name, g.of.name))
            .hint("list only the float inputs (an index tensor's gradient is not defined)");
        return false;
      }
      if (std::find(wrt.begin(), wrt.end(), x.name) != wrt.end()) {
        diags_.error("E066", x.range, fmt::format("'{}' is listed twice", x.name)).hint("list each input once");
        return false;
      }
      wrt.push_back(x.name);
    }
    return true;
  }

  SourceManager& sources_;
  CheckedProgram& program_;
  Globals& globals_;
  const std::map<std::string, CheckedMonoid>& monoids_;
  Diagnostics& diags_;
  std::map<std::string, std::optional<CheckedOp>> scratch_;
  std::map<std::string, SourceRange> declared_;  // a derived op's name in its grad declaration
};

}  // namespace

void derive_grads(SourceManager& sources, CheckedProgram& program, Globals& globals,
                  const std::map<std::string, CheckedMonoid>& monoids, Diagnostics& diags) {
  Deriver(sources, program, globals, monoids, diags).run();
}

}  // namespace emmy::sema
