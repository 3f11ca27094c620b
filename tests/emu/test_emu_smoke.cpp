// A first end-to-end check: memory, a stream, a barrier-free grid-stride
// kernel and a block reduction through LS_LAUNCH.
#include <catch2/catch.hpp>

#include <vector>

#include "emu_test_util.h"

namespace {

__global__ void scale(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i];
}

}  // namespace

TEST_CASE("emu smoke: a barrier-free kernel on a stream", "[emu]") {
  const int n = 10000;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = float(i);
  float *x, *y;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&y), n * sizeof(float)) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s) == cudaSuccess);
  LS_LAUNCH(dim3(8), dim3(256), 0, s, scale)(x, y, n, 2.0f);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  std::vector<float> out(n);
  REQUIRE(cudaMemcpyAsync(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  for (int i = 0; i < n; ++i) REQUIRE(out[i] == 2.0f * float(i));
  cudaStreamDestroy(s);
  cudaFree(x);
  cudaFree(y);
}
