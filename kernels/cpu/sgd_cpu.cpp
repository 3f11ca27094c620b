#include "kernels/cpu/sgd_cpu.h"

#include <algorithm>
#include <array>
#include <vector>

#include "kernels/adamw_math.h"
#include "kernels/bf16_math.h"
#include "kernels/ema_math.h"
#include "kernels/cpu/lane_sums.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

void sgd_momentum(float* weights, float* grads, float* velocity, const ArenaSegment* segments, int segment_count,
                  const SgdHyper& hyper, uint16_t* weights_bf16, float* exp_avg_sq, float* ema) {
  const float scale = hyper.grad_scale ? *hyper.grad_scale : 1.0f;
  const bool average = hyper.ema_decay > 0.0;
  const float ema_w = average ? ema_weight(hyper.ema_decay, adamw_step_index(hyper)) : 0.0f;
  for (int s = 0; s < segment_count; ++s) {
    const ArenaSegment& seg = segments[s];
    float decay = seg.decay ? hyper.weight_decay : 0.0f;
    // The backbone ends at a segment's start (ops::sgd_step checks), so one rate serves the segment.
    const float lr = element_lr(hyper, hyper.lr, seg.offset);
    float* w = weights + seg.offset;
    float* g = grads + seg.offset;
    float* v = velocity + seg.offset;
    uint16_t* wb = weights_bf16 ? weights_bf16 + seg.offset : nullptr;
    float* e = average ? ema + seg.offset : nullptr;
    if (hyper.adamw) {
      const AdamwScalars scalars = adamw_scalars(hyper, lr, adamw_step_index(hyper));
      float* v2 = exp_avg_sq + seg.offset;
      parallel_elements(seg.count, [&](int64_t i) {
        g[i] *= scale;
        adamw_element(w[i], g[i], v[i], v2[i], hyper, scalars, seg.decay);
        if (wb) wb[i] = float_to_bf16(w[i]);
        if (e) e[i] = ema_lerp(e[i], w[i], ema_w);
      });
      continue;
    }
    // Scaling by 1 (no clipping) is exact, so one loop serves both.
    parallel_elements(seg.count, [&](int64_t i) {
      g[i] *= scale;
      sgd_momentum_element(w[i], g[i], v[i], lr, hyper.momentum, decay, hyper.nesterov);
      if (wb) wb[i] = float_to_bf16(w[i]);
      if (e) e[i] = ema_lerp(e[i], w[i], ema_w);
    });
  }
}

void ema_average(float* average, const float* value, int64_t n, float weight) {
  parallel_elements(n, [&](int64_t i) { average[i] = ema_lerp(average[i], value[i], weight); });
}

double sum_of_squares(const float* x, int64_t n) {
  // Fixed chunks summed in parallel, then their totals in chunk order.
  constexpr int64_t chunk = 4096;
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<double> totals(chunks, 0.0);
  parallel_items(chunks, chunk, [&](int64_t c) {
    const float* part = x + c * chunk;
    add_lane_sums<1>(std::min(chunk, n - c * chunk), [&](int64_t j) { return std::array<float, 1>{part[j] * part[j]}; },
                     &totals[c]);
  });
  double sum = 0.0;
  for (double t : totals) sum += t;
  return sum;
}

}  // namespace lockstep::cpu
