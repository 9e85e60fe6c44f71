// A program's module loaded once, launches bound to buffers by name, and the host round trip.
#include "runtime/launch_program.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "ir/dtypes.hpp"
#include "ir/intrinsics.hpp"
#include "ir/launch_expr.hpp"

namespace emmy::runtime {
namespace {

using kir::ScalarType;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

int64_t dim_value(const std::string& dim, const SizeBindings& sizes, const std::string& buffer) {
  bool literal = !dim.empty() && std::all_of(dim.begin(), dim.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (literal && dim.size() <= 18) return std::stoll(dim);
  auto it = sizes.find(dim);
  if (literal || it == sizes.end()) fail(fmt::format("buffer {}: dimension '{}' is not bound", buffer, dim));
  if (it->second < 0) fail(fmt::format("buffer {}: dimension {} is negative", buffer, dim));
  return it->second;
}

size_t element_count(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

using Scalars = std::map<std::string, int64_t>;

// A scalar parameter's value, truncated to its width as the interpreter binds it.
KernelArg scalar_arg(const kir::Kernel& k, const kir::Param& p, const SizeBindings& sizes, Scalars& scalars) {
  auto it = sizes.find(p.name);
  if (it == sizes.end()) fail(fmt::format("kernel {}: scalar parameter {} is not bound", k.name, p.name));
  if (p.type == ScalarType::I64) return scalars[p.name] = it->second;
  if (p.type == ScalarType::I32) return static_cast<int32_t>(scalars[p.name] = static_cast<int32_t>(it->second));
  if (p.type == ScalarType::U32)
    return static_cast<int32_t>(scalars[p.name] = static_cast<uint32_t>(static_cast<uint64_t>(it->second)));
  fail(fmt::format("kernel {}: scalar parameter {} of type {} is not supported", k.name, p.name,
                   kir::type_name(p.type)));
}

// Buffer `name`'s device address; `wide_because` (non-empty: how the kernel copies it 16 bytes
// at a time) requires a 16-byte aligned base.
DevicePtr device_address(const kir::Kernel& k, const std::string& name, const std::map<std::string, DevicePtr>& buffers,
                         std::string_view wide_because) {
  auto it = buffers.find(name);
  if (it == buffers.end()) fail(fmt::format("kernel {}: no device buffer is given for {}", k.name, name));
  const uint64_t address = it->second.address;
  if (!wide_because.empty() && address % 16 != 0)
    fail(
        fmt::format("buffer {} is at address 0x{:x}, not 16-byte aligned: kernel {} copies it {}; pass a tensor whose "
                    "data starts 16-byte aligned (e.g. .contiguous().clone() of a view), or a schedule without them",
                    name, address, k.name, wide_because));
  return it->second;
}

// CUtensorMapDataType of each element type a tensor map may copy.
constexpr std::pair<ScalarType, int> kTmaDataType[] = {
    {ScalarType::F16, 6}, {ScalarType::F32, 7}, {ScalarType::F64, 8}, {ScalarType::BF16, 9},
    {ScalarType::I32, 3}, {ScalarType::U32, 2}, {ScalarType::I64, 5}};

// A TensorMap parameter's descriptor over its buffer, or the staged copy of its rows the launch
// makes (its descriptor encoded at launch; `arg` left for the caller). A tensor without elements
// (a dimension of 0) has none: the kernel never reads its map (its tiles are zeros), an empty
// descriptor goes. Sizes past another of the hardware's limits are an error.
std::variant<KernelArg, StagedMap> tensor_map_arg(const Driver& driver, const kir::Program& program,
                                                  const kir::Kernel& k, const kir::Param& p,
                                                  const std::map<std::string, DevicePtr>& buffers,
                                                  const SizeBindings& sizes) {
  auto b = std::find_if(program.buffers.begin(), program.buffers.end(),
                        [&](const kir::Buffer& x) { return x.name == p.map_of; });
  if (b == program.buffers.end())
    fail(fmt::format("kernel {}: tensor map {} is over {}, not a buffer", k.name, p.name, p.map_of));
  const std::vector<int64_t> shape = buffer_shape(*b, sizes);
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return TensorMapArg{};
  auto map = kir::tma_map_of(p, b->type, shape, 0);
  if (const std::string* why = std::get_if<std::string>(&map))
    fail(fmt::format("kernel {}: {}; run it with a schedule whose STAGE copies by cp.async (e.g. d3/cp/ring)", k.name,
                     *why));
  const kir::TmaMap& m = std::get<kir::TmaMap>(map);
  TiledMapSpec spec;
  auto type =
      std::find_if(std::begin(kTmaDataType), std::end(kTmaDataType), [&](const auto& t) { return t.first == b->type; });
  if (type == std::end(kTmaDataType))
    fail(fmt::format("kernel {}: TMA copies of {} are not supported", k.name, kir::type_name(b->type)));
  spec.data_type = type->second;
  spec.rank = m.rank;
  spec.dims = m.dims;
  spec.strides = m.strides;
  spec.box = m.box;
  spec.swizzle = static_cast<int>(m.swizzle);  // CUtensorMapSwizzle: none, 32B, 64B, 128B in that order
  if (m.staged_pitch != 0)                     // any base will do: the copy is 16-byte aligned
    return StagedMap{0, spec, device_address(k, b->name, buffers, ""), kir::tma_row_bytes(m), kir::tma_staged_rows(m)};
  spec.base = device_address(k, b->name, buffers, "with TMA");
  return driver.encode_tiled(spec);
}

}  // namespace

std::vector<int64_t> buffer_shape(const kir::Buffer& buffer, const SizeBindings& sizes) {
  std::vector<int64_t> shape;
  for (const std::string& dim : buffer.dims) shape.push_back(dim_value(dim, sizes, buffer.name));
  return shape;
}

size_t buffer_bytes(const kir::Buffer& buffer, const SizeBindings& sizes) {
  return element_count(buffer_shape(buffer, sizes)) * static_cast<size_t>(kir::type_bytes(buffer.type));
}

LoadedProgram::LoadedProgram(const Driver& driver, const kir::Program& program, const std::vector<char>& cubin)
    : driver_(&driver), program_(program), module_(driver.load_module(cubin)) {
  for (const kir::Kernel& k : program_.kernels) {
    functions_.push_back(driver.function(module_, k.name));
    const size_t dynamic = kir::uses_dynamic_shared(k) ? static_cast<size_t>(kir::shared_bytes(k)) : 0;
    if (dynamic) driver.allow_dynamic_shared(functions_.back(), static_cast<int>(dynamic));
    blocks_per_sm_.push_back(driver.max_active_blocks(functions_.back(), k.block_threads, dynamic));
    if (blocks_per_sm_.back() == 0)
      fail(
          fmt::format("kernel {} cannot run on {}: not one block of {} threads fits on a multiprocessor "
                      "(registers or shared memory; see emmyc compile --ir ptx)",
                      k.name, driver.name(), k.block_threads));
  }
}

std::vector<KernelLaunch> LoadedProgram::bind(const std::map<std::string, DevicePtr>& buffers,
                                              const SizeBindings& sizes) const {
  if (auto broken = kir::check_limits(program_, sizes)) fail(*broken);
  std::vector<KernelLaunch> launches;
  for (size_t i = 0; i < program_.kernels.size(); ++i) {
    const kir::Kernel& k = program_.kernels[i];
    KernelLaunch l{&k, functions_[i],
                   {}, {static_cast<unsigned>(k.block_threads)},
                   {}, kir::uses_dynamic_shared(k) ? static_cast<unsigned>(kir::shared_bytes(k)) : 0u,
                   {}};
    Scalars scalars;
    const std::vector<std::string> wide = kir::wide_access_buffers(k);
    for (const kir::Param& p : k.params) {
      if (p.kind == kir::Param::Kind::Buffer)
        l.args.push_back(device_address(k, p.name, buffers,
                                        std::count(wide.begin(), wide.end(), p.name) > 0
                                            ? "16 bytes at a time (STAGE cp.async or COOP vector accesses)"
                                            : ""));
      else if (p.kind == kir::Param::Kind::Scalar)
        l.args.push_back(scalar_arg(k, p, sizes, scalars));
      else if (auto map = tensor_map_arg(*driver_, program_, k, p, buffers, sizes);
               auto* staged = std::get_if<StagedMap>(&map)) {
        staged->arg = l.args.size();
        l.staged.push_back(*staged);
        l.args.push_back(TensorMapArg{});  // encoded at each launch, over that launch's copy
      } else {
        l.args.push_back(std::get<KernelArg>(map));
      }
    }
    auto grid = kir::evaluate_launch_expr(k.grid_x, scalars);
    if (const auto* what = std::get_if<std::string>(&grid)) fail(fmt::format("kernel {}: grid_x {}", k.name, *what));
    const int64_t blocks = std::get<int64_t>(grid);
    if (blocks < 0 || blocks > std::numeric_limits<int32_t>::max())
      fail(fmt::format("kernel {}: grid_x is {}", k.name, blocks));
    if (blocks == 0) continue;
    // A persistent kernel's CTAs walk its tiles: as many as the device holds at once (whole
    // clusters: the grid a multiple of the kernel's cluster, as every grid of a clustered kernel is).
    int64_t ctas =
        k.persistent ? std::min<int64_t>(blocks, int64_t{driver_->multiprocessors()} * blocks_per_sm_[i]) : blocks;
    if (k.cluster > 1) ctas = std::max<int64_t>(ctas - ctas % k.cluster, k.cluster);
    l.grid.x = static_cast<unsigned>(ctas);
    launches.push_back(std::move(l));
  }
  return launches;
}

void LoadedProgram::launch(const KernelLaunch& l, StreamRef stream) const {
  if (l.staged.empty()) return driver_->launch(l.function, l.grid, l.block, l.args, stream, l.dynamic_smem);
  std::vector<KernelArg> args = l.args;
  std::vector<DevicePtr> scratch;
  auto give_back = [&] {
    for (DevicePtr p : scratch) driver_->free_async(p, stream);
  };
  try {
    for (const StagedMap& s : l.staged) {
      const uint64_t pitch = s.spec.strides[1];  // the map's row stride: the copy's pitch
      scratch.push_back(driver_->alloc_async(s.rows * pitch, stream));
      driver_->copy_rows_async(scratch.back(), pitch, s.source, s.row_bytes, s.row_bytes, s.rows, stream);
      TiledMapSpec spec = s.spec;
      spec.base = scratch.back();
      args[s.arg] = driver_->encode_tiled(spec);
    }
    driver_->launch(l.function, l.grid, l.block, args, stream, l.dynamic_smem);
  } catch (...) {
    give_back();
    throw;
  }
  give_back();
}

std::map<std::string, DevicePtr> DeviceTensors::addresses() const {
  std::map<std::string, DevicePtr> out;
  for (const auto& [name, buffer] : buffers) out[name] = buffer.ptr();
  return out;
}

DeviceTensors allocate_results(const Driver& driver, const kir::Program& program, const SizeBindings& sizes) {
  DeviceTensors t;
  for (const kir::Buffer& b : program.buffers) {
    if (b.role == kir::Buffer::Role::Input) continue;
    DeviceBuffer memory = driver.alloc(buffer_bytes(b, sizes));
    driver.fill(memory, 0xff);  // NaN / -1 poison, as the interpreter does
    t.buffers.emplace(b.name, std::move(memory));
  }
  return t;
}

DeviceTensors upload(const Driver& driver, const kir::Program& program, const SizeBindings& sizes,
                     const TensorMap& inputs) {
  DeviceTensors t = allocate_results(driver, program, sizes);
  for (const kir::Buffer& b : program.buffers) {
    if (b.role != kir::Buffer::Role::Input) continue;
    const std::vector<int64_t> shape = buffer_shape(b, sizes);
    auto it = inputs.find(b.name);
    if (it == inputs.end()) fail(fmt::format("input buffer {} is not given", b.name));
    const HostTensor& h = it->second;
    if (h.shape != shape)
      fail(fmt::format("input buffer {}: the tensor's shape does not match the buffer's dims", b.name));
    bool ints = !kir::is_float(b.type) && !is_float(h.dtype);
    if (h.dtype != kir::dtype_of(b.type) && !(b.type == ScalarType::U32 && ints))
      fail(fmt::format("input buffer {} is {}, the tensor is {}", b.name, kir::type_name(b.type), dtype_name(h.dtype)));
    DeviceBuffer memory = driver.alloc(buffer_bytes(b, sizes));
    const std::vector<uint8_t> bytes = kir::encode_values(b.type, h.data);
    driver.copy_to_device(memory, bytes.data(), bytes.size());
    t.buffers.emplace(b.name, std::move(memory));
  }
  return t;
}

TensorMap download_outputs(const Driver& driver, const kir::Program& program, const SizeBindings& sizes,
                           const DeviceTensors& tensors) {
  TensorMap out;
  for (const kir::Buffer& b : program.buffers) {
    if (b.role != kir::Buffer::Role::Output) continue;
    const DeviceBuffer& memory = tensors.buffers.at(b.name);
    std::vector<uint8_t> bytes(memory.bytes());
    driver.copy_to_host(bytes.data(), memory, bytes.size());
    HostTensor& h = out[b.name];
    h.dtype = kir::dtype_of(b.type);
    h.shape = buffer_shape(b, sizes);
    h.data = kir::decode_values(b.type, bytes.data(), element_count(h.shape));
  }
  return out;
}

ProgramRun prepare_run(const Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
                       const SizeBindings& sizes, const TensorMap& inputs) {
  ProgramRun run{upload(driver, program, sizes, inputs), LoadedProgram(driver, program, cubin), {}};
  run.launches = run.loaded.bind(run.tensors.addresses(), sizes);
  return run;
}

TensorMap run_on_gpu(Driver& driver, const kir::Program& program, const std::vector<char>& cubin,
                     const SizeBindings& sizes, const TensorMap& inputs, RunTiming* timing) {
  try {
    const ProgramRun run = prepare_run(driver, program, cubin, sizes, inputs);
    const Event start = driver.create_event(), end = driver.create_event();
    if (timing) *timing = RunTiming{0.0f, std::vector<float>(program.kernels.size(), 0.0f)};
    for (const KernelLaunch& l : run.launches) {
      if (timing) driver.record(start, nullptr);
      run.loaded.launch(l, nullptr);
      if (!timing) continue;
      driver.record(end, nullptr);
      const float ms = driver.elapsed_ms(start, end);
      timing->kernel_ms[run.loaded.index_of(l)] = ms;
      timing->total_ms += ms;
    }
    driver.synchronize(nullptr);
    return download_outputs(driver, program, sizes, run.tensors);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("run_on_gpu: ") + e.what());
  }
}

}  // namespace emmy::runtime
