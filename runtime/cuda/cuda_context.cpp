#include "runtime/cuda/cuda_context.h"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/cuda/context_streams.h"
#include "runtime/cuda/cuda_allocator.h"
#include "runtime/cuda/cuda_memory.h"
#include "runtime/precision_policy.h"
#include "base/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_plans.h"
#include "base/error.h"

namespace lockstep {

namespace {
// cuBLAS's documented workspace recommendation: 32 MiB on Hopper and later,
// 4 MiB before.
size_t recommended_cublas_workspace(int device) {
  int major = 0;
  LS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9 ? size_t(32) << 20 : size_t(4) << 20;
}
}  // namespace

CudaState::CudaState(int device_index, const ContextOptions& context_options)
    : options(context_options), workspace_limit_(context_options.workspace_limit_bytes) {
  device = device_index;
  deterministic = context_options.deterministic;
  allow_tf32 = precision_policy(context_options.precision, Device::cuda(device_index)).tf32_math;
  DeviceGuard guard(device);
  try {
    device_allocator_ = cuda_allocator_for(device);
    pinned_allocator_ = cuda_pinned_allocator();

    int least = 0, greatest = 0;
    LS_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    LS_CUDA_CHECK(cudaStreamCreateWithPriority(&compute_stream, cudaStreamNonBlocking, least));
    LS_CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream, cudaStreamNonBlocking, greatest));
    LS_CUDA_CHECK(cudaStreamCreateWithPriority(&copy_stream, cudaStreamNonBlocking, least));
    // The synchronous copies wait for these, and the allocator's out-of-memory retry before cudaFree.
    register_context_streams(device, {compute_stream, comm_stream, copy_stream});
    LS_CUDA_CHECK(cudaEventCreateWithFlags(&copies_ahead_done, cudaEventDisableTiming));

    LS_CUDNN_CHECK(cudnnCreate(&cudnn));
    LS_CUDNN_CHECK(cudnnSetStream(cudnn, compute_stream));

    LS_CUBLAS_CHECK(cublasCreate(&cublas));
    LS_CUBLAS_CHECK(cublasSetStream(cublas, compute_stream));
    LS_CUBLAS_CHECK(cublasSetMathMode(cublas, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    // Our own workspace, so cuBLAS allocates nothing behind the caching
    // allocator's back and the memory shows in its counts; a zero limit
    // leaves cuBLAS without any workspace.
    cublas_workspace_bytes_ = std::min(recommended_cublas_workspace(device), workspace_limit_);
    if (cublas_workspace_bytes_ > 0) cublas_workspace_ = device_allocator_->allocate(cublas_workspace_bytes_);
    LS_CUBLAS_CHECK(cublasSetWorkspace(cublas, cublas_workspace_, cublas_workspace_bytes_));

    reduce_scratch = device_allocator_->allocate(reduce_scratch_bytes);
    readback = pinned_allocator_->allocate(readback_bytes);
    step_metrics = device_allocator_->allocate(step_metrics_bytes);
    step_metrics_host = pinned_allocator_->allocate(step_metrics_bytes);
    plans = std::make_unique<CudnnPlans>();
  } catch (...) {
    release();
    throw;
  }
}

CudaState::~CudaState() { release(); }

void* CudaState::allocate_scratch(size_t bytes) { return bytes ? device_allocator_->allocate(bytes) : nullptr; }

void CudaState::release_scratch(void* ptr, size_t bytes) {
  if (ptr) device_allocator_->deallocate(ptr, bytes);
}

void CudaState::release() noexcept {
  if (device < 0) return;
  int previous = -1;
  bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device && cudaSetDevice(device) == cudaSuccess;
  // Nothing waits for these streams once they are gone (this waits for an
  // out-of-memory retry that borrowed them).
  try {
    unregister_context_streams(device, {compute_stream, comm_stream, copy_stream});
  } catch (...) {  // only std::bad_alloc: nothing to undo
  }
  // Queued work may still use the workspaces: let it finish before their
  // blocks go back to the cache.
  if (compute_stream) LS_CUDA_LOG(cudaStreamSynchronize(compute_stream));
  if (comm_stream) LS_CUDA_LOG(cudaStreamSynchronize(comm_stream));
  if (copy_stream) LS_CUDA_LOG(cudaStreamSynchronize(copy_stream));
  plans.reset();  // descriptors only: nothing on the device
  if (cublas) LS_CUBLAS_LOG(cublasDestroy(cublas));
  if (cudnn) LS_CUDNN_LOG(cudnnDestroy(cudnn));
  if (device_allocator_) {
    device_allocator_->deallocate(workspace_, workspace_bytes_);
    device_allocator_->deallocate(cublas_workspace_, cublas_workspace_bytes_);
    device_allocator_->deallocate(reduce_scratch, reduce_scratch_bytes);
    device_allocator_->deallocate(step_metrics, step_metrics_bytes);
  }
  if (pinned_allocator_) {
    pinned_allocator_->deallocate(readback, readback_bytes);
    pinned_allocator_->deallocate(step_metrics_host, step_metrics_bytes);
  }
  for (cudaEvent_t e : time_marks) LS_CUDA_LOG(cudaEventDestroy(e));
  if (copies_ahead_done) LS_CUDA_LOG(cudaEventDestroy(copies_ahead_done));
  copies_ahead_done = nullptr;
  time_marks.clear();
  time_marks_used = 0;
  if (compute_stream) LS_CUDA_LOG(cudaStreamDestroy(compute_stream));
  if (comm_stream) LS_CUDA_LOG(cudaStreamDestroy(comm_stream));
  if (copy_stream) LS_CUDA_LOG(cudaStreamDestroy(copy_stream));
  if (switched) LS_CUDA_LOG(cudaSetDevice(previous));
  cublas = nullptr;
  cudnn = nullptr;
  compute_stream = comm_stream = copy_stream = nullptr;
  workspace_ = cublas_workspace_ = reduce_scratch = readback = step_metrics = step_metrics_host = nullptr;
  workspace_bytes_ = cublas_workspace_bytes_ = 0;
  device_allocator_.reset();
  pinned_allocator_.reset();
  device = -1;
}

CudaState::CudaState(CudaState&& other) noexcept { *this = std::move(other); }

CudaState& CudaState::operator=(CudaState&& other) noexcept {
  if (this == &other) return *this;
  release();
  device = std::exchange(other.device, -1);
  compute_stream = std::exchange(other.compute_stream, nullptr);
  comm_stream = std::exchange(other.comm_stream, nullptr);
  copy_stream = std::exchange(other.copy_stream, nullptr);
  copies_ahead_done = std::exchange(other.copies_ahead_done, nullptr);
  cudnn = std::exchange(other.cudnn, nullptr);
  cublas = std::exchange(other.cublas, nullptr);
  options = other.options;
  deterministic = other.deterministic;
  allow_tf32 = other.allow_tf32;
  plans = std::move(other.plans);
  reduce_scratch = std::exchange(other.reduce_scratch, nullptr);
  readback = std::exchange(other.readback, nullptr);
  step_metrics = std::exchange(other.step_metrics, nullptr);
  step_metrics_host = std::exchange(other.step_metrics_host, nullptr);
  time_marks = std::exchange(other.time_marks, {});
  time_marks_used = std::exchange(other.time_marks_used, 0);
  device_allocator_ = std::move(other.device_allocator_);
  pinned_allocator_ = std::move(other.pinned_allocator_);
  workspace_limit_ = std::exchange(other.workspace_limit_, 0);
  workspace_ = std::exchange(other.workspace_, nullptr);
  workspace_bytes_ = std::exchange(other.workspace_bytes_, 0);
  cublas_workspace_ = std::exchange(other.cublas_workspace_, nullptr);
  cublas_workspace_bytes_ = std::exchange(other.cublas_workspace_bytes_, 0);
  return *this;
}

void* CudaState::workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  LS_CHECK(bytes <= workspace_limit_, "cuda:", device, " workspace of ", bytes, " bytes asked for, above the limit of ",
           workspace_limit_, " bytes (ContextOptions::workspace_limit_bytes)");
  device_allocator_->deallocate(workspace_, workspace_bytes_);
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  workspace_ = device_allocator_->allocate(bytes);
  workspace_bytes_ = bytes;
  return workspace_;
}

