// Events: a record is a marker task on the stream (it stamps the wall time
// when the stream reaches it); cudaStreamWaitEvent queues a task that waits
// for that marker, so events really order streams' workers. During capture a
// record remembers the capture's current nodes instead (graphs.cpp).
#include "internal.h"

namespace lockstep::emu::detail {
namespace {
std::set<cudaEvent_t>& all_events() {
  static auto* e = new std::set<cudaEvent_t>;
  return *e;
}
}  // namespace
bool valid_event(cudaEvent_t e) { return all_events().count(e) != 0; }

void end_event_captures_locked(Capture* c) {
  for (cudaEvent_t e : all_events())
    if (e->capture == c) {
      e->capture = nullptr;
      e->nodes.clear();
      e->captured_last = true;
    }
}
}  // namespace lockstep::emu::detail

using namespace lockstep::emu::detail;

namespace {
// What an event waits for, read under the runtime's lock; a query or a wait
// while the event belongs to a capture is refused and ends the capture. No
// timeline: never recorded, which counts as complete.
struct RecordedEvent {
  std::shared_ptr<Timeline> timeline;
  uint64_t target = 0;
  int device = 0;
};
cudaError_t recorded_event(cudaEvent_t e, RecordedEvent& out) {
  std::lock_guard lock(runtime_mutex());
  if (!valid_event(e)) return record(cudaErrorInvalidResourceHandle);
  if (e->capture) {
    invalidate_locked(e->capture);
    return record(cudaErrorStreamCaptureUnsupported);
  }
  if (e->captured_last) return record(cudaErrorCapturedEvent);
  if (e->timeline) out = {e->timeline, e->target, e->device};
  return cudaSuccess;
}
}  // namespace

extern "C" {

cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e || (flags & ~(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)))
    return record(cudaErrorInvalidValue);
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return record(cudaErrorInvalidValue);
  auto* ev = new CUevent_st;
  ev->device = lockstep::emu::current_device();
  ev->flags = flags;
  std::lock_guard lock(runtime_mutex());
  all_events().insert(ev);
  *e = ev;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard lock(runtime_mutex());
  if (!valid_event(e)) return record(cudaErrorInvalidResourceHandle);
  all_events().erase(e);
  delete e;  // pending waits hold the timeline and stamp, not the event
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::unique_lock lock(runtime_mutex());
  if (!valid_event(e)) return record(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    if (s->capture->invalidated) return record(cudaErrorStreamCaptureInvalidated);
    e->capture = s->capture;
    e->nodes = s->deps;
    e->captured_last = false;
    return cudaSuccess;
  }
  auto stamp = std::make_shared<std::atomic<int64_t>>(-1);
  lock.unlock();
  Task t{"cudaEventRecord", [stamp] { stamp->store(now_ns()); }, {}};
  t.always = true;
  if (cudaError_t err = submit(s, std::move(t)); err != cudaSuccess) return record(err);
  lock.lock();
  if (!valid_event(e)) return record(cudaErrorInvalidResourceHandle);
  // The marker is the stream's latest task unless another thread queued on
  // the same stream meanwhile; then waiting for the later position is still
  // correct (it only waits longer).
  {
    std::lock_guard qlock(s->m);
    e->target = s->enqueued;
  }
  e->timeline = s->timeline;
  e->stamp_ns = stamp;
  e->capture = nullptr;
  e->nodes.clear();
  e->captured_last = false;
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t stream, unsigned int flags) {
  if (flags & ~cudaEventRecordExternal) return record(cudaErrorInvalidValue);
  return cudaEventRecord(e, stream);
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  RecordedEvent r;
  if (cudaError_t status = recorded_event(e, r); status != cudaSuccess || !r.timeline) return status;
  if (int sticky = device(r.device).sticky.load(); sticky != cudaSuccess) return record(static_cast<cudaError_t>(sticky));
  return r.timeline->reached(r.target) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  RecordedEvent r;
  if (cudaError_t status = recorded_event(e, r); status != cudaSuccess || !r.timeline) return status;
  r.timeline->wait_for(r.target);
  count_host_sync();
  return record(static_cast<cudaError_t>(device(r.device).sticky.load()));
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return record(cudaErrorInvalidValue);
  std::lock_guard lock(runtime_mutex());
  if (!valid_event(start) || !valid_event(end)) return record(cudaErrorInvalidResourceHandle);
  if ((start->flags | end->flags) & cudaEventDisableTiming) return record(cudaErrorInvalidResourceHandle);
  if (start->captured_last || end->captured_last) return record(cudaErrorCapturedEvent);
  if (!start->stamp_ns || !end->stamp_ns) return record(cudaErrorInvalidResourceHandle);
  int64_t a = start->stamp_ns->load(), b = end->stamp_ns->load();
  if (a < 0 || b < 0) return record(cudaErrorNotReady);
  *ms = static_cast<float>(b - a) / 1e6f;  // wall time on the CPU: not a GPU timing
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t e, unsigned int flags) {
  if (flags & ~cudaEventWaitExternal) return record(cudaErrorInvalidValue);
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  std::unique_lock lock(runtime_mutex());
  if (!valid_event(e)) return record(cudaErrorInvalidResourceHandle);
  if (e->capture) {
    // A wait on an event recorded in a capture joins this stream to it.
    Capture* c = e->capture;
    if (c->invalidated) return record(cudaErrorStreamCaptureInvalidated);
    if (s->capture && s->capture != c) return record(cudaErrorStreamCaptureIsolation);
    if (!s->capture) {
      s->capture = c;
      s->deps.clear();
      c->streams.insert(s);
    }
    for (CUgraphNode_st* n : e->nodes)
      if (std::find(s->deps.begin(), s->deps.end(), n) == s->deps.end()) s->deps.push_back(n);
    return cudaSuccess;
  }
  if (e->captured_last) return record(cudaErrorCapturedEvent);
  if (s->capture) {
    // Waiting on work outside the capture would make the graph depend on it.
    invalidate_locked(s->capture);
    return record(cudaErrorStreamCaptureIsolation);
  }
  if (!e->timeline) return cudaSuccess;  // never recorded: nothing to wait for
  Task t{"cudaStreamWaitEvent", {}, {{e->timeline, e->target}}};
  lock.unlock();
  return record(submit(s, std::move(t)));
}

}  // extern "C"
