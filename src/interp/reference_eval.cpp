// evaluate_reference and its op runner: each statement of an op is compiled into a tree of float64
// nodes over index slots, then run over its whole index space; intermediates are kept as full tensors.
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "interp/reference.hpp"
#include "interp/reference_nodes.hpp"

namespace emmy {
namespace {

using namespace reference_detail;

constexpr int kMaxCallDepth = 64;

// ---- stored tensors -------------------------------------------------------------------------

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Stored make_stored(std::string name, DType dtype, std::vector<int64_t> shape, size_t width, LayoutPtr record) {
  Stored t{std::move(name), dtype, std::move(shape), {}, width, std::move(record), {}};
  t.strides.assign(t.shape.size(), 1);
  for (size_t k = t.shape.size(); k-- > 1;) t.strides[k - 1] = t.strides[k] * t.shape[k];
  t.data.assign(static_cast<size_t>(element_count(t.shape)) * width, 0.0);
  return t;
}

std::string shape_str(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// ---- ops ------------------------------------------------------------------------------------

TensorMap run_op(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes, const TensorMap& inputs,
                 int depth, const ReferenceOptions& options, const std::vector<std::string>& also = {});

// One op's evaluation: sizes, the tensors computed so far, and the outputs of the ops it calls.
struct OpRun {
  const CheckedProgram& program;
  const CheckedOp& op;
  const SizeBindings& sizes;
  int depth = 0;
  const ReferenceOptions& options;
  std::set<std::string> dims;                  // the op's symbolic sizes
  std::map<std::string, Stored> tensors;       // inputs, lets, intermediates, outputs
  std::map<std::string, Stored> call_outputs;  // "layernorm(h,gamma,beta).y"
  std::set<std::string> calls_done;            // "layernorm(h,gamma,beta)"

  const Stored& tensor(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) fail(fmt::format("'{}' is used before it is computed", name));
    return it->second;
  }
  int64_t size(const Size& s) const {
    if (s.symbol.empty()) return s.literal;
    auto it = sizes.find(s.symbol);
    if (it == sizes.end()) fail(fmt::format("size {} of op {} is not bound", s.symbol, op.decl->name.name));
    return it->second;
  }
  std::vector<int64_t> shape(const std::vector<Size>& s) const {
    std::vector<int64_t> out;
    for (const Size& x : s) out.push_back(size(x));
    return out;
  }
};

const ast::OpDecl* callee_of(const CheckedProgram& program, const ast::Expr& e) {
  if (e.kind != ast::ExprKind::Call) return nullptr;
  auto it = program.ops.find(e.text);
  return it == program.ops.end() ? nullptr : it->second.decl;
}

// Runs a called op on the caller's tensors (once per distinct call) and returns its output.
const Stored& call_output(OpRun& run, const ast::Expr& call, const std::string& field) {
  const CheckedOp& callee = run.program.ops.at(call.text);
  const ast::OpDecl& decl = *callee.decl;
  std::vector<std::string> arg_names;
  for (const ast::Expr& a : call.args) arg_names.push_back(a.text);
  std::string key = fmt::format("{}({})", call.text, fmt::join(arg_names, ","));
  if (!run.calls_done.count(key)) {
    if (run.depth >= kMaxCallDepth) fail(fmt::format("op calls nested deeper than {}", kMaxCallDepth));
    if (call.args.size() != decl.params.size())
      fail(fmt::format("op {} takes {} arguments, got {}", call.text, decl.params.size(), call.args.size()));
    TensorMap inputs;
    SizeBindings sizes;
    for (size_t k = 0; k < call.args.size(); ++k) {
      const ast::Param& p = decl.params[k];
      if (call.args[k].kind != ast::ExprKind::Name)
        fail(fmt::format("argument {} of op {} is not a tensor name", k + 1, call.text));
      const Stored& t = run.tensor(call.args[k].text);
      if (t.width != 1 || t.shape.size() != p.dims.size())
        fail(fmt::format("argument '{}' does not fit parameter {} of op {}", t.name, p.name.name, call.text));
      for (size_t d = 0; d < p.dims.size(); ++d) {
        const ast::Dim& dim = p.dims[d];
        int64_t want = dim.is_literal() ? dim.value : sizes.emplace(dim.name, t.shape[d]).first->second;
        if (want != t.shape[d])
          fail(fmt::format("dim {} of '{}' is {} but op {} needs {}", d, t.name, t.shape[d], call.text, want));
      }
      inputs[p.name.name] = HostTensor{parse_dtype(p.dtype.name).value_or(DType::F32), t.shape, t.data};
    }
    TensorMap outputs = run_op(run.program, callee, sizes, inputs, run.depth + 1, run.options);
    for (auto& [name, h] : outputs) {
      Stored s = make_stored(key + "." + name, h.dtype, h.shape, 1, nullptr);
      s.data = std::move(h.data);
      run.call_outputs.emplace(key + "." + name, std::move(s));
    }
    run.calls_done.insert(key);
  }
  std::string out = field;
  if (out.empty()) {
    if (decl.outputs.size() != 1) fail(fmt::format("op {} has {} outputs; name one", call.text, decl.outputs.size()));
    out = decl.outputs[0].name.name;
  }
  auto it = run.call_outputs.find(key + "." + out);
  if (it == run.call_outputs.end()) fail(fmt::format("op {} has no output '{}'", call.text, out));
  return it->second;
}

// Compiles the expressions of one op statement: index variables, tensors, dims, op calls,
// built-in and user-monoid reductions.
class OpCompiler : public ExprCompiler {
 public:
  OpCompiler(OpRun& run, FrameLayout& frame) : ExprCompiler(frame), run_(run) {}

