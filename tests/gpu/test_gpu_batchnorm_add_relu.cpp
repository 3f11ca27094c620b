// Batch norm + residual add + ReLU fused (issue 14) on the GPU: the fused
// kernels equal the unfused kernel sequence bit for bit, and the CPU
// reference within the tolerance the fused batch norm + ReLU is held to
// (test_gpu_batchnorm_relu: the GPU's block sums add in another order).
#include <catch2/catch.hpp>

#include "gpu_compare.h"
#include "support/bn_add_relu_check.h"

using namespace lockstep;
using lockstep::testing::require_close_scaled;

TEST_CASE("gpu fused batch norm + add + relu equals the unfused kernels and the cpu",
          "[gpu][batchnorm][fused][handwritten]") {
  // 64 samples of 16x16 split each channel into several runs of blocks.
  for (const Shape& shape : {Shape{5, 3, 7, 6}, Shape{2, 4, 1, 1}, Shape{64, 3, 16, 16}}) {
    INFO("shape " << shape.str());
    const testing::BnAddReluResult gpu = testing::check_fused_bn_add_relu(Device::cuda(0), shape, 11);
    const testing::BnAddReluResult cpu = testing::check_fused_bn_add_relu(Device::cpu(), shape, 11);
    constexpr double rtol = 1e-4;
    require_close_scaled(gpu.y, cpu.y, rtol, "y");
    require_close_scaled(gpu.var, cpu.var, 1e-5, "batch variance");
    require_close_scaled(gpu.dgamma, cpu.dgamma, rtol, "dgamma");
    require_close_scaled(gpu.dbeta, cpu.dbeta, rtol, "dbeta");
    require_close_scaled(gpu.dx, cpu.dx, rtol, "dx");
    require_close_scaled(gpu.dshortcut, cpu.dshortcut, rtol, "shortcut gradient");
    require_close_scaled(gpu.dx_added, cpu.dx_added, rtol, "dx added");
    require_close_scaled(gpu.dshortcut_added, cpu.dshortcut_added, rtol, "shortcut gradient added");
  }
}
