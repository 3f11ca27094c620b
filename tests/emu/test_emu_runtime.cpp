// Runtime calls on their edge cases: capture and replay, calls refused while
// capturing, legacy-stream ordering, out-of-memory, host synchronisations,
// events, copies that contradict their kind, launch configuration limits.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>

#include "emu_test_util.h"

namespace {
__global__ void axpy(float a, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += a * x[i];
}
__global__ void slow_set(float* p, float v) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  p[0] = v;
}
__global__ void copy_one(const float* p, float* out) { out[0] = p[0]; }
struct Big {
  char bytes[40000];
};
__global__ void takes_big(Big) {}
}  // namespace

TEST_CASE("capture and replay equal eager execution", "[emu][graph]") {
  const int n = 1000;
  std::vector<float> hx(n, 1.0f), hy(n, 2.0f);
  float* x = emu_test::to_device(hx);
  float* y = emu_test::to_device(hy);
  cudaStream_t s, side;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaEvent_t fork, join;
  cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  cudaStreamCaptureStatus st;
  REQUIRE(cudaStreamIsCapturing(s, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusActive);
  LS_LAUNCH(4, 256, 0, s, axpy)(2.0f, x, y, n);  // y = 2 + 2x = 4
  cudaEventRecord(fork, s);
  cudaStreamWaitEvent(side, fork, 0);  // side joins the capture
  LS_LAUNCH(4, 256, 0, side, axpy)(1.0f, x, y, n);  // y += x = 5
  cudaEventRecord(join, side);
  cudaStreamWaitEvent(s, join, 0);
  cudaMemsetAsync(x, 0, sizeof(float), s);  // x[0] = 0 after both
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  CHECK(emu_test::to_host(y, n)[0] == 2.0f);  // nothing ran while capturing
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);  // replays: y = 5, then 5 + 2*0 or 1... per element
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  auto ry = emu_test::to_host(y, n);
  CHECK(ry[0] == 5.0f);  // second replay saw x[0] = 0
  CHECK(ry[1] == 8.0f);  // 2 + 3 + 3
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(s);
  cudaStreamDestroy(side);
  cudaFree(x);
  cudaFree(y);
}

TEST_CASE("an event last recorded in a finished capture is refused until recorded again", "[emu][graph]") {
  // CUDA: cudaErrorCapturedEvent, "the operation is not permitted on an event
  // which was last recorded in a capturing stream" (the capture has no
  // pointer left to it once it ends). Also: work recorded into a capture is
  // no host launch; the graph's launch is one.
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float* p = emu_test::device_alloc<float>(4);
  cudaEvent_t e;
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  const uint64_t launches_before = lockstep::emu::host_launches_on_this_thread();
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaMemsetAsync(p, 0, 16, s);
  cudaMemsetAsync(p, 1, 16, s);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  CHECK(lockstep::emu::host_launches_on_this_thread() == launches_before);
  CHECK(cudaEventQuery(e) == cudaErrorCapturedEvent);
  CHECK(cudaEventSynchronize(e) == cudaErrorCapturedEvent);
  CHECK(cudaStreamWaitEvent(s, e, 0) == cudaErrorCapturedEvent);
  cudaGetLastError();
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  CHECK(lockstep::emu::host_launches_on_this_thread() == launches_before + 1);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);  // recorded outside a capture: usable again
  CHECK(cudaEventSynchronize(e) == cudaSuccess);
  CHECK(lockstep::emu::host_launches_on_this_thread() == launches_before + 2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
  cudaFree(p);
}

TEST_CASE("synchronising during capture is refused and invalidates the capture", "[emu][graph]") {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float* p = emu_test::device_alloc<float>(4);
  cudaGraph_t g = nullptr;
  SECTION("cudaStreamSynchronize") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    cudaMemsetAsync(p, 0, 16, s);
    CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaMemsetAsync(p, 0, 16, s) == cudaErrorStreamCaptureInvalidated);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
    CHECK(g == nullptr);
  }
  SECTION("a synchronous cudaMemcpy and cudaMalloc in global mode") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    float h[4];
    CHECK(cudaMemcpy(h, p, 16, cudaMemcpyDeviceToHost) == cudaErrorStreamCaptureUnsupported);
    void* q;
    CHECK(cudaMalloc(&q, 16) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  }
  SECTION("the legacy stream while a blocking stream captures") {
    cudaStream_t blocking;
    cudaStreamCreate(&blocking);
    REQUIRE(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed) == cudaSuccess);
    CHECK(cudaMemsetAsync(p, 0, 16, nullptr) == cudaErrorStreamCaptureImplicit);
    CHECK(cudaStreamEndCapture(blocking, &g) == cudaErrorStreamCaptureInvalidated);
    cudaStreamDestroy(blocking);
  }
  SECTION("capturing the legacy stream") {
    CHECK(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported);
  }
  cudaGetLastError();
  cudaStreamDestroy(s);
  cudaFree(p);
}

