// The embeddable API: a checked source (Program), its ops lowered (Op), compiled through the
// kernel cache on first use, launched on caller-owned device memory or run on the interpreter.
#include <dlfcn.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "algebra/classify.hpp"
#include "autosched/auto_schedule.hpp"
#include "codegen/cuda/print_cuda.hpp"
#include "emmy/emmy.hpp"
#include "interp/reference.hpp"
#include "interp/simt.hpp"
#include "ir/dtypes.hpp"
#include "ir/launch_expr.hpp"
#include "lower/passes.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/launch_program.hpp"
#include "sema/size_expr.hpp"
#include "support/large_stack.hpp"
#include "support/paths.hpp"
#include "support/suggest.hpp"

namespace emmy::api {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

// $EMMY_STDLIB, the installed share/emmy/stdlib beside this library's lib/, then the source tree.
std::vector<std::string> default_stdlib_dirs() {
  Dl_info info{};
  std::error_code ec;
  fs::path lib;
  if (dladdr(reinterpret_cast<void*>(&default_stdlib_dirs), &info) && info.dli_fname)
    lib = fs::canonical(info.dli_fname, ec);
  return stdlib_search_path(ec ? fs::path() : lib, EMMY_STDLIB_DIR);
}

// The options' target, else the one the GPU runs best (sm_90a on an H100/H200), else sm_90.
const TargetInfo& resolve_target(const std::string& name) {
  if (!name.empty()) {
    if (const TargetInfo* t = find_target(name)) return *t;
    std::vector<std::string> names;
    for (auto n : target_names()) names.emplace_back(n);
    fail(ErrorKind::Argument, fmt::format("unknown target '{}' (targets: {})", name, fmt::join(names, ", ")));
  }
  if (std::optional<int> cc = runtime::device_compute_capability())
    if (const TargetInfo* t = device_target(*cc)) return *t;
  return *find_target("sm_90");
}

TensorSpec spec_of(const TensorInfo& t) {
  TensorSpec s{t.name, static_cast<DType>(t.elem.dtype), {}};
  for (const Size& d : t.shape) s.dims.push_back(d.str());
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string spec_text(const TensorSpec& s) {
  return fmt::format("{}: {}[{}]", s.name, dtype_name(s.dtype), fmt::join(s.dims, ", "));
}

}  // namespace

std::string_view dtype_name(DType dtype) { return emmy::dtype_name(static_cast<emmy::DType>(dtype)); }

size_t dtype_bytes(DType dtype) {
  return static_cast<size_t>(kir::type_bytes(kir::scalar_of(static_cast<emmy::DType>(dtype))));
}

// ---- Program ---------------------------------------------------------------------------------
struct Program::Impl {
  Options options;
  SourceManager sources;
  std::unique_ptr<Diagnostics> diags;
  std::unique_ptr<CheckedProgram> checked;
  std::vector<std::string> ops;
  // Loading proves the laws of the file's own monoids; an op, when lowered, those of the imported
  // monoids it reduces with and its chains (as `emmyc compile` does): the proofs already made are
  // kept here, shared by the ops (and their threads) under the mutex.
  mutable std::mutex proofs_mutex;
  mutable algebra::LawMemo proofs;
};

namespace {

// The passes recurse on expression trees: they run on a large stack, whatever the caller's thread
// (a Python thread's stack may be small).
template <class F>
auto on_large_stack(F&& body) {
  std::optional<decltype(body())> result;
  run_on_large_stack([&] { result.emplace(body()); });
  return std::move(*result);
}

}  // namespace

Program Program::from_source(std::string_view source, std::string_view name, const Options& options) {
  return on_large_stack([&] { return check_source(source, name, options); });
}

Program Program::check_source(std::string_view source, std::string_view name, const Options& options) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  if (impl->options.stdlib_dirs.empty()) impl->options.stdlib_dirs = default_stdlib_dirs();
  impl->diags = std::make_unique<Diagnostics>(impl->sources, kDefaultErrorLimit);
  SemaOptions sema{impl->options.stdlib_dirs, std::nullopt, {}};
  if (!options.dtype.empty()) {
    std::optional<emmy::DType> half = parse_dtype(options.dtype);
    if (!half || !is_float(*half))
      fail(ErrorKind::Argument, fmt::format("dtype '{}': use f16, bf16, f32 or f64", options.dtype));
    sema.half_dtype = half;
  }
  const uint32_t file = impl->sources.add(std::string(name), std::string(source));
  impl->checked = check_program(impl->sources, file, sema, *impl->diags);
  if (!impl->diags->has_errors()) {
    const std::set<std::string> no_op;  // the own monoids alone
    algebra::classify(*impl->checked, *impl->diags, &impl->proofs, &no_op);
  }
  if (impl->diags->has_errors()) {
    std::ostringstream text;
    impl->diags->render(text, false);
    fail(ErrorKind::Source, text.str());
  }
  impl->ops = lower::main_ops(*impl->checked);
  return Program(std::move(impl));
}

