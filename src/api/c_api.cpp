// The C ABI over the C++ API: handles own C++ objects, errors become a status and a per-thread message.
#include <deque>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "emmy/emmy.h"
#include "emmy/emmy.hpp"
#include "emmy/version.hpp"
#include "support/failure.hpp"
#include "support/limits.hpp"
#include "support/paths.hpp"

struct emmy_program {
  emmy::api::Program program;
  std::vector<std::string> ops;
};

struct emmy_op {
  emmy::api::Op op;
  // The op's warnings as handed out: a run may add one (W056), and the strings given stay put.
  mutable std::mutex mutex;
  mutable std::deque<std::string> warnings;
  mutable std::set<std::string> knobs_seen;  // emmy_op_knobs_at's answers
  void refresh() const {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> now = op.warnings();
    for (size_t i = warnings.size(); i < now.size(); ++i) warnings.push_back(now[i]);
  }
};

namespace {

using emmy::api::DType;
using emmy::api::Error;
using emmy::api::ErrorKind;
using emmy::api::Tensor;

// The message of the last failed call on this thread, as C callers expect of errno-like APIs.
thread_local std::string last_error;

int set_error(int status, const std::string& message) {
  last_error = message;
  return status;
}

// Runs `body`, turning every exception into a status and last_error.
template <class F>
int guarded(F&& body) {
  try {
    body();
    last_error.clear();
    return EMMY_OK;
  } catch (const Error& e) {
    return set_error(static_cast<int>(e.kind()), e.what());
  } catch (...) {
    const emmy::Failure f = emmy::describe_failure(std::current_exception());
    if (f.kind != emmy::FailureKind::Internal) return set_error(EMMY_ERROR_RESOURCE, f.message);
    return set_error(EMMY_ERROR_INTERNAL, "internal error (a bug; please report it): " + f.message);
  }
}

std::string text_or(const char* s) { return s ? s : ""; }

emmy::api::Options options_of(const emmy_options* o) {
  emmy::api::Options out;
  if (!o) return out;
  out.target = text_or(o->target);
  out.knobs = text_or(o->knobs);
  out.schedule = text_or(o->schedule);
  out.cache_dir = text_or(o->cache_dir);
  out.use_cache = o->no_cache == 0;
  out.use_env_knobs = o->no_env_knobs == 0;
  out.specialize = o->no_specialize == 0;
  out.dtype = text_or(o->dtype);
  out.stdlib_dirs = emmy::split_path_list(text_or(o->stdlib_path));
  return out;
}

// The tensors of one call, checked against the op's parameters (or outputs) `specs` before a
// shape or data pointer is read: a rank other than the parameter's is refused without reading
// `shape`, and a tensor with elements must have data (unless only shapes are read).
std::vector<Tensor> tensors_of(const emmy_tensor* tensors, int32_t count,
                               const std::vector<emmy::api::TensorSpec>& specs, const char* role, const std::string& op,
                               bool need_data = true) {
  if (count < 0 || (count > 0 && !tensors))
    throw Error(ErrorKind::Argument, "a tensor list is null or its count negative");
  if (static_cast<size_t>(count) != specs.size())
    throw Error(ErrorKind::Argument, fmt::format("{} takes {} {}s, {} given", op, specs.size(), role, count));
  std::vector<Tensor> out;
  for (int32_t i = 0; i < count; ++i) {
    const emmy_tensor& t = tensors[i];
    const std::string which = fmt::format("{}: {} {}", op, role, i);
    if (t.dtype < EMMY_BOOL || t.dtype > EMMY_F64)
      throw Error(ErrorKind::Argument, fmt::format("{} has an unknown dtype {}", which, t.dtype));
    if (static_cast<size_t>(t.rank) != specs[i].dims.size())
      throw Error(ErrorKind::Argument, fmt::format("{} ({}) has rank {}; the tensor given has rank {}", which,
                                                   specs[i].name, specs[i].dims.size(), t.rank));
    if (t.rank < 0 || (t.rank > 0 && !t.shape)) throw Error(ErrorKind::Argument, which + " has no shape");
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    int64_t elements = 1;
    for (int64_t d : shape) {
      if (d < 0) throw Error(ErrorKind::Argument, fmt::format("{} has a negative extent {}", which, d));
      if (__builtin_mul_overflow(elements, d, &elements) || elements > emmy::kMaxElements)
        throw Error(ErrorKind::Argument, fmt::format("{} has shape [{}]: more elements than memory can hold", which,
                                                     fmt::join(shape, ", ")));
    }
    if (need_data && elements > 0 && !t.data)
      throw Error(ErrorKind::Argument, fmt::format("{} has {} elements but its data pointer is NULL", which, elements));
    out.push_back({t.data, static_cast<DType>(t.dtype), std::move(shape)});
  }
  return out;
}

int null_argument(const char* what) { return set_error(EMMY_ERROR_ARGUMENT, std::string(what) + " is null"); }

int make_program(emmy::api::Program program, emmy_program** out) {
  *out = new emmy_program{program, program.ops()};
  return EMMY_OK;
}

}  // namespace

