#pragma once
// The fused batch norm + ReLU (and + residual add + ReLU) checks shared by
// the CPU and the emulated-GPU tests: ops::batchnorm_relu_forward_train and ops::batchnorm_relu_backward
// against the unfused sequence they replace (batch norm forward, ReLU; ReLU
// backward, batch norm backward) on one device, required equal bit for bit,
// dx written and added.
#include <vector>

#include "runtime/device.h"
#include "runtime/shape.h"

namespace lockstep::testing {

// The fused results, for a comparison across devices.
struct BnReluResult {
  std::vector<float> y, mean, var, dgamma, dbeta, dx, dx_added;
};

// Runs both on `device` with inputs drawn from `seed` (gamma of both signs,
// so that the ReLU clips some of every channel), REQUIREs them equal and
// returns the fused ones.
BnReluResult check_fused_bn_relu(Device device, const Shape& shape, uint64_t seed);

// Batch norm + residual add + ReLU: ops::batchnorm_add_relu_forward_train
// and ops::batchnorm_add_relu_backward against batch norm forward, add,
// ReLU; ReLU backward, the add's copy of dy to the shortcut, batch norm
// backward, with the gradients written, added, and not wanted.
struct BnAddReluResult {
  std::vector<float> y, mean, var, dgamma, dbeta, dx, dshortcut, dx_added, dshortcut_added;
};

// Runs both on `device` with inputs drawn from `seed` (gamma of both signs
// and a shortcut of both signs, so that the ReLU clips some of every
// channel), REQUIREs them equal and returns the fused ones.
BnAddReluResult check_fused_bn_add_relu(Device device, const Shape& shape, uint64_t seed);

}  // namespace lockstep::testing
