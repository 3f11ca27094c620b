// Batch norm + ReLU fused on the GPU: see bn_relu_compare.h.
#include <catch2/catch.hpp>

#include "bn_relu_compare.h"

using namespace lockstep;
using namespace lockstep::testing::fused_bn;
using lockstep::testing::require_close_scaled;

TEST_CASE("gpu fused batch norm + relu equals the unfused kernels and the cpu", "[gpu][batchnorm2d][fused][handwritten]") {
  for (const Shape& shape : shapes) {
    INFO("shape " << shape.str());
    const testing::BnReluResult gpu = testing::check_fused_bn_relu(Device::cuda(0), shape, 11);
    const testing::BnReluResult cpu = testing::check_fused_bn_relu(Device::cpu(), shape, 11);
    // Results of the whole shape on both sides, so no comparison below is vacuous.
    REQUIRE(int64_t(gpu.y.size()) == shape.numel());
    REQUIRE(cpu.y.size() == gpu.y.size());
    require_close_results(gpu, cpu);
  }
}
