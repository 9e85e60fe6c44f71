// Sema's pipeline: load modules, collect global names, check monoids, ops (then their
// call graph), and schedules.
#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "sema/passes.hpp"

namespace emmy {

const TensorInfo* CheckedOp::find(std::string_view name) const {
  for (const TensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace sema {
namespace {

// A name defined twice. When one side is the user's own code (the main file, or a source beside
// it) and the other an import, the error is the user's, at their definition, which wins (an
// imported module's definitions are not the user's to rename); otherwise it is at the second.
template <typename Decl>
void collect(std::map<std::string, const Decl*>& table, std::map<std::string, size_t>& module_of, const Decl& d,
             size_t module, const CheckedProgram& program, const char* what, std::set<std::string>& clashed,
             Diagnostics& diags) {
  auto [it, fresh] = table.emplace(d.name.name, &d);
  if (fresh) {
    module_of[d.name.name] = module;
    return;
  }
  clashed.insert(d.name.name);
  const size_t first = module_of.at(d.name.name);
  const bool first_own = first < program.own_modules, second_own = module < program.own_modules;
  if (first_own && !second_own) {
    const std::string& by = program.modules[module].name;
    diags.error("E011", it->second->name.range, fmt::format("{} '{}' is already defined by {}", what, d.name.name, by))
        .note(d.name.range, fmt::format("{} defines it here", by))
        .hint(fmt::format("rename yours, or drop the import of {} if you mean to replace its {}", by, what));
    return;
  }
  diags.error("E011", d.name.range, fmt::format("{} '{}' is defined twice", what, d.name.name))
      .note(it->second->name.range, "first defined here")
      .hint("rename one of them");
}

Globals collect_globals(const CheckedProgram& program, Diagnostics& diags) {
  Globals g;
  std::map<std::string, size_t> op_module, monoid_module;
  for (size_t m = 0; m < program.modules.size(); ++m)
    for (const ast::Item& item : program.modules[m].ast.items) {
      if (const auto* op = std::get_if<ast::OpDecl>(&item))
        collect(g.ops, op_module, *op, m, program, "op", g.clashed_ops, diags);
      if (const auto* mo = std::get_if<ast::MonoidDecl>(&item))
        collect(g.monoids, monoid_module, *mo, m, program, "monoid", g.clashed_monoids, diags);
    }
  for (const auto& [name, m] : op_module) g.op_module[name] = m;
  return g;
}

// Ops are inlined into their callers, so a cycle in the call graph has no meaning.
void check_call_graph(const CheckedProgram& program, Diagnostics& diags) {
  std::map<std::string, int> state;  // 0 new, 1 on the stack, 2 done
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    state[name] = 1;
    const CheckedOp& op = program.ops.at(name);
    for (const auto& [callee, at] : op.calls) {
      if (!program.ops.count(callee)) continue;
      if (state[callee] == 1 && callee == name) {
        diags.error("E039", at, fmt::format("op {} calls itself", name))
            .hint("ops are inlined into their callers, so an op cannot be recursive; write the computation out");
      } else if (state[callee] == 1) {
        const CheckedOp& other = program.ops.at(callee);
        auto back =
            std::find_if(other.calls.begin(), other.calls.end(), [&](const auto& c) { return c.first == name; });
        diags.error("E039", at, fmt::format("op {} calls {}, which calls back into it", name, callee))
            .note(back != other.calls.end() ? back->second : other.decl->name.range,
                  back != other.calls.end() ? fmt::format("{} calls {} here", callee, name)
                                            : fmt::format("op {} is defined here", callee))
            .hint("ops are inlined into their callers, so calls cannot form a cycle; break it");
      } else if (state[callee] == 0) {
        visit(callee);
      }
    }
    state[name] = 2;
  };
  for (const auto& [name, _] : program.ops)
    if (state[name] == 0) visit(name);
}

bool defines_op(const ast::Module& module, const std::string& name) {
  return std::any_of(module.items.begin(), module.items.end(), [&](const ast::Item& i) {
    const auto* op = std::get_if<ast::OpDecl>(&i);
    return op && op->name.name == name;
  });
}

bool narrower_float(const std::string& dtype) { return dtype == "f16" || dtype == "bf16" || dtype == "f32"; }

// --dtype f64: casts to a narrower float (`f32(x)`, written for "accumulate in at least f32")
// read as f64, so nothing in the op rounds below double precision.
void widen_casts(ast::Expr& e) {
  if (e.kind == ast::ExprKind::Call && narrower_float(e.text)) e.text = "f64";
  for (ast::Expr& a : e.args) widen_casts(a);
  for (ast::Expr& w : e.where_) widen_casts(w);
}

// --dtype: rewrites the signatures before anything is typed, so every pass sees one dtype; f64
// widens every float of the program (f32 signatures, casts, monoid fields) for gradient checks.
void retype_signatures(CheckedProgram& program, DType half) {
  const bool wide = half == DType::F64;
  const std::string name(dtype_name(half));
  for (LoadedModule& m : program.modules)
    for (ast::Item& item : m.ast.items) {
      if (auto* op = std::get_if<ast::OpDecl>(&item)) {
        for (std::vector<ast::Param>* list : {&op->params, &op->outputs})
          for (ast::Param& p : *list)
            if (p.dtype.name == "f16" || p.dtype.name == "bf16" || (wide && p.dtype.name == "f32")) p.dtype.name = name;
        if (wide)
          for (ast::Stmt& s : op->body) std::visit([](auto& st) { widen_casts(st.value); }, s);
      } else if (auto* monoid = std::get_if<ast::MonoidDecl>(&item); monoid && wide) {
        for (ast::Field& f : monoid->fields)
          if (narrower_float(f.dtype.name)) f.dtype.name = name;
        if (monoid->lift_params)
          for (ast::Field& f : *monoid->lift_params)
            if (narrower_float(f.dtype.name)) f.dtype.name = name;
        for (std::optional<ast::Expr>* e : {&monoid->identity, &monoid->lift_value, &monoid->combine_yield})
          if (*e) widen_casts(**e);
        for (ast::LetStmt& l : monoid->combine_lets) widen_casts(l.value);
      }
    }
}

}  // namespace
}  // namespace sema

std::unique_ptr<CheckedProgram> check_program(SourceManager& sources, uint32_t file, const SemaOptions& options,
                                              Diagnostics& diags) {
  auto program = std::make_unique<CheckedProgram>();
  sema::load_modules(sources, file, options, *program, diags);
  if (options.half_dtype) sema::retype_signatures(*program, *options.half_dtype);
  sema::Globals globals = sema::collect_globals(*program, diags);
  for (const LoadedModule& m : program->modules)
    for (const ast::Item& item : m.ast.items)
      if (const auto* mo = std::get_if<ast::MonoidDecl>(&item); mo && globals.monoids.at(mo->name.name) == mo)
        program->monoids.emplace(mo->name.name, sema::check_monoid(*mo, m.name == "std.monoids", diags));
  sema::derive_grads(sources, *program, globals, program->monoids, diags);
  for (size_t mi = 0; mi < program->modules.size(); ++mi) {
    std::vector<const ast::OpDecl*> ops;
    for (const ast::Item& item : program->modules[mi].ast.items)
      if (const auto* op = std::get_if<ast::OpDecl>(&item)) ops.push_back(op);
    for (const ast::Module& derived : program->modules[mi].derived)
      ops.push_back(&std::get<ast::OpDecl>(derived.items[0]));
    for (const ast::OpDecl* op : ops)
      if (globals.ops.at(op->name.name) == op)
        program->ops.emplace(op->name.name, sema::check_op(*op, globals, program->monoids, diags))
            .first->second.decl_module = mi;
  }
  sema::check_call_graph(*program, diags);

  // Schedules: unique (op, target, name), each checked against the codec.
  std::map<std::tuple<std::string, std::string, std::string>, SourceRange> labels;
  for (size_t mi = 0; mi < program->modules.size(); ++mi)
    for (const ast::Item& item : program->modules[mi].ast.items) {
      const auto* s = std::get_if<ast::ScheduleDecl>(&item);
      if (!s) continue;
      // A module's schedule blocks for an op whose name another module took (E011) are about
      // its own op, not the one in force: checking them against it would only cascade.
      if (globals.clashed_ops.count(s->op.name) && globals.op_module.at(s->op.name) != mi &&
          sema::defines_op(program->modules[mi].ast, s->op.name))
        continue;
      std::string label = s->label ? s->label->name : "";
      // Names are unique; one unnamed block without a guard (the default), unnamed guarded ones many.
      const bool keyed = !label.empty() || !s->guard;
      auto [it, fresh] = keyed ? labels.emplace(std::make_tuple(s->op.name, s->target.name, label),
                                                s->label ? s->label->range : s->op.range)
                               : std::pair{labels.end(), true};
      if (!fresh) {
        diags
            .error("E061", s->label ? s->label->range : s->op.range,
                   label.empty()
                       ? fmt::format("op {} already has an unnamed schedule for {}", s->op.name, s->target.name)
                       : fmt::format("op {} already has a schedule \"{}\" for {}", s->op.name, label, s->target.name))
            .note(it->second, "the other one is here")
            .hint(label.empty() ? fmt::format("name one of them: schedule {} for {} as \"NAME\" {{ ... }}", s->op.name,
                                              s->target.name)
                                : std::string("rename one of them"));
        continue;
      }
      if (auto checked = sema::check_schedule(*s, *program, diags)) program->schedules.push_back(std::move(*checked));
    }
  return program;
}

}  // namespace emmy
