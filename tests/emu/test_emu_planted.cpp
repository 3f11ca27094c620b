// Planted bugs the emulator must catch: each is a small kernel compiled
// through the same force-include as kernels/cuda/*.cu.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "emu_test_util.h"

using emu_test::ScopedSchedule;
using Order = lockstep::emu::Schedule::Order;

namespace {

constexpr int kThreads = 256;

// The project's block_sum, with and without its second barrier.
template <bool SecondBarrier>
__device__ double block_sum(double value) {
  __shared__ double warp_sums[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) total += warp_sums[w];
  if (SecondBarrier) __syncthreads();  // warp_sums may be reused by a second call
  return total;
}

// Sums x and x squared, one block per row: block_sum called twice.
template <bool SecondBarrier>
__global__ void sum_and_squares(const double* x, double* out) {
  double v = x[blockIdx.x * kThreads + threadIdx.x];
  double s = block_sum<SecondBarrier>(v);
  double q = block_sum<SecondBarrier>(v * v);
  if (threadIdx.x == 0) out[2 * blockIdx.x] = s, out[2 * blockIdx.x + 1] = q;
}

// Returns true when the result is right.
template <bool SecondBarrier>
bool run_sums(int blocks) {
  std::vector<double> h(blocks * kThreads);
  for (size_t i = 0; i < h.size(); ++i) h[i] = double(i % 97) + 1.0;
  double* x = emu_test::to_device(h);
  double* out = emu_test::device_alloc<double>(2 * blocks);
  LS_LAUNCH(dim3(blocks), dim3(kThreads), 0, nullptr, sum_and_squares<SecondBarrier>)(x, out);
  auto r = emu_test::to_host(out, 2 * blocks);
  bool ok = true;
  for (int b = 0; b < blocks; ++b) {
    double s = 0, q = 0;
    for (int t = 0; t < kThreads; ++t) s += h[b * kThreads + t], q += h[b * kThreads + t] * h[b * kThreads + t];
    ok = ok && r[2 * b] == s && r[2 * b + 1] == q;
  }
  cudaFree(x);
  cudaFree(out);
  return ok;
}

}  // namespace

TEST_CASE("planted: missing second __syncthreads in a block reduction called twice", "[emu][planted]") {
  {
    ScopedSchedule order(Order::forward);
    CHECK(run_sums<false>(4));  // forward order hides it, as a GPU usually does
    CHECK(run_sums<true>(4));
  }
  {
    ScopedSchedule order(Order::reverse);
    CHECK(run_sums<true>(4));
  }
  // One warp at a time in random order exposes it within a few seeds.
  int first_failing_seed = -1;
  for (int seed = 1; seed <= 20 && first_failing_seed < 0; ++seed) {
    ScopedSchedule order(Order::warp_random, seed);
    if (!run_sums<false>(4)) first_failing_seed = seed;
  }
  INFO("first failing seed " << first_failing_seed);
  CHECK(first_failing_seed > 0);
  for (int seed = 1; seed <= 5; ++seed) {  // the correct reduction passes every order
    ScopedSchedule order(Order::warp_random, seed);
    CHECK(run_sums<true>(4));
  }
}

namespace {
__global__ void diverging_shuffle(float* out) {
  float v = float(threadIdx.x);
  // Odd lanes shuffle with xor 1, even lanes with xor 2, each with the full
  // mask: the lanes meet at different intrinsics.
  if (threadIdx.x % 2) v = __shfl_xor_sync(0xffffffffu, v, 1);
  else v = __shfl_xor_sync(0xffffffffu, v, 2);
  out[threadIdx.x] = v;
}
__global__ void shuffle_with_exited_lane(float* out) {
  if (threadIdx.x == 31) return;  // lane 31 leaves, yet the mask names it
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, float(threadIdx.x), 1);
}
__global__ void divergent_barrier(float* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1.0f;
}
__global__ void barrier_after_exit(float* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}
}  // namespace

TEST_CASE("planted: diverging shuffle lanes are reported", "[emu][planted]") {
  for (Order o : {Order::forward, Order::reverse, Order::warp_random}) {
    ScopedSchedule order(o);
    float* out = emu_test::device_alloc<float>(64);
    LS_LAUNCH(1, 32, 0, nullptr, diverging_shuffle)(out);
    // The launch itself is fine, but the kernel runs asynchronously: if it has
    // already faulted, the sticky error is what cudaGetLastError reports, as
    // on a real device. Either answer is right; any other is a bug.
    const cudaError_t launch = cudaGetLastError();
    CHECK((launch == cudaSuccess || launch == cudaErrorLaunchFailure));
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);  // the fault is asynchronous and sticky
    CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    emu_test::clear_fault();
    cudaFree(out);
  }
}

TEST_CASE("planted: a shuffle naming an exited lane is reported", "[emu][planted]") {
  float* out = emu_test::device_alloc<float>(32);
  LS_LAUNCH(1, 32, 0, nullptr, shuffle_with_exited_lane)(out);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  emu_test::clear_fault();
  cudaFree(out);
}

TEST_CASE("planted: divergent __syncthreads is reported", "[emu][planted]") {
  float* out = emu_test::device_alloc<float>(64);
  LS_LAUNCH(1, 64, 0, nullptr, divergent_barrier)(out);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  emu_test::clear_fault();
  LS_LAUNCH(1, 64, 0, nullptr, barrier_after_exit)(out);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  emu_test::clear_fault();
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(out);
}

