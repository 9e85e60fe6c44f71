// Emmy's embeddable C++ API: compile an .emmy source string or file into a Program, take one of
// its ops, and launch it on device pointers and a CUDA stream, or run it on the CPU interpreter.
//
//   emmy::api::Program program = emmy::api::Program::from_file("stdlib/nn.emmy");
//   emmy::api::Op softmax = program.op("softmax");
//   softmax.launch({{x_dev, emmy::api::DType::F16, {N, C}}}, {{y_dev, emmy::api::DType::F16, {N, C}}}, stream);
//
// Sizes (N, C, ...) are read from the tensors' shapes; they are kernel parameters, so a new
// shape is a recompile only where it falls in a new size class (docs/running.md: the kernels
// are specialized to the tests of sizes they make). Kernels are compiled with NVRTC on the first
// launch of a class and kept in an on-disk cache. Errors throw emmy::api::Error; its message is what emmyc would print.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace emmy::api {

// Why a call failed; the values are the C ABI's emmy_status.
enum class ErrorKind { Source = 1, Argument = 2, Compile = 3, Device = 4, Internal = 5, Resource = 6 };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Element types; the values are the C ABI's emmy_dtype.
enum class DType : int32_t { Bool = 0, I32 = 1, I64 = 2, F16 = 3, BF16 = 4, F32 = 5, F64 = 6 };
std::string_view dtype_name(DType dtype);  // "f16"
size_t dtype_bytes(DType dtype);           // 2 for f16; 1 for bool

struct Options {
  std::string target;                    // "sm_80", "sm_90", "sm_90a", "sm_120"; empty: the GPU's best
                                         // (sm_90a on an H100/H200), else sm_90
  std::string knobs;                     // knob list (KNOBS.md), above the schedule block and EMMY_KNOBS
  std::string schedule;                  // a named schedule block of the op
  std::vector<std::string> stdlib_dirs;  // empty: $EMMY_STDLIB, then the installed share/emmy/stdlib
  std::string cache_dir;                 // empty: $EMMY_CACHE_DIR, $XDG_CACHE_HOME/emmy, ~/.cache/emmy
  bool use_cache = true;                 // read and write the on-disk kernel cache
  bool use_env_knobs = true;             // read EMMY_KNOBS
  bool specialize = true;                // a run's kernels specialized to its size class (EMMY_SPECIALIZE=0: off)
  std::string dtype;                     // "f16", "bf16", "f32": signatures' f16/bf16 tensors read as this;
                                         // "f64": their f32 tensors too
};

// A parameter or output of an op: dims are size names ("S") or literals ("64").
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::string> dims;
};

// A contiguous row-major tensor: device memory for launch, host memory for run_on_interpreter.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

using Sizes = std::map<std::string, int64_t>;

// Resources of one generated kernel, from ptxas (registers, spills, shared memory).
struct KernelInfo {
  std::string name;
  int block_threads = 0;
  int registers = 0;
  int spill_bytes = 0;
  int smem_bytes = 0;
};

class Op;

// A checked source with its imports. Cheap to copy (shared).
class Program {
 public:
  static Program from_source(std::string_view source, std::string_view name = "<source>", const Options& options = {});
  static Program from_file(const std::string& path, const Options& options = {});

  std::vector<std::string> ops() const;  // the ops the main source defines
  Op op(const std::string& name) const;  // lowered with the options' target, knobs and schedule

  struct Impl;

 private:
  explicit Program(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  // from_source and op on the caller's stack (they run these on a large one).
  static Program check_source(std::string_view source, std::string_view name, const Options& options);
  Op lower(const std::string& name) const;
  std::shared_ptr<const Impl> impl_;
};

// One lowered op. Cheap to copy (shared); the compiled module is loaded once.
class Op {
 public:
  const std::string& name() const;
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  const std::string& knobs() const;  // the knobs it was lowered with (its block without sizes)
  // The knobs a run at these sizes takes: the first guarded schedule block whose guard holds and
  // whose kernels serve them, else the unguarded one (docs/language.md, "Guarded blocks").
  std::string knobs_at(const Sizes& sizes) const;
  const std::string& cuda() const;  // the generated CUDA C++
  const std::string& target() const;
  // Knobs that had no effect, fallbacks taken, a kernel cache that could not be written, a
  // schedule block a run's sizes passed over: each "CODE: text", the code one of docs/errors.md
  // (W050-W056, W070). Runs may add to them (W056, W070), in order.
  std::vector<std::string> warnings() const;

  // The sizes the given tensors bind (every dim of every tensor given; throws on a mismatch).
  Sizes bind_sizes(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs = {}) const;
  std::vector<int64_t> output_shape(size_t index, const Sizes& sizes) const;

  // Enqueues the op's kernels on `stream` (a CUstream; nullptr: the default stream) in the
  // primary context of device 0. Compiles, or loads from the cache, on the first call.
  void launch(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, void* stream = nullptr) const;
  // Runs the op on the CPU SIMT interpreter, tensors in host memory.
  void run_on_interpreter(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const;
  // Compiles and loads the kernels a launch at these sizes takes (its guarded block, docs/
  // language.md), so that the launch itself does not compile (Python's bind() calls it).
  void prepare(const Sizes& sizes) const;
  // Compiles (or loads from the cache) now; the resources of each kernel.
  std::vector<KernelInfo> compile() const;

  struct Impl;

 private:
  friend class Program;
  explicit Op(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace emmy::api
