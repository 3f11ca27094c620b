// The parts of runtime/context_cuda.h that reach into CudaState for Context:
// its deleter, the time-mark reset and the compute-stream copies.
#include "runtime/context_cuda.h"

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_memory.h"

void std::default_delete<lockstep::CudaState>::operator()(lockstep::CudaState* state) const { delete state; }

namespace lockstep {

void cuda_clear_marks(CudaState& state) { state.time_marks_used = 0; }

void cuda_copy_on_compute(CudaState& state, void* dst, const void* src, size_t bytes) {
  cuda_copy_bytes_async(dst, src, bytes, state.compute_stream);
}

void cuda_zero_on_compute(CudaState& state, void* dst, size_t bytes) {
  cuda_zero_bytes_async(dst, bytes, state.compute_stream);
}

}  // namespace lockstep
