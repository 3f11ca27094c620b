#pragma once
#include <cstdint>

namespace lockstep::cpu {

void relu_forward(const float* x, float* y, int64_t n);
// dx = (or +=, when accumulate) dy where y > 0, else 0.
void relu_backward(const float* y, const float* dy, float* dx, int64_t n, bool accumulate);

}  // namespace lockstep::cpu
