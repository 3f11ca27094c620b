#pragma once
// Element-wise math shared by the CPU loops and the CUDA kernels.
#include "kernels/host_device.h"

namespace lockstep {

LS_HD float relu_forward(float x) { return x > 0.0f ? x : 0.0f; }
// Gradient through ReLU from its output y (y > 0 exactly where x > 0).
LS_HD float relu_backward(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

// Writes or accumulates a gradient value: dst = value, or dst += value.
LS_HD void store_grad(float& dst, float value, bool accumulate) { dst = accumulate ? dst + value : value; }

}  // namespace lockstep
