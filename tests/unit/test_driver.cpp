// The CUDA driver runtime: without a driver, a one-line reason and skipped GPU tests; with one,
// buffers round-trip and the fused sdpa (FA-1) program runs on the GPU and matches the reference.
#include <doctest/doctest.h>

#include <fstream>

#include <fmt/format.h>

#include "codegen/cuda/print_cuda.hpp"
#include "interp/reference.hpp"
#include "lower/passes.hpp"
#include "runtime/driver.hpp"
#include "runtime/launch_program.hpp"
#include "runtime/nvrtc.hpp"
#include "test_helpers.hpp"

namespace emmy {
namespace {

// The driver, or nullopt after a "skipped: <reason>" message.
std::optional<runtime::Driver> open_or_skip() {
  std::string why;
  std::optional<runtime::Driver> driver = runtime::Driver::open(&why);
  if (!driver) MESSAGE("skipped: " << why);
  return driver;
}

std::unique_ptr<test::Run> load(const std::string& path) { return test::check_file(path); }

}  // namespace

TEST_CASE("driver: open gives a device or a one-line reason") {
  std::string why;
  std::optional<runtime::Driver> driver = runtime::Driver::open(&why);
  if (!driver) {
    CHECK(!why.empty());
    CHECK(why.find('\n') == std::string::npos);
    MESSAGE("skipped: " << why);
    return;
  }
  CHECK(why.empty());
  CHECK(!driver->name().empty());
  CHECK(driver->cc_major() >= 7);
  CHECK(driver->multiprocessors() > 0);
  MESSAGE(fmt::format("{} sm_{}{}, {} SMs, driver {}", driver->name(), driver->cc_major(), driver->cc_minor(),
                      driver->multiprocessors(), driver->driver_version()));
}

TEST_CASE("driver: device buffers round-trip and events time") {
  std::optional<runtime::Driver> driver = open_or_skip();
  if (!driver) return;
  std::vector<int32_t> host(1000), back(1000, 0);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int32_t>(i * 7 - 300);
  runtime::DeviceBuffer buffer = driver->alloc(host.size() * sizeof(int32_t));
  const runtime::Stream stream = driver->create_stream();
  const runtime::Event start = driver->create_event(), end = driver->create_event();
  driver->record(start, stream.get());
  driver->copy_to_device(buffer, host.data(), buffer.bytes());
  driver->record(end, stream.get());
  driver->copy_to_host(back.data(), buffer, buffer.bytes());
  CHECK(back == host);
  CHECK(driver->elapsed_ms(start, end) >= 0);
  CHECK(driver->alloc(0).ptr().address == 0);
}

TEST_CASE("driver: the fused sdpa (FA-1) program on the GPU matches the reference at a ragged shape") {
  std::optional<runtime::Driver> driver = open_or_skip();
  if (!driver) return;
  std::string why;
  if (!runtime::nvrtc_available(&why)) {
    MESSAGE("skipped: " << why);
    return;
  }
  auto l = load(std::string(EMMY_SOURCE_DIR) + "/stdlib/nn.emmy");
  REQUIRE(!l->diags->has_errors());
  const CheckedOp& op = l->program->ops.at("sdpa");
  const TargetInfo& target = *find_target("sm_90");
  lower::Lowered low = lower::lower_op(*l->program, op, {nullptr, "", "PLACE=fuse,TILE=a:scalar,TILE@e=f64"}, target);
  runtime::CompileOptions co;
  co.target = &target;
  runtime::CompileResult compiled = runtime::compile_cuda(print_cuda(low.kernels), "sdpa.cu", co);
  REQUIRE_MESSAGE(compiled.ok, compiled.log);

  const SizeBindings sizes{{"B", 2}, {"H", 3}, {"S", 37}, {"T", 45}, {"D", 24}, {"E", 40}};
  const TensorMap inputs = random_inputs(op, sizes, 11);
  const TensorMap ref = evaluate_reference(*l->program, op, sizes, inputs);
  runtime::RunTiming timing;
  const TensorMap got = runtime::run_on_gpu(*driver, low.kernels, compiled.cubin, sizes, inputs, &timing);
  for (const auto& [name, want] : ref) {
    CAPTURE(name);
    REQUIRE(got.count(name));
    const Tolerance tol = tolerance_for(op, want.dtype);
    Comparison c = compare(got.at(name), want, tol);
    CHECK_MESSAGE(c.ok, failure_reason(name, c, tol, want.shape));
  }
  CHECK(timing.kernel_ms.size() == low.kernels.kernels.size());

  const runtime::Module module = driver->load_module(compiled.cubin);
  for (const kir::Kernel& k : low.kernels.kernels)
    CHECK(driver->max_active_blocks(driver->function(module, k.name), k.block_threads) >= 1);
  MESSAGE(fmt::format("{}: {} kernel(s), {:.3f} ms", driver->name(), timing.kernel_ms.size(), timing.total_ms));
}

}  // namespace emmy