Program Program::from_file(const std::string& path, const Options& options) {
  std::optional<std::string> text = read_file(path, kMaxSourceBytes + 1);  // E006 past the limit
  if (!text) fail(ErrorKind::Argument, fmt::format("cannot read '{}'", path));
  return from_source(*text, path, options);
}

std::vector<std::string> Program::ops() const { return impl_->ops; }

// ---- Op --------------------------------------------------------------------------------------
// One schedule block's lowering of an op, compiled and loaded on first use.
struct Lowering {
  const CheckedSchedule* block = nullptr;  // null: no block (the auto-schedule's knobs, `base`)
  std::string base;
  std::string size_class;  // specialized to these sizes' class (lower::size_class); "": generic
  kir::Program kernels;
  std::string knobs, cuda;
  std::optional<runtime::CompileResult> compiled;
  std::optional<runtime::LoadedProgram> loaded;
};

struct Op::Impl {
  std::shared_ptr<const Program::Impl> program;  // keeps the checked program alive
  std::string name, target_name, env_knobs;
  bool specialize = true;  // Options::specialize, unless EMMY_SPECIALIZE=0
  const TargetInfo* target = nullptr;
  const CheckedOp* op = nullptr;
  std::vector<algebra::DiscoveredChain> chains;  // the op's, proved
  std::unique_ptr<lower::LawMemo> laws;          // the program's proofs so far, for its lowerings
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::string> warnings;
  // The blocks a run takes by default, tried in order at its sizes (guards, then the kernels'
  // limits); empty when the options name a block.
  std::vector<const CheckedSchedule*> candidates;
  // [0]: the lowering op() made (the unguarded default, or the block asked); the others as runs
  // pick them. A deque: a loaded program keeps a reference to its kernels.
  std::deque<Lowering> lowerings;

  // Launches of one Op are serialized by the mutex, which also guards the lowerings, the
  // warnings and the temporaries' workspace.
  std::mutex mutex;
  std::optional<runtime::Driver> driver;
  std::map<std::string, runtime::DeviceBuffer> workspace;

  // The auto-schedule's knob list at each run's sizes (nominal sizes: the key {}), decided once.
  std::map<Sizes, std::string> auto_knobs;
  // The lowering each run's sizes took (for_sizes_locked), in `lowerings`: a launch at known sizes
  // neither tries the guards again nor walks the kernels for their size class.
  std::map<Sizes, Lowering*> by_sizes;

  const std::string& auto_knobs_locked(const Sizes* sizes);
  Lowering lower_block(const CheckedSchedule* block, const std::string& base);
  Lowering& lowering_locked(const CheckedSchedule* block, const Sizes* sizes);
  Lowering& chosen_locked(const Sizes& sizes);
  Lowering& for_sizes_locked(const Sizes& sizes);
  void check_divisors(const Lowering& l, const Sizes& sizes) const;
  const runtime::CompileResult& compile_locked(Lowering& l);
  const runtime::LoadedProgram& load_locked(Lowering& l);
  void warn_locked(const std::string& text);
};

void Op::Impl::warn_locked(const std::string& text) {
  if (std::find(warnings.begin(), warnings.end(), text) == warnings.end()) warnings.push_back(text);
}

const std::string& Op::Impl::auto_knobs_locked(const Sizes* sizes) {
  const Sizes key = sizes ? *sizes : Sizes{};
  auto it = auto_knobs.find(key);
  if (it != auto_knobs.end()) return it->second;  // a launch at known sizes: no lowering, no thread
  autosched::AutoSchedule choice = on_large_stack(
      [&] { return autosched::auto_schedule(*program->checked, *op, *target, sizes, &chains, laws.get()); });
  return auto_knobs.emplace(key, choice.knobs).first->second;
}

