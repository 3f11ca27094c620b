// The emulated cuDNN's convolution entry points: heuristics (_v7), timed
// search (FindEx), workspace sizes and the three directions. Each resolves
// its descriptors into a ConvProblem and goes through conv_problem.cpp.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "emu/cudnn/conv_problem.h"

using namespace lockstep::emu::cudnn;

namespace {

cudnnMathType_t reported_math(const ConvProblem& p) {
  // Default math: TF32 allowed, the stand-in computing on TF32-rounded
  // operands (conv_problem.cpp); FMA math: plain FP32. bf16 data: the
  // tensor-op math as asked (cuDNN's tensor-core kernels need it; the
  // default math leaves bf16 on its slow FMA kernels), else the default.
  if (p.math == CUDNN_FMA_MATH) return CUDNN_FMA_MATH;
  if (p.x.type == CUDNN_DATA_BFLOAT16 &&
      (p.math == CUDNN_TENSOR_OP_MATH || p.math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
    return p.math;
  return CUDNN_DEFAULT_MATH;
}

template <typename Perf>
cudnnStatus_t heuristics(Direction d, const char* call, cudnnHandle_t handle, const ConvProblem& p, int requested,
                         int* returned, Perf* out) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": handle is null");
  if (!returned || !out) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null output");
  if (requested <= 0) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": requestedAlgoCount must be > 0");
  int count = 0;
  const Algorithm* list = algorithms(d, &count);
  *returned = std::min(requested, count);
  for (int i = 0; i < *returned; ++i) {
    Perf r{};
    r.algo = static_cast<decltype(r.algo)>(list[i].algo);
    r.status = list[i].emulated ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
    r.time = -1.0f;  // heuristics do not time
    r.memory = list[i].emulated ? workspace_bytes(list[i], p) : 0;
    r.determinism = list[i].determinism;
    r.mathType = reported_math(p);
    out[i] = r;
  }
  return CUDNN_STATUS_SUCCESS;
}

// cudnnFind*Ex: runs every emulated algorithm that fits the given workspace on
// the handle's stream (overwriting the output, as documented), waits for them,
// and lists them fastest first; those that do not fit follow, NOT_SUPPORTED.
template <typename Perf>
cudnnStatus_t find(Direction d, const char* call, cudnnHandle_t handle, const ConvProblem& p,
                   const ConvPointers& ptr, int requested, int* returned, Perf* out, void* workspace,
                   size_t workspace_size) {
  if (!returned || !out) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null output");
  if (requested <= 0) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": requestedAlgoCount must be > 0");
  int count = 0;
  const Algorithm* list = algorithms(d, &count);
  std::vector<Perf> done, skipped;
  std::vector<std::shared_ptr<float>> times;
  for (int i = 0; i < count; ++i) {
    const Algorithm& a = list[i];
    Perf r{};
    r.algo = static_cast<decltype(r.algo)>(a.algo);
    r.determinism = a.determinism;
    r.mathType = reported_math(p);
    r.time = -1.0f;
    r.memory = a.emulated ? workspace_bytes(a, p) : 0;
    if (!a.emulated || r.memory > workspace_size) {
      r.status = CUDNN_STATUS_NOT_SUPPORTED;
      skipped.push_back(r);
      continue;
    }
    auto elapsed = std::make_shared<float>(-1.0f);
    if (cudnnStatus_t s = run(handle, call, p, a, 1.0f, 0.0f, ptr, workspace, workspace_size, elapsed)) return s;
    r.status = CUDNN_STATUS_SUCCESS;
    done.push_back(r);
    times.push_back(elapsed);
  }
  // The search blocks the host, as the real one does.
  cudaError_t e = cudaStreamSynchronize(handle->stream);
  if (e != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, std::string(call) + ": " + cudaGetErrorName(e));
  for (size_t i = 0; i < done.size(); ++i) done[i].time = *times[i];
  std::stable_sort(done.begin(), done.end(), [](const Perf& a, const Perf& b) { return a.time < b.time; });
  done.insert(done.end(), skipped.begin(), skipped.end());
  *returned = std::min<int>(requested, int(done.size()));
  std::copy(done.begin(), done.begin() + *returned, out);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t workspace_size(Direction d, const char* call, const ConvProblem& p, int algo, size_t* bytes) {
  if (!bytes) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null output");
  const Algorithm* a = nullptr;
  if (cudnnStatus_t s = find_algorithm(d, algo, call, &a)) return s;
  *bytes = workspace_bytes(*a, p);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t execute(Direction d, const char* call, cudnnHandle_t handle, const ConvProblem& p, int algo,
                      const void* alpha, const void* beta, const ConvPointers& ptr, void* workspace, size_t size) {
  if (!alpha || !beta) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": alpha or beta is null");
  const Algorithm* a = nullptr;
  if (cudnnStatus_t s = find_algorithm(d, algo, call, &a)) return s;
  return run(handle, call, p, *a, scalar(alpha), scalar(beta), ptr, workspace, size);
}

}  // namespace

#define LS_RESOLVE(dir, call, x, w, conv, y)                                       \
  ConvProblem p;                                                                  \
  if (cudnnStatus_t s = resolve(dir, call, x, w, conv, y, p)) return s;

