// Warp intrinsics, atomics and barriers on their edge cases, under every
// scheduling order; and the cost per thread of a barrier-free kernel and a
// block-reduction kernel over 1M elements.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "emu_test_util.h"

using emu_test::ScopedSchedule;
using Order = lockstep::emu::Schedule::Order;

namespace {
const Order kOrders[] = {Order::forward, Order::reverse, Order::warp_random};

template <class T>
__global__ void shuffles(T* out) {
  const int lane = threadIdx.x % 32;
  T v = T(lane + 1);
  out[0 * 64 + threadIdx.x] = __shfl_sync(0xffffffffu, v, 3);
  out[1 * 64 + threadIdx.x] = __shfl_up_sync(0xffffffffu, v, 2);
  out[2 * 64 + threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 5);
  out[3 * 64 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 1);
  out[4 * 64 + threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 1, 8);  // width 8 segments
  out[5 * 64 + threadIdx.x] = T(__ballot_sync(0xffffffffu, lane % 2));
  out[6 * 64 + threadIdx.x] = T(__any_sync(0xffffffffu, lane == 7) + 2 * __all_sync(0xffffffffu, lane < 32));
  __syncwarp();
}

template <class T>
void check_shuffles() {
  for (Order o : kOrders) {
    ScopedSchedule order(o);
    T* d = emu_test::device_alloc<T>(7 * 64);
    LS_LAUNCH(1, 64, 0, nullptr, shuffles<T>)(d);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    auto h = emu_test::to_host(d, 7 * 64);
    for (int t = 0; t < 64; ++t) {
      int lane = t % 32;
      CHECK(h[t] == T(4));
      CHECK(h[64 + t] == T(lane >= 2 ? lane - 1 : lane + 1));
      CHECK(h[128 + t] == T(lane + 5 < 32 ? lane + 6 : lane + 1));
      CHECK(h[192 + t] == T((lane ^ 1) + 1));
      CHECK(h[256 + t] == T(lane % 8 == 7 ? lane + 1 : lane + 2));
      if constexpr (sizeof(T) >= 4 && std::is_integral_v<T>) CHECK(h[320 + t] == T(0xaaaaaaaau));
      CHECK(h[384 + t] == T(3));
    }
    cudaFree(d);
  }
}

__global__ void atomics(int* i, unsigned* u, float* f, double* d, unsigned long long* ull) {
  atomicAdd(i, 1);
  atomicAdd(u, 2u);
  atomicAdd(f, 0.5f);
  atomicAdd(d, 0.25);
  atomicMin(ull, 1000ull - threadIdx.x - blockIdx.x * blockDim.x);
  atomicMax(i + 1, int(threadIdx.x));
  atomicCAS(u + 1, 0u, 7u);
  atomicExch(i + 2, 5);
}

// The barrier-heavy reduction: a tree over shared memory, one barrier a level.
__global__ void tree_sum(const float* x, double* out, int n) {
  __shared__ double s[256];
  double v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

__global__ void scale(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i];
}

__global__ void warp_block_sum(const float* x, double* out, int n) {
  __shared__ double warp_sums[8];
  double v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int w = 0; w < 8; ++w) t += warp_sums[w];
    out[blockIdx.x] = t;
  }
  __syncthreads();
}
}  // namespace

TEST_CASE("shuffles, ballot, any/all on float, double, int, unsigned in every order", "[emu][intrinsics]") {
  check_shuffles<float>();
  check_shuffles<double>();
  check_shuffles<int>();
  check_shuffles<unsigned>();
}

TEST_CASE("atomics across blocks", "[emu][intrinsics]") {
  int* i = emu_test::device_alloc<int>(3);
  unsigned* u = emu_test::device_alloc<unsigned>(2);
  float* f = emu_test::device_alloc<float>(1);
  double* d = emu_test::device_alloc<double>(1);
  unsigned long long* ull = emu_test::device_alloc<unsigned long long>(1);
  cudaMemset(i, 0, 12);
  cudaMemset(u, 0, 8);
  cudaMemset(f, 0, 4);
  cudaMemset(d, 0, 8);
  unsigned long long big = ~0ull;
  cudaMemcpy(ull, &big, 8, cudaMemcpyHostToDevice);
  LS_LAUNCH(4, 128, 0, nullptr, atomics)(i, u, f, d, ull);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  auto hi = emu_test::to_host(i, 3);
  auto hu = emu_test::to_host(u, 2);
  CHECK(hi[0] == 512);
  CHECK(hi[1] == 127);
  CHECK(hi[2] == 5);
  CHECK(hu[0] == 1024u);
  CHECK(hu[1] == 7u);
  CHECK(emu_test::to_host(f, 1)[0] == 256.0f);
  CHECK(emu_test::to_host(d, 1)[0] == 128.0);
  CHECK(emu_test::to_host(ull, 1)[0] == 1000ull - 511);
  for (void* p : {(void*)i, (void*)u, (void*)f, (void*)d, (void*)ull}) cudaFree(p);
}

TEST_CASE("a barrier-heavy block reduction gives the same result in every order", "[emu][intrinsics]") {
  const int n = 100000, blocks = 16;
  std::vector<float> h(n);
  for (int k = 0; k < n; ++k) h[k] = float(k % 13) * 0.5f;
  float* x = emu_test::to_device(h);
  double* out = emu_test::device_alloc<double>(blocks);
  std::vector<double> first;
  for (Order o : kOrders)
    for (uint64_t seed : {1, 2, 3}) {
      ScopedSchedule order(o, seed);
      LS_LAUNCH(blocks, 256, 0, nullptr, tree_sum)(x, out, n);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      auto r = emu_test::to_host(out, blocks);
      if (first.empty()) first = r;
      CHECK(r == first);
    }
  double total = 0;
  for (double v : first) total += v;
  double expect = 0;
  for (float v : h) expect += v;
  CHECK(total == Approx(expect));
  cudaFree(x);
  cudaFree(out);
}

TEST_CASE("cost per thread: barrier-free and block-reduction kernels over 1M elements", "[emu][.bench]") {
  const int n = 1 << 20;
  float* x = emu_test::to_device(std::vector<float>(n, 1.0f));
  float* y = emu_test::device_alloc<float>(n);
  double* out = emu_test::device_alloc<double>(4096);
  auto time = [&](const char* what, auto launch) {
    launch();
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    const int reps = 5;
    for (int r = 0; r < reps; ++r) launch();
    cudaDeviceSynchronize();
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf("%s: %.1f ms per launch, %.2f ns per element\n", what, ns / 1e6, ns / n);
  };
  time("barrier-free grid-stride (4096 x 256)", [&] { LS_LAUNCH(4096, 256, 0, nullptr, scale)(x, y, n, 2.0f); });
  time("shuffle + 2 barriers block sum (4096 x 256)",
       [&] { LS_LAUNCH(4096, 256, 0, nullptr, warp_block_sum)(x, out, n); });
  time("tree reduction, 9 barriers (4096 x 256)", [&] { LS_LAUNCH(4096, 256, 0, nullptr, tree_sum)(x, out, n); });
  cudaFree(x);
  cudaFree(y);
  cudaFree(out);
}
