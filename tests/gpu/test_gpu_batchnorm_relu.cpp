// Batch norm + ReLU fused, and batch norm + residual add +
// ReLU fused, on the GPU: the fused kernels equal the unfused kernel sequence
// bit for bit, and the CPU reference within the tolerance the layer tests
// hold batch norm to (test_gpu_layers: the GPU's block sums add in another order).
#include <catch2/catch.hpp>

#include "gpu_compare.h"
#include "support/bn_relu_check.h"

using namespace lockstep;
using lockstep::testing::require_close_scaled;

namespace {

// 64 samples of 16x16 split each channel into several runs of blocks.
const Shape shapes[] = {Shape{5, 3, 7, 6}, Shape{2, 4, 1, 1}, Shape{64, 3, 16, 16}};
constexpr double rtol = 1e-4;

// What both fused results hold.
template <class Result> void require_close_results(const Result& gpu, const Result& cpu) {
  require_close_scaled(gpu.y, cpu.y, rtol, "y");
  require_close_scaled(gpu.var, cpu.var, 1e-5, "batch variance");
  require_close_scaled(gpu.dgamma, cpu.dgamma, rtol, "dgamma");
  require_close_scaled(gpu.dbeta, cpu.dbeta, rtol, "dbeta");
  require_close_scaled(gpu.dx, cpu.dx, rtol, "dx");
  require_close_scaled(gpu.dx_added, cpu.dx_added, rtol, "dx added");
}

}  // namespace

TEST_CASE("gpu fused batch norm + relu equals the unfused kernels and the cpu", "[gpu][batchnorm][fused][handwritten]") {
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

TEST_CASE("gpu fused batch norm + add + relu equals the unfused kernels and the cpu",
          "[gpu][batchnorm][fused][handwritten]") {
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
