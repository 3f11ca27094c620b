#include "distributed/cuda/nccl_communicator.h"

#include "base/cuda/cuda_check.h"
#include "base/error.h"

namespace lockstep {

NcclCommunicator::NcclCommunicator(const std::vector<Device>& devices, std::chrono::milliseconds timeout)
    : comms_(devices.size()), ranks_(devices.size()), timeout_(timeout) {
  std::vector<int> ordinals;
  for (const Device& d : devices) {
    LS_CHECK(d.is_cuda(), "NCCL ranks are GPUs, got ", d.str());
    ordinals.push_back(d.index);
  }
  LS_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data()));
  for (size_t r = 0; r < ranks_.size(); ++r) {
    DeviceGuard guard(ordinals[r]);
    ranks_[r].device = ordinals[r];
    LS_CUDA_CHECK(cudaEventCreateWithFlags(&ranks_[r].produced, cudaEventDisableTiming));
    LS_CUDA_CHECK(cudaEventCreateWithFlags(&ranks_[r].reduced, cudaEventDisableTiming));
  }
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

NcclCommunicator::~NcclCommunicator() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
  int previous = -1;
  bool restore = cudaGetDevice(&previous) == cudaSuccess;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    // No throwing DeviceGuard here: a destructor only logs.
    LS_CUDA_LOG(cudaSetDevice(ranks_[r].device));
    LS_CUDA_LOG(cudaEventDestroy(ranks_[r].produced));
    LS_CUDA_LOG(cudaEventDestroy(ranks_[r].reduced));
    // abort() has already aborted, and so freed, every communicator: freeing
    // them again here would be a double free.
    if (!aborted_.load()) LS_NCCL_LOG(ncclCommDestroy(comms_[r]));
  }
  if (restore) LS_CUDA_LOG(cudaSetDevice(previous));
}

void NcclCommunicator::check_usable(int rank) const {
  if (aborted_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    LS_CANCEL("collective on rank ", rank, " cancelled: ", abort_reason_);
  }
}

void NcclCommunicator::all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) {
  all_reduce(rank, ctx, data, count, ncclFloat);
}

void NcclCommunicator::all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) {
  all_reduce(rank, ctx, data, count, ncclDouble);
}

void NcclCommunicator::all_reduce(int rank, Context& ctx, void* data, int64_t count, ncclDataType_t type) {
  check_usable(rank);
  CudaState& cuda = *ctx.cuda();
  Rank& r = ranks_[rank];
  LS_CUDA_CHECK(cudaEventRecord(r.produced, cuda.compute_stream));
  LS_CUDA_CHECK(cudaStreamWaitEvent(cuda.comm_stream, r.produced, 0));
  LS_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), type, ncclSum, comms_[rank],
                              cuda.comm_stream));
  LS_CUDA_CHECK(cudaEventRecord(r.reduced, cuda.comm_stream));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!r.pending) r.pending_since = std::chrono::steady_clock::now();
  r.pending = true;
}

void NcclCommunicator::wait(int rank, Context& ctx) {
  check_usable(rank);
  CudaState& cuda = *ctx.cuda();
  LS_CUDA_CHECK(cudaStreamWaitEvent(cuda.compute_stream, ranks_[rank].reduced, 0));
}

void NcclCommunicator::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load()) return;
    abort_reason_ = reason;
    aborted_.store(true);
  }
  // Releases kernels stuck waiting for a rank that will never arrive.
  for (ncclComm_t comm : comms_) LS_NCCL_LOG(ncclCommAbort(comm));
  cv_.notify_all();
}

void NcclCommunicator::watchdog_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stopping_ || aborted_.load()) continue;
    std::string problem;
    auto now = std::chrono::steady_clock::now();
    for (size_t r = 0; r < ranks_.size() && problem.empty(); ++r) {
      Rank& rank = ranks_[r];
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comms_[r], &async) == ncclSuccess && async != ncclSuccess)
        problem = "NCCL error on rank " + std::to_string(r) + ": " + ncclGetErrorString(async);
      if (!rank.pending) continue;
      cudaError_t state = cudaEventQuery(rank.reduced);
      if (state == cudaSuccess) {
        rank.pending = false;
      } else if (state != cudaErrorNotReady) {
        problem = std::string("CUDA error on rank ") + std::to_string(r) + ": " + cudaGetErrorString(state);
      } else if (now - rank.pending_since > timeout_) {
        problem = "all-reduce on rank " + std::to_string(r) + " hung for more than " +
                  std::to_string(timeout_.count()) + " ms";
      }
    }
    if (!problem.empty()) {
      lock.unlock();
      abort(problem);
      lock.lock();
    }
  }
}

}  // namespace lockstep
