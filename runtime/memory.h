#pragma once
// Byte copies and fills between the CPU and CUDA devices. On a GPU these run
// synchronously on the default stream; streamed copies go through Context.
#include <cstddef>

#include "runtime/device.h"

namespace lockstep {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void zero_bytes(void* dst, Device device, size_t bytes);

}  // namespace lockstep
