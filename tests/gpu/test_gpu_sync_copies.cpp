// The synchronous copies of runtime/memory.h (Tensor::to_vector, copy_from,
// zero: what checkpoints and user code read with) with non-blocking context
// streams: a read waits for the work queued on the streams of the tensor's
// device (compute, communication and copy streams, whatever thread queued
// it), a peer copy for both devices' streams, and a fill is not overtaken by
// an earlier queued copy. Each stream is held back first by a host function
// that sleeps, so a copy that did not wait would read the old values.
// In the emulated build also: a read does not wait for another device, nor
// for work on the legacy default stream (another library's), and the
// context's compute stream is not held back by such work either.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/cuda/cuda_check.h"
#include "runtime/allocator.h"
#include "runtime/context.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_memory.h"
#include "runtime/device.h"

using namespace lockstep;

namespace {

void CUDART_CB sleep_100ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

// Holds a stream until `released` is set (emulated build only: a real GPU
// runs host functions on a driver thread that must not block for long).
void CUDART_CB hold_until(void* released) {
  auto* flag = static_cast<std::atomic<bool>*>(released);
  while (!flag->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

Tensor pinned_values(int64_t n, float first) {
  Tensor t = Tensor::empty_with(Shape{n}, pinned_host_allocator());
  for (int64_t i = 0; i < n; ++i) t.data()[i] = first + static_cast<float>(i);
  return t;
}

std::vector<float> values(int64_t n, float first) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = first + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("a synchronous read waits for every stream of the tensor's device", "[gpu][sync-copies]") {
  const int64_t n = 1000;
  Context ctx(Device::cuda(0));
  ctx.make_current();
  CudaState& cuda = *ctx.cuda();
  Tensor t = Tensor::zeros(Shape{n}, Device::cuda(0));
  Tensor a = pinned_values(n, 1.0f), b = pinned_values(n, 5000.0f), c = pinned_values(n, -7.0f);

  SECTION("the compute stream") {
    LS_CUDA_CHECK(cudaLaunchHostFunc(cuda.compute_stream, sleep_100ms, nullptr));
    ctx.copy(a, t);
    REQUIRE(t.to_vector() == values(n, 1.0f));
  }
  SECTION("the communication and copy streams, queued from another thread") {
    std::thread other([&] {
      DeviceGuard guard(0);
      LS_CUDA_CHECK(cudaLaunchHostFunc(cuda.comm_stream, sleep_100ms, nullptr));
      cuda_copy_bytes_async(t.raw(), b.raw(), t.bytes(), cuda.comm_stream);
    });
    other.join();
    REQUIRE(t.to_vector() == values(n, 5000.0f));
    LS_CUDA_CHECK(cudaLaunchHostFunc(cuda.copy_stream, sleep_100ms, nullptr));
    cuda_copy_bytes_async(t.raw(), c.raw(), t.bytes(), cuda.copy_stream);
    REQUIRE(t.to_vector() == values(n, -7.0f));
  }
  SECTION("a fill is not overtaken by a copy queued before it") {
    LS_CUDA_CHECK(cudaLaunchHostFunc(cuda.compute_stream, sleep_100ms, nullptr));
    ctx.copy(a, t);
    t.zero();
    const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
    REQUIRE(t.to_vector() == zeros);
    ctx.synchronize();  // nothing queued before the fill is left to overwrite it
    REQUIRE(t.to_vector() == zeros);
  }
  SECTION("a write from the host is not overtaken by a read queued before it") {
    Tensor seen = Tensor::empty_with(Shape{n}, pinned_host_allocator());
    ctx.copy(a, t);
    LS_CUDA_CHECK(cudaLaunchHostFunc(cuda.compute_stream, sleep_100ms, nullptr));
    ctx.copy(t, seen);  // reads `t` after the sleep
    t.copy_from(b);     // must wait for that read
    ctx.synchronize();
    REQUIRE(seen.to_vector() == values(n, 1.0f));
    REQUIRE(t.to_vector() == values(n, 5000.0f));
  }
}

TEST_CASE("a peer copy waits for the streams of both devices", "[gpu][sync-copies]") {
  if (cuda_device_count() < 2) return;
  const int64_t n = 1000;
  Context ctx0(Device::cuda(0)), ctx1(Device::cuda(1));
  Tensor on0 = Tensor::zeros(Shape{n}, Device::cuda(0)), on1 = Tensor::zeros(Shape{n}, Device::cuda(1));
  Tensor a = pinned_values(n, 3.0f);
  {
    DeviceGuard guard(0);
    LS_CUDA_CHECK(cudaLaunchHostFunc(ctx0.cuda()->compute_stream, sleep_100ms, nullptr));
    ctx0.copy(a, on0);
  }
  on1.copy_from(on0);  // queued on device 1; the source is device 0's
  REQUIRE(on1.to_vector() == values(n, 3.0f));
}

#if LOCKSTEP_GPU_EMULATED
TEST_CASE("a synchronous read waits for no other device and no legacy-stream work", "[gpu][sync-copies]") {
  const int64_t n = 64;
  Context ctx0(Device::cuda(0));
  ctx0.make_current();
  Tensor t = Tensor::zeros(Shape{n}, Device::cuda(0));
  Tensor a = pinned_values(n, 2.0f);
  std::atomic<bool> released{false};
  // Released after 2 s at the latest, so a read that does wait ends the test
  // with a failure rather than a hang.
  std::thread releaser([&] {
    for (int i = 0; i < 2000 && !released.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    released.store(true);
  });
  std::unique_ptr<Context> ctx1;
  if (cuda_device_count() >= 2) {
    ctx1 = std::make_unique<Context>(Device::cuda(1));
    DeviceGuard guard(1);
    LS_CUDA_CHECK(cudaLaunchHostFunc(ctx1->cuda()->compute_stream, hold_until, &released));
  }
  // Another library's work on device 0's legacy stream, held.
  LS_CUDA_CHECK(cudaLaunchHostFunc(cudaStreamLegacy, hold_until, &released));
  ctx0.copy(a, t);  // the compute stream is not held back by the legacy stream
  const std::vector<float> read = t.to_vector();
  const bool waited = released.load();
  released.store(true);
  releaser.join();
  LS_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  if (ctx1) ctx1->synchronize();
  REQUIRE_FALSE(waited);
  REQUIRE(read == values(n, 2.0f));
}
#endif  // LOCKSTEP_GPU_EMULATED
