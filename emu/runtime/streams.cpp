// Streams: each has its own worker thread that runs its queue in order, so
// streams really overlap and a missing wait is a real race. The legacy default
// stream of a device waits for all blocking streams of that device and they
// wait for it (non-blocking streams don't), as CUDA documents.
#include "internal.h"

#include <cstdio>
#include <exception>

namespace lockstep::emu::detail {

void Timeline::wait_for(uint64_t target) {
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return done >= target; });
}

namespace {

std::set<cudaStream_t>& all_streams() {
  static auto* s = new std::set<cudaStream_t>;
  return *s;
}

void worker_main(cudaStream_t s) {
  cudaSetDevice(s->device);  // stand-ins' work sees the stream's device as current
  for (;;) {
    Task task;
    {
      std::unique_lock lock(s->m);
      s->cv.wait(lock, [&] { return s->stop || !s->queue.empty(); });
      if (s->queue.empty()) return;
      task = std::move(s->queue.front());
      s->queue.pop_front();
    }
    for (Wait& w : task.waits) w.timeline->wait_for(w.target);
    // After a fault the device's context is dead, as on a GPU: later work is
    // skipped (markers still complete, so waiters don't hang).
    if (task.work && (task.always || device(s->device).sticky.load() == cudaSuccess)) {
      try {
        task.work();
      } catch (const std::exception& e) {
        lockstep::emu::fail_async(s->device, cudaErrorLaunchFailure, task.name + " threw: " + e.what());
      }
    }
    {
      std::lock_guard lock(s->timeline->m);
      ++s->timeline->done;
    }
    s->timeline->cv.notify_all();
  }
}

cudaStream_t legacy_stream(int dev) {
  std::lock_guard lock(runtime_mutex());
  Device& d = device(dev);
  if (!d.legacy) {
    cudaStream_t s = new CUstream_st;
    s->device = dev;
    s->legacy = true;
    d.streams.insert(s);
    all_streams().insert(s);
    s->worker = std::thread(worker_main, s);
    d.legacy = s;
  }
  return d.legacy;
}

cudaStream_t per_thread_stream(int dev) {
  // Blocking with respect to the legacy stream, like a stream created with
  // cudaStreamDefault, but one per host thread. Never destroyed.
  thread_local cudaStream_t streams[kMaxDevices] = {};
  if (!streams[dev]) streams[dev] = create_stream(dev, cudaStreamDefault, 0, false);
  return streams[dev];
}

uint64_t enqueued(cudaStream_t s) {
  std::lock_guard lock(s->m);
  return s->enqueued;
}

}  // namespace

bool valid_stream(cudaStream_t s) { return all_streams().count(s) != 0; }

cudaStream_t create_stream(int dev, unsigned flags, int priority, bool legacy) {
  cudaStream_t s = new CUstream_st;
  s->device = dev;
  s->flags = flags;
  s->priority = priority;
  s->legacy = legacy;
  {
    std::lock_guard lock(runtime_mutex());
    device(dev).streams.insert(s);
    all_streams().insert(s);
  }
  s->worker = std::thread(worker_main, s);
  return s;
}

cudaStream_t resolve(cudaStream_t s) {
  int dev = lockstep::emu::current_device();
  if (s == nullptr || s == cudaStreamLegacy) {
    count_legacy_stream_call();
    return legacy_stream(dev);
  }
  if (s == cudaStreamPerThread) return per_thread_stream(dev);
  std::lock_guard lock(runtime_mutex());
  return valid_stream(s) ? s : nullptr;
}

cudaError_t submit(cudaStream_t s, Task task) {
  std::lock_guard lock(runtime_mutex());
  if (!valid_stream(s)) return cudaErrorInvalidResourceHandle;
  // Recorded into a graph, the work is launched later, by cudaGraphLaunch.
  if (s->capture) return capture_task_locked(s, task);
  count_host_launch();
  Device& d = device(s->device);
  if (s->legacy) {
    if (device_capturing_locked(s->device)) return cudaErrorStreamCaptureImplicit;
    for (cudaStream_t o : d.streams)
      if (o != s && !(o->flags & cudaStreamNonBlocking)) task.waits.push_back({o->timeline, enqueued(o)});
  } else if (!(s->flags & cudaStreamNonBlocking) && d.legacy) {
    task.waits.push_back({d.legacy->timeline, enqueued(d.legacy)});
  }
  {
    std::lock_guard qlock(s->m);
    ++s->enqueued;
    s->queue.push_back(std::move(task));
  }
  s->cv.notify_one();
  return cudaSuccess;
}