TEST_CASE("the legacy stream orders with blocking streams, not with non-blocking ones", "[emu][stream]") {
  float* buf = emu_test::device_alloc<float>(1);
  float* out = emu_test::device_alloc<float>(1);
  float result = -1;
  cudaMemset(buf, 0, sizeof(float));
  cudaStream_t blocking, nonblocking;
  cudaStreamCreate(&blocking);
  cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
  SECTION("blocking stream: legacy work waits for it") {
    LS_LAUNCH(1, 1, 0, blocking, slow_set)(buf, 7.0f);
    LS_LAUNCH(1, 1, 0, nullptr, copy_one)(buf, out);
    cudaMemcpy(&result, out, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(result == 7.0f);
  }
  SECTION("non-blocking stream: legacy work overlaps it") {
    LS_LAUNCH(1, 1, 0, nonblocking, slow_set)(buf, 7.0f);
    LS_LAUNCH(1, 1, 0, nullptr, copy_one)(buf, out);
    cudaMemcpy(&result, out, sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(result == 0.0f);
  }
  SECTION("blocking stream waits for earlier legacy work") {
    LS_LAUNCH(1, 1, 0, nullptr, slow_set)(buf, 9.0f);
    LS_LAUNCH(1, 1, 0, blocking, copy_one)(buf, out);
    cudaMemcpyAsync(&result, out, sizeof(float), cudaMemcpyDeviceToHost, blocking);
    cudaStreamSynchronize(blocking);
    CHECK(result == 9.0f);
  }
  cudaDeviceSynchronize();
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
  cudaFree(buf);
  cudaFree(out);
}

TEST_CASE("legacy_stream_calls counts every call that names the legacy stream", "[emu][stream]") {
  float* d = emu_test::device_alloc<float>(4);
  float* pinned;
  cudaMallocHost(reinterpret_cast<void**>(&pinned), 4 * sizeof(float));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const uint64_t n0 = lockstep::emu::legacy_stream_calls();
  // Work on a stream of our own names no legacy stream.
  cudaMemsetAsync(d, 0, 16, s);
  LS_LAUNCH(1, 1, 0, s, copy_one)(d, d);
  cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  CHECK(lockstep::emu::legacy_stream_calls() == n0);
  // Stream 0, cudaStreamLegacy, and the synchronous copy and fill do.
  cudaMemsetAsync(d, 0, 16, nullptr);
  cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, cudaStreamLegacy);
  cudaMemcpy(pinned, d, 16, cudaMemcpyDeviceToHost);
  cudaMemset(d, 0, 16);
  LS_LAUNCH(1, 1, 0, nullptr, copy_one)(d, d);
  cudaStreamSynchronize(nullptr);
  CHECK(lockstep::emu::legacy_stream_calls() == n0 + 6);
  cudaStreamDestroy(s);
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST_CASE("out of memory at the set capacity", "[emu][memory]") {
  size_t free0, total;
  REQUIRE(cudaMemGetInfo(&free0, &total) == cudaSuccess);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, total + 1) == cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaMalloc(&p, 1 << 20) == cudaSuccess);
  size_t free1;
  cudaMemGetInfo(&free1, &total);
  CHECK(free0 - free1 == (1 << 20));
  CHECK(cudaFree(p) == cudaSuccess);
  CHECK(cudaFree(p) == cudaErrorInvalidValue);  // double free
  CHECK(cudaMalloc(&p, 0) == cudaSuccess);
  CHECK(p == nullptr);
}

