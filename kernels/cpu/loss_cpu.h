#pragma once
#include <cstdint>

#include "kernels/loss_math.h"

namespace lockstep::cpu {

using lockstep::LossSums;

// Softmax cross-entropy over `rows` rows of `classes` logits with integer labels
// (already checked to lie in [0, classes)), with label smoothing `smoothing`
// (kernels/loss_math.h). Writes scale * dLoss/dlogits into `grad` when it is
// not null. `mixed`: `labels` holds rows of (a, b, lam bits), the mixed
// targets of kernels/loss_math.h, and a row counts as correct when its top-1
// prediction is label a.
LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t rows, int classes, float scale,
                               float* grad, float smoothing = 0.0f, bool mixed = false);

}  // namespace lockstep::cpu
