// Host tensors to device buffers, one launch per kernel with its grid and parameters bound by name, outputs back.
#include "runtime/launch_program.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "ir/launch_expr.hpp"
#include "ir/numeric.hpp"

namespace emmy::runtime {
namespace {

using kir::dtype_of;

using kir::BinOp;
using kir::Expr;
using kir::ScalarType;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("run_on_gpu: " + what); }

// An integer truncated to the width of `type`, as the interpreter binds scalars.
int64_t wrap(ScalarType type, int64_t v) {
  switch (type) {
    case ScalarType::Pred: return v != 0 ? 1 : 0;
    case ScalarType::I32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    case ScalarType::U32: return static_cast<uint32_t>(static_cast<uint64_t>(v));
    default: return v;
  }
}

template <class T>
void put(T value, uint8_t* at) {
  std::memcpy(at, &value, sizeof value);
}

template <class T>
T get(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// One element in the device's representation; values are already rounded to the dtype.
void encode(ScalarType type, double v, uint8_t* at) {
  switch (type) {
    case ScalarType::Pred: return put<uint8_t>(v != 0 ? 1 : 0, at);
    case ScalarType::I32: return put(static_cast<int32_t>(wrap(type, static_cast<int64_t>(v))), at);
    case ScalarType::U32: return put(static_cast<uint32_t>(wrap(type, static_cast<int64_t>(v))), at);
    case ScalarType::I64: return put(static_cast<int64_t>(v), at);
    case ScalarType::F16: return put(kir::f32_to_f16_bits(static_cast<float>(v)), at);
    case ScalarType::BF16: return put(kir::f32_to_bf16_bits(static_cast<float>(v)), at);
    case ScalarType::F32: return put(static_cast<float>(v), at);
    case ScalarType::F64: return put(v, at);
  }
}

double decode(ScalarType type, const uint8_t* at) {
  switch (type) {
    case ScalarType::Pred: return get<uint8_t>(at) != 0 ? 1 : 0;
    case ScalarType::I32: return get<int32_t>(at);
    case ScalarType::U32: return get<uint32_t>(at);
    case ScalarType::I64: return static_cast<double>(get<int64_t>(at));
    case ScalarType::F16: return kir::f16_bits_to_f32(get<uint16_t>(at));
    case ScalarType::BF16: return kir::bf16_bits_to_f32(get<uint16_t>(at));
    case ScalarType::F32: return get<float>(at);
    case ScalarType::F64: return get<double>(at);
  }
  return 0;
}

int64_t dim_value(const std::string& dim, const SizeBindings& sizes, const std::string& buffer) {
  bool literal = !dim.empty() && std::all_of(dim.begin(), dim.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (literal && dim.size() <= 18) return std::stoll(dim);
  auto it = sizes.find(dim);
  if (literal || it == sizes.end()) fail(fmt::format("buffer {}: dimension '{}' is not bound", buffer, dim));
  if (it->second < 0) fail(fmt::format("buffer {}: dimension {} is negative", buffer, dim));
  return it->second;
}

// A program buffer on the device, with the shape its dims give.
struct GpuBuffer {
  const kir::Buffer* info = nullptr;
  std::vector<int64_t> shape;
  size_t count = 1;
  DeviceBuffer memory;
};

void check_input(const kir::Buffer& b, const std::vector<int64_t>& shape, const TensorMap& inputs) {
  auto it = inputs.find(b.name);
  if (it == inputs.end()) fail(fmt::format("input buffer {} is not given", b.name));
  const HostTensor& t = it->second;
  if (t.shape != shape) fail(fmt::format("input buffer {}: the tensor's shape does not match the buffer's dims", b.name));
  bool int_ok = !kir::is_float(b.type) && !is_float(t.dtype);
  if (t.dtype != dtype_of(b.type) && !(b.type == ScalarType::U32 && int_ok))
    fail(fmt::format("input buffer {} is {}, the tensor is {}", b.name, kir::type_name(b.type), dtype_name(t.dtype)));
}

GpuBuffer make_buffer(const Driver& driver, const kir::Buffer& b, const SizeBindings& sizes, const TensorMap& inputs) {
  GpuBuffer g;
  g.info = &b;
  for (const std::string& dim : b.dims) {
    g.shape.push_back(dim_value(dim, sizes, b.name));
    g.count *= static_cast<size_t>(g.shape.back());
  }
  const auto bytes = static_cast<size_t>(kir::type_bytes(b.type));
  g.memory = driver.alloc(g.count * bytes);
  if (b.role != kir::Buffer::Role::Input) {
    driver.fill(g.memory, 0xff);  // NaN / -1 poison, as the interpreter does
    return g;
  }
  check_input(b, g.shape, inputs);
  std::vector<uint8_t> host(g.count * bytes);
  const std::vector<double>& data = inputs.at(b.name).data;
  for (size_t k = 0; k < g.count; ++k) encode(b.type, data[k], host.data() + k * bytes);
  driver.copy_to_device(g.memory, host.data(), host.size());
  return g;
}

HostTensor to_host(const Driver& driver, const GpuBuffer& g) {
  const auto bytes = static_cast<size_t>(kir::type_bytes(g.info->type));
  std::vector<uint8_t> host(g.count * bytes);
  driver.copy_to_host(host.data(), g.memory, host.size());
  HostTensor t;
  t.dtype = dtype_of(g.info->type);
  t.shape = g.shape;
  t.data.resize(g.count);
  for (size_t k = 0; k < g.count; ++k) t.data[k] = decode(g.info->type, host.data() + k * bytes);
  return t;
}

using Scalars = std::map<std::string, int64_t>;

// grid_x, evaluated as the interpreter evaluates it.
int64_t eval_grid(const Expr& e, const Scalars& scalars, const std::string& kernel) {
  auto v = kir::evaluate_launch_expr(e, scalars);
  if (const auto* what = std::get_if<std::string>(&v)) fail(fmt::format("kernel {}: grid_x {}", kernel, *what));
  return std::get<int64_t>(v);
}

KernelArg scalar_arg(const kir::Kernel& k, const kir::Param& p, const SizeBindings& sizes, Scalars& scalars) {
  auto it = sizes.find(p.name);
  if (it == sizes.end()) fail(fmt::format("kernel {}: scalar parameter {} is not bound", k.name, p.name));
  const int64_t value = wrap(p.type, it->second);
  scalars[p.name] = value;
  if (p.type == ScalarType::I64) return value;
  if (p.type == ScalarType::I32 || p.type == ScalarType::U32) return static_cast<int32_t>(value);
  fail(fmt::format("kernel {}: scalar parameter {} of type {} is not supported", k.name, p.name, kir::type_name(p.type)));
}

KernelArg buffer_arg(const kir::Kernel& k, const kir::Param& p, const std::vector<GpuBuffer>& buffers) {
  auto it = std::find_if(buffers.begin(), buffers.end(), [&](const GpuBuffer& g) { return g.info->name == p.name; });
  if (it == buffers.end()) fail(fmt::format("kernel {}: parameter {} names no program buffer", k.name, p.name));
  if (it->info->type != p.type)
    fail(fmt::format("kernel {}: parameter {} is {}, the buffer is {}", k.name, p.name, kir::type_name(p.type),
                     kir::type_name(it->info->type)));
  return it->memory.ptr();
}

// One kernel's arguments, in parameter order, and its grid.
struct Bound {
  std::vector<KernelArg> args;
  int64_t grid = 0;
};

Bound bind(const kir::Kernel& k, const std::vector<GpuBuffer>& buffers, const SizeBindings& sizes) {
  Bound b;
  Scalars scalars;
  for (const kir::Param& p : k.params) {
    if (p.kind == kir::Param::Kind::Buffer) b.args.push_back(buffer_arg(k, p, buffers));
    else if (p.kind == kir::Param::Kind::Scalar) b.args.push_back(scalar_arg(k, p, sizes, scalars));
    else fail(fmt::format("kernel {}: tensor-map parameter {} is not supported yet", k.name, p.name));
  }
  b.grid = eval_grid(k.grid_x, scalars, k.name);
  if (b.grid < 0 || b.grid > std::numeric_limits<int32_t>::max())
    fail(fmt::format("kernel {}: grid_x is {}", k.name, b.grid));
  return b;
}

}  // namespace

TensorMap run_on_gpu(Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
                     const SizeBindings& sizes, const TensorMap& inputs, RunTiming* timing) {
  std::vector<GpuBuffer> buffers;
  for (const kir::Buffer& b : program.buffers) buffers.push_back(make_buffer(driver, b, sizes, inputs));
  const Module module = driver.load_module(cubin);
  const Stream stream;  // the default stream
  const Event start = driver.create_event(), end = driver.create_event();
  if (timing) *timing = RunTiming{};
  for (const kir::Kernel& k : program.kernels) {
    const Bound bound = bind(k, buffers, sizes);
    const Function function = driver.function(module, k.name);
    if (timing) driver.record(start, stream);
    if (bound.grid > 0)
      driver.launch(function, {static_cast<unsigned>(bound.grid)}, {static_cast<unsigned>(k.block_threads)},
                    bound.args, stream);
    if (!timing) continue;
    driver.record(end, stream);
    timing->kernel_ms.push_back(driver.elapsed_ms(start, end));
    timing->total_ms += timing->kernel_ms.back();
  }
  driver.synchronize(stream);
  TensorMap out;
  for (const GpuBuffer& g : buffers)
    if (g.info->role == kir::Buffer::Role::Output) out[g.info->name] = to_host(driver, g);
  return out;
}

}  // namespace emmy::runtime
