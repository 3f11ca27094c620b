#include "kernels/cpu/dropout_cpu.h"

#include "kernels/dropout_math.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

void dropout_forward(const float* x, float* y, int64_t n, uint64_t key, uint64_t first_index, float p) {
  const float scale = dropout_scale(p);
  parallel_elements(n, [&](int64_t i) { y[i] = dropout_apply(x[i], dropout_keeps(key, first_index + i, p), scale); });
}

void dropout_backward(const float* dy, float* dx, int64_t n, uint64_t key, uint64_t first_index, float p,
                      bool accumulate) {
  const float scale = dropout_scale(p);
  parallel_elements(n, [&](int64_t i) {
    store_grad(dx[i], dropout_apply(dy[i], dropout_keeps(key, first_index + i, p), scale), accumulate);
  });
}

}  // namespace lockstep::cpu
