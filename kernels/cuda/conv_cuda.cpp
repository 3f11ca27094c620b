#include "kernels/cuda/conv_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/bf16_cuda.h"
#include "kernels/cuda/bf16_operands_cuda.h"
#include "kernels/cuda/cuda_libraries.h"
#include "kernels/cuda/cudnn_plans.h"
#include "kernels/cuda/tensor_ops_cuda.h"

namespace lockstep::cuda {

namespace {

// An empty batch has a zero weight gradient and nothing for cuDNN to do.
template <typename D> bool zeroed_for_empty_batch(CudaLibraries& state, const ConvGeometry& g, D* dw) {
  if (g.batch != 0) return false;
  LS_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(D) * g.weight_numel(), state.compute_stream));
  return true;
}
}  // namespace

template <typename T>
void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const T* x, const T* w, ConvBias<T> bias, T* y,
                    ConvFormats formats) {
  if (g.batch == 0) return;
  const int64_t spatial = g.out_h * g.out_w;
  // `beta` blends the convolution onto what y holds: the broadcast bf16 bias.
  const float* beta = &kCudnnZero;
  if constexpr (std::is_same_v<T, bf16_bits>) {
    broadcast_bias_bf16(state.compute_stream, bias, y, g.batch, g.out_channels, spatial, formats.images);
    if (bias.data) beta = &kCudnnOne;
  }
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter, cudnn_data_type<T>());
  // A blending call must not let the search overwrite what y holds.
  const ConvAlgorithm& a =
      conv_algorithm(state, plan, ConvDirection::forward, {x, w, nullptr, *beta != 0.0f ? nullptr : y});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionForward(state.cudnn, &kCudnnOne, plan.x.get(), x, plan.w.get(), w,
                                         plan.desc(ConvDirection::forward),
                                         static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace, a.workspace_bytes,
                                         beta, plan.y.get(), y));
  if constexpr (std::is_same_v<T, float>) {
    if (bias) add_channel_bias(state.compute_stream, y, bias, g.batch, g.out_channels, spatial, formats.images);
  }
}

template <typename T>
void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const T* dy, const T* w, T* dx, bool accumulate,
                          ConvFormats formats) {
  if (g.batch == 0) return;
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter, cudnn_data_type<T>());
  // An accumulating call must not let the search overwrite what dx holds.
  const ConvAlgorithm& a =
      conv_algorithm(state, plan, ConvDirection::backward_data, {nullptr, w, dy, accumulate ? nullptr : dx});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionBackwardData(state.cudnn, &kCudnnOne, plan.w.get(), w, plan.y.get(), dy,
                                              plan.desc(ConvDirection::backward_data),
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                              a.workspace_bytes, accumulate ? &kCudnnOne : &kCudnnZero, plan.x.get(),
                                              dx));
}

template <typename T>
void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const T* x, const T* dy, T* dw,
                            ConvFormats formats) {
  if (zeroed_for_empty_batch(state, g, dw)) return;
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter, cudnn_data_type<T>());
  const ConvAlgorithm& a = conv_algorithm(state, plan, ConvDirection::backward_filter, {x, nullptr, dy, dw});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionBackwardFilter(state.cudnn, &kCudnnOne, plan.x.get(), x, plan.y.get(), dy,
                                                plan.desc(ConvDirection::backward_filter),
                                                static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), workspace,
                                                a.workspace_bytes, &kCudnnZero, plan.w.get(), dw));
}

void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const bf16_bits* x, const bf16_bits* dy,
                            float* dw, bf16_bits* dw_bf16, ConvFormats formats) {
  if (zeroed_for_empty_batch(state, g, dw)) return;
  conv2d_backward_filter(state, g, x, dy, dw_bf16, formats);
  convert_stored(state.compute_stream, dw_bf16, dw, g.weight_numel());
}

template void conv2d_forward(CudaLibraries&, const ConvGeometry&, const float*, const float*, ConvBias<float>, float*,
                             ConvFormats);
template void conv2d_forward(CudaLibraries&, const ConvGeometry&, const bf16_bits*, const bf16_bits*,
                             ConvBias<bf16_bits>, bf16_bits*, ConvFormats);
template void conv2d_backward_data(CudaLibraries&, const ConvGeometry&, const float*, const float*, float*, bool,
                                   ConvFormats);
template void conv2d_backward_data(CudaLibraries&, const ConvGeometry&, const bf16_bits*, const bf16_bits*,
                                   bf16_bits*, bool, ConvFormats);
template void conv2d_backward_filter(CudaLibraries&, const ConvGeometry&, const float*, const float*, float*,
                                     ConvFormats);
template void conv2d_backward_filter(CudaLibraries&, const ConvGeometry&, const bf16_bits*, const bf16_bits*,
                                     bf16_bits*, ConvFormats);

}  // namespace lockstep::cuda
