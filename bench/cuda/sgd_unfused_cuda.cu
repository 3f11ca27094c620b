// Four passes over the arenas (see the header); Nesterov is left out, as the
// benchmark compares the plain update.
#include "bench/cuda/sgd_unfused_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launch_util.cuh"

namespace lockstep::cuda {
namespace {

using detail::grid_for;
using detail::kThreads;

// y = a * x + y
__global__ void axpy(float a, const float* x, float* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) y[i] += a * x[i];
}

// y = a * y + x
__global__ void scale_add(float a, float* y, const float* x, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    y[i] = a * y[i] + x[i];
}

}  // namespace

void sgd_momentum_unfused(cudaStream_t stream, float* w, float* g, float* v, int64_t n, const SgdHyper& hyper) {
  if (n <= 0) return;
  const unsigned grid = grid_for(n);
  LS_LAUNCH(grid, kThreads, 0, stream, axpy)(hyper.weight_decay, w, g, n);
  LS_CUDA_CHECK_LAUNCH("axpy (g += wd * w)");
  LS_LAUNCH(grid, kThreads, 0, stream, scale_add)(hyper.momentum, v, g, n);
  LS_CUDA_CHECK_LAUNCH("scale_add (v = mu * v + g)");
  LS_LAUNCH(grid, kThreads, 0, stream, axpy)(-hyper.lr, v, w, n);
  LS_CUDA_CHECK_LAUNCH("axpy (w -= lr * v)");
  LS_CUDA_CHECK(cudaMemsetAsync(g, 0, n * sizeof(float), stream));
}

}  // namespace lockstep::cuda
