// The CUDA driver through dlopen("libcuda.so.1") and cuGetProcAddress_v2: Emmy starts without a driver.
#include "runtime/driver.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace emmy::runtime {
namespace {

// ---- the driver entry points, declared from cuda.h's documented signatures ---------------------
using Result = int;        // CUresult; 0 is CUDA_SUCCESS
using Device = int;        // CUdevice
using Address = uint64_t;  // CUdeviceptr
using Context = ContextOpaque*;
using ModuleH = ModuleOpaque*;
using FunctionH = FunctionOpaque*;
using StreamH = StreamOpaque*;
using EventH = EventOpaque*;

// The ABI version every entry point is resolved at: CUDA 12.0 (cuMemAlloc_v2, cuStreamDestroy_v2...).
constexpr int kAbiVersion = 12000;
constexpr int kAttrMultiprocessors = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;          // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;          // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kAttrL2Bytes = 38;          // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
constexpr int kAttrMaxThreadsPerSm = 39;  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
constexpr unsigned kStreamNonBlocking = 1;
constexpr Result kErrorStubLibrary = 34;  // CUDA_ERROR_STUB_LIBRARY

// CUDA_MEMCPY2D (cuda.h's layout, field for field); memory types: CU_MEMORYTYPE_DEVICE is 2.
constexpr int kMemoryTypeDevice = 2;
struct Memcpy2D {
  size_t src_x_bytes = 0, src_y = 0;
  int src_memory_type = 0;
  const void* src_host = nullptr;
  Address src_device = 0;
  void* src_array = nullptr;
  size_t src_pitch = 0;
  size_t dst_x_bytes = 0, dst_y = 0;
  int dst_memory_type = 0;
  void* dst_host = nullptr;
  Address dst_device = 0;
  void* dst_array = nullptr;
  size_t dst_pitch = 0;
  size_t width_bytes = 0, height = 0;
};
static_assert(sizeof(Memcpy2D) == 128, "CUDA_MEMCPY2D is 128 bytes");

using GetProcAddress = Result (*)(const char*, void**, int, uint64_t, int*);

struct Api {
  Result (*init)(unsigned) = nullptr;
  Result (*driver_get_version)(int*) = nullptr;
  Result (*get_error_name)(Result, const char**) = nullptr;
  Result (*device_get_count)(int*) = nullptr;
  Result (*device_get)(Device*, int) = nullptr;
  Result (*device_get_name)(char*, int, Device) = nullptr;
  Result (*device_get_attribute)(int*, int, Device) = nullptr;
  Result (*primary_ctx_retain)(Context*, Device) = nullptr;
  Result (*primary_ctx_release)(Device) = nullptr;
  Result (*ctx_set_current)(Context) = nullptr;
  Result (*module_load_data)(ModuleH*, const void*) = nullptr;
  Result (*module_unload)(ModuleH) = nullptr;
  Result (*module_get_function)(FunctionH*, ModuleH, const char*) = nullptr;
  Result (*mem_alloc)(Address*, size_t) = nullptr;
  Result (*mem_free)(Address) = nullptr;
  Result (*memset_d8)(Address, unsigned char, size_t) = nullptr;
  Result (*memset_d8_async)(Address, unsigned char, size_t, StreamH) = nullptr;
  Result (*memcpy_htod)(Address, const void*, size_t) = nullptr;
  Result (*memcpy_dtoh)(void*, Address, size_t) = nullptr;
  Result (*mem_alloc_async)(Address*, size_t, StreamH) = nullptr;
  Result (*mem_free_async)(Address, StreamH) = nullptr;
  Result (*memcpy_2d_async)(const Memcpy2D*, StreamH) = nullptr;
  Result (*stream_create)(StreamH*, unsigned) = nullptr;
  Result (*stream_destroy)(StreamH) = nullptr;
  Result (*stream_synchronize)(StreamH) = nullptr;
  Result (*event_create)(EventH*, unsigned) = nullptr;
  Result (*event_destroy)(EventH) = nullptr;
  Result (*event_record)(EventH, StreamH) = nullptr;
  Result (*event_synchronize)(EventH) = nullptr;
  Result (*event_elapsed_time)(float*, EventH, EventH) = nullptr;
  Result (*occupancy_max_active_blocks)(int*, FunctionH, int, size_t) = nullptr;
  Result (*func_set_attribute)(FunctionH, int, int) = nullptr;
  Result (*launch_kernel)(FunctionH, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, StreamH,
                          void**, void**) = nullptr;
  // map, data type, rank, address, dims, strides, box, element strides, interleave, swizzle, L2, OOB fill
  Result (*tensor_map_encode_tiled)(void*, int, uint32_t, void*, const uint64_t*, const uint64_t*, const uint32_t*,
                                    const uint32_t*, int, int, int, int) = nullptr;
};

struct Library {
  Api api;
  std::string error;  // empty when the driver is loaded, initialised and has every entry point
};

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string error_name(const Api& api, Result result) {
  const char* name = nullptr;
  if (api.get_error_name && api.get_error_name(result, &name) == 0 && name) return fmt::format("{} ({})", name, result);
  return fmt::format("CUresult {}", result);
}

template <class F>
void resolve(GetProcAddress get, const char* name, F& slot, std::string& missing) {
  void* symbol = nullptr;
  int status = 0;
  const Result r = get(name, &symbol, kAbiVersion, 0, &status);
  if (r != 0) symbol = nullptr;
  slot = reinterpret_cast<F>(symbol);
  if (symbol || !missing.empty()) return;
  missing = r == kErrorStubLibrary ? fmt::format("{} (CUDA_ERROR_STUB_LIBRARY: a stub, not a driver)", name)
                                   : fmt::format("{} (CUresult {})", name, r);
}

std::string resolve_all(GetProcAddress get, Api& a) {
  std::string missing;
  resolve(get, "cuInit", a.init, missing);
  resolve(get, "cuDriverGetVersion", a.driver_get_version, missing);
  resolve(get, "cuGetErrorName", a.get_error_name, missing);
  resolve(get, "cuDeviceGetCount", a.device_get_count, missing);
  resolve(get, "cuDeviceGet", a.device_get, missing);
  resolve(get, "cuDeviceGetName", a.device_get_name, missing);
  resolve(get, "cuDeviceGetAttribute", a.device_get_attribute, missing);
  resolve(get, "cuDevicePrimaryCtxRetain", a.primary_ctx_retain, missing);
  resolve(get, "cuDevicePrimaryCtxRelease", a.primary_ctx_release, missing);
  resolve(get, "cuCtxSetCurrent", a.ctx_set_current, missing);
  resolve(get, "cuModuleLoadData", a.module_load_data, missing);
  resolve(get, "cuModuleUnload", a.module_unload, missing);
  resolve(get, "cuModuleGetFunction", a.module_get_function, missing);
  resolve(get, "cuMemAlloc", a.mem_alloc, missing);
  resolve(get, "cuMemFree", a.mem_free, missing);
  resolve(get, "cuMemsetD8", a.memset_d8, missing);
  resolve(get, "cuMemsetD8Async", a.memset_d8_async, missing);
  resolve(get, "cuMemcpyHtoD", a.memcpy_htod, missing);
  resolve(get, "cuMemcpyDtoH", a.memcpy_dtoh, missing);
  resolve(get, "cuMemAllocAsync", a.mem_alloc_async, missing);
  resolve(get, "cuMemFreeAsync", a.mem_free_async, missing);
  resolve(get, "cuMemcpy2DAsync", a.memcpy_2d_async, missing);
  resolve(get, "cuStreamCreate", a.stream_create, missing);
  resolve(get, "cuStreamDestroy", a.stream_destroy, missing);
  resolve(get, "cuStreamSynchronize", a.stream_synchronize, missing);
  resolve(get, "cuEventCreate", a.event_create, missing);
  resolve(get, "cuEventDestroy", a.event_destroy, missing);
  resolve(get, "cuEventRecord", a.event_record, missing);
  resolve(get, "cuEventSynchronize", a.event_synchronize, missing);
  resolve(get, "cuEventElapsedTime", a.event_elapsed_time, missing);
  resolve(get, "cuOccupancyMaxActiveBlocksPerMultiprocessor", a.occupancy_max_active_blocks, missing);
  resolve(get, "cuLaunchKernel", a.launch_kernel, missing);
  resolve(get, "cuFuncSetAttribute", a.func_set_attribute, missing);
  resolve(get, "cuTensorMapEncodeTiled", a.tensor_map_encode_tiled, missing);
  return missing;
}

Library load_library() {
  Library lib;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    lib.error = "no CUDA driver: " + one_line(dlerror());
    return lib;
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!get) {
    lib.error = "libcuda.so.1 has no cuGetProcAddress_v2 (a driver older than CUDA 12)";
    return lib;
  }
  if (std::string missing = resolve_all(get, lib.api); !missing.empty()) {
    lib.error = "libcuda.so.1 has no " + missing + " at ABI version 12.0";
    return lib;
  }
  if (Result r = lib.api.init(0); r != 0) lib.error = "cuInit failed: " + error_name(lib.api, r);
  return lib;
}

