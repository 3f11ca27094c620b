#include "runtime/step_graph.h"

#include <cuda_runtime_api.h>

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "runtime/cuda/cuda_context.h"

namespace lockstep {

namespace {
CudaState& state_of(Context& ctx) {
  LS_CHECK(ctx.cuda() != nullptr, "a CUDA graph step on ", ctx.device().str(), ", which is not a GPU");
  return *ctx.cuda();
}
}  // namespace

StepGraph::~StepGraph() {
  DeviceGuard guard(device_);
  // The caller has waited for the last launch (each step ends with a read-back).
  LS_CUDA_LOG(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_)));
}

void StepGraph::launch(Context& ctx) {
  CudaState& state = state_of(ctx);
  LS_CHECK(state.device == device_, "a CUDA graph captured on cuda:", device_, " launched on cuda:", state.device);
  LS_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), state.compute_stream));
}

StepCapture::StepCapture(Context& ctx) : ctx_(ctx) {
  LS_CUDA_CHECK(cudaStreamBeginCapture(state_of(ctx).compute_stream, cudaStreamCaptureModeThreadLocal));
}

StepCapture::~StepCapture() {
  if (!open_) return;
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(ctx_.cuda()->compute_stream, &graph) == cudaSuccess && graph)
    LS_CUDA_LOG(cudaGraphDestroy(graph));
  cudaGetLastError();  // the capture's own failure is what the caller reports
}

std::unique_ptr<StepGraph> StepCapture::finish() {
  CudaState& state = state_of(ctx_);
  open_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(state.compute_stream, &graph);
  LS_CHECK(ended == cudaSuccess, "capturing a training step on cuda:", state.device, " failed (",
           cudaGetErrorName(ended), ": ", cudaGetErrorString(ended),
           "): something in the step waited for the device, allocated, or used a stream outside the capture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  LS_CUDA_LOG(cudaGraphDestroy(graph));  // the executable graph keeps what it needs
  LS_CUDA_CHECK(made);
  return std::unique_ptr<StepGraph>(new StepGraph(exec, state.device));
}

}  // namespace lockstep
