#include "kernels/cpu/loss_cpu.h"

#include "kernels/loss_math.h"

namespace lockstep::cpu {

LossSums softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t rows, int classes, float scale,
                               float* grad) {
  LossSums sums;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    float lse = row_logsumexp(z, classes, row_max(z, classes));
    sums.loss_sum += static_cast<double>(lse - z[labels[r]]);
    sums.correct += row_argmax(z, classes) == labels[r] ? 1 : 0;
    if (grad)
      for (int k = 0; k < classes; ++k) grad[r * classes + k] = cross_entropy_grad(z[k], lse, k == labels[r], scale);
  }
  return sums;
}

}  // namespace lockstep::cpu
