#include "engine/context.h"

#include "engine/error.h"

#if LOCKSTEP_WITH_CUDA
#include "engine/cuda/cuda_context.h"
#else
namespace lockstep {
struct CudaState {};  // nothing to hold without the CUDA backend
}  // namespace lockstep
#endif

namespace lockstep {

Context::Context(Device device, ContextOptions options) : device_(device), options_(options) {
  if (device.is_cuda()) {
#if LOCKSTEP_WITH_CUDA
    cuda_ = make_cuda_state(device.index, options_);
#else
    LS_FAIL("device ", device.str(), " asked for, but this build has no CUDA backend");
#endif
  }
}

Context::~Context() = default;

float* Context::workspace(size_t bytes) {
  if (!workspace_.defined() || workspace_.bytes() < bytes) {
    workspace_ = Tensor();  // free the old block first
    workspace_ = Tensor::empty(Shape{static_cast<int64_t>((bytes + 3) / 4)}, device_);
  }
  return workspace_.data();
}

void Context::synchronize() {
#if LOCKSTEP_WITH_CUDA
  if (cuda_) cuda_synchronize(*cuda_);
#endif
}

}  // namespace lockstep