void drain(cudaStream_t s) { s->timeline->wait_for(enqueued(s)); }

void drain_device(int dev) {
  std::vector<cudaStream_t> streams;
  {
    std::lock_guard lock(runtime_mutex());
    streams.assign(device(dev).streams.begin(), device(dev).streams.end());
  }
  for (cudaStream_t s : streams) drain(s);
}

}  // namespace lockstep::emu::detail

namespace lockstep::emu {

cudaError_t enqueue(cudaStream_t stream, const char* name, std::function<void()> work) {
  cudaStream_t s = detail::resolve(stream);
  if (!s) return detail::record(cudaErrorInvalidResourceHandle);
  return detail::record(detail::submit(s, detail::Task{name ? name : "enqueue", std::move(work), {}}));
}

int stream_device(cudaStream_t stream) {
  cudaStream_t s = detail::resolve(stream);
  return s ? s->device : current_device();
}

}  // namespace lockstep::emu

using namespace lockstep::emu::detail;

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithPriority(s, cudaStreamDefault, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  return cudaStreamCreateWithPriority(s, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  if (!s || (flags & ~cudaStreamNonBlocking)) return record(cudaErrorInvalidValue);
  // Out-of-range priorities are clamped, as documented. Priorities are
  // recorded only: each stream has its own worker anyway.
  priority = priority > 0 ? 0 : (priority < -5 ? -5 : priority);
  *s = create_stream(lockstep::emu::current_device(), flags, priority, false);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return record(cudaErrorInvalidResourceHandle);
  {
    std::lock_guard lock(runtime_mutex());
    if (!valid_stream(s) || s->legacy) return record(cudaErrorInvalidResourceHandle);
    if (s->capture) invalidate_locked(s->capture), s->capture->streams.erase(s);
    device(s->device).streams.erase(s);
    all_streams().erase(s);
  }
  // CUDA returns at once and releases the stream when its work is done; the
  // worker finishes the queue before it exits, so joining here is equivalent.
  {
    std::lock_guard lock(s->m);
    s->stop = true;
  }
  s->cv.notify_one();
  s->worker.join();
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (!priority) return record(cudaErrorInvalidValue);
  *priority = s->priority;
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (!flags) return record(cudaErrorInvalidValue);
  *flags = s->flags;
  return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t stream, int* dev) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (!dev) return record(cudaErrorInvalidValue);
  *dev = s->device;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  {
    std::lock_guard lock(runtime_mutex());
    if (s->capture) {
      invalidate_locked(s->capture);
      return record(cudaErrorStreamCaptureUnsupported);
    }
    if (s->legacy && device_capturing_locked(s->device)) return record(cudaErrorStreamCaptureImplicit);
  }
  drain(s);
  count_host_sync();
  return record(static_cast<cudaError_t>(device(s->device).sticky.load()));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  {
    std::lock_guard lock(runtime_mutex());
    if (s->capture) {
      invalidate_locked(s->capture);
      return record(cudaErrorStreamCaptureUnsupported);
    }
  }
  if (int sticky = device(s->device).sticky.load(); sticky != cudaSuccess)
    return record(static_cast<cudaError_t>(sticky));
  return s->timeline->reached(enqueued(s)) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t cb, void* user, unsigned int flags) {
  if (!cb || flags != 0) return record(cudaErrorInvalidValue);
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  Task t{"cudaStreamAddCallback",
         [cb, stream, user, dev = s->device] { cb(stream, static_cast<cudaError_t>(device(dev).sticky.load()), user); },
         {}};
  t.always = true;  // callbacks run with the error status after a fault
  return record(submit(s, std::move(t)));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user) {
  if (!fn) return record(cudaErrorInvalidValue);
  cudaStream_t s = resolve(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  return record(submit(s, Task{"cudaLaunchHostFunc", [fn, user] { fn(user); }, {}}));
}

}  // extern "C"
