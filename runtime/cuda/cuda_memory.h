#pragma once
// Byte copies and fills that touch GPU memory.
//
// The plain forms, cuda_copy_bytes and cuda_zero_bytes (declared in
// runtime/memory.h, which they back: Tensor::copy_from, to_vector, zero,
// checkpoints), never use the legacy default stream. Each runs on a
// copy stream of its own device (non-blocking, one per device) after that
// stream has waited, through events, for the work queued so far on the
// streams of every context of the devices it touches (the streams that can
// have produced or still read the bytes; runtime/cuda/context_streams.h),
// and returns when it is done. So
// it is ordered after earlier work from any thread, later work is queued
// after it has finished, and the host waits for nothing else: no other
// device, and no stream's later work, which the legacy stream would have
// held back.
//
// The _async forms are stream-ordered and belong in ops that run on a
// context's stream.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "runtime/memory.h"

namespace lockstep {

// Any direction (unified addressing); pinned host memory keeps a host copy asynchronous.
void cuda_copy_bytes_async(void* dst, const void* src, size_t bytes, cudaStream_t stream);
void cuda_zero_bytes_async(void* dst, size_t bytes, cudaStream_t stream);

}  // namespace lockstep