  size_t bind_var(const std::string& name) {
    size_t slot = frame_.slot();
    vars_.emplace_back(name, slot);
    return slot;
  }

 protected:
  std::optional<size_t> var(const std::string& name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return it->second;
    return std::nullopt;
  }

  NodePtr name(const ast::Expr& e) override {
    if (auto slot = var(e.text)) return std::make_unique<SlotNode>(*slot);
    if (const TensorInfo* t = run_.op.find(e.text)) return bare_tensor(*t);
    if (run_.dims.count(e.text))
      return std::make_unique<ConstNode>(static_cast<double>(run_.size(Size{e.text, 0})), Type::scalar(DType::I64));
    fail(fmt::format("unknown name '{}' in op {}", e.text, run_.op.decl->name.name));
  }

  // A bare tensor name: a scalar, or the tensor indexed by its own left-hand index names.
  NodePtr bare_tensor(const TensorInfo& info) {
    const Stored& t = run_.tensor(info.name);
    std::vector<IndexArg> args;
    if (!t.shape.empty()) {
      if (info.index_vars.size() != t.shape.size())
        fail(fmt::format("'{}' is a tensor of rank {}; index it", info.name, t.shape.size()));
      for (const std::string& v : info.index_vars) {
        auto slot = var(v);
        if (!slot) fail(fmt::format("bare '{}' needs index variable '{}', which is not in scope", info.name, v));
        args.push_back(IndexArg{*slot, true, false, nullptr});
      }
    }
    return load(t, std::move(args));
  }

  static NodePtr load(const Stored& t, std::vector<IndexArg> args, SourceRange where = {}) {
    Type type = t.record ? record_type(t.record->monoid) : Type::scalar(t.dtype);
    for (size_t k = 0; k < args.size(); ++k)
      if (args[k].is_slice) type = Type::vector(t.dtype, Size{"", t.shape[k]});
    return std::make_unique<LoadNode>(t, std::move(args), type, where);
  }

  NodePtr index(const ast::Expr& e) override {
    const ast::Expr& base = e.args[0];
    const Stored* t = nullptr;
    if (base.kind == ast::ExprKind::Name && !var(base.text) && run_.op.find(base.text))
      t = &run_.tensor(base.text);
    else if (callee_of(run_.program, base))
      t = &call_output(run_, base, "");
    else if (base.kind == ast::ExprKind::Field && callee_of(run_.program, base.args[0]))
      t = &call_output(run_, base.args[0], base.text);
    if (!t) return vector_index(e);
    if (e.args.size() - 1 != t->shape.size())
      fail(fmt::format("'{}' has {} dims but {} indices are given", t->name, t->shape.size(), e.args.size() - 1));
    std::vector<IndexArg> args;
    for (size_t k = 1; k < e.args.size(); ++k) {
      const ast::Expr& ix = e.args[k];
      if (ix.kind == ast::ExprKind::Slice) {
        args.push_back(IndexArg{0, false, true, nullptr});
      } else if (auto slot = ix.kind == ast::ExprKind::Name ? var(ix.text) : std::nullopt) {
        args.push_back(IndexArg{*slot, true, false, nullptr});
      } else {
        NodePtr n = compile_scalar(ix, "an index");
        if (!is_int(materialize(n->type()))) fail(fmt::format("an index of '{}' is not an integer", t->name));
        args.push_back(IndexArg{0, false, false, std::move(n)});
      }
    }
    return load(*t, std::move(args), e.range);
  }

  NodePtr call_other(const ast::Expr& e) override {
    if (callee_of(run_.program, e)) {  // a scalar output, read bare: mean_of(x)
      const Stored& t = call_output(run_, e, "");
      if (!t.shape.empty()) fail(fmt::format("the result of op {} is a tensor; index it", e.text));
      return load(t, {});
    }
    return ExprCompiler::call_other(e);
  }

