#pragma once
// Softmax cross-entropy on one sample's logits row, written once for the CPU
// loop and the CUDA kernel. The loss of a row is logsumexp(z) - z[label];
// its gradient is scale * (softmax(z) - onehot(label)).
#include <math.h>
#include <stdint.h>

#include "kernels/host_device.h"

namespace lockstep {

// What a loss pass returns to the host: the sum of the rows' losses and the
// count of rows whose top-1 prediction is the label.
struct LossSums {
  double loss_sum = 0.0;
  int64_t correct = 0;
};

LS_HD float row_max(const float* z, int classes) {
  float m = z[0];
  for (int k = 1; k < classes; ++k) m = z[k] > m ? z[k] : m;
  return m;
}

// log(sum(exp(z))) computed around the row maximum for stability.
LS_HD float row_logsumexp(const float* z, int classes, float max_value) {
  float sum = 0.0f;
  for (int k = 0; k < classes; ++k) sum += expf(z[k] - max_value);
  return max_value + logf(sum);
}

// Index of the largest logit (the first one on ties), the top-1 prediction.
LS_HD int row_argmax(const float* z, int classes) {
  int best = 0;
  for (int k = 1; k < classes; ++k)
    if (z[k] > z[best]) best = k;
  return best;
}

// d(scale * loss)/dz[k] for one row, from the row's logsumexp.
LS_HD float cross_entropy_grad(float z, float logsumexp, bool is_label, float scale) {
  return scale * (expf(z - logsumexp) - (is_label ? 1.0f : 0.0f));
}

}  // namespace lockstep