Lowering Op::Impl::lower_block(const CheckedSchedule* block, const std::string& base) {
  Lowering out;
  out.block = block;
  out.base = base;
  try {
    lower::PipelineOptions options;
    options.laws = laws.get();
    lower::Lowered l = lower::lower_op(*program->checked, *op, {block, env_knobs, program->options.knobs, base},
                                       *target, &chains, options);
    for (const std::vector<Warning>* level : {&l.knobs.warnings, &l.loops.warnings, &l.kernels.warnings})
      for (const Warning& w : *level) warn_locked(w.code + ": " + w.text);
    out.kernels = std::move(l.kernels);  // verified by lower_op
  } catch (const lower::LowerError& e) {
    fail(ErrorKind::Compile, e.what());
  } catch (const std::logic_error& e) {  // an IR that does not verify (EMMY_INTERNAL_ASSERT)
    fail(ErrorKind::Internal, e.what());
  }
  out.knobs = out.kernels.knobs;
  out.cuda = print_cuda(out.kernels);
  return out;
}

Lowering& Op::Impl::lowering_locked(const CheckedSchedule* block, const Sizes* sizes) {
  const std::string& asked = program->options.schedule;
  const std::string base = lower::derives(block, asked) ? auto_knobs_locked(sizes) : std::string();
  for (Lowering& l : lowerings)
    if (l.block == block && l.base == base && l.size_class.empty()) return l;
  Lowering made = on_large_stack([&] { return lower_block(block, base); });
  return lowerings.emplace_back(std::move(made));
}

Lowering& Op::Impl::chosen_locked(const Sizes& sizes) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    const CheckedSchedule* c = candidates[i];
    if (c && !lower::guard_holds(*c, sizes)) continue;
    Lowering& l = lowering_locked(c, &sizes);
    if (i + 1 < candidates.size())
      if (std::optional<std::string> broken = kir::check_limits(l.kernels, sizes)) {
        const Warning w = lower::unserved_block(*c, *broken);
        warn_locked(fmt::format("{}: {}{}", w.code, w.where.empty() ? "" : w.where + ": ", w.text));
        continue;
      }
    return l;
  }
  return lowerings.front();
}

// The lowering a run at `sizes` takes, its kernels specialized to the class of `sizes`
// (lower::specialize_sizes), made once a class and looked up once a distinct `sizes`.
Lowering& Op::Impl::for_sizes_locked(const Sizes& sizes) {
  if (auto known = by_sizes.find(sizes); known != by_sizes.end()) return *known->second;
  Lowering& generic = chosen_locked(sizes);
  const std::string cls = specialize ? lower::size_class(generic.kernels, sizes) : std::string();
  Lowering* taken = &generic;
  if (!cls.empty()) {
    taken = nullptr;
    for (Lowering& l : lowerings)
      if (l.block == generic.block && l.base == generic.base && l.size_class == cls) taken = &l;
    if (!taken) {
      Lowering made;
      made.block = generic.block;
      made.base = generic.base;
      made.size_class = cls;
      made.kernels = lower::specialize_sizes(generic.kernels, sizes);
      made.knobs = generic.knobs;
      made.cuda = print_cuda(made.kernels);
      taken = &lowerings.emplace_back(std::move(made));  // a deque: `generic` stays where it is
    }
  }
  check_divisors(*taken, sizes);
  return *by_sizes.emplace(sizes, taken).first->second;
}

// A run whose kernels would divide by a divisor computed from its sizes that is 0 there (`let G
// = H / KH` at KH > H): refused before anything runs (the GPU would divide silently, the
// interpreter stop), as `emmyc run`'s reference evaluator refuses it (E069).
void Op::Impl::check_divisors(const Lowering& l, const Sizes& sizes) const {
  if (std::optional<std::string> divisor = kir::zero_size_divisor(l.kernels, sizes)) {
    std::string at;
    for (const auto& [size, value] : sizes) at += fmt::format("{}{}={}", at.empty() ? "" : ", ", size, value);
    fail(ErrorKind::Argument, fmt::format("{}: at {} the op divides by {}, which is 0 there: {} [E069]", name, at,
                                          *divisor, kZeroDivisorHelp));
  }
}

const runtime::CompileResult& Op::Impl::compile_locked(Lowering& l) {
  if (l.compiled) return *l.compiled;
  std::string why;
  if (!runtime::nvrtc_available(&why)) fail(ErrorKind::Compile, "cannot compile for the GPU: " + why);
  runtime::CompileOptions co;
  co.target = target;
  runtime::CacheOptions cache{program->options.use_cache, program->options.cache_dir};
  runtime::CachedCompile c = runtime::compile_cuda_cached(l.cuda, l.kernels.op + ".cu", co, cache);
  if (!c.result.ok)
    fail(ErrorKind::Internal, "NVRTC rejected the generated CUDA (a compiler bug; please report it):\n" + c.result.log);
  if (!c.warning.empty()) warn_locked("W070: " + c.warning);
  l.compiled = std::move(c.result);
  return *l.compiled;
}

