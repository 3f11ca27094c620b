#pragma once
// Batch norm + ReLU fused, and batch norm + residual add +
// ReLU fused, on the GPU: the fused kernels equal the unfused kernel sequence
// bit for bit, and the CPU reference within the tolerance the layer tests
// hold batch norm to (layer_compare.h: the GPU's block sums add in another order).
#include "gpu_compare.h"
#include "support/bn_relu_check.h"

namespace lockstep::testing::fused_bn {

// 64 samples of 16x16 split each channel into several runs of blocks.
inline const Shape shapes[] = {Shape{5, 3, 7, 6}, Shape{2, 4, 1, 1}, Shape{64, 3, 16, 16}};
inline constexpr double rtol = 1e-4;

// What both fused results hold.
template <class Result> void require_close_results(const Result& gpu, const Result& cpu) {
  require_close_scaled(gpu.y, cpu.y, rtol, "y");
  require_close_scaled(gpu.var, cpu.var, 1e-5, "batch variance");
  require_close_scaled(gpu.dgamma, cpu.dgamma, rtol, "dgamma");
  require_close_scaled(gpu.dbeta, cpu.dbeta, rtol, "dbeta");
  require_close_scaled(gpu.dx, cpu.dx, rtol, "dx");
  require_close_scaled(gpu.dx_added, cpu.dx_added, rtol, "dx added");
}

}  // namespace lockstep::testing::fused_bn