  NodePtr reduce(const ast::Expr& e) override {
    const ReductionInfo* info = nullptr;
    for (const ReductionInfo& r : run_.op.reductions)
      if (r.expr_id == e.id) info = &r;
    if (!info || info->axis_sizes.size() != e.axes.size())
      fail(fmt::format("reduction {} has no checked axis sizes", e.text));
    size_t scope = vars_.size();
    Axes axes;
    for (size_t k = 0; k < e.axes.size(); ++k) {
      axes.slots.push_back(bind_var(e.axes[k].name));
      axes.sizes.push_back(run_.size(info->axis_sizes[k]));
    }
    NodePtr where = e.where_.empty() ? nullptr : compile_scalar(e.where_[0], "a where predicate");
    NodePtr out;
    if (find_builtin_reduction(e.text))
      out = builtin_reduce(e, std::move(axes), std::move(where));
    else
      out = monoid_reduce(e, std::move(axes), std::move(where));
    vars_.resize(scope);
    return out;
  }

  NodePtr builtin_reduce(const ast::Expr& e, Axes axes, NodePtr where) {
    Builtin kind = builtin_kind(e.text);
    if (e.args.size() != 1) fail(fmt::format("{} reduces one expression, got {}", e.text, e.args.size()));
    if ((kind == Builtin::ArgMax || kind == Builtin::ArgMin) && axes.slots.size() != 1)
      fail(fmt::format("{} reduces exactly one axis", e.text));
    NodePtr body = compile_scalar(e.args[0], "the body of a built-in reduction");
    DType d = materialize(body->type());
    if ((kind == Builtin::Sum || kind == Builtin::Prod) && (d == DType::F16 || d == DType::BF16)) d = DType::F32;
    if (kind == Builtin::Any || kind == Builtin::All) d = DType::Bool;
    if (kind == Builtin::ArgMax || kind == Builtin::ArgMin) d = DType::I64;
    return std::make_unique<BuiltinReduceNode>(kind, std::move(axes), std::move(where), std::move(body),
                                               Type::scalar(d));
  }

  NodePtr monoid_reduce(const ast::Expr& e, Axes axes, NodePtr where) {
    auto it = run_.program.monoids.find(e.text);
    if (it == run_.program.monoids.end() || !it->second.decl) fail(fmt::format("unknown reduction '{}'", e.text));
    const ast::MonoidDecl& d = *it->second.decl;
    size_t params = d.lift_params ? d.lift_params->size() : d.fields.size();
    if (e.args.size() != params)
      fail(fmt::format("monoid {} takes {} arguments, got {}", e.text, params, e.args.size()));
    std::vector<NodePtr> args;
    std::vector<size_t> widths;
    for (const ast::Expr& a : e.args) {
      args.push_back(compile(a));
      if (args.back()->record()) fail(fmt::format("a monoid carrier passed to {}", e.text));
      widths.push_back(args.back()->width());
    }
    CompiledMonoid m = compile_monoid(d, widths, frame_);
    return std::make_unique<MonoidReduceNode>(std::move(m), std::move(axes), std::move(where), std::move(args),
                                              record_type(d.name.name));
  }

