#pragma once
// Byte copies and fills that touch GPU memory. The plain forms back
// runtime/memory.h: they run on the legacy default stream, so they are ordered
// after all work queued on the contexts' (blocking) streams and return when a
// copy to the host is done. The _async forms are stream-ordered and belong in
// ops that run on a context's stream.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "runtime/device.h"

namespace lockstep {

void cuda_copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void cuda_zero_bytes(void* dst, Device device, size_t bytes);

// Any direction (unified addressing); pinned host memory keeps a host copy asynchronous.
void cuda_copy_bytes_async(void* dst, const void* src, size_t bytes, cudaStream_t stream);
void cuda_zero_bytes_async(void* dst, size_t bytes, cudaStream_t stream);

}  // namespace lockstep
