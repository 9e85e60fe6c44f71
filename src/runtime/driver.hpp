// The CUDA driver, loaded at run time with dlopen: device, modules, buffers, streams, events, launches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace emmy::runtime {

// Opaque driver handles (CUcontext, CUmodule, ...), declared here so that no CUDA header is needed.
struct ContextOpaque;
struct ModuleOpaque;
struct FunctionOpaque;
struct StreamOpaque;
struct EventOpaque;

// Deleters of the owned handles; they ignore errors (a destructor cannot report them).
struct ModuleUnload {
  void operator()(ModuleOpaque* module) const;
};
struct StreamDestroy {
  void operator()(StreamOpaque* stream) const;
};
struct EventDestroy {
  void operator()(EventOpaque* event) const;
};

// Owned handles: none may outlive the Driver that made them. A null Stream is the default stream.
using Module = std::unique_ptr<ModuleOpaque, ModuleUnload>;
using Stream = std::unique_ptr<StreamOpaque, StreamDestroy>;
using Event = std::unique_ptr<EventOpaque, EventDestroy>;

// A stream that is not owned here (a CUstream from the caller, or a Stream's get()); null is the
// default stream.
using StreamRef = StreamOpaque*;

// An entry function of a loaded module; valid while the module is loaded.
struct Function {
  FunctionOpaque* handle = nullptr;
  std::string name;
};

// A device address (CUdeviceptr).
struct DevicePtr {
  uint64_t address = 0;
};

// A TMA descriptor (CUtensorMap: 128 opaque bytes, 64-byte aligned), passed by value to a
// __grid_constant__ parameter.
struct TensorMapArg {
  alignas(64) std::array<uint64_t, 16> words{};
};

// What cuTensorMapEncodeTiled needs of a tensor: dimensions innermost first, the byte strides of
// dimensions 1 .. rank-1, the box, and the CUtensorMapDataType / CUtensorMapSwizzle codes.
struct TiledMapSpec {
  int data_type = 0;
  int rank = 2;
  DevicePtr base;
  std::array<uint64_t, 5> dims{}, strides{};  // strides[d]: dimension d >= 1
  std::array<uint32_t, 5> box{};
  int swizzle = 0;
};

// One kernel argument: a buffer's device address, a scalar of the parameter's exact width, or
// a tensor map.
using KernelArg = std::variant<DevicePtr, int64_t, int32_t, TensorMapArg>;

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Device memory, freed on destruction; zero bytes allocate nothing (address 0).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(uint64_t address, size_t bytes) : address_(address), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  DevicePtr ptr() const { return {address_}; }
  size_t bytes() const { return bytes_; }

 private:
  void release();
  uint64_t address_ = 0;
  size_t bytes_ = 0;
};

// The compute capability of the first device (major * 10 + minor: 90 on an H200) without
// creating a context; nullopt with the one-line reason when there is no usable driver or device.
std::optional<int> device_compute_capability(std::string* why = nullptr);
// The first device's name ("NVIDIA H200"), likewise without a context.
std::optional<std::string> device_name(std::string* why = nullptr);

// The installed driver's version (cuDriverGetVersion: 13000 for CUDA 13.0), read without cuInit;
// 0 when libcuda.so.1 cannot be loaded.
int installed_driver_version();

// The primary context of one device, current on the thread that opened it. Every call throws
// std::runtime_error naming the driver call and its CUresult when the driver reports an error.
class Driver {
 public:
  // The first device, or nullopt with a one-line reason (no libcuda, a stub, no device).
  static std::optional<Driver> open(std::string* why = nullptr);

  Driver(Driver&& other) noexcept;
  Driver& operator=(Driver&&) = delete;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;
  ~Driver();

  const std::string& name() const { return name_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }
  int multiprocessors() const { return multiprocessors_; }
  int max_threads_per_multiprocessor() const { return max_threads_per_sm_; }
  int l2_bytes() const { return l2_bytes_; }
  int driver_version() const { return driver_version_; }  // 13000 for CUDA 13.0
  void make_current() const;                              // for a thread other than the opener

  Module load_module(const std::vector<char>& cubin) const;
  Function function(const Module& module, const std::string& name) const;

  DeviceBuffer alloc(size_t bytes) const;
  void fill(const DeviceBuffer& buffer, uint8_t byte) const;
  void fill_async(const DeviceBuffer& buffer, uint8_t byte, StreamRef stream) const;
  void copy_to_device(const DeviceBuffer& dst, const void* src, size_t bytes) const;
  void copy_to_host(void* dst, const DeviceBuffer& src, size_t bytes) const;
  // Stream-ordered device memory (cuMemAllocAsync / cuMemFreeAsync: the driver's pool, no
  // synchronization), for scratch a launch uses and gives back in its stream.
  DevicePtr alloc_async(size_t bytes, StreamRef stream) const;
  void free_async(DevicePtr ptr, StreamRef stream) const;
  // `rows` rows of `row_bytes` from one device address to another, each side with its own pitch
  // (cuMemcpy2DAsync, device to device).
  void copy_rows_async(DevicePtr dst, size_t dst_pitch, DevicePtr src, size_t src_pitch, size_t row_bytes, size_t rows,
                       StreamRef stream) const;

  Stream create_stream() const;
  void synchronize(StreamRef stream) const;
  Event create_event() const;
  void record(const Event& event, StreamRef stream) const;
  float elapsed_ms(const Event& start, const Event& end) const;  // waits for `end`

  // Blocks of `function` one multiprocessor holds at once (cuOccupancyMaxActiveBlocksPerMultiprocessor).
  int max_active_blocks(const Function& function, int block_threads, size_t dynamic_smem = 0) const;

  // Raises the dynamic shared memory `function` may be launched with (cuFuncSetAttribute).
  void allow_dynamic_shared(const Function& function, int bytes) const;

  void launch(const Function& function, Dim3 grid, Dim3 block, const std::vector<KernelArg>& args, StreamRef stream,
              unsigned dynamic_smem = 0) const;

  // cuTensorMapEncodeTiled (no interleave, zero fill out of bounds, 256-byte L2 promotion).
  TensorMapArg encode_tiled(const TiledMapSpec& spec) const;

 private:
  Driver() = default;
  int device_ = 0;
  ContextOpaque* context_ = nullptr;  // retained; released on destruction
  std::string name_;
  int cc_major_ = 0, cc_minor_ = 0, multiprocessors_ = 0, driver_version_ = 0, max_threads_per_sm_ = 0, l2_bytes_ = 0;
};

}  // namespace emmy::runtime
