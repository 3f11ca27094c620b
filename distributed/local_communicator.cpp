#include "distributed/local_communicator.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_memory.h"
#include "kernels/cuda/tensor_ops_cuda.h"
#endif

namespace lockstep {

LocalCommunicator::LocalCommunicator(int ranks, std::chrono::milliseconds timeout)
    : ranks_(ranks),
      timeout_(timeout),
      rank_arrived_(ranks, false),
      buffers_(ranks, nullptr),
      counts_(ranks, 0),
      devices_(ranks, Device::cpu()) {
  LS_CHECK(ranks >= 1, "a communicator needs at least one rank, got ", ranks);
}

void LocalCommunicator::arrive_and_wait(int rank, const char* where) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) LS_CANCEL("collective ", where, " on rank ", rank, " cancelled: ", abort_reason_);
  uint64_t generation = generation_;
  rank_arrived_[rank] = true;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    std::fill(rank_arrived_.begin(), rank_arrived_.end(), false);
    ++generation_;
    cv_.notify_all();
    return;
  }
  bool done = cv_.wait_for(lock, timeout_, [&] { return aborted_ || generation_ != generation; });
  if (aborted_) LS_CANCEL("collective ", where, " on rank ", rank, " cancelled: ", abort_reason_);
  if (!done) {
    std::string missing;
    for (int r = 0; r < ranks_; ++r)
      if (!rank_arrived_[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    aborted_ = true;
    abort_reason_ = "collective " + std::string(where) + " hung: rank(s) " + missing + " did not arrive within " +
                    std::to_string(timeout_.count()) + " ms";
    cv_.notify_all();
    LS_FAIL(abort_reason_);
  }
}

void LocalCommunicator::all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) {
  LS_CHECK(rank >= 0 && rank < ranks_, "rank ", rank, " of a communicator of ", ranks_);
  if (ranks_ == 1) return;
  if (ctx.device().is_cuda()) return all_reduce_device(rank, ctx, data, count);
  all_reduce_host(rank, data, count);
}

void LocalCommunicator::check_posted(int rank, int64_t count, Device device) const {
  for (int r = 0; r < ranks_; ++r) {
    LS_CHECK(counts_[r] == count, "all_reduce of ", count, " floats on rank ", rank, " but ", counts_[r], " on rank ",
             r);
    LS_CHECK(devices_[r] == device, "the local communicator sums buffers of one device: rank ", rank, " is on ",
             device.str(), ", rank ", r, " on ", devices_[r].str(), " (ranks on distinct GPUs go through NCCL)");
  }
}

void LocalCommunicator::all_reduce_host(int rank, float* data, int64_t count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[rank] = data;
    counts_[rank] = count;
    devices_[rank] = Device::cpu();
    if (static_cast<int64_t>(result_.size()) < count) result_.resize(count);
  }
  arrive_and_wait(rank, "all_reduce (post)");
  check_posted(rank, count, Device::cpu());
  // Each rank sums its share of the elements over all ranks, in rank order.
  int64_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  float* result = result_.data();
  std::memcpy(result + begin, buffers_[0] + begin, (end - begin) * sizeof(float));
  for (int r = 1; r < ranks_; ++r) {
    const float* src = buffers_[r];
    for (int64_t i = begin; i < end; ++i) result[i] += src[i];
  }
  arrive_and_wait(rank, "all_reduce (sum)");
  std::memcpy(data, result, count * sizeof(float));
  // Nobody may post the next collective's buffers (or resize result_) before all have copied.
  arrive_and_wait(rank, "all_reduce (copy)");
}

void LocalCommunicator::all_reduce_device(int rank, Context& ctx, float* data, int64_t count) {
#if LOCKSTEP_WITH_CUDA
  // Other ranks read this buffer from their own streams: the kernels that
  // wrote it must be done first.
  ctx.synchronize();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[rank] = data;
    counts_[rank] = count;
    devices_[rank] = ctx.device();
    // Nobody uses the shared result between the last copy barrier and the next sum.
    if (!device_result_.defined() || device_result_.numel() < count || device_result_.device() != ctx.device()) {
      device_result_ = Tensor();
      device_result_ = Tensor::empty(Shape{std::max<int64_t>(count, 1)}, ctx.device());
    }
  }
  arrive_and_wait(rank, "all_reduce (post)");
  check_posted(rank, count, ctx.device());
  cudaStream_t stream = ctx.cuda()->compute_stream;
  float* result = device_result_.data();
  int64_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  cuda::sum_buffers(stream, buffers_.data(), ranks_, result, begin, end);
  ctx.synchronize();
  arrive_and_wait(rank, "all_reduce (sum)");
  cuda_copy_bytes_async(data, result, count * sizeof(float), stream);
  // The next collective may resize or overwrite the result: the copy must be done.
  ctx.synchronize();
  arrive_and_wait(rank, "all_reduce (copy)");
#else
  (void)data;
  (void)count;
  LS_FAIL("all_reduce on rank ", rank, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void LocalCommunicator::wait(int, Context&) {}

void LocalCommunicator::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!aborted_) abort_reason_ = reason;
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace lockstep