namespace {
__global__ void write_one(float* p) { p[threadIdx.x] = 1.0f; }
}  // namespace

TEST_CASE("planted: a host pointer passed to a kernel", "[emu][planted]") {
  std::array<float, 32> host{};
  LS_LAUNCH(1, 32, 0, nullptr, write_one)(host.data());
  CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
  CHECK(host[0] == 0.0f);  // never ran
  int n = 0;
  cudaGetDeviceCount(&n);
  if (n >= 2) {  // another device's memory, without peer access
    cudaSetDevice(1);
    float* other = emu_test::device_alloc<float>(32);
    cudaSetDevice(0);
    LS_LAUNCH(1, 32, 0, nullptr, write_one)(other);
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    cudaFree(other);
  }
  float* ok = emu_test::device_alloc<float>(32);
  LS_LAUNCH(1, 32, 0, nullptr, write_one)(ok);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  cudaFree(ok);
}

namespace {
__global__ void slow_produce(float* p, float value) {
  if (threadIdx.x == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a long producer kernel
    p[0] = value;
  }
}
__global__ void consume(const float* p, float* out) { out[0] = p[0]; }
}  // namespace

TEST_CASE("planted: reading a buffer whose producing stream was not waited on", "[emu][planted]") {
  float* buf = emu_test::device_alloc<float>(1);
  float* out = emu_test::device_alloc<float>(1);
  cudaStream_t producer, consumer;
  cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking);
  cudaMemset(buf, 0, sizeof(float));
  float result = -1;

  SECTION("without the wait the consumer reads stale data") {
    LS_LAUNCH(1, 32, 0, producer, slow_produce)(buf, 42.0f);
    LS_LAUNCH(1, 1, 0, consumer, consume)(buf, out);
    cudaMemcpyAsync(&result, out, sizeof(float), cudaMemcpyDeviceToHost, consumer);
    cudaStreamSynchronize(consumer);
    CHECK(result == 0.0f);
  }
  SECTION("with cudaStreamWaitEvent it reads the produced value") {
    cudaEvent_t done;
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    LS_LAUNCH(1, 32, 0, producer, slow_produce)(buf, 42.0f);
    cudaEventRecord(done, producer);
    cudaStreamWaitEvent(consumer, done, 0);
    LS_LAUNCH(1, 1, 0, consumer, consume)(buf, out);
    cudaMemcpyAsync(&result, out, sizeof(float), cudaMemcpyDeviceToHost, consumer);
    cudaStreamSynchronize(consumer);
    CHECK(result == 42.0f);
    cudaEventDestroy(done);
  }
  cudaStreamSynchronize(producer);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
  cudaFree(buf);
  cudaFree(out);
}

// Sanitizer-only bugs run in a child process (the test binary itself, with a
// hidden test), so the parent can assert the sanitizer's report. In a build
// without the sanitizer the parent says so and asserts nothing: the ASan+UBSan
// CI pass is where these two are meaningful.
namespace {
__global__ void tail_store(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + 2) y[i] = 1.0f;  // off by two: should be i < n
}
__global__ void misaligned_float4(const float* x, float* y) {
  const float4 v = *reinterpret_cast<const float4*>(x + 1);  // x + 1 is 4-byte aligned only
  y[threadIdx.x] = v.x + v.y + v.z + v.w;
}

std::string run_child(const char* test_name) {
  std::string cmd = "/proc/" + std::to_string(getpid()) + "/exe \"" + test_name + "\" 2>&1";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  char buf[512];
  while (f && fgets(buf, sizeof buf, f)) out += buf;
  if (f) pclose(f);
  return out;
}
}  // namespace

TEST_CASE("child: off-by-two tail store", "[.emu-child]") {
  float* y = emu_test::device_alloc<float>(1000);
  LS_LAUNCH(4, 256, 0, nullptr, tail_store)(y, 1000);
  cudaDeviceSynchronize();
  cudaFree(y);
}

TEST_CASE("child: misaligned float4 load", "[.emu-child]") {
  float* x = emu_test::device_alloc<float>(64);
  float* y = emu_test::device_alloc<float>(32);
  cudaMemset(x, 0, 64 * sizeof(float));
  LS_LAUNCH(1, 32, 0, nullptr, misaligned_float4)(x, y);
  cudaDeviceSynchronize();
  cudaFree(x);
  cudaFree(y);
}

TEST_CASE("planted: off-by-two tail store (ASan)", "[emu][planted][asan]") {
#if defined(__SANITIZE_ADDRESS__)
  std::string out = run_child("child: off-by-two tail store");
  INFO(out);
  CHECK(out.find("heap-buffer-overflow") != std::string::npos);
#else
  WARN("not an ASan build: the off-by-two store is caught by the ASan pass only");
#endif
}

TEST_CASE("planted: misaligned float4 load (UBSan)", "[emu][planted][ubsan]") {
#if defined(LOCKSTEP_EMU_UBSAN)
  std::string out = run_child("child: misaligned float4 load");
  INFO(out);
  CHECK(out.find("misaligned address") != std::string::npos);
#else
  WARN("not a UBSan build: the misaligned float4 load is caught by the UBSan pass only");
#endif
}