// The one piece of global state: the driver library, loaded and initialised once on first use
// (thread-safe static initialisation) and never unloaded.
const Library& library() {
  static const Library lib = load_library();
  return lib;
}

// cuDriverGetVersion alone, from its own handle: it needs no cuInit, which library() calls.
int read_driver_version() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) return 0;
  using VersionFn = Result (*)(int*);
  auto get = reinterpret_cast<VersionFn>(dlsym(handle, "cuDriverGetVersion"));
  int version = 0;
  if (!get || get(&version) != 0) version = 0;
  return version;
}

// The entry points; only called once a Driver exists, so the library is loaded.
const Api& api() { return library().api; }

void check(Result result, std::string_view what) {
  if (result != 0) throw std::runtime_error(fmt::format("{} failed: {}", what, error_name(api(), result)));
}

// Why the first device cannot be used, or "" when it can.
std::string device_problem(const Api& a) {
  int count = 0;
  if (Result r = a.device_get_count(&count); r != 0) return "cuDeviceGetCount failed: " + error_name(a, r);
  return count > 0 ? "" : "no CUDA device";
}

int attribute(int which, Device device) {
  int value = 0;
  check(api().device_get_attribute(&value, which, device), "cuDeviceGetAttribute");
  return value;
}

// A kernel parameter's storage: the driver reads the width of the parameter from its address.
union ArgHolder {
  uint64_t address;
  int64_t i64;
  int32_t i32;
  TensorMapArg map;
};

