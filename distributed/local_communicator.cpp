#include "distributed/local_communicator.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "distributed/exact_sum.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_memory.h"
#include "kernels/cuda/tensor_ops_cuda.h"
#endif

namespace lockstep {

LocalCommunicator::LocalCommunicator(int ranks, std::chrono::milliseconds timeout)
    : ranks_(ranks),
      barrier_(ranks, timeout),
      buffers_(ranks, nullptr),
      counts_(ranks, 0),
      element_bytes_(ranks, 0),
      devices_(ranks, Device::cpu()) {
}

void LocalCommunicator::all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) {
  all_reduce(rank, ctx, data, count);
}

void LocalCommunicator::all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) {
  all_reduce(rank, ctx, data, count);
}

template <typename T> void LocalCommunicator::all_reduce(int rank, Context& ctx, T* data, int64_t count) {
  LS_CHECK(rank >= 0 && rank < ranks_, "rank ", rank, " of a communicator of ", ranks_);
  if (ranks_ == 1) return;
  if (ctx.device().is_cuda()) return all_reduce_device(rank, ctx, data, count);
  all_reduce_host(rank, data, count);
}

void LocalCommunicator::check_posted(int rank, int64_t count, size_t element_bytes, Device device) const {
  for (int r = 0; r < ranks_; ++r) {
    LS_CHECK(counts_[r] == count && element_bytes_[r] == element_bytes, "all_reduce of ", count, " elements of ",
             element_bytes, " bytes on rank ", rank, " but ", counts_[r], " of ", element_bytes_[r], " bytes on rank ",
             r);
    LS_CHECK(devices_[r] == device, "the local communicator sums buffers of one device: rank ", rank, " is on ",
             device.str(), ", rank ", r, " on ", devices_[r].str(), " (ranks on distinct GPUs go through NCCL)");
  }
}

template <> float* LocalCommunicator::host_result<float>(int64_t count) {
  if (static_cast<int64_t>(float_result_.size()) < count) float_result_.resize(count);
  return float_result_.data();
}

template <> double* LocalCommunicator::host_result<double>(int64_t count) {
  if (static_cast<int64_t>(double_result_.size()) < count) double_result_.resize(count);
  return double_result_.data();
}

template <typename T> void LocalCommunicator::all_reduce_host(int rank, T* data, int64_t count) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[rank] = data;
    counts_[rank] = count;
    element_bytes_[rank] = sizeof(T);
    devices_[rank] = Device::cpu();
    host_result<T>(count);  // sized before the barrier, so nobody resizes it past there
  }
  barrier_.arrive_and_wait(rank, "all_reduce (post)");
  check_posted(rank, count, sizeof(T), Device::cpu());
  T* result = host_result<T>(count);
  // Each rank sums its share of the elements over all ranks, in rank order.
  int64_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  if constexpr (std::is_same_v<T, float>) {
    // Floats are summed in double and rounded once (distributed/exact_sum.h):
    // the same bits however the ranks are spread over processes.
    std::vector<const float*> sources(ranks_);
    for (int r = 0; r < ranks_; ++r) sources[r] = static_cast<const float*>(buffers_[r]);
    sum_floats_rounded_once(sources.data(), ranks_, begin, end, result);
  } else {
    std::memcpy(result + begin, static_cast<const T*>(buffers_[0]) + begin, (end - begin) * sizeof(T));
    for (int r = 1; r < ranks_; ++r) {
      const T* src = static_cast<const T*>(buffers_[r]);
      for (int64_t i = begin; i < end; ++i) result[i] += src[i];
    }
  }
  barrier_.arrive_and_wait(rank, "all_reduce (sum)");
  std::memcpy(data, result, count * sizeof(T));
  // Nobody may post the next collective's buffers (or resize the result) before all have copied.
  barrier_.arrive_and_wait(rank, "all_reduce (copy)");
}

template <typename T>
void LocalCommunicator::all_reduce_device(int rank, Context& ctx, T* data, int64_t count) {
#if LOCKSTEP_WITH_CUDA
  // Other ranks read this buffer from their own streams: the kernels that
  // wrote it must be done first.
  ctx.synchronize();
  const int64_t result_floats = std::max<int64_t>(count * static_cast<int64_t>(sizeof(T) / sizeof(float)), 1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[rank] = data;
    counts_[rank] = count;
    element_bytes_[rank] = sizeof(T);
    devices_[rank] = ctx.device();
    // Nobody uses the shared result between the last copy barrier and the next sum.
    if (!device_result_.defined() || device_result_.numel() < result_floats ||
        device_result_.device() != ctx.device()) {
      device_result_ = Tensor();
      device_result_ = Tensor::empty(Shape{result_floats}, ctx.device());
    }
  }
  barrier_.arrive_and_wait(rank, "all_reduce (post)");
  check_posted(rank, count, sizeof(T), ctx.device());
  cudaStream_t stream = ctx.cuda()->compute_stream;
  // The allocator hands out blocks aligned for any element type.
  T* result = reinterpret_cast<T*>(device_result_.data());
  std::vector<const T*> sources(ranks_);
  for (int r = 0; r < ranks_; ++r) sources[r] = static_cast<const T*>(buffers_[r]);
  int64_t begin = count * rank / ranks_, end = count * (rank + 1) / ranks_;
  cuda::sum_buffers(stream, sources.data(), ranks_, result, begin, end);
  ctx.synchronize();
  barrier_.arrive_and_wait(rank, "all_reduce (sum)");
  cuda_copy_bytes_async(data, result, count * sizeof(T), stream);
  // The next collective may resize or overwrite the result: the copy must be done.
  ctx.synchronize();
  barrier_.arrive_and_wait(rank, "all_reduce (copy)");
#else
  (void)data;
  (void)count;
  LS_FAIL("all_reduce on rank ", rank, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void LocalCommunicator::wait(int, Context&) {}

void LocalCommunicator::abort(const std::string& reason) { barrier_.abort(reason); }

}  // namespace lockstep
