// Stream capture and graphs: while a stream captures, its work becomes graph
// nodes depending on the stream's current nodes; events carry nodes between
// streams (fork/join); the graph replays on one stream's worker in creation
// order (a valid topological order, since a node only depends on earlier
// ones). Calls CUDA refuses while capturing invalidate the capture.
#include "internal.h"

#include <functional>
#include <unordered_set>

namespace lockstep::emu::detail {
namespace {
std::set<Capture*>& active_captures() {
  static auto* c = new std::set<Capture*>;
  return *c;
}
std::set<cudaGraph_t>& all_graphs() {
  static auto* g = new std::set<cudaGraph_t>;
  return *g;
}
std::set<cudaGraphExec_t>& all_execs() {
  static auto* g = new std::set<cudaGraphExec_t>;
  return *g;
}
unsigned long long g_next_capture_id = 1;

void end_capture_locked(Capture* c) {
  end_event_captures_locked(c);
  for (cudaStream_t s : c->streams) {
    s->capture = nullptr;
    s->deps.clear();
  }
  active_captures().erase(c);
}
}  // namespace

void invalidate_locked(Capture* c) { c->invalidated = true; }

bool refuse_unsafe_call_locked() {
  bool refuse = false;
  for (Capture* c : active_captures())
    if (c->mode == cudaStreamCaptureModeGlobal ||
        (c->mode == cudaStreamCaptureModeThreadLocal && c->thread == std::this_thread::get_id())) {
      invalidate_locked(c);
      refuse = true;
    }
  return refuse;
}

cudaError_t refuse_unsafe_call() {
  std::lock_guard lock(runtime_mutex());
  return refuse_unsafe_call_locked() ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

bool device_capturing_locked(int dev) {
  // The legacy stream would have to wait for a capturing blocking stream:
  // CUDA refuses (cudaErrorStreamCaptureImplicit) and invalidates the capture.
  bool capturing = false;
  for (cudaStream_t s : device(dev).streams)
    if (s->capture && !s->legacy && !(s->flags & cudaStreamNonBlocking)) {
      invalidate_locked(s->capture);
      capturing = true;
    }
  return capturing;
}

cudaError_t capture_task_locked(cudaStream_t s, Task& task) {
  Capture* c = s->capture;
  if (c->invalidated) return cudaErrorStreamCaptureInvalidated;
  auto node = std::make_unique<CUgraphNode_st>();
  node->name = std::move(task.name);
  node->work = std::move(task.work);
  node->deps = s->deps;
  s->deps.assign(1, node.get());
  c->graph->nodes.push_back(std::move(node));
  return cudaSuccess;
}

}  // namespace lockstep::emu::detail

using namespace lockstep::emu::detail;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (stream == nullptr || stream == cudaStreamLegacy) return record(cudaErrorStreamCaptureUnsupported);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return record(cudaErrorInvalidValue);
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(runtime_mutex());
  if (s->capture) return record(cudaErrorIllegalState);
  auto* c = new Capture;
  c->graph = new CUgraph_st;
  all_graphs().insert(c->graph);
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->streams.insert(s);
  c->id = g_next_capture_id++;
  s->capture = c;
  s->deps.clear();
  active_captures().insert(c);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* out) {
  if (!out) return record(cudaErrorInvalidValue);
  *out = nullptr;
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(runtime_mutex());
  Capture* c = s->capture;
  if (!c) return record(cudaErrorIllegalState);
  if (c->origin != s) return record(cudaErrorStreamCaptureUnmatched);
  if (c->mode == cudaStreamCaptureModeThreadLocal && c->thread != std::this_thread::get_id())
    return record(cudaErrorStreamCaptureWrongThread);
  // Every stream that joined must have joined back: its last nodes must be
  // ancestors of (or equal to) the origin's.
  std::unordered_set<CUgraphNode_st*> reach;
  std::vector<CUgraphNode_st*> stack(s->deps.begin(), s->deps.end());
  while (!stack.empty()) {
    CUgraphNode_st* n = stack.back();
    stack.pop_back();
    if (reach.insert(n).second) stack.insert(stack.end(), n->deps.begin(), n->deps.end());
  }
  cudaError_t result = cudaSuccess;
  for (cudaStream_t o : c->streams)
    for (CUgraphNode_st* n : o->deps)
      if (!reach.count(n)) result = cudaErrorStreamCaptureUnjoined;
  if (c->invalidated) result = cudaErrorStreamCaptureInvalidated;
  end_capture_locked(c);
  if (result == cudaSuccess) {
    *out = c->graph;
  } else {
    all_graphs().erase(c->graph);
    delete c->graph;
  }
  delete c;
  return record(result);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (!status) return record(cudaErrorInvalidValue);
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(runtime_mutex());
  if (s->legacy && device_capturing_locked(s->device)) return record(cudaErrorStreamCaptureImplicit);
  *status = !s->capture ? cudaStreamCaptureStatusNone
                        : (s->capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* num_deps) {
  if (!status) return record(cudaErrorInvalidValue);
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(runtime_mutex());
  if (s->legacy && device_capturing_locked(s->device)) return record(cudaErrorStreamCaptureImplicit);
  Capture* c = s->capture;
  *status = !c ? cudaStreamCaptureStatusNone
               : (c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
  bool active = *status == cudaStreamCaptureStatusActive;
  if (id && active) *id = c->id;
  if (graph) *graph = active ? c->graph : nullptr;
  s->deps_out.assign(s->deps.begin(), s->deps.end());
  if (deps) *deps = active ? s->deps_out.data() : nullptr;
  if (edges) *edges = nullptr;  // all edges are default (full dependencies)
  if (num_deps) *num_deps = active ? s->deps_out.size() : 0;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec) return record(cudaErrorInvalidValue);
  std::lock_guard lock(runtime_mutex());
  if (!all_graphs().count(graph)) return record(cudaErrorInvalidValue);
  (void)flags;
  auto* e = new CUgraphExec_st;
  e->device = lockstep::emu::current_device();
  // The exec owns copies of the work: the graph may be destroyed before it runs.
  for (auto& n : graph->nodes)
    if (n->work) e->steps.emplace_back(n->name, n->work);
  all_execs().insert(e);
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::vector<std::pair<std::string, std::function<void()>>> steps;
  {
    std::lock_guard lock(runtime_mutex());
    if (!all_execs().count(exec)) return record(cudaErrorInvalidValue);
    steps = exec->steps;
  }
  int dev = s->device;
  return record(submit(s, Task{"cudaGraphLaunch",
                               [steps = std::move(steps), dev] {
                                 for (auto& step : steps) {
                                   if (device(dev).sticky.load() != cudaSuccess) return;
                                   step.second();
                                 }
                               },
                               {}}));
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard lock(runtime_mutex());
  if (!all_execs().erase(exec)) return record(cudaErrorInvalidValue);
  delete exec;  // a queued launch holds its own copy of the steps
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard lock(runtime_mutex());
  if (!all_graphs().erase(graph)) return record(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

}  // extern "C"
