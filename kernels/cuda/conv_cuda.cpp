#include "kernels/cuda/conv_cuda.h"

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/cuda_libraries.h"
#include "kernels/cuda/cudnn_plans.h"
#include "kernels/cuda/tensor_ops_cuda.h"

namespace lockstep::cuda {

namespace {
const float kOne = 1.0f;
const float kZero = 0.0f;
}  // namespace

void conv2d_forward(CudaLibraries& state, const ConvGeometry& g, const float* x, const float* w, const float* bias,
                    float* y, ConvFormats formats) {
  if (g.batch == 0) return;
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter);
  const ConvAlgorithm& a = conv_algorithm(state, plan, ConvDirection::forward, {x, w, nullptr, y});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionForward(state.cudnn, &kOne, plan.x.get(), x, plan.w.get(), w,
                                         plan.desc(ConvDirection::forward),
                                         static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace, a.workspace_bytes,
                                         &kZero, plan.y.get(), y));
  if (bias) add_channel_bias(state.compute_stream, y, bias, g.batch, g.out_channels, g.out_h * g.out_w,
                              formats.images);
}

void conv2d_backward_data(CudaLibraries& state, const ConvGeometry& g, const float* dy, const float* w, float* dx,
                          bool accumulate, ConvFormats formats) {
  if (g.batch == 0) return;
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter);
  // An accumulating call must not let the search overwrite what dx holds.
  const ConvAlgorithm& a =
      conv_algorithm(state, plan, ConvDirection::backward_data, {nullptr, w, dy, accumulate ? nullptr : dx});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionBackwardData(state.cudnn, &kOne, plan.w.get(), w, plan.y.get(), dy,
                                              plan.desc(ConvDirection::backward_data),
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace,
                                              a.workspace_bytes, accumulate ? &kOne : &kZero, plan.x.get(), dx));
}

void conv2d_backward_filter(CudaLibraries& state, const ConvGeometry& g, const float* x, const float* dy, float* dw,
                            ConvFormats formats) {
  if (g.batch == 0) {
    LS_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * g.weight_numel(), state.compute_stream));
    return;
  }
  ConvPlan& plan = state.plans->conv(g, formats.images, formats.filter);
  const ConvAlgorithm& a = conv_algorithm(state, plan, ConvDirection::backward_filter, {x, nullptr, dy, dw});
  void* workspace = state.workspace(a.workspace_bytes);
  LS_CUDNN_CHECK(cudnnConvolutionBackwardFilter(state.cudnn, &kOne, plan.x.get(), x, plan.y.get(), dy,
                                                plan.desc(ConvDirection::backward_filter),
                                                static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), workspace,
                                                a.workspace_bytes, &kZero, plan.w.get(), dw));
}

}  // namespace lockstep::cuda
