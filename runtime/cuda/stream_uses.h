#pragma once
// Which streams still use a freed block: one event per stream, recorded right
// after the work on that stream was queued, so a caching allocator can hold
// the block back until that work is done without ever blocking for it.
#include <cuda_runtime_api.h>

#include <utility>
#include <vector>

namespace lockstep {

// Events without timing, created on the device they are recorded on and
// reused; not thread-safe (its allocator's mutex guards it).
class EventPool {
public:
  EventPool() = default;
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  ~EventPool();  // destroys the events, quietly at exit
  cudaEvent_t take(int device);
  void give_back(int device, cudaEvent_t event);

private:
  std::vector<std::pair<int, cudaEvent_t>> idle_;
};

class StreamUses {
public:
  // Records an event on `stream` (on the current device) now. A later record
  // on the same stream replaces the earlier one: a stream runs in order.
  void record(cudaStream_t stream, EventPool& pool);
  // True when every recorded event has completed (cudaEventQuery); completed
  // events go back to the pool. Errors other than "not ready" count as done:
  // the device is then broken and the error surfaces on its next checked call.
  bool poll(EventPool& pool);
  // The recorded events, for a caller that waits for them without a lock held.
  std::vector<cudaEvent_t> events() const;
  void release(EventPool& pool);  // gives every event back without waiting
  bool empty() const { return uses_.empty(); }

private:
  struct Use {
    cudaStream_t stream;
    cudaEvent_t event;
    int device;
  };
  std::vector<Use> uses_;
};

}  // namespace lockstep