extern "C" {

const char* emmy_version(void) { return EMMY_VERSION_STRING; }
const char* emmy_last_error(void) { return last_error.c_str(); }

int emmy_program_from_source(const char* source, const char* name, const emmy_options* options, emmy_program** out) {
  if (!source || !out) return null_argument(!source ? "source" : "out");
  return guarded([&] {
    make_program(emmy::api::Program::from_source(source, name ? name : "<source>", options_of(options)), out);
  });
}

int emmy_program_from_file(const char* path, const emmy_options* options, emmy_program** out) {
  if (!path || !out) return null_argument(!path ? "path" : "out");
  return guarded([&] { make_program(emmy::api::Program::from_file(path, options_of(options)), out); });
}

void emmy_program_free(emmy_program* program) { delete program; }

int32_t emmy_program_op_count(const emmy_program* program) {
  return program ? static_cast<int32_t>(program->ops.size()) : 0;
}

const char* emmy_program_op_name(const emmy_program* program, int32_t index) {
  if (!program || index < 0 || static_cast<size_t>(index) >= program->ops.size()) return nullptr;
  return program->ops[static_cast<size_t>(index)].c_str();
}

int emmy_op_get(const emmy_program* program, const char* name, emmy_op** out) {
  if (!program || !name || !out) return null_argument(!program ? "program" : !name ? "name" : "out");
  return guarded([&] { *out = new emmy_op{program->program.op(name), {}, {}, {}}; });
}

void emmy_op_free(emmy_op* op) { delete op; }

int32_t emmy_op_num_inputs(const emmy_op* op) { return op ? static_cast<int32_t>(op->op.inputs().size()) : 0; }
int32_t emmy_op_num_outputs(const emmy_op* op) { return op ? static_cast<int32_t>(op->op.outputs().size()) : 0; }

int emmy_op_tensor(const emmy_op* op, int32_t is_output, int32_t index, const char** name, int32_t* dtype,
                   int32_t* rank) {
  if (!op) return null_argument("op");
  const auto& specs = is_output ? op->op.outputs() : op->op.inputs();
  if (index < 0 || static_cast<size_t>(index) >= specs.size())
    return set_error(EMMY_ERROR_ARGUMENT,
                     op->op.name() + " has no " + (is_output ? "output " : "input ") + std::to_string(index));
  const auto& s = specs[static_cast<size_t>(index)];
  if (name) *name = s.name.c_str();
  if (dtype) *dtype = static_cast<int32_t>(s.dtype);
  if (rank) *rank = static_cast<int32_t>(s.dims.size());
  return EMMY_OK;
}

int emmy_op_output_shape(const emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, int32_t index,
                         int64_t* shape) {
  if (!op || !shape) return null_argument(!op ? "op" : "shape");
  if (index < 0) return set_error(EMMY_ERROR_ARGUMENT, "output index " + std::to_string(index) + " is negative");
  if (num_inputs != emmy_op_num_inputs(op))
    return set_error(EMMY_ERROR_ARGUMENT, op->op.name() + " takes " + std::to_string(emmy_op_num_inputs(op)) +
                                              " inputs, " + std::to_string(num_inputs) + " given");
  return guarded([&] {
    std::vector<int64_t> s = op->op.output_shape(
        static_cast<size_t>(index),
        op->op.bind_sizes(tensors_of(inputs, num_inputs, op->op.inputs(), "input", op->op.name(), false)));
    std::copy(s.begin(), s.end(), shape);
  });
}

int emmy_op_launch(emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, const emmy_tensor* outputs,
                   int32_t num_outputs, void* stream) {
  if (!op) return null_argument("op");
  return guarded([&] {
    op->op.launch(tensors_of(inputs, num_inputs, op->op.inputs(), "input", op->op.name()),
                  tensors_of(outputs, num_outputs, op->op.outputs(), "output", op->op.name()), stream);
  });
}

int emmy_op_run_host(const emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, const emmy_tensor* outputs,
                     int32_t num_outputs) {
  if (!op) return null_argument("op");
  return guarded([&] {
    op->op.run_on_interpreter(tensors_of(inputs, num_inputs, op->op.inputs(), "input", op->op.name()),
                              tensors_of(outputs, num_outputs, op->op.outputs(), "output", op->op.name()));
  });
}

int emmy_op_prepare(emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs) {
  if (!op) return null_argument("op");
  if (num_inputs != emmy_op_num_inputs(op))
    return set_error(EMMY_ERROR_ARGUMENT, op->op.name() + " takes " + std::to_string(emmy_op_num_inputs(op)) +
                                              " inputs, " + std::to_string(num_inputs) + " given");
  return guarded([&] {
    op->op.prepare(op->op.bind_sizes(tensors_of(inputs, num_inputs, op->op.inputs(), "input", op->op.name(), false)));
  });
}

int emmy_op_knobs_at(const emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, const char** knobs) {
  if (!op || !knobs) return null_argument(!op ? "op" : "knobs");
  if (num_inputs != emmy_op_num_inputs(op))
    return set_error(EMMY_ERROR_ARGUMENT, op->op.name() + " takes " + std::to_string(emmy_op_num_inputs(op)) +
                                              " inputs, " + std::to_string(num_inputs) + " given");
  return guarded([&] {
    std::string text = op->op.knobs_at(
        op->op.bind_sizes(tensors_of(inputs, num_inputs, op->op.inputs(), "input", op->op.name(), false)));
    std::lock_guard<std::mutex> lock(op->mutex);
    *knobs = op->knobs_seen.insert(std::move(text)).first->c_str();
  });
}

int32_t emmy_op_warning_count(const emmy_op* op) {
  if (!op) return 0;
  op->refresh();
  std::lock_guard<std::mutex> lock(op->mutex);
  return static_cast<int32_t>(op->warnings.size());
}

const char* emmy_op_warning(const emmy_op* op, int32_t index) {
  if (!op || index < 0) return nullptr;
  op->refresh();
  std::lock_guard<std::mutex> lock(op->mutex);
  if (static_cast<size_t>(index) >= op->warnings.size()) return nullptr;
  return op->warnings[static_cast<size_t>(index)].c_str();
}

const char* emmy_op_cuda(const emmy_op* op) { return op ? op->op.cuda().c_str() : nullptr; }
const char* emmy_op_knobs(const emmy_op* op) { return op ? op->op.knobs().c_str() : nullptr; }

}  // extern "C"