 private:
  OpRun& run_;
  std::vector<std::pair<std::string, size_t>> vars_;  // index variables in scope, innermost last
};

// Evaluates `value` at every point of `shape` (bound to `lhs_vars`) into a new tensor `name`.
void run_statement(OpRun& run, const std::string& name, DType dtype, const std::vector<std::string>& lhs_vars,
                   const std::vector<int64_t>& shape, const ast::Expr& value) {
  FrameLayout frame;
  OpCompiler compiler(run, frame);
  Axes axes;
  if (lhs_vars.size() != shape.size())
    fail(fmt::format("'{}' is defined with {} indices but has {} dims", name, lhs_vars.size(), shape.size()));
  for (size_t k = 0; k < lhs_vars.size(); ++k) {
    axes.slots.push_back(compiler.bind_var(lhs_vars[k]));
    axes.sizes.push_back(shape[k]);
  }
  NodePtr node = compiler.compile(value);
  if (node->type().kind == Type::Kind::Vector) fail(fmt::format("the value of '{}' is a vector; index it", name));
  Stored t = make_stored(name, dtype, shape, node->width(), node->record());
  State s{std::vector<int64_t>(frame.slots, 0), std::vector<double>(frame.locals, 0.0)};
  s.f32 = run.options.f32_arithmetic;
  if (run.options.cast_jitter > 0) {
    s.jitter = &run.options;
    s.salt = std::hash<std::string>{}(fmt::format("{}/{}/{}", run.depth, run.op.decl->name.name, name));
  }
  size_t flat = 0;
  double* out = t.data.data();
  for_each_point(s, axes, [&] {
    node->eval(s, out + flat * t.width);
    ++flat;
  });
  run.tensors.insert_or_assign(name, std::move(t));
}

std::set<std::string> symbolic_dims(const ast::OpDecl& decl) {
  std::set<std::string> dims;
  for (const auto* list : {&decl.params, &decl.outputs})
    for (const ast::Param& p : *list)
      for (const ast::Dim& d : p.dims)
        if (!d.is_literal()) dims.insert(d.name);
  return dims;
}

void load_inputs(OpRun& run, const TensorMap& inputs) {
  for (const TensorInfo& t : run.op.tensors) {
    if (t.role != TensorInfo::Role::Input) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) fail(fmt::format("no input '{}' for op {}", t.name, run.op.decl->name.name));
    std::vector<int64_t> shape = run.shape(t.shape);
    if (it->second.shape != shape || it->second.data.size() != static_cast<size_t>(element_count(shape)))
      fail(fmt::format("input '{}' has shape {} ({} values) but op {} needs {}", t.name, shape_str(it->second.shape),
                       it->second.data.size(), run.op.decl->name.name, shape_str(shape)));
    Stored s = make_stored(t.name, t.elem.dtype, shape, 1, nullptr);
    s.data = it->second.data;
    run.tensors.insert_or_assign(t.name, std::move(s));
  }
}

TensorMap run_op(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes, const TensorMap& inputs,
                 int depth, const ReferenceOptions& options, const std::vector<std::string>& also) {
  if (!op.decl) fail("the op has no declaration");
  OpRun run{program, op, sizes, depth, options, symbolic_dims(*op.decl), {}, {}, {}};
  for (const std::string& d : run.dims)
    if (run.size(Size{d, 0}) <= 0) fail(fmt::format("size {} of op {} must be positive", d, op.decl->name.name));
  load_inputs(run, inputs);
  for (const ast::Stmt& stmt : op.decl->body) {
    if (const auto* let = std::get_if<ast::LetStmt>(&stmt)) {
      const TensorInfo* info = op.find(let->name.name);
      if (!info || info->elem.kind != Type::Kind::Scalar) fail(fmt::format("let {} was not checked", let->name.name));
      run_statement(run, let->name.name, info->elem.dtype, {}, {}, let->value);
      continue;
    }
    const auto& a = std::get<ast::AssignStmt>(stmt);
    const TensorInfo* info = op.find(a.target.name);
    if (!info || info->elem.is_error()) fail(fmt::format("'{}' was not checked", a.target.name));
    std::vector<std::string> lhs;
    for (const ast::Expr& ix : a.indices) {
      if (ix.kind != ast::ExprKind::Name)
        fail(fmt::format("an index on the left of '{}' is not a plain name", a.target.name));
      lhs.push_back(ix.text);
    }
    run_statement(run, a.target.name, info->elem.dtype, lhs, run.shape(info->shape), a.value);
  }
  TensorMap out;
  for (const TensorInfo& t : op.tensors) {
    if (t.role != TensorInfo::Role::Output) continue;
    const Stored& s = run.tensor(t.name);
    if (s.width != 1) fail(fmt::format("output '{}' holds monoid carriers", t.name));
    out[t.name] = HostTensor{t.elem.dtype, s.shape, s.data};
  }
  for (const std::string& name : also)
    if (const TensorInfo* t = op.find(name); t && t->role == TensorInfo::Role::Intermediate && run.tensors.count(name))
      if (const Stored& s = run.tensors.at(name); s.width == 1) out[name] = HostTensor{t->elem.dtype, s.shape, s.data};
  return out;
}

}  // namespace

TensorMap evaluate_reference(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes,
                             const TensorMap& inputs, const std::vector<std::string>& also,
                             const ReferenceOptions& options) {
  return run_op(program, op, sizes, inputs, 0, options, also);
}

std::vector<TensorMap> cast_jittered_references(const CheckedProgram& program, const CheckedOp& op,
                                                const SizeBindings& sizes, const TensorMap& inputs, uint64_t seed) {
  std::vector<TensorMap> out;
  for (int k = 1; k <= kJitteredReferences; ++k)
    out.push_back(evaluate_reference(program, op, sizes, inputs, {},
                                     {kCastJitter, seed * kJitteredReferences + static_cast<uint64_t>(k)}));
  ReferenceOptions f32;
  f32.f32_arithmetic = true;
  out.push_back(evaluate_reference(program, op, sizes, inputs, {}, f32));
  return out;
}

}  // namespace emmy
