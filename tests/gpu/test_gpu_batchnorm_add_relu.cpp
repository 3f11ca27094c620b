// Batch norm + residual add + ReLU fused on the GPU: see bn_relu_compare.h.
#include <catch2/catch.hpp>

#include "bn_relu_compare.h"

using namespace lockstep;
using namespace lockstep::testing::fused_bn;
using lockstep::testing::require_close_scaled;

TEST_CASE("gpu fused batch norm + add + relu equals the unfused kernels and the cpu",
          "[gpu][batchnorm2d][fused][handwritten]") {
  for (const Shape& shape : shapes) {
    INFO("shape " << shape.str());
    const testing::BnAddReluResult gpu = testing::check_fused_bn_add_relu(Device::cuda(0), shape, 11);
    const testing::BnAddReluResult cpu = testing::check_fused_bn_add_relu(Device::cpu(), shape, 11);
    REQUIRE(int64_t(gpu.dshortcut.size()) == shape.numel());
    REQUIRE(cpu.dshortcut.size() == gpu.dshortcut.size());
    require_close_results(gpu, cpu);
    require_close_scaled(gpu.dshortcut, cpu.dshortcut, rtol, "shortcut gradient");
    require_close_scaled(gpu.dshortcut_added, cpu.dshortcut_added, rtol, "shortcut gradient added");
  }
}
