#include "runtime/cuda/device_guard.h"

#include <cuda_runtime_api.h>

#include "base/cuda/cuda_check.h"

namespace lockstep {

DeviceGuard::DeviceGuard(int device) {
  LS_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    LS_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) LS_CUDA_LOG(cudaSetDevice(previous_));
}

}  // namespace lockstep
