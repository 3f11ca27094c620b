#include "runtime/cuda/stream_uses.h"

#include "base/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"

namespace lockstep {

EventPool::~EventPool() {
  for (auto& [device, event] : idle_) {
    // At exit the runtime may already be unloading; the driver frees the events then.
    if (cudaEventDestroy(event) != cudaSuccess) cudaGetLastError();
  }
}

cudaEvent_t EventPool::take(int device) {
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (idle_[i].first != device) continue;
    cudaEvent_t event = idle_[i].second;
    idle_[i] = idle_.back();
    idle_.pop_back();
    return event;
  }
  DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  LS_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void EventPool::give_back(int device, cudaEvent_t event) { idle_.emplace_back(device, event); }

void StreamUses::record(cudaStream_t stream, EventPool& pool) {
  int device = 0;
  LS_CUDA_CHECK(cudaGetDevice(&device));
  for (Use& use : uses_) {
    if (use.stream != stream || use.device != device) continue;
    LS_CUDA_CHECK(cudaEventRecord(use.event, stream));
    return;
  }
  cudaEvent_t event = pool.take(device);
  cudaError_t status = cudaEventRecord(event, stream);
  if (status != cudaSuccess) {
    pool.give_back(device, event);
    cuda_detail::throw_status("cudaEventRecord(event, stream)", status, __FILE__, __LINE__);
  }
  uses_.push_back({stream, event, device});
}

bool StreamUses::poll(EventPool& pool) {
  for (size_t i = 0; i < uses_.size();) {
    cudaError_t status = cudaEventQuery(uses_[i].event);
    if (status == cudaErrorNotReady) {  // not recorded as the last error
      ++i;
      continue;
    }
    pool.give_back(uses_[i].device, uses_[i].event);
    uses_[i] = uses_.back();
    uses_.pop_back();
  }
  return uses_.empty();
}

std::vector<cudaEvent_t> StreamUses::events() const {
  std::vector<cudaEvent_t> events;
  for (const Use& use : uses_) events.push_back(use.event);
  return events;
}

void StreamUses::release(EventPool& pool) {
  for (const Use& use : uses_) pool.give_back(use.device, use.event);
  uses_.clear();
}

}  // namespace lockstep