const runtime::LoadedProgram& Op::Impl::load_locked(Lowering& l) {
  if (l.loaded) return *l.loaded;
  const runtime::CompileResult& c = compile_locked(l);
  if (!driver) {
    std::string why;
    std::optional<runtime::Driver> opened = runtime::Driver::open(&why);
    if (!opened) fail(ErrorKind::Device, "cannot launch on the GPU: " + why);
    driver.emplace(std::move(*opened));
  }
  try {
    l.loaded.emplace(*driver, l.kernels, c.cubin);
  } catch (const std::runtime_error& e) {
    fail(ErrorKind::Device, e.what());
  }
  return *l.loaded;
}

Op Program::op(const std::string& name) const {
  return on_large_stack([&] { return lower(name); });
}

Op Program::lower(const std::string& name) const {
  auto it = impl_->checked->ops.find(name);
  // Any op the program checked, an imported one included (`import std.nn;` then op("layernorm")),
  // as emmyc's --op takes it; the suggestion and the list name the program's own.
  if (it == impl_->checked->ops.end()) {
    std::string guess = closest_name(name, impl_->ops);
    fail(ErrorKind::Argument, fmt::format("no op '{}' in this program{}", name,
                                          guess.empty() ? fmt::format(" (ops: {})", fmt::join(impl_->ops, ", "))
                                                        : fmt::format("; did you mean '{}'?", guess)));
  }
  const CheckedOp& op = it->second;
  // The laws the op needs (its imported monoids, its chains); a refuted one fails the op as a
  // load would have.
  algebra::ProgramLaws laws;
  std::unique_ptr<lower::LawMemo> proved;
  {
    std::lock_guard<std::mutex> lock(impl_->proofs_mutex);
    Diagnostics diags(impl_->sources, kDefaultErrorLimit);
    const std::set<std::string> ops{name};
    laws = algebra::classify(*impl_->checked, diags, &impl_->proofs, &ops);
    proved = std::make_unique<lower::LawMemo>(impl_->proofs);
    if (diags.has_errors()) {
      std::ostringstream text;
      diags.render(text, false);
      fail(ErrorKind::Source, text.str());
    }
  }
  auto impl = std::make_shared<Op::Impl>();
  impl->program = impl_;
  impl->name = name;
  impl->op = &op;
  impl->chains = std::move(laws.chains);
  impl->laws = std::move(proved);
  impl->target = &resolve_target(impl_->options.target);
  impl->target_name = std::string(impl->target->name);
  auto selected = lower::select_schedule(*impl_->checked, name, *impl->target, impl_->options.schedule);
  if (const auto* why = std::get_if<std::string>(&selected)) fail(ErrorKind::Argument, *why);
  const char* env = impl_->options.use_env_knobs ? std::getenv("EMMY_KNOBS") : nullptr;
  impl->env_knobs = env ? env : "";
  impl->specialize = impl_->options.specialize && lower::specialize_by_env();
  if (impl_->options.schedule.empty())
    impl->candidates = lower::default_candidates(*impl_->checked, name, *impl->target);
  else if (!std::get<const CheckedSchedule*>(selected))  // --schedule auto: the auto-schedule at each run's sizes
    impl->candidates = {nullptr};
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    impl->lowering_locked(std::get<const CheckedSchedule*>(selected), nullptr);
  }
  for (const TensorInfo& t : op.tensors) {
    if (t.role == TensorInfo::Role::Input) impl->inputs.push_back(spec_of(t));
    if (t.role == TensorInfo::Role::Output) impl->outputs.push_back(spec_of(t));
  }
  return Op(std::move(impl));
}

const std::string& Op::name() const { return impl_->name; }
const std::vector<TensorSpec>& Op::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& Op::outputs() const { return impl_->outputs; }
const std::string& Op::knobs() const { return impl_->lowerings.front().knobs; }
const std::string& Op::cuda() const { return impl_->lowerings.front().cuda; }
std::string Op::knobs_at(const Sizes& sizes) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->for_sizes_locked(sizes).knobs;
}
const std::string& Op::target() const { return impl_->target_name; }
std::vector<std::string> Op::warnings() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->warnings;
}

