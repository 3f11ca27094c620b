// The CUDA build's answers to engine/device.h (the CPU-only build defines
// them in engine/device.cpp).
#include <cuda_runtime_api.h>

#include "engine/device.h"

namespace lockstep {

bool cuda_compiled() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver, no device or a driver older than the runtime: the caller
    // falls back to the CPU, so this is an answer, not an error.
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace lockstep
