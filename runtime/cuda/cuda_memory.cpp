#include "runtime/cuda/cuda_memory.h"

#include <mutex>

#include "base/cuda/cuda_check.h"
#include "runtime/cuda/cuda_allocator.h"
#include "runtime/cuda/context_streams.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/per_device.h"

namespace lockstep {

namespace {

// What the synchronous copies of one device use: a non-blocking copy stream
// and an event. The event is re-recorded on each context stream in turn: a
// cudaStreamWaitEvent waits for the record made before it, so one event
// serves them all.
struct CopyStream {
  std::mutex m;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
};

CopyStream& copy_stream_of(int device) { return per_device<CopyStream>(device); }

// Makes `copy` (a stream of another device, or of this one) wait for
// everything queued so far on `device`'s context streams.
void wait_for_context_streams(int device, cudaStream_t copy) {
  CopyStream& c = copy_stream_of(device);
  std::lock_guard<std::mutex> lock(c.m);  // the event is shared by every copy of `device`
  DeviceGuard guard(device);              // it is recorded on this device's streams
  for_each_context_stream(device, [&](cudaStream_t producer) {
    if (!c.event) LS_CUDA_CHECK(cudaEventCreateWithFlags(&c.event, cudaEventDisableTiming));
    LS_CUDA_CHECK(cudaEventRecord(c.event, producer));
    LS_CUDA_CHECK(cudaStreamWaitEvent(copy, c.event, 0));
  });
}

// `device`'s copy stream, ordered after the context streams of `device` and
// of `other` (another GPU a copy reads or writes; -1 for none). The caller
// has made `device` current.
cudaStream_t ordered_copy_stream(int device, int other) {
  cudaStream_t copy = nullptr;
  {
    CopyStream& c = copy_stream_of(device);
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.stream) LS_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    copy = c.stream;
  }
  wait_for_context_streams(device, copy);
  if (other >= 0 && other != device) wait_for_context_streams(other, copy);
  return copy;
}

}  // namespace

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
