#include "runtime/cuda/cuda_memory.h"

#include "base/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"

namespace lockstep {

void cuda_copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  // Peer copies go through unified addressing; the destination's device
  // queues the copy when both are GPUs.
  DeviceGuard guard(dst_device.is_cuda() ? dst_device.index : src_device.index);
  LS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void cuda_zero_bytes(void* dst, Device device, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(device.index);
  LS_CUDA_CHECK(cudaMemset(dst, 0, bytes));
}

void cuda_copy_bytes_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  LS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
}

void cuda_zero_bytes_async(void* dst, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  LS_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream));
}

}  // namespace lockstep
