#pragma once
// A CUDA graph of one training step (ReplicaOptions::cuda_graphs): what the
// calling thread queues on a context's streams between the start and the end
// of a capture becomes one graph, which each later step launches with one
// call instead of queuing its hundreds of kernels, library calls and events.
//
// The capture is thread-local (cudaStreamCaptureModeThreadLocal): the other
// replicas' threads keep queuing and allocating while one replica captures.
// While capturing, nothing may wait for the device, allocate device memory
// with cudaMalloc, or read a value back: the caller captures only a step
// whose shapes have run before (the allocator serves it from its cache).
// Everything that varies from step to step must reach the graph through
// device memory (StepInfo::step_on_device, sgd_step's lr_on_device) or
// buffers at fixed addresses, never as a host value baked into a launch.
//
// Only a build with the CUDA backend (LOCKSTEP_WITH_CUDA) defines these.
#include <memory>

#include "runtime/context.h"

namespace lockstep {

class StepGraph {
public:
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Queues one replay on the context's compute stream; the host waits for nothing.
  void launch(Context& ctx);

private:
  friend class StepCapture;
  explicit StepGraph(void* exec, int device) : exec_(exec), device_(device) {}
  void* exec_;  // cudaGraphExec_t
  int device_;
};

// Captures the context's compute stream (and the streams that join it by
// events: the communication stream) from construction to finish(). A capture
// left unfinished (an exception on the way) is ended and thrown away.
class StepCapture {
public:
  explicit StepCapture(Context& ctx);
  ~StepCapture();
  StepCapture(const StepCapture&) = delete;
  StepCapture& operator=(const StepCapture&) = delete;

  // Ends the capture and instantiates its graph; throws an Error naming what
  // CUDA refused when the capture was invalidated.
  std::unique_ptr<StepGraph> finish();

private:
  Context& ctx_;
  bool open_ = true;
};

}  // namespace lockstep
