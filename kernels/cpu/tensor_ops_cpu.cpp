#include "kernels/cpu/tensor_ops_cpu.h"

#include "kernels/elementwise_math.h"

namespace lockstep::cpu {

void add(const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void copy_or_add(const float* src, float* dst, int64_t n, bool accumulate) {
  for (int64_t i = 0; i < n; ++i) store_grad(dst[i], src[i], accumulate);
}

}  // namespace lockstep::cpu
