#pragma once
// The cuDNN-backed ops of one context, on raw device pointers: convolution
// (forward, backward data, backward filter) and window pooling. Each runs on
// the context's compute stream with the descriptors and algorithms of
// CudnnPlans (runtime/cuda/cudnn_plans.h). ops/ checks the tensors
// before it calls these.
#include "runtime/cuda/cudnn_plans.h"
#include "kernels/conv_geometry.h"
#include "kernels/pool_geometry.h"

namespace lockstep {
struct CudaState;
}

namespace lockstep::cuda {

// y = conv(x, w) (+ bias per output channel when `bias` is not null).
void conv2d_forward(CudaState& state, const ConvGeometry& g, const float* x, const float* w, const float* bias,
                    float* y);
// dx = dL/dx, written or added when `accumulate`.
void conv2d_backward_data(CudaState& state, const ConvGeometry& g, const float* dy, const float* w, float* dx,
                          bool accumulate);
// dw = dL/dw, written.
void conv2d_backward_filter(CudaState& state, const ConvGeometry& g, const float* x, const float* dy, float* dw);

void pool2d_forward(CudaState& state, const PoolGeometry& g, PoolMode mode, const float* x, float* y);
// dx from dy (cuDNN reads x and y too), written or added when `accumulate`.
void pool2d_backward(CudaState& state, const PoolGeometry& g, PoolMode mode, const float* x, const float* y,
                     const float* dy, float* dx, bool accumulate);

}  // namespace lockstep::cuda
