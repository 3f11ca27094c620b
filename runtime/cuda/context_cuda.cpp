// The parts of runtime/context_cuda.h that reach into CudaState for Context:
// its deleter, the time-mark reset, the compute-stream copies and the copies
// queued ahead on the copy stream.
#include "runtime/context_cuda.h"

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_memory.h"
#include "base/cuda/cuda_check.h"

void std::default_delete<lockstep::CudaState>::operator()(lockstep::CudaState* state) const { delete state; }

namespace lockstep {

void cuda_clear_marks(CudaState& state) { state.time_marks_used = 0; }

void cuda_copy_on_compute(CudaState& state, void* dst, const void* src, size_t bytes) {
  cuda_copy_bytes_async(dst, src, bytes, state.compute_stream);
}

void cuda_zero_on_compute(CudaState& state, void* dst, size_t bytes) {
  cuda_zero_bytes_async(dst, bytes, state.compute_stream);
}

void cuda_copy_ahead(CudaState& state, void* dst, const void* src, size_t bytes) {
  cuda_copy_bytes_async(dst, src, bytes, state.copy_stream);
}

void cuda_wait_for_copies_ahead(CudaState& state) {
  LS_CUDA_CHECK(cudaEventRecord(state.copies_ahead_done, state.copy_stream));
  LS_CUDA_CHECK(cudaStreamWaitEvent(state.compute_stream, state.copies_ahead_done, 0));
}

}  // namespace lockstep
