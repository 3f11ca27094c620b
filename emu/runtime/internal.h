#pragma once
// The emulated runtime's shared state: devices, streams (each with its own
// worker thread), events, captures and graphs. Only emu/runtime/*.cpp and
// emu/kernel/*.cpp include this; the CUDA handle types (cudaStream_t is
// `CUstream_st*`, ...) are defined here, so a handle is a pointer to our object.
#include "emu_runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace lockstep::emu::detail {

constexpr int kMaxDevices = 8;

// How many tasks of a stream have finished; waiters (other streams, events,
// the host) block on it. Shared so an event or a waiting stream can outlive
// the stream it waits on.
struct Timeline {
  std::mutex m;
  std::condition_variable cv;
  uint64_t done = 0;
  void wait_for(uint64_t target);
  bool reached(uint64_t target) {
    std::lock_guard lock(m);
    return done >= target;
  }
};

struct Wait {
  std::shared_ptr<Timeline> timeline;
  uint64_t target;
};

struct Task {
  std::string name;
  std::function<void()> work;  // may be empty (a pure wait or a marker)
  std::vector<Wait> waits;     // run only after these
  bool always = false;         // runs even after the device faulted (markers, callbacks)
};

struct Capture;

}  // namespace lockstep::emu::detail

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;  // cudaStreamDefault (blocking) or cudaStreamNonBlocking
  int priority = 0;
  bool legacy = false;
  std::shared_ptr<lockstep::emu::detail::Timeline> timeline =
      std::make_shared<lockstep::emu::detail::Timeline>();
  // The queue; guarded by m. `enqueued` counts every task ever queued.
  std::mutex m;
  std::condition_variable cv;
  std::deque<lockstep::emu::detail::Task> queue;
  uint64_t enqueued = 0;
  bool stop = false;
  std::thread worker;
  // Capture state; guarded by the global runtime mutex.
  lockstep::emu::detail::Capture* capture = nullptr;
  std::vector<CUgraphNode_st*> deps;
  std::vector<cudaGraphNode_t> deps_out;  // what cudaStreamGetCaptureInfo hands out
};

struct CUgraphNode_st {
  std::string name;
  std::function<void()> work;
  std::vector<CUgraphNode_st*> deps;
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // creation order is a valid order
};

struct CUgraphExec_st {
  int device = 0;
  std::vector<std::pair<std::string, std::function<void()>>> steps;
};

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  // The latest record (guarded by the global runtime mutex): the stream's
  // timeline position it completes at, and the time stamp its task writes.
  std::shared_ptr<lockstep::emu::detail::Timeline> timeline;
  uint64_t target = 0;
  std::shared_ptr<std::atomic<int64_t>> stamp_ns;  // -1 until the record ran
  // Recorded during a capture: the capture and the nodes it stands for.
  lockstep::emu::detail::Capture* capture = nullptr;
  std::vector<CUgraphNode_st*> nodes;
  // Last recorded in a capture that has ended: CUDA refuses to query, wait
  // for or time it (cudaErrorCapturedEvent) until it is recorded again.
  bool captured_last = false;
};

namespace lockstep::emu::detail {

struct Capture {
  CUgraph_st* graph = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  cudaStream_t origin = nullptr;
  std::set<cudaStream_t> streams;
  unsigned long long id = 0;
  bool invalidated = false;
};

struct Device {
  std::atomic<int> sticky{cudaSuccess};
  size_t used = 0;  // bytes of device memory; guarded by the memory mutex
  cudaStream_t legacy = nullptr;
  std::set<cudaStream_t> streams;  // every live stream of the device, legacy included
  bool peer[kMaxDevices] = {};
};

// The one runtime mutex: device/stream/event registries and capture state.
std::mutex& runtime_mutex();
Device& device(int id);
bool valid_device(int id);
size_t memory_capacity();

// Errors (errors.cpp): the calling thread's last error, and the helper every
// API function returns through so cudaGetLastError sees failures.
cudaError_t record(cudaError_t e);
void count_host_sync();
// A piece of work (kernel, library call, copy, fill, event record or wait,
// host function, graph launch) queued on a stream by the calling thread.
void count_host_launch();
// Counters (counters.cpp): a call that resolved to the legacy stream, and an
// allocation call (counted when a collective is in flight).
void count_legacy_stream_call();
void count_allocation_call();

// Streams (streams.cpp). resolve() maps 0 / cudaStreamLegacy /
// cudaStreamPerThread to real streams; nullptr when the handle is invalid.
cudaStream_t resolve(cudaStream_t s);
bool valid_stream(cudaStream_t s);  // requires runtime_mutex held
// Queues a task (or records it into the stream's capture). The runtime mutex
// must NOT be held.
cudaError_t submit(cudaStream_t s, Task task);
// Waits until everything queued on `s` so far has finished (no error check).
void drain(cudaStream_t s);
void drain_device(int device);
cudaStream_t create_stream(int device, unsigned flags, int priority, bool legacy);

// Captures (graphs.cpp); runtime_mutex held.
// True when a call CUDA deems unsafe during capture must be refused now
// (a global-mode capture anywhere, or a thread-local one of this thread);
// invalidates those captures, as CUDA does.
bool refuse_unsafe_call_locked();
cudaError_t refuse_unsafe_call();  // takes the mutex; cudaSuccess when allowed
bool device_capturing_locked(int device);
void invalidate_locked(Capture* c);
cudaError_t capture_task_locked(cudaStream_t s, Task& task);

bool valid_event(cudaEvent_t e);  // runtime_mutex held
// The capture ends: its events keep no pointer to it (runtime_mutex held).
void end_event_captures_locked(Capture* c);

int64_t now_ns();

}  // namespace lockstep::emu::detail