namespace {

// Binds every dim of `spec` against `shape`, or fails naming the tensor.
void bind_tensor(const std::string& op, const char* role, const TensorSpec& spec, const Tensor& t, Sizes& sizes) {
  if (t.dtype != spec.dtype)
    fail(ErrorKind::Argument, fmt::format("{}: {} {} is {}, the tensor given is {}", op, role, spec_text(spec),
                                          dtype_name(spec.dtype), dtype_name(t.dtype)));
  if (t.shape.size() != spec.dims.size())
    fail(ErrorKind::Argument, fmt::format("{}: {} {} has rank {}, the tensor given has shape {}", op, role,
                                          spec_text(spec), spec.dims.size(), shape_text(t.shape)));
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    const std::string& dim = spec.dims[i];
    const int64_t got = t.shape[i];
    if (got < 0) fail(ErrorKind::Argument, fmt::format("{}: {} {} has a negative extent", op, role, spec.name));
    const bool literal = !dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]));
    auto [it, fresh] = sizes.emplace(dim, got);
    if ((literal && std::stoll(dim) != got) || (!fresh && it->second != got))
      fail(ErrorKind::Argument,
           fmt::format("{}: {} {} given shape {}: {} is {} here but {} elsewhere", op, role, spec_text(spec),
                       shape_text(t.shape), dim, got, literal ? std::stoll(dim) : it->second));
  }
}

void check_count(const std::string& op, const char* what, size_t got, const std::vector<TensorSpec>& specs) {
  if (got == specs.size()) return;
  std::vector<std::string> names;
  for (const TensorSpec& s : specs) names.push_back(spec_text(s));
  fail(ErrorKind::Argument,
       fmt::format("{} takes {} {} ({}), {} given", op, specs.size(), what, fmt::join(names, "; "), got));
}

}  // namespace

