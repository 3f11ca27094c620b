#pragma once
// Softmax cross-entropy with integer labels, [N], or mixed targets (mixup,
// CutMix), [N, 3] rows of (label a, label b, lam's float bits), trained
// towards lam smooth(onehot(a)) + (1 - lam) smooth(onehot(b)) (timm's
// mixup_target; kernels/loss_math.h), correct when top-1 is a. Returns the unscaled loss sum and
// correct count; when `logits_grad` is defined writes scale * dLoss/dlogits
// into it (the replica manager passes scale = 1/B, B the global batch).
// `label_smoothing` e in [0, 1) trains towards (1 - e) onehot + e / classes
// (PyTorch's CrossEntropyLoss(label_smoothing=e); kernels/loss_math.h).
// The logits and their gradient are both f32 or, on a GPU, both bf16; the
// loss is FP32 (summed in double) either way.
#include "runtime/context.h"
#include "runtime/model.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

StepMetrics softmax_cross_entropy(Context& ctx, const Tensor& logits, const Tensor& labels, float scale,
                                  Tensor* logits_grad, float label_smoothing = 0.0f);

// The loss pass of a training step: the same result, but on a GPU the sums
// stay on the device, copied to pinned memory on the compute stream, and the
// returned read-back waits for that stream and returns them (a bad label is
// reported then). On the CPU it is computed at once and the read-back only
// returns it. The read-back is valid until the next queued pass on `ctx`.
MetricsReadback softmax_cross_entropy_queued(Context& ctx, const Tensor& logits, const Tensor& labels, float scale,
                                             Tensor* logits_grad, float label_smoothing = 0.0f);

// Throws an Error naming the first label outside [0, classes) (or, mixed,
// the first weight outside [0, 1]).
void check_labels(const Tensor& labels, int64_t classes);
// Whether `labels` holds mixed targets ([N, 3]) rather than labels ([N]).
bool mixed_targets(const Tensor& labels);

}  // namespace lockstep::ops
