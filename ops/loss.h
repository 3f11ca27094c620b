#pragma once
// Softmax cross-entropy with integer labels. Returns the unscaled loss sum and
// correct count; when `logits_grad` is defined writes scale * dLoss/dlogits
// into it (the replica manager passes scale = 1/B, B the global batch).
#include "runtime/context.h"
#include "runtime/model.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

StepMetrics softmax_cross_entropy(Context& ctx, const Tensor& logits, const Tensor& labels, float scale,
                                  Tensor* logits_grad);

// Throws an Error naming the first label outside [0, classes).
void check_labels(const Tensor& labels, int64_t classes);

}  // namespace lockstep::ops
