// The double all-reduce on the GPU: the local communicator's device path
// (three ranks sharing GPU 0) and NCCL (one rank per visible GPU), exact
// beyond float precision.
#include <catch2/catch.hpp>

#include <thread>

#include "base/cuda/cuda_check.h"
#include "distributed/cuda/nccl_communicator.h"
#include "distributed/local_communicator.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/device.h"

using namespace lockstep;

namespace {

// Rank r holds {(2^24 + 1) * (r + 1), 1 + 1e-12 * (r + 1), i + 1e-9 r for i >= 2}: none
// of the sums survives a float.
std::vector<double> rank_values(int r, int64_t count) {
  std::vector<double> v(count);
  v[0] = 16777217.0 * (r + 1);
  v[1] = 1.0 + 1e-12 * (r + 1);
  for (int64_t i = 2; i < count; ++i) v[i] = static_cast<double>(i) + 1e-9 * r;
  return v;
}

// Runs one double all-reduce of `count` on every rank of `comm`, rank r on
// devices[r], and checks the sum on every rank against the host's sum in rank order.
void check_double_sum(Communicator& comm, const std::vector<Device>& devices, int64_t count) {
  const int ranks = static_cast<int>(devices.size());
  std::vector<std::vector<double>> results(ranks);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        Context ctx(devices[r]);
        ctx.make_current();
        std::vector<double> values = rank_values(r, count);
        Tensor buffer = Tensor::empty(Shape{2 * count}, devices[r]);  // doubles in a float tensor's bytes
        auto* data = reinterpret_cast<double*>(buffer.data());
        LS_CUDA_CHECK(cudaMemcpy(data, values.data(), count * sizeof(double), cudaMemcpyHostToDevice));
        comm.all_reduce_sum(r, ctx, data, count);
        comm.wait(r, ctx);
        ctx.synchronize();
        results[r].resize(count);
        LS_CUDA_CHECK(cudaMemcpy(results[r].data(), data, count * sizeof(double), cudaMemcpyDeviceToHost));
      } catch (const std::exception& e) {
        errors[r] = e.what();
        comm.abort("rank " + std::to_string(r) + " failed");
      }
    });
  for (auto& t : threads) t.join();
  std::vector<double> expected = rank_values(0, count);
  for (int r = 1; r < ranks; ++r) {
    std::vector<double> v = rank_values(r, count);
    for (int64_t i = 0; i < count; ++i) expected[i] += v[i];
  }
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(errors[r].empty());
    for (int64_t i = 0; i < count; ++i) REQUIRE(results[r][i] == expected[i]);
  }
}

}  // namespace

TEST_CASE("the local communicator sums doubles on one gpu", "[gpu][replica]") {
  LocalCommunicator comm(3, std::chrono::milliseconds(60000));
  check_double_sum(comm, std::vector<Device>(3, Device::cuda(0)), 1001);
}

TEST_CASE("nccl sums doubles over one rank per visible gpu", "[gpu][nccl]") {
  std::vector<Device> devices;
  for (int d = 0; d < cuda_device_count(); ++d) devices.push_back(Device::cuda(d));
  NcclCommunicator comm(devices, std::chrono::milliseconds(60000));
  check_double_sum(comm, devices, 1001);
}
