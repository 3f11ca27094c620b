#include "distributed/cuda/nccl_communicator.h"

#include "base/cuda/cuda_check.h"
#include "base/error.h"
#include "distributed/communicator.h"

namespace lockstep {

NcclCommunicator::NcclCommunicator(const std::vector<Device>& devices, std::chrono::milliseconds timeout,
                                   ProcessGroup* processes)
    : comms_(devices.size()), global_size_(static_cast<int>(devices.size())), timeout_(timeout) {
  std::vector<int> ordinals;
  for (const Device& d : devices) {
    LS_CHECK(d.is_cuda(), "NCCL ranks are GPUs, got ", d.str());
    ordinals.push_back(d.index);
  }
  if (processes && processes->size() > 1)
    init_across_processes(ordinals, *processes);
  else
    LS_NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(ordinals.size()), ordinals.data()));
  for (size_t r = 0; r < ordinals.size(); ++r) {
    ranks_.push_back(std::make_unique<Rank>());
    DeviceGuard guard(ordinals[r]);
    ranks_[r]->device = ordinals[r];
    LS_CUDA_CHECK(cudaEventCreateWithFlags(&ranks_[r]->produced, cudaEventDisableTiming));
    LS_CUDA_CHECK(cudaEventCreateWithFlags(&ranks_[r]->reduced, cudaEventDisableTiming));
  }
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

void NcclCommunicator::init_across_processes(const std::vector<int>& ordinals, ProcessGroup& processes) {
  // As nccl-tests and llm.c bootstrap NCCL over MPI: process 0 makes the id,
  // a broadcast hands it to every process.
  ncclUniqueId id{};
  if (processes.rank() == 0) LS_NCCL_CHECK(ncclGetUniqueId(&id));
  processes.broadcast(&id, sizeof id, 0);
  const int local = static_cast<int>(ordinals.size());
  global_size_ = local * processes.size();
  // Each ncclCommInitRank waits for every rank of the communicator; one
  // thread joining several must group them, or it waits on its own next call.
  DeviceGuard guard(ordinals[0]);
  ncclResult_t first = ncclGroupStart();
  for (int i = 0; i < local && first == ncclSuccess; ++i) {
    if (cudaSetDevice(ordinals[i]) != cudaSuccess) first = ncclUnhandledCudaError;
    else first = ncclCommInitRank(&comms_[i], global_size_, id, processes.rank() * local + i);
  }
  const ncclResult_t end = ncclGroupEnd();  // always closes the group, even after a failed call
  if (first == ncclSuccess) first = end;
  LS_CHECK(first == ncclSuccess, "NCCL init of ", local, " GPU(s) as ranks ", processes.rank() * local, "..",
           processes.rank() * local + local - 1, " of ", global_size_, " across ", processes.size(),
           " processes failed: ", ncclGetErrorString(first));
}

void NcclCommunicator::check_local_rank(int rank) const {
  LS_CHECK(rank >= 0 && rank < static_cast<int>(comms_.size()), "rank ", rank, " of the ", comms_.size(),
           " NCCL ranks of this process");
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
    Rank& rank = *ranks_[r];
    std::lock_guard<std::mutex> lock(rank.call);
    // No throwing DeviceGuard here: a destructor only logs.
    LS_CUDA_LOG(cudaSetDevice(rank.device));
    LS_CUDA_LOG(cudaEventDestroy(rank.produced));
    LS_CUDA_LOG(cudaEventDestroy(rank.reduced));
    // An aborted communicator is already freed: destroying it again would be a double free.
    if (!rank.aborted) LS_NCCL_LOG(ncclCommDestroy(comms_[r]));
  }
  if (restore) LS_CUDA_LOG(cudaSetDevice(previous));
}

void NcclCommunicator::cancel(int rank, const char* what) const {
  std::lock_guard<std::mutex> lock(mutex_);
  LS_CANCEL(what, " on rank ", rank, " cancelled: ", abort_reason_);
}

void NcclCommunicator::all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) {
  all_reduce(rank, ctx, data, count, ncclFloat);
}

void NcclCommunicator::all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) {
  all_reduce(rank, ctx, data, count, ncclDouble);
}