std::unique_ptr<CudaState> make_cuda_state(int device, const ContextOptions& options) {
  int count = cuda_device_count();
  LS_CHECK(device >= 0 && device < count, "cannot create a context on cuda:", device, ": ",
           count == 0 ? std::string("no CUDA device is visible (no GPU or no driver)")
                      : std::to_string(count) + " CUDA device(s) are visible");
  return std::make_unique<CudaState>(device, options);
}

void cuda_make_current(const CudaState& state) {
  int current = -1;
  LS_CUDA_CHECK(cudaGetDevice(&current));
  if (current != state.device) LS_CUDA_CHECK(cudaSetDevice(state.device));
}

void cuda_synchronize_compute(CudaState& state) { LS_CUDA_CHECK(cudaStreamSynchronize(state.compute_stream)); }

int cuda_mark_time(CudaState& state) {
  const size_t slot = state.time_marks_used % CudaState::kTimeMarks;
  if (slot == state.time_marks.size()) {
    cudaEvent_t e = nullptr;
    LS_CUDA_CHECK(cudaEventCreate(&e));  // with timing
    state.time_marks.push_back(e);
  }
  LS_CUDA_CHECK(cudaEventRecord(state.time_marks[slot], state.compute_stream));
  return static_cast<int>(state.time_marks_used++);
}

double cuda_seconds_between(CudaState& state, int from, int to) {
  const size_t used = state.time_marks_used;
  for (int m : {from, to})
    LS_CHECK(m >= 0 && static_cast<size_t>(m) < used && used - static_cast<size_t>(m) <= CudaState::kTimeMarks,
             "time mark ", m, " on cuda:", state.device, " is not one of the last ", CudaState::kTimeMarks, " of ",
             used, " recorded");
  float ms = 0.0f;
  LS_CUDA_CHECK(cudaEventElapsedTime(&ms, state.time_marks[from % CudaState::kTimeMarks],
                                     state.time_marks[to % CudaState::kTimeMarks]));
  return ms / 1e3;
}

void cuda_synchronize(CudaState& state) {
  LS_CUDA_CHECK(cudaStreamSynchronize(state.compute_stream));
  LS_CUDA_CHECK(cudaStreamSynchronize(state.comm_stream));
  LS_CUDA_CHECK(cudaStreamSynchronize(state.copy_stream));
}

}  // namespace lockstep
