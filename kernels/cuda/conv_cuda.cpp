#include "kernels/cuda/conv_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/bf16_cuda.h"
#include "kernels/cuda/bf16_operands_cuda.h"
#include "kernels/cuda/cuda_libraries.h"
#include "kernels/cuda/cudnn_plans.h"
#include "kernels/cuda/tensor_ops_cuda.h"

namespace lockstep::cuda {

namespace {
const float kOne = 1.0f;
const float kZero = 0.0f;

// The three calls, for float (FLOAT_CONFIG) and bf16 (PSEUDO_BFLOAT16_CONFIG)
// tensors alike; `beta` blends onto what the output holds.
template <typename T>
void forward(CudaLibraries& state, const ConvGeometry& g, const T* x, const T* w, T* y, const float* beta,
             ConvFormats formats) {
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter, cudnn_data_type<T>());
  // A blending call must not let the search overwrite what y holds.
  const ConvAlgorithm& a =
      conv_algorithm(state, plan, ConvDirection::forward, {x, w, nullptr, *beta != 0.0f ? nullptr : y});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionForward(state.cudnn, &kOne, plan.x.get(), x, plan.w.get(), w,
                                         plan.desc(ConvDirection::forward),
                                         static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace, a.workspace_bytes,
                                         beta, plan.y.get(), y));
}

template <typename T>
void backward_data(CudaLibraries& state, const ConvGeometry& g, const T* dy, const T* w, T* dx, bool accumulate,
                   ConvFormats formats) {
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter, cudnn_data_type<T>());
  // An accumulating call must not let the search overwrite what dx holds.
  const ConvAlgorithm& a =
      conv_algorithm(state, plan, ConvDirection::backward_data, {nullptr, w, dy, accumulate ? nullptr : dx});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionBackwardData(state.cudnn, &kOne, plan.w.get(), w, plan.y.get(), dy,
                                              plan.desc(ConvDirection::backward_data),
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                              a.workspace_bytes, accumulate ? &kOne : &kZero, plan.x.get(), dx));
}

template <typename T>
void backward_filter(CudaLibraries& state, const ConvGeometry& g, const T* x, const T* dy, T* dw,
                     ConvFormats formats) {
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter, cudnn_data_type<T>());
  const ConvAlgorithm& a = conv_algorithm(state, plan, ConvDirection::backward_filter, {x, nullptr, dy, dw});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionBackwardFilter(state.cudnn, &kOne, plan.x.get(), x, plan.y.get(), dy,
                                                plan.desc(ConvDirection::backward_filter),
                                                static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), workspace,
                                                a.workspace_bytes, &kZero, plan.w.get(), dw));
}

}  // namespace

void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const float* x, const float* w, const float* bias,
                    float* y, ConvFormats formats) {
  if (g.batch == 0) return;
  forward(state, g, x, w, y, &kZero, formats);
  if (bias) add_channel_bias(state.compute_stream, y, bias, g.batch, g.out_channels, g.out_h * g.out_w,
                              formats.images);
}

void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* x, const bf16_bits* w,
                    BiasRef bias, bf16_bits* y, ConvFormats formats) {
  if (g.batch == 0) return;
  broadcast_bias_bf16(state.compute_stream, bias, y, g.batch, g.out_channels, g.out_h * g.out_w, formats.images);
  forward(state, g, x, w, y, bias.data ? &kOne : &kZero, formats);
}

void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const float* dy, const float* w, float* dx,
                          bool accumulate, ConvFormats formats) {
  if (g.batch == 0) return;
  backward_data(state, g, dy, w, dx, accumulate, formats);
}

void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* dy, const bf16_bits* w,
                          bf16_bits* dx, bool accumulate, ConvFormats formats) {
  if (g.batch == 0) return;
  backward_data(state, g, dy, w, dx, accumulate, formats);
}

void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const float* x, const float* dy, float* dw,
                            ConvFormats formats) {
  if (g.batch == 0) {
    LS_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * g.weight_numel(), state.compute_stream));
    return;
  }
  backward_filter(state, g, x, dy, dw, formats);
}

void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* x, const bf16_bits* dy,
                            float* dw, bf16_bits* dw_bf16, ConvFormats formats) {
  if (g.batch == 0) {
    LS_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * g.weight_numel(), state.compute_stream));
    return;
  }
  backward_filter(state, g, x, dy, dw_bf16, formats);
  convert_stored(state.compute_stream, dw_bf16, dw, g.weight_numel());
}

}  // namespace lockstep::cuda
