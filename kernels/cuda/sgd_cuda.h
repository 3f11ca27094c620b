#pragma once
// The fused SGD-momentum step over a replica's whole arena on one stream.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/arena_segment.h"
#include "kernels/sgd_math.h"

namespace lockstep::cuda {

// Updates w and v and clears g for elements [0, total) of the three arenas
// (each 16-byte aligned), applying weight decay to the segments marked decay.
// Segments must be sorted, start at multiples of 4 elements (ParameterArenas
// puts them at multiples of 16) and lie inside [0, total); elements between
// them are padding, which the arena keeps at zero, where the update is a
// no-op. One kernel launch (several only past 8000 switches of decay). With
// hyper.grad_scale set (device memory), g is scaled by it first. With `wb`
// set (precision bf16; 16-byte aligned, `total` elements), every element's
// updated weight is also written there rounded to bf16 (kernels/bf16_math.h),
// padding included (zero stays zero), in the same launch: the copy the next
// forward reads. With hyper.adamw, the AdamW update (kernels/adamw_math.h)
// instead, v holding exp_avg and `s` (16-byte aligned, `total` elements) the
// second moment; the scalars of step t are worked out in the kernel from
// hyper.step or *hyper.step_on_device, so a replayed graph follows t.
// With hyper.ema_decay > 0, `e` (16-byte aligned, `total` elements) takes the
// moving average of the updated fp32 weights (kernels/ema_math.h), its step
// read as AdamW's t is, in the same launch.
void sgd_momentum(cudaStream_t stream, float* w, float* g, float* v, int64_t total,
                  const std::vector<ArenaSegment>& segments, const SgdHyper& hyper, uint16_t* wb = nullptr,
                  float* s = nullptr, float* e = nullptr);

// average[i] = ema_lerp(average[i], value[i], the weight of `step` for `decay`)
// over n values (the running statistics), the step read from
// `step_on_device` when set (a replayed graph).
void ema_average(cudaStream_t stream, float* average, const float* value, int64_t n, double decay, uint64_t step,
                 const uint64_t* step_on_device);

// Device scratch clip_scale needs (bytes).
size_t clip_scale_scratch_bytes();
// *scale = clip_coefficient(sum of g[i]^2 over [0, total), max_norm), on the
// stream (two launches, a fixed summation order: the same bits on every replica).
void clip_scale(cudaStream_t stream, const float* g, int64_t total, float max_norm, void* scratch, float* scale);

}  // namespace lockstep::cuda