ArgHolder hold(const KernelArg& arg) {
  ArgHolder h{};
  if (const auto* p = std::get_if<DevicePtr>(&arg))
    h.address = p->address;
  else if (const auto* i = std::get_if<int64_t>(&arg))
    h.i64 = *i;
  else if (const auto* m = std::get_if<TensorMapArg>(&arg))
    h.map = *m;
  else
    h.i32 = std::get<int32_t>(arg);
  return h;
}

}  // namespace

// ---- owned handles -------------------------------------------------------------------------------
void ModuleUnload::operator()(ModuleOpaque* module) const { api().module_unload(module); }
void StreamDestroy::operator()(StreamOpaque* stream) const { api().stream_destroy(stream); }
void EventDestroy::operator()(EventOpaque* event) const { api().event_destroy(event); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : address_(std::exchange(other.address_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (address_ != 0) api().mem_free(address_);
  address_ = 0;
  bytes_ = 0;
}

// ---- the driver ----------------------------------------------------------------------------------
namespace {

// The first device, or nullopt with the one-line reason (no driver library, no device).
std::optional<Device> first_device(std::string* why) {
  const Library& lib = library();
  std::string problem = lib.error.empty() ? device_problem(lib.api) : lib.error;
  if (why) *why = problem;
  if (!problem.empty()) return std::nullopt;
  Device device = 0;
  check(lib.api.device_get(&device, 0), "cuDeviceGet");
  return device;
}

}  // namespace

int installed_driver_version() {
  static const int version = read_driver_version();  // loaded once, never unloaded
  return version;
}

std::optional<int> device_compute_capability(std::string* why) {
  std::optional<Device> device = first_device(why);
  if (!device) return std::nullopt;
  return attribute(kAttrCcMajor, *device) * 10 + attribute(kAttrCcMinor, *device);
}

std::optional<std::string> device_name(std::string* why) {
  std::optional<Device> device = first_device(why);
  if (!device) return std::nullopt;
  char name[256] = {};
  check(api().device_get_name(name, sizeof name - 1, *device), "cuDeviceGetName");
  return std::string(name);
}

std::optional<Driver> Driver::open(std::string* why) {
  std::optional<Device> device = first_device(why);
  if (!device) return std::nullopt;
  const Library& lib = library();
  Driver d;
  d.device_ = *device;
  check(lib.api.primary_ctx_retain(&d.context_, d.device_), "cuDevicePrimaryCtxRetain");
  d.make_current();
  char name[256] = {};
  check(lib.api.device_get_name(name, sizeof name - 1, d.device_), "cuDeviceGetName");
  d.name_ = name;
  d.cc_major_ = attribute(kAttrCcMajor, d.device_);
  d.cc_minor_ = attribute(kAttrCcMinor, d.device_);
  d.multiprocessors_ = attribute(kAttrMultiprocessors, d.device_);
  d.max_threads_per_sm_ = attribute(kAttrMaxThreadsPerSm, d.device_);
  d.l2_bytes_ = attribute(kAttrL2Bytes, d.device_);
  check(lib.api.driver_get_version(&d.driver_version_), "cuDriverGetVersion");
  return d;
}

Driver::Driver(Driver&& other) noexcept
    : device_(other.device_),
      context_(std::exchange(other.context_, nullptr)),
      name_(std::move(other.name_)),
      cc_major_(other.cc_major_),
      cc_minor_(other.cc_minor_),
      multiprocessors_(other.multiprocessors_),
      driver_version_(other.driver_version_),
      max_threads_per_sm_(other.max_threads_per_sm_),
      l2_bytes_(other.l2_bytes_) {}

Driver::~Driver() {
  if (context_) api().primary_ctx_release(device_);
}

void Driver::make_current() const { check(api().ctx_set_current(context_), "cuCtxSetCurrent"); }

Module Driver::load_module(const std::vector<char>& cubin) const {
  if (cubin.empty()) throw std::runtime_error("cuModuleLoadData: the CUBIN is empty");
  ModuleH module = nullptr;
  check(api().module_load_data(&module, cubin.data()), "cuModuleLoadData");
  return Module(module);
}

Function Driver::function(const Module& module, const std::string& name) const {
  Function f{nullptr, name};
  check(api().module_get_function(&f.handle, module.get(), name.c_str()), "cuModuleGetFunction " + name);
  return f;
}

DeviceBuffer Driver::alloc(size_t bytes) const {
  if (bytes == 0) return {};
  Address address = 0;
  check(api().mem_alloc(&address, bytes), fmt::format("cuMemAlloc of {} bytes", bytes));
  return {address, bytes};
}

void Driver::fill(const DeviceBuffer& buffer, uint8_t byte) const {
  if (buffer.bytes() > 0) check(api().memset_d8(buffer.ptr().address, byte, buffer.bytes()), "cuMemsetD8");
}

void Driver::fill_async(const DeviceBuffer& buffer, uint8_t byte, StreamRef stream) const {
  if (buffer.bytes() > 0)
    check(api().memset_d8_async(buffer.ptr().address, byte, buffer.bytes(), stream), "cuMemsetD8Async");
}

void Driver::copy_to_device(const DeviceBuffer& dst, const void* src, size_t bytes) const {
  if (bytes > dst.bytes()) throw std::runtime_error("cuMemcpyHtoD: more bytes than the buffer holds");
  if (bytes > 0) check(api().memcpy_htod(dst.ptr().address, src, bytes), "cuMemcpyHtoD");
}

void Driver::copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) const {
  if (bytes > src.bytes()) throw std::runtime_error("cuMemcpyDtoH: more bytes than the buffer holds");
  if (bytes > 0) check(api().memcpy_dtoh(dst, src.ptr().address, bytes), "cuMemcpyDtoH");
}

DevicePtr Driver::alloc_async(size_t bytes, StreamRef stream) const {
  Address address = 0;
  if (bytes > 0)
    check(api().mem_alloc_async(&address, bytes, stream), fmt::format("cuMemAllocAsync of {} bytes", bytes));
  return {address};
}

void Driver::free_async(DevicePtr ptr, StreamRef stream) const {
  if (ptr.address != 0) check(api().mem_free_async(ptr.address, stream), "cuMemFreeAsync");
}

void Driver::copy_rows_async(DevicePtr dst, size_t dst_pitch, DevicePtr src, size_t src_pitch, size_t row_bytes,
                             size_t rows, StreamRef stream) const {
  if (row_bytes == 0 || rows == 0) return;
  Memcpy2D copy;
  copy.src_memory_type = copy.dst_memory_type = kMemoryTypeDevice;
  copy.src_device = src.address;
  copy.src_pitch = src_pitch;
  copy.dst_device = dst.address;
  copy.dst_pitch = dst_pitch;
  copy.width_bytes = row_bytes;
  copy.height = rows;
  check(api().memcpy_2d_async(&copy, stream), "cuMemcpy2DAsync");
}

Stream Driver::create_stream() const {
  StreamH stream = nullptr;
  check(api().stream_create(&stream, kStreamNonBlocking), "cuStreamCreate");
  return Stream(stream);
}

void Driver::synchronize(StreamRef stream) const { check(api().stream_synchronize(stream), "cuStreamSynchronize"); }

Event Driver::create_event() const {
  EventH event = nullptr;
  check(api().event_create(&event, 0), "cuEventCreate");  // CU_EVENT_DEFAULT: timing enabled
  return Event(event);
}

void Driver::record(const Event& event, StreamRef stream) const {
  check(api().event_record(event.get(), stream), "cuEventRecord");
}

float Driver::elapsed_ms(const Event& start, const Event& end) const {
  check(api().event_synchronize(end.get()), "cuEventSynchronize");
  float ms = 0;
  check(api().event_elapsed_time(&ms, start.get(), end.get()), "cuEventElapsedTime");
  return ms;
}

int Driver::max_active_blocks(const Function& function, int block_threads, size_t dynamic_smem) const {
  int blocks = 0;
  check(api().occupancy_max_active_blocks(&blocks, function.handle, block_threads, dynamic_smem),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor " + function.name);
  return blocks;
}

void Driver::allow_dynamic_shared(const Function& function, int bytes) const {
  constexpr int kMaxDynamicSharedSizeBytes = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  check(api().func_set_attribute(function.handle, kMaxDynamicSharedSizeBytes, bytes),
        fmt::format("cuFuncSetAttribute {} (max dynamic shared memory {} bytes)", function.name, bytes));
}

void Driver::launch(const Function& function, Dim3 grid, Dim3 block, const std::vector<KernelArg>& args,
                    StreamRef stream, unsigned dynamic_smem) const {
  std::vector<ArgHolder> holders;
  for (const KernelArg& arg : args) holders.push_back(hold(arg));
  std::vector<void*> params;
  for (ArgHolder& h : holders) params.push_back(&h);
  check(api().launch_kernel(function.handle, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamic_smem, stream,
                            params.data(), nullptr),
        "cuLaunchKernel " + function.name);
}

TensorMapArg Driver::encode_tiled(const TiledMapSpec& spec) const {
  constexpr int kNoInterleave = 0, kL2Promotion256 = 3, kOobZero = 0;
  const std::array<uint32_t, 5> element_strides{1, 1, 1, 1, 1};
  TensorMapArg map;
  // The strides of dimensions 1 .. rank-1 (the driver takes rank - 1 of them).
  check(api().tensor_map_encode_tiled(map.words.data(), spec.data_type, static_cast<uint32_t>(spec.rank),
                                      reinterpret_cast<void*>(spec.base.address), spec.dims.data(),
                                      spec.strides.data() + 1, spec.box.data(), element_strides.data(), kNoInterleave,
                                      spec.swizzle, kL2Promotion256, kOobZero),
        "cuTensorMapEncodeTiled");
  return map;
}

}  // namespace emmy::runtime
