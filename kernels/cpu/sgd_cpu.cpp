#include "kernels/cpu/sgd_cpu.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

void sgd_momentum(float* weights, float* grads, float* velocity, const ArenaSegment* segments, int segment_count,
                  const SgdHyper& hyper) {
  for (int s = 0; s < segment_count; ++s) {
    const ArenaSegment& seg = segments[s];
    float decay = seg.decay ? hyper.weight_decay : 0.0f;
    float* w = weights + seg.offset;
    float* g = grads + seg.offset;
    float* v = velocity + seg.offset;
    parallel_elements(seg.count, [&](int64_t i) {
      sgd_momentum_element(w[i], g[i], v[i], hyper.lr, hyper.momentum, decay, hyper.nesterov);
    });
  }
}

}  // namespace lockstep::cpu
