// --sync-bn on the GPU: resnet20 on 2 and 3 replicas trains as one replica
// (1e-5 normwise after 5 steps at lr 0.02; tests/cpu/test_sync_bn.cpp says
// why not more steps or a larger rate), with NCHW and with channels-last
// (NHWC) activations. The replicas are on distinct GPUs
// (NCCL) when enough are visible, otherwise all share GPU 0 (the local
// communicator's device path).
#include <catch2/catch.hpp>

#include "runtime/device.h"
#include "support/sync_bn_check.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

void check_sync_bn_replicas(int n, MemoryFormat format = MemoryFormat::nchw) {
  std::vector<Device> devices;
  for (int r = 0; r < n; ++r) devices.push_back(Device::cuda(cuda_device_count() >= n ? r : 0));
  INFO(n << " replicas on " << (cuda_device_count() >= n ? "distinct gpus" : "gpu 0") << " in "
         << memory_format_name(format));
  SyncBnDifference d = sync_bn_difference(devices, Device::cuda(0), true, 5, kSyncBnLearningRate, 1, format);
  CHECK(d.parameters <= 1e-5);
  CHECK(d.statistics <= 1e-5);
}

}  // namespace

// Two cases, so the sanitizer stage can run the first alone (scripts/test).
TEST_CASE("with synchronised batch norm 2 gpu replicas of resnet20 train as one", "[gpu][replica][sync-bn]") {
  check_sync_bn_replicas(2);
}

TEST_CASE("with synchronised batch norm 3 gpu replicas of resnet20 train as one", "[gpu][replica][sync-bn]") {
  check_sync_bn_replicas(3);
}

TEST_CASE("with synchronised batch norm 2 gpu replicas of resnet20 in nhwc train as one", "[gpu][replica][sync-bn][nhwc]") {
  check_sync_bn_replicas(2, MemoryFormat::nhwc);
}
