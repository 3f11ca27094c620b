#include "kernels/cpu/bf16_cpu.h"

#include "kernels/bf16_math.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

void round_to_bf16_in_place(float* x, int64_t n) {
  parallel_elements(n, [&](int64_t i) { x[i] = round_to_bf16(x[i]); });
}

void narrow_to_bf16(const float* x, uint16_t* out, int64_t n) {
  parallel_elements(n, [&](int64_t i) { out[i] = float_to_bf16(x[i]); });
}

void widen_from_bf16(const uint16_t* b, float* out, int64_t n) {
  parallel_elements(n, [&](int64_t i) { out[i] = bf16_to_float(b[i]); });
}

}  // namespace lockstep::cpu
