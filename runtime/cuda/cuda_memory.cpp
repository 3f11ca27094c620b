#include "runtime/cuda/cuda_memory.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "base/cuda/cuda_check.h"
#include "runtime/cuda/cuda_allocator.h"
#include "runtime/cuda/cuda_context.h"

namespace lockstep {

namespace {

// One device's registered context streams, and what the synchronous copies
// of that device use: a non-blocking copy stream and an event. The event is
// re-recorded on each registered stream in turn: a cudaStreamWaitEvent waits
// for the record made before it, so one event serves them all.
struct DeviceStreams {
  std::mutex m;
  std::vector<cudaStream_t> producers;
  cudaStream_t copy = nullptr;
  cudaEvent_t event = nullptr;
};

// Never destroyed: the copy streams and events live as long as the process
// (destroying them at exit could run after the CUDA runtime has unloaded).
DeviceStreams& streams_of(int device) {
  static std::mutex registry_mutex;
  static auto* registry = new std::map<int, std::unique_ptr<DeviceStreams>>;
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::unique_ptr<DeviceStreams>& entry = (*registry)[device];
  if (!entry) entry = std::make_unique<DeviceStreams>();
  return *entry;
}

// Makes `copy` (a stream of another device, or of this one) wait for
// everything queued so far on `device`'s context streams.
void wait_for_producers(int device, cudaStream_t copy) {
  DeviceStreams& d = streams_of(device);
  std::lock_guard<std::mutex> lock(d.m);
  if (d.producers.empty()) return;
  DeviceGuard guard(device);  // the event is recorded on this device's streams
  if (!d.event) LS_CUDA_CHECK(cudaEventCreateWithFlags(&d.event, cudaEventDisableTiming));
  for (cudaStream_t producer : d.producers) {
    LS_CUDA_CHECK(cudaEventRecord(d.event, producer));
    LS_CUDA_CHECK(cudaStreamWaitEvent(copy, d.event, 0));
  }
}

// `device`'s copy stream, ordered after the context streams of `device` and
// of `other` (another GPU a copy reads or writes; -1 for none). The caller
// has made `device` current.
cudaStream_t ordered_copy_stream(int device, int other) {
  cudaStream_t copy = nullptr;
  {
    DeviceStreams& d = streams_of(device);
    std::lock_guard<std::mutex> lock(d.m);
    if (!d.copy) LS_CUDA_CHECK(cudaStreamCreateWithFlags(&d.copy, cudaStreamNonBlocking));
    copy = d.copy;
  }
  wait_for_producers(device, copy);
  if (other >= 0 && other != device) wait_for_producers(other, copy);
  return copy;
}

}  // namespace

void register_context_streams(int device, const std::vector<cudaStream_t>& streams) {
  DeviceStreams& d = streams_of(device);
  std::lock_guard<std::mutex> lock(d.m);
  d.producers.insert(d.producers.end(), streams.begin(), streams.end());
}

void unregister_context_streams(int device, const std::vector<cudaStream_t>& streams) {
  DeviceStreams& d = streams_of(device);
  std::lock_guard<std::mutex> lock(d.m);
  for (cudaStream_t s : streams) {
    auto it = std::find(d.producers.begin(), d.producers.end(), s);
    if (it != d.producers.end()) d.producers.erase(it);
  }
}

void cuda_copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  // Peer copies go through unified addressing; the destination's device
  // queues the copy when both are GPUs.
  const int device = dst_device.is_cuda() ? dst_device.index : src_device.index;
  const int other = dst_device.is_cuda() && src_device.is_cuda() ? src_device.index : -1;
  DeviceGuard guard(device);
  cudaStream_t copy = ordered_copy_stream(device, other);
  LS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, copy));
  LS_CUDA_CHECK(cudaStreamSynchronize(copy));
}

void cuda_zero_bytes(void* dst, Device device, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(device.index);
  cudaStream_t copy = ordered_copy_stream(device.index, -1);
  LS_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, copy));
  LS_CUDA_CHECK(cudaStreamSynchronize(copy));
}

void cuda_copy_bytes_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  LS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  // A pinned end is not handed out again until this copy is done.
  cuda_record_pinned_use(src, stream);
  cuda_record_pinned_use(dst, stream);
}

void cuda_zero_bytes_async(void* dst, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  LS_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream));
}

}  // namespace lockstep
