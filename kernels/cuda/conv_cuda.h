#pragma once
// Convolution on cuDNN, on raw device pointers: forward, backward data,
// backward filter (the CPU twin: kernels/cpu/conv_cpu.h). Each runs on
// the context's compute stream with the descriptors and algorithms of
// CudnnPlans (kernels/cuda/cudnn_plans.h). ops/ checks the tensors
// before it calls these.
#include "kernels/cuda/cudnn_plans.h"
#include "kernels/conv_geometry.h"

namespace lockstep {
class CudaLibraries;
}

namespace lockstep::cuda {

// How the images and the filter lie (kernels/memory_format.h): x, y, dy, dx in
// `images`; w and dw in `filter` (nhwc: [O, K, K, C], cuDNN's KRSC).
struct ConvFormats {
  MemoryFormat images = MemoryFormat::nchw;
  MemoryFormat filter = MemoryFormat::nchw;
};

// y = conv(x, w) (+ bias per output channel when `bias` is not null).
void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const float* x, const float* w, const float* bias,
                    float* y, ConvFormats formats = {});
// dx = dL/dx, written or added when `accumulate`.
void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const float* dy, const float* w, float* dx,
                          bool accumulate, ConvFormats formats = {});
// dw = dL/dw, written.
void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const float* x, const float* dy, float* dw,
                            ConvFormats formats = {});

}  // namespace lockstep::cuda