extern "C" {

// ---- forward ----

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t conv,
                                                     const cudnnTensorDescriptor_t y, const int requested,
                                                     int* returned, cudnnConvolutionFwdAlgoPerf_t* out) {
  const char* call = "cudnnGetConvolutionForwardAlgorithm_v7";
  LS_RESOLVE(Direction::forward, call, x, w, conv, y);
  return heuristics(Direction::forward, call, handle, p, requested, returned, out);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(cudnnHandle_t handle, const cudnnTensorDescriptor_t xd,
                                                     const void* x, const cudnnFilterDescriptor_t wd, const void* w,
                                                     const cudnnConvolutionDescriptor_t conv,
                                                     const cudnnTensorDescriptor_t yd, void* y, const int requested,
                                                     int* returned, cudnnConvolutionFwdAlgoPerf_t* out,
                                                     void* workspace, size_t size) {
  const char* call = "cudnnFindConvolutionForwardAlgorithmEx";
  LS_RESOLVE(Direction::forward, call, xd, wd, conv, yd);
  return find(Direction::forward, call, handle, p, {x, w, y}, requested, returned, out, workspace, size);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t conv,
                                                      const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
                                                      size_t* bytes) {
  const char* call = "cudnnGetConvolutionForwardWorkspaceSize";
  LS_RESOLVE(Direction::forward, call, x, w, conv, y);
  return workspace_size(Direction::forward, call, p, algo, bytes);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xd,
                                      const void* x, const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,
                                      void* workspace, size_t size, const void* beta,
                                      const cudnnTensorDescriptor_t yd, void* y) {
  const char* call = "cudnnConvolutionForward";
  LS_RESOLVE(Direction::forward, call, xd, wd, conv, yd);
  return execute(Direction::forward, call, handle, p, algo, alpha, beta, {x, w, y}, workspace, size);
}

// ---- backward data ----

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, const cudnnFilterDescriptor_t w,
                                                          const cudnnTensorDescriptor_t dy,
                                                          const cudnnConvolutionDescriptor_t conv,
                                                          const cudnnTensorDescriptor_t dx, const int requested,
                                                          int* returned, cudnnConvolutionBwdDataAlgoPerf_t* out) {
  const char* call = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
  LS_RESOLVE(Direction::backward_data, call, dx, w, conv, dy);
  return heuristics(Direction::backward_data, call, handle, p, requested, returned, out);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(cudnnHandle_t handle, const cudnnFilterDescriptor_t wd,
                                                          const void* w, const cudnnTensorDescriptor_t dyd,
                                                          const void* dy, const cudnnConvolutionDescriptor_t conv,
                                                          const cudnnTensorDescriptor_t dxd, void* dx,
                                                          const int requested, int* returned,
                                                          cudnnConvolutionBwdDataAlgoPerf_t* out, void* workspace,
                                                          size_t size) {
  const char* call = "cudnnFindConvolutionBackwardDataAlgorithmEx";
  LS_RESOLVE(Direction::backward_data, call, dxd, wd, conv, dyd);
  return find(Direction::backward_data, call, handle, p, {w, dy, dx}, requested, returned, out, workspace, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t, const cudnnFilterDescriptor_t w,
                                                           const cudnnTensorDescriptor_t dy,
                                                           const cudnnConvolutionDescriptor_t conv,
                                                           const cudnnTensorDescriptor_t dx,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
  const char* call = "cudnnGetConvolutionBackwardDataWorkspaceSize";
  LS_RESOLVE(Direction::backward_data, call, dx, w, conv, dy);
  return workspace_size(Direction::backward_data, call, p, algo, bytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wd,
                                           const void* w, const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdDataAlgo_t algo,
                                           void* workspace, size_t size, const void* beta,
                                           const cudnnTensorDescriptor_t dxd, void* dx) {
  const char* call = "cudnnConvolutionBackwardData";
  LS_RESOLVE(Direction::backward_data, call, dxd, wd, conv, dyd);
  return execute(Direction::backward_data, call, handle, p, algo, alpha, beta, {w, dy, dx}, workspace, size);
}

// ---- backward filter ----

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t x,
                                                            const cudnnTensorDescriptor_t dy,
                                                            const cudnnConvolutionDescriptor_t conv,
                                                            const cudnnFilterDescriptor_t dw, const int requested,
                                                            int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* out) {
  const char* call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
  LS_RESOLVE(Direction::backward_filter, call, x, dw, conv, dy);
  return heuristics(Direction::backward_filter, call, handle, p, requested, returned, out);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnnHandle_t handle, const cudnnTensorDescriptor_t xd,
                                                            const void* x, const cudnnTensorDescriptor_t dyd,
                                                            const void* dy, const cudnnConvolutionDescriptor_t conv,
                                                            const cudnnFilterDescriptor_t dwd, void* dw,
                                                            const int requested, int* returned,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t* out, void* workspace,
                                                            size_t size) {
  const char* call = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
  LS_RESOLVE(Direction::backward_filter, call, xd, dwd, conv, dyd);
  return find(Direction::backward_filter, call, handle, p, {x, dy, dw}, requested, returned, out, workspace, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                             const cudnnTensorDescriptor_t dy,
                                                             const cudnnConvolutionDescriptor_t conv,
                                                             const cudnnFilterDescriptor_t dw,
                                                             cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
  const char* call = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
  LS_RESOLVE(Direction::backward_filter, call, x, dw, conv, dy);
  return workspace_size(Direction::backward_filter, call, p, algo, bytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xd,
                                             const void* x, const cudnnTensorDescriptor_t dyd, const void* dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace, size_t size,
                                             const void* beta, const cudnnFilterDescriptor_t dwd, void* dw) {
  const char* call = "cudnnConvolutionBackwardFilter";
  LS_RESOLVE(Direction::backward_filter, call, xd, dwd, conv, dyd);
  return execute(Direction::backward_filter, call, handle, p, algo, alpha, beta, {x, dy, dw}, workspace, size);
}

}  // extern "C"
