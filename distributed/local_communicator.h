#pragma once
// LocalCommunicator: an in-process all-reduce for replicas that share a device
// (the CPU, or one GPU). Every rank posts its buffer; then each rank sums its
// share of the elements over all ranks, always in rank order, into a shared
// result, and copies the result back. So every rank ends with bit-identical
// sums, and the work is spread over the ranks' threads.
//
// On a GPU the buffers are device memory filled by kernels on each rank's
// compute stream: a rank waits for its streams before it posts, sums its
// share with a kernel over every rank's buffer into a shared device result,
// and copies the result back on its stream, waiting at each step, so no rank
// reads a buffer still being written. All ranks must share one GPU (NCCL
// serves ranks on distinct GPUs).
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicator_interface.h"
#include "distributed/rank_barrier.h"

namespace lockstep {

class LocalCommunicator final : public Communicator {
public:
  explicit LocalCommunicator(int ranks, std::chrono::milliseconds timeout = default_collective_timeout);
  int size() const override { return ranks_; }
  void all_reduce_sum(int rank, Context& ctx, float* data, int64_t count) override;
  void all_reduce_sum(int rank, Context& ctx, double* data, int64_t count) override;
  void wait(int rank, Context& ctx) override;
  void abort(const std::string& reason) override;

private:
  template <typename T> void all_reduce(int rank, Context& ctx, T* data, int64_t count);
  template <typename T> void all_reduce_host(int rank, T* data, int64_t count);
  template <typename T> void all_reduce_device(int rank, Context& ctx, T* data, int64_t count);
  // Checks, after the post barrier, that every rank posted `count` elements
  // of `element_bytes` on `device`.
  void check_posted(int rank, int64_t count, size_t element_bytes, Device device) const;
  // The shared host result, as `count` elements of T (floats and doubles
  // each have their own vector, so neither is read through the other's type).
  template <typename T> T* host_result(int64_t count);

  int ranks_;
  RankBarrier barrier_;
  std::mutex mutex_;  // what the ranks post before the first barrier of a call
  std::vector<void*> buffers_;
  std::vector<int64_t> counts_;
  std::vector<size_t> element_bytes_;
  std::vector<Device> devices_;
  std::vector<float> float_result_;
  std::vector<double> double_result_;
  Tensor device_result_;  // the GPU path's shared sum, as raw floats (a double takes two)
};

}  // namespace lockstep
