#include "kernels/cpu/elementwise_cpu.h"

#include "kernels/elementwise_math.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

void relu_forward(const float* x, float* y, int64_t n) {
  parallel_elements(n, [&](int64_t i) { y[i] = lockstep::relu_forward(x[i]); });
}

void relu_backward(const float* y, const float* dy, float* dx, int64_t n, bool accumulate) {
  parallel_elements(n, [&](int64_t i) { store_grad(dx[i], lockstep::relu_backward(y[i], dy[i]), accumulate); });
}

}  // namespace lockstep::cpu
