#pragma once
// CudaState (runtime/cuda/cuda_context.h) as a Context and the CUDA half's
// factory hold it, without its definition.
#include <memory>

namespace lockstep {

struct CudaState;

}  // namespace lockstep

// A Context owns its CudaState without seeing its definition: the deleter is
// defined beside the state, in runtime/cuda/context_cuda.cpp (and as a no-op
// in context.cpp when the build has no CUDA backend and no state can exist),
// so context.cpp needs no CUDA header.
template <>
struct std::default_delete<lockstep::CudaState> {
  void operator()(lockstep::CudaState* state) const;
};
