#pragma once
// CudaState: the GPU resources of one Context, created once per replica and
// owned by it (runtime/context.h): the device ordinal, a compute stream and a
// communication stream, cuDNN and cuBLAS handles bound to the compute stream,
// a cuBLAS workspace and a growable cuDNN workspace bounded by
// ContextOptions::workspace_limit_bytes, a small scratch pair for results
// that ops read back to the host (loss sums), and the cuDNN descriptors and
// convolution algorithms chosen so far, one set per full shape
// (kernels/cuda/cudnn_plans.h).
//
// All three streams (compute, communication, and a copy stream for the next
// batch's host-to-device copy) are non-blocking: nothing lockstep queues uses
// the legacy default stream, and another library's (or a user's) legacy-stream
// work neither waits for them nor holds them back. Streams are ordered with
// each other by events only. The synchronous copies of runtime/memory.h find
// the streams through the registry of runtime/cuda/cuda_memory.h and wait for
// them with events. The communication stream has the highest priority, so
// all-reduce kernels launched during backward are scheduled ahead of the
// compute work they overlap.
//
// CUDA launches a kernel on a stream only while the stream's device is current
// on the launching thread, and creating the state leaves the thread's current
// device as it was: a replica's thread makes its device current once
// (cudaSetDevice(state.device)) before it runs ops, or wraps calls in a
// DeviceGuard.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/context_cuda.h"
#include "runtime/cuda/device_guard.h"
#include "kernels/cuda/cuda_libraries.h"

namespace lockstep {

// The library handles, the compute stream and the plans are CudaLibraries'
// (kernels/cuda/cuda_libraries.h), what the cuDNN and cuBLAS twins use.
struct CudaState final : CudaLibraries {
  CudaState(int device, const ContextOptions& options);
  ~CudaState();
  CudaState(CudaState&& other) noexcept;
  CudaState& operator=(CudaState&& other) noexcept;
  CudaState(const CudaState&) = delete;
  CudaState& operator=(const CudaState&) = delete;

  cudaStream_t comm_stream = nullptr;
  // Host-to-device copies queued ahead of the step that uses them (the replica
  // manager's next batch); the compute stream waits for them by an event.
  cudaStream_t copy_stream = nullptr;
  // Recorded on the copy stream for the compute stream to wait on
  // (Context::wait_for_copies_ahead).
  cudaEvent_t copies_ahead_done = nullptr;
  ContextOptions options;

  void* workspace(size_t bytes) override;
  size_t workspace_bytes() const { return workspace_bytes_; }
  size_t workspace_limit_bytes() const override { return workspace_limit_; }
  // From the device's caching allocator.
  void* allocate_scratch(size_t bytes) override;
  void release_scratch(void* ptr, size_t bytes) override;
  size_t cublas_workspace_bytes() const { return cublas_workspace_bytes_; }

  // Scratch for an op that reduces on the device and reads the result back:
  // `reduce_scratch` on the device, `readback` pinned on the host. One op at a
  // time: the op synchronises the compute stream before it returns.
  static constexpr size_t reduce_scratch_bytes = size_t(64) << 10;
  static constexpr size_t readback_bytes = size_t(4) << 10;
  void* reduce_scratch = nullptr;
  void* readback = nullptr;

  // A training step's metrics (the loss pass's sums): written on the device
  // and copied to pinned memory on the compute stream during the step, read
  // on the host once, at its end. Apart from `readback`, so an op that reads
  // back in between (none does inside a step) cannot overwrite them.
  static constexpr size_t step_metrics_bytes = 256;
  void* step_metrics = nullptr;
  void* step_metrics_host = nullptr;

  // Timing events recorded on the compute stream (Context::mark_time), reused
  // step after step: mark m is event m % kTimeMarks, and the last kTimeMarks
  // marks can be read.
  static constexpr size_t kTimeMarks = 64;
  std::vector<cudaEvent_t> time_marks;
  size_t time_marks_used = 0;

private:
  void release() noexcept;

  std::shared_ptr<Allocator> device_allocator_, pinned_allocator_;
  size_t workspace_limit_ = 0;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* cublas_workspace_ = nullptr;
  size_t cublas_workspace_bytes_ = 0;
};

// make_cuda_state, cuda_synchronize, the time marks and the compute-stream
// copies are declared in runtime/context_cuda.h (what Context uses).
// Waits for everything queued on the compute stream only (what a step's
// read-back needs: the communication stream's work is ordered before the
// compute stream's end by events).
void cuda_synchronize_compute(CudaState& state);

}  // namespace lockstep
