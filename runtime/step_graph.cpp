// Without the CUDA backend there is no graph to capture: the replica manager
// never asks for one (ReplicaOptions::cuda_graphs applies to GPU replicas),
// and these say so if something does.
#include "runtime/step_graph.h"

#if !LOCKSTEP_WITH_CUDA
#include "base/error.h"

namespace lockstep {

StepGraph::~StepGraph() = default;
void StepGraph::launch(Context& ctx) {
  LS_FAIL("a CUDA graph step on ", ctx.device().str(), " in a build without CUDA");
}
StepCapture::StepCapture(Context& ctx) : ctx_(ctx) {
  LS_FAIL("a CUDA graph capture on ", ctx.device().str(), " in a build without CUDA");
}
StepCapture::~StepCapture() = default;
std::unique_ptr<StepGraph> StepCapture::finish() { LS_FAIL("a CUDA graph capture in a build without CUDA"); }

}  // namespace lockstep
#endif
