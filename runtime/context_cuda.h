#pragma once
// What runtime/context.cpp asks of the CUDA backend: the CudaState factory
// and the stream work a Context queues. Declared here, one level above
// runtime/cuda/, and defined there (cuda_context.cpp, context_cuda.cpp), so
// context.cpp never includes the CUDA half, and this header needs only the
// options and the state's handle, not context.h. Only a build with the
// backend (LOCKSTEP_WITH_CUDA) defines them.
#include <cstddef>
#include <memory>

#include "runtime/context_options.h"
#include "runtime/cuda_state_handle.h"

namespace lockstep {

// Creates the state for GPU `device`; throws an Error naming the device when
// it does not exist or a resource cannot be created.
std::unique_ptr<CudaState> make_cuda_state(int device, const ContextOptions& options);
// Waits for everything queued on both streams; reports kernel faults.
void cuda_synchronize(CudaState& state);
// Makes state.device the calling thread's current device (cheap when it is).
void cuda_make_current(const CudaState& state);
// Records the next timing event on the compute stream; returns its index.
int cuda_mark_time(CudaState& state);
// Starts a new timeline: the next mark is mark 0.
void cuda_clear_marks(CudaState& state);
// Seconds between two recorded marks, both of which the compute stream has passed.
double cuda_seconds_between(CudaState& state, int from, int to);
// Stream-ordered copy (any direction) and fill, queued on the compute stream.
void cuda_copy_on_compute(CudaState& state, void* dst, const void* src, size_t bytes);
void cuda_zero_on_compute(CudaState& state, void* dst, size_t bytes);
// A copy queued on the copy stream, and the compute stream's wait (by an
// event) for every copy queued there so far.
void cuda_copy_ahead(CudaState& state, void* dst, const void* src, size_t bytes);
void cuda_wait_for_copies_ahead(CudaState& state);

}  // namespace lockstep
