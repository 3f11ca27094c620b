// Max and average pooling over windows on cuDNN, with the descriptors of
// CudnnPlans (kernels/cuda/cudnn_plans.h).
#include "base/cuda/cuda_check.h"
#include "kernels/cuda/cuda_libraries.h"
#include "kernels/cuda/cudnn_plans.h"
#include "kernels/cuda/pool_cuda.h"

namespace lockstep::cuda {

namespace {

// Float tensors, or bf16 ones (computed in FP32, stored rounded: the max of
// bf16 values is exact; an average is rounded once).
template <typename T>
void forward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const T* x, T* y, MemoryFormat format,
             int64_t channels) {
  if (g.planes == 0) return;
  PoolPlan& plan = state.plans->pool(g, mode, format, channels, cudnn_data_type<T>());
  LS_CUDNN_CHECK(
      cudnnPoolingForward(state.cudnn, plan.pool.get(), &kCudnnOne, plan.x.get(), x, &kCudnnZero, plan.y.get(), y));
}

template <typename T>
void backward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const T* x, const T* y, const T* dy, T* dx,
              bool accumulate, MemoryFormat format, int64_t channels) {
  if (g.planes == 0) return;
  PoolPlan& plan = state.plans->pool(g, mode, format, channels, cudnn_data_type<T>());
  LS_CUDNN_CHECK(cudnnPoolingBackward(state.cudnn, plan.pool.get(), &kCudnnOne, plan.y.get(), y, plan.y.get(), dy,
                                      plan.x.get(), x, accumulate ? &kCudnnOne : &kCudnnZero, plan.x.get(), dx));
}

}  // namespace

void pool2d_forward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const float* x, float* y,
                    MemoryFormat format, int64_t channels) {
  forward(state, g, mode, x, y, format, channels);
}

void pool2d_forward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const bf16_bits* x, bf16_bits* y,
                    MemoryFormat format, int64_t channels) {
  forward(state, g, mode, x, y, format, channels);
}

void pool2d_backward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const float* x, const float* y,
                     const float* dy, float* dx, bool accumulate, MemoryFormat format, int64_t channels) {
  backward(state, g, mode, x, y, dy, dx, accumulate, format, channels);
}

void pool2d_backward(CudaLibraries& state, const PoolGeometry& g, PoolMode mode, const bf16_bits* x,
                     const bf16_bits* y, const bf16_bits* dy, bf16_bits* dx, bool accumulate, MemoryFormat format,
                     int64_t channels) {
  backward(state, g, mode, x, y, dy, dx, accumulate, format, channels);
}

}  // namespace lockstep::cuda