void NcclCommunicator::all_reduce(int rank, Context& ctx, void* data, int64_t count, ncclDataType_t type) {
  check_local_rank(rank);
  CudaState& cuda = *ctx.cuda();
  Rank& r = *ranks_[rank];
  std::lock_guard<std::mutex> lock(r.call);
  // A rank may be aborted while its peers still run: the flag is per rank, read under its lock.
  if (r.aborted || aborted_.load()) cancel(rank, "collective");
  LS_CUDA_CHECK(cudaEventRecord(r.produced, cuda.compute_stream));
  LS_CUDA_CHECK(cudaStreamWaitEvent(cuda.comm_stream, r.produced, 0));
  LS_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), type, ncclSum, comms_[rank], cuda.comm_stream));
  LS_CUDA_CHECK(cudaEventRecord(r.reduced, cuda.comm_stream));
  // Recorded into a CUDA graph (ReplicaOptions::cuda_graphs), the collective
  // runs only when the graph is launched, and CUDA refuses to query an event
  // recorded in a capture: the watchdog has nothing to watch. (A replayed
  // step's collectives are waited for by its end-of-step read-back.)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  LS_CUDA_CHECK(cudaStreamIsCapturing(cuda.comm_stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    r.pending = false;  // the event now belongs to the capture; what it marked before is over or superseded
    return;
  }
  if (!r.pending) r.pending_since = std::chrono::steady_clock::now();
  r.pending = true;
}

void NcclCommunicator::wait(int rank, Context& ctx) {
  check_local_rank(rank);
  CudaState& cuda = *ctx.cuda();
  Rank& r = *ranks_[rank];
  std::lock_guard<std::mutex> lock(r.call);
  if (r.aborted || aborted_.load()) cancel(rank, "wait for collectives");
  LS_CUDA_CHECK(cudaStreamWaitEvent(cuda.compute_stream, r.reduced, 0));
}

void NcclCommunicator::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_.load()) abort_reason_ = reason;  // the first reason is the one reported
    aborted_.store(true);
  }
  // Releases kernels stuck waiting for a rank that will never arrive. Each
  // rank's abort waits for a call in progress on it to return, and happens once.
  for (size_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = *ranks_[r];
    std::lock_guard<std::mutex> lock(rank.call);
    if (rank.aborted) continue;
    LS_NCCL_LOG(ncclCommAbort(comms_[r]));
    rank.aborted = true;
    rank.pending = false;
  }
  cv_.notify_all();
}

std::string NcclCommunicator::check_ranks() {
  const auto now = std::chrono::steady_clock::now();
  for (size_t r = 0; r < ranks_.size(); ++r) {
    Rank& rank = *ranks_[r];
    // A rank busy in a call is looked at next round rather than waited for.
    std::unique_lock<std::mutex> lock(rank.call, std::try_to_lock);
    if (!lock.owns_lock() || rank.aborted) continue;
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comms_[r], &async) == ncclSuccess && async != ncclSuccess)
      return "NCCL error on rank " + std::to_string(r) + ": " + ncclGetErrorString(async);
    if (!rank.pending) continue;
    cudaError_t state = cudaEventQuery(rank.reduced);
    if (state == cudaSuccess) {
      rank.pending = false;
    } else if (state != cudaErrorNotReady) {
      return std::string("CUDA error on rank ") + std::to_string(r) + ": " + cudaGetErrorString(state);
    } else if (now - rank.pending_since > timeout_) {
      return "all-reduce on rank " + std::to_string(r) + " hung for more than " + std::to_string(timeout_.count()) +
             " ms";
    }
  }
  return {};
}

void NcclCommunicator::watchdog_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stopping_ || aborted_.load()) continue;
    // The ranks are checked without mutex_, which abort() takes.
    lock.unlock();
    std::string problem = check_ranks();
    if (!problem.empty()) abort(problem);
    lock.lock();
  }
}

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<Device>& devices,
                                                     std::chrono::milliseconds timeout, ProcessGroup* processes) {
  return std::make_unique<NcclCommunicator>(devices, timeout, processes);
}

}  // namespace lockstep
