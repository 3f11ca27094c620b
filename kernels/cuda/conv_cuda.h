#pragma once
// Convolution on cuDNN, on raw device pointers: forward, backward data,
// backward filter (the CPU twin: kernels/cpu/conv_cpu.h). Each runs on
// the context's compute stream with the descriptors and algorithms of
// CudnnPlans (kernels/cuda/cudnn_plans.h). ops/ checks the tensors
// before it calls these.
#include <type_traits>

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

// Each takes float tensors (cuDNN's FLOAT_CONFIG) or bf16 tensors (raw bf16
// bits, PSEUDO_BFLOAT16_CONFIG: bf16 operands, FP32 accumulation, each bf16
// output rounded to nearest once); T is deduced from the pointers and both
// are instantiated in conv_cuda.cpp.

// The bias of a forward convolution: FP32 for float tensors; for bf16 ones
// FP32 (rounded to bf16) or bf16.
template <typename T> using ConvBias = std::conditional_t<std::is_same_v<T, bf16_bits>, BiasRef, const float*>;

// y = conv(x, w) (+ bias per output channel when there is one). In bf16,
// y = round(conv(x, w) + bias): the bias is broadcast into y first and the
// convolution blended onto it.
template <typename T>
void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const T* x, const T* w, ConvBias<T> bias, T* y,
                    ConvFormats formats = {});
// dx = dL/dx, written or added when `accumulate` (in bf16 round(dL/dx) or
// round(dx + dL/dx)).
template <typename T>
void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const T* dy, const T* w, T* dx, bool accumulate,
                          ConvFormats formats = {});
// dw = dL/dw, written, of the tensors' type.
template <typename T>
void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const T* x, const T* dy, T* dw,
                            ConvFormats formats = {});
// The FP32 dw of bf16 x and dy. cuDNN has no configuration writing a float
// dw from bf16 x and dy (its backward filter takes x, dy and dw of one type),
// so dw is computed in bf16 into `dw_bf16` (weight_numel elements of device
// scratch) and widened into dw: each weight gradient is its FP32 sum rounded
// once to bf16.
void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* x, const bf16_bits* dy,
                            float* dw, bf16_bits* dw_bf16, ConvFormats formats = {});

}  // namespace lockstep::cuda
