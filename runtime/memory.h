#pragma once
// Byte copies and fills between the CPU and CUDA devices. On a GPU these are
// synchronous: they wait for the work queued on the streams of the devices
// they touch, and only those (runtime/cuda/cuda_memory.h); streamed copies go
// through Context.
#include <cstddef>

#include "runtime/device.h"

namespace lockstep {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void zero_bytes(void* dst, Device device, size_t bytes);

#if LOCKSTEP_WITH_CUDA
// The CUDA backend's forms of the two above, for bytes on a GPU: declared
// here and defined in runtime/cuda/cuda_memory.cpp, so memory.cpp includes
// nothing of runtime/cuda/ (docs/architecture.md, "Folders").
void cuda_copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void cuda_zero_bytes(void* dst, Device device, size_t bytes);
#endif

}  // namespace lockstep
