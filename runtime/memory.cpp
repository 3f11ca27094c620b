#include "runtime/memory.h"

#include <cstring>

#include "base/error.h"

namespace lockstep {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if LOCKSTEP_WITH_CUDA
  cuda_copy_bytes(dst, dst_device, src, src_device, bytes);
#else
  LS_FAIL("copy between ", src_device.str(), " and ", dst_device.str(), " needs the CUDA backend");
#endif
}

void zero_bytes(void* dst, Device device, size_t bytes) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    std::memset(dst, 0, bytes);
    return;
  }
#if LOCKSTEP_WITH_CUDA
  cuda_zero_bytes(dst, device, bytes);
#else
  LS_FAIL("fill on ", device.str(), " needs the CUDA backend");
#endif
}

}  // namespace lockstep
