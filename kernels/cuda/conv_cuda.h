#pragma once
// Convolution on cuDNN, on raw device pointers: forward, backward data,
// backward filter (the CPU twin: kernels/cpu/conv_cpu.h). Each runs on
// the context's compute stream with the descriptors and algorithms of
// CudnnPlans (kernels/cuda/cudnn_plans.h). ops/ checks the tensors
// before it calls these.
#include "kernels/bf16_math.h"
#include "kernels/conv_geometry.h"
#include "kernels/cuda/bf16_operands_cuda.h"
#include "kernels/cuda/cudnn_plans.h"

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

// The same with bf16 tensors (raw bf16 bits), cuDNN's PSEUDO_BFLOAT16_CONFIG:
// bf16 operands, FP32 accumulation, each bf16 output rounded to nearest once.
// Forward: y = round(conv(x, w) + bias), the bias (FP32, rounded to bf16, or
// bf16) broadcast into y first and the convolution blended onto it.
void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* x, const bf16_bits* w,
                    BiasRef bias, bf16_bits* y, ConvFormats formats = {});
// dx = round(dL/dx), or round(dx + dL/dx) when `accumulate`.
void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* dy, const bf16_bits* w,
                          bf16_bits* dx, bool accumulate, ConvFormats formats = {});
// cuDNN has no configuration writing a float dw from bf16 x and dy (its
// backward filter takes x, dy and dw of one type), so dw is computed in bf16
// into `dw_bf16` (weight_numel elements of device scratch) and widened into
// the FP32 dw: each weight gradient is its FP32 sum rounded once to bf16.
void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* x, const bf16_bits* dy,
                            float* dw, bf16_bits* dw_bf16, ConvFormats formats = {});

}  // namespace lockstep::cuda