Sizes Op::bind_sizes(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const {
  Sizes sizes;
  for (size_t i = 0; i < inputs.size() && i < impl_->inputs.size(); ++i)
    bind_tensor(impl_->name, "input", impl_->inputs[i], inputs[i], sizes);
  for (size_t i = 0; i < outputs.size() && i < impl_->outputs.size(); ++i)
    bind_tensor(impl_->name, "output", impl_->outputs[i], outputs[i], sizes);
  for (auto it = sizes.begin(); it != sizes.end();)  // literals are not sizes
    it = std::isdigit(static_cast<unsigned char>(it->first[0])) ? sizes.erase(it) : std::next(it);
  // Output dims computed from the inputs' sizes (`T - K + 1`): once the inputs bound them.
  if (std::optional<std::string> why = bind_computed_sizes(*impl_->op->decl, sizes)) fail(ErrorKind::Argument, *why);
  return sizes;
}

std::vector<int64_t> Op::output_shape(size_t index, const Sizes& sizes) const {
  if (index >= impl_->outputs.size())
    fail(ErrorKind::Argument,
         fmt::format("{} has {} outputs; there is no output {}", impl_->name, impl_->outputs.size(), index));
  std::vector<int64_t> shape;
  for (const std::string& dim : impl_->outputs[index].dims) {
    if (std::isdigit(static_cast<unsigned char>(dim[0]))) {
      shape.push_back(std::stoll(dim));
      continue;
    }
    auto it = sizes.find(dim);
    if (it == sizes.end())
      fail(ErrorKind::Argument, fmt::format("{}: the size {} of output {} is not bound by the inputs", impl_->name, dim,
                                            spec_text(impl_->outputs[index])));
    shape.push_back(it->second);
  }
  return shape;
}

namespace {

// The sizes of one run: the tensor counts, their dtypes and shapes checked.
Sizes sizes_for_run(const Op& op, const Op::Impl& impl, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs) {
  check_count(impl.name, "inputs", inputs.size(), impl.inputs);
  check_count(impl.name, "outputs", outputs.size(), impl.outputs);
  Sizes sizes = op.bind_sizes(inputs, outputs);
  for (const auto& [name, value] : sizes)
    if (value == 0)
      fail(ErrorKind::Argument, fmt::format("{}: size {} is 0: ops run on tensors with elements (empty tensors are "
                                            "not supported); skip the call when a tensor is empty",
                                            impl.name, name));
  if (std::optional<std::string> why = too_many_elements(impl.program->checked->ops.at(impl.name), sizes))
    fail(ErrorKind::Argument, fmt::format("{}: {}", impl.name, *why));
  return sizes;
}

// Every size `l`'s kernels read is bound (a size only a temporary uses cannot come from the tensors).
void check_bound(const Op::Impl& impl, const Lowering& l, const Sizes& sizes) {
  for (const kir::Kernel& k : l.kernels.kernels)
    for (const kir::Param& p : k.params)
      if (p.kind == kir::Param::Kind::Scalar && !sizes.count(p.name))
        fail(ErrorKind::Argument, fmt::format("{}: the size {} is not bound by the tensors given", impl.name, p.name));
}

}  // namespace

void Op::launch(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, void* stream) const {
  const Sizes sizes = sizes_for_run(*this, *impl_, inputs, outputs);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Lowering& lowering = impl_->for_sizes_locked(sizes);
  check_bound(*impl_, lowering, sizes);
  const runtime::LoadedProgram& loaded = impl_->load_locked(lowering);
  try {
    impl_->driver->make_current();
    std::map<std::string, runtime::DevicePtr> buffers;
    for (size_t i = 0; i < inputs.size(); ++i)
      buffers[impl_->inputs[i].name] = {reinterpret_cast<uint64_t>(inputs[i].data)};
    for (size_t i = 0; i < outputs.size(); ++i)
      buffers[impl_->outputs[i].name] = {reinterpret_cast<uint64_t>(outputs[i].data)};
    for (const kir::Buffer& b : lowering.kernels.buffers) {
      if (b.role != kir::Buffer::Role::Temp) continue;
      runtime::DeviceBuffer& memory = impl_->workspace[b.name];
      const size_t bytes = runtime::buffer_bytes(b, sizes);
      if (memory.bytes() < bytes) {
        impl_->driver->synchronize(static_cast<runtime::StreamRef>(stream));  // earlier launches may still read it
        memory = impl_->driver->alloc(bytes);
      }
      buffers[b.name] = memory.ptr();
    }
    const auto s = static_cast<runtime::StreamRef>(stream);
    for (const runtime::KernelLaunch& l : loaded.bind(buffers, sizes)) loaded.launch(l, s);
  } catch (const std::runtime_error& e) {
    fail(ErrorKind::Device, fmt::format("{}: {}", impl_->name, e.what()));
  }
}

void Op::run_on_interpreter(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const {
  const Sizes sizes = sizes_for_run(*this, *impl_, inputs, outputs);
  const Lowering* lowering = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    lowering = &impl_->for_sizes_locked(sizes);
    check_bound(*impl_, *lowering, sizes);
  }
  TensorMap buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    HostTensor& h = buffers[impl_->inputs[i].name];
    h.dtype = static_cast<emmy::DType>(inputs[i].dtype);
    h.shape = inputs[i].shape;
    size_t count = 1;
    for (int64_t d : h.shape) count *= static_cast<size_t>(d);
    h.data = kir::decode_values(kir::scalar_of(h.dtype), static_cast<const uint8_t*>(inputs[i].data), count);
  }
  try {
    run_on_large_stack([&] { run_simt(lowering->kernels, sizes, buffers, SimtOptions{}); });
  } catch (const SimtError& e) {
    fail(ErrorKind::Internal,
         fmt::format("{}: the interpreter stopped (a compiler bug; please report it): {}", impl_->name, e.what()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto found = buffers.find(impl_->outputs[i].name);
    if (found == buffers.end())
      fail(ErrorKind::Internal, fmt::format("{}: the kernels never wrote output {} (a compiler bug; please report it)",
                                            impl_->name, impl_->outputs[i].name));
    const HostTensor& h = found->second;
    const std::vector<uint8_t> bytes = kir::encode_values(kir::scalar_of(h.dtype), h.data);
    std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(outputs[i].data));
  }
}

void Op::prepare(const Sizes& sizes) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->load_locked(impl_->for_sizes_locked(sizes));
}

std::vector<KernelInfo> Op::compile() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const runtime::CompileResult& c = impl_->compile_locked(impl_->lowerings.front());
  std::vector<KernelInfo> out;
  for (const kir::Kernel& k : impl_->lowerings.front().kernels.kernels) {
    KernelInfo info{k.name, k.block_threads, 0, 0, 0};
    for (const runtime::KernelResources& r : c.resources)
      if (r.kernel == k.name)
        info = {k.name, k.block_threads, r.registers, r.spill_stores + r.spill_loads, r.smem_bytes};
    out.push_back(info);
  }
  return out;
}

}  // namespace emmy::api