TEST_CASE("host_synchronizations counts every host wait", "[emu][stream]") {
  float* d = emu_test::device_alloc<float>(16);
  float* pinned;
  cudaMallocHost(reinterpret_cast<void**>(&pinned), 16 * sizeof(float));
  std::vector<float> pageable(16);
  cudaStream_t s;
  cudaStreamCreate(&s);
  uint64_t n0 = lockstep::emu::host_synchronizations();
  LS_LAUNCH(1, 16, 0, s, copy_one)(d, d);
  cudaMemcpyAsync(pinned, d, 64, cudaMemcpyDeviceToHost, s);  // pinned: asynchronous
  cudaMemsetAsync(d, 0, 64, s);
  CHECK(lockstep::emu::host_synchronizations() == n0);
  cudaMemcpyAsync(pageable.data(), d, 64, cudaMemcpyDeviceToHost, s);  // pageable: waits
  CHECK(lockstep::emu::host_synchronizations() == n0 + 1);
  cudaStreamSynchronize(s);
  cudaDeviceSynchronize();
  CHECK(lockstep::emu::host_synchronizations() == n0 + 3);
  cudaStreamDestroy(s);
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST_CASE("copies that contradict their kind are refused", "[emu][memory]") {
  float* d = emu_test::device_alloc<float>(4);
  float h[4] = {};
  CHECK(cudaMemcpy(d, h, 16, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h, d, 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d, h, 17, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  // past the allocation
  CHECK(cudaMemcpy(d, h, 16, cudaMemcpyDefault) == cudaSuccess);
  CHECK(cudaMemcpy(d, h, 16, static_cast<cudaMemcpyKind>(9)) == cudaErrorInvalidMemcpyDirection);
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n >= 2) {
    cudaSetDevice(1);
    float* other = emu_test::device_alloc<float>(4);
    cudaSetDevice(0);
    // Copies between devices need no peer access under unified addressing
    // (kernels do: see the planted host-pointer test).
    CHECK(cudaMemcpy(other, d, 16, cudaMemcpyDeviceToDevice) == cudaSuccess);
    CHECK(cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess);
    CHECK(cudaDeviceDisablePeerAccess(1) == cudaSuccess);
    cudaFree(other);
  }
  cudaGetLastError();
  cudaFree(d);
}

TEST_CASE("events order, time and refuse as documented", "[emu][event]") {
  cudaEvent_t a, b, untimed;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming);
  CHECK(cudaEventQuery(a) == cudaSuccess);  // never recorded
  float* p = emu_test::device_alloc<float>(1);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEventRecord(a, s);
  LS_LAUNCH(1, 1, 0, s, slow_set)(p, 1.0f);
  cudaEventRecord(b, s);
  cudaEventRecord(untimed, s);
  CHECK(cudaEventQuery(b) == cudaErrorNotReady);
  CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
  CHECK(cudaEventSynchronize(b) == cudaSuccess);
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  CHECK(ms >= 90.0f);  // wall time of the emulated run, not a GPU timing
  CHECK(cudaEventElapsedTime(&ms, a, untimed) == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventSynchronize(untimed) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaEventDestroy(untimed);
  cudaStreamDestroy(s);
  cudaFree(p);
  cudaGetLastError();
}

TEST_CASE("launch configuration is checked as the hardware checks it", "[emu][launch]") {
  float* p = emu_test::device_alloc<float>(1);
  const uint64_t launches = lockstep::emu::kernel_launches();
  LS_LAUNCH(0, 32, 0, nullptr, copy_one)(p, p);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  LS_LAUNCH(1, 1025, 0, nullptr, copy_one)(p, p);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  LS_LAUNCH(1, dim3(1, 1, 65), 0, nullptr, copy_one)(p, p);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  LS_LAUNCH(dim3(1, 65536), 1, 0, nullptr, copy_one)(p, p);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  LS_LAUNCH(1, 1, 49 << 10, nullptr, copy_one)(p, p);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  LS_LAUNCH(1, 1, 0, nullptr, takes_big)(Big{});
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  LS_LAUNCH(1, 1, 0, reinterpret_cast<cudaStream_t>(0x1234), copy_one)(p, p);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  CHECK(lockstep::emu::kernel_launches() == launches);  // refused launches are not counted
  LS_LAUNCH(1, 1, 0, nullptr, copy_one)(p, p);
  CHECK(cudaPeekAtLastError() == cudaSuccess);
  CHECK(lockstep::emu::kernel_launches() == launches + 1);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(p);
}

TEST_CASE("device queries say emulated", "[emu][device]") {
  cudaDeviceProp prop;
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  CHECK(std::strstr(prop.name, "emulated") != nullptr);
  int v = 0;
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  CHECK(v > 0);
  int n = 0;
  cudaGetDeviceCount(&n);
  CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice);
  CHECK(std::string(cudaGetErrorString(cudaErrorInvalidValue)) == "invalid argument");
  CHECK(std::string(cudaGetErrorName(cudaErrorMemoryAllocation)) == "cudaErrorMemoryAllocation");
  cudaGetLastError();
}
