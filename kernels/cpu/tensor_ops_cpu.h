#pragma once
// CPU loops for the shape-only and summing layers (add, flatten).
#include <cstdint>

namespace lockstep::cpu {

// y = a + b.
void add(const float* a, const float* b, float* y, int64_t n);
// dst = src, or dst += src when accumulate: passes a gradient through unchanged.
void copy_or_add(const float* src, float* dst, int64_t n, bool accumulate);
// out[c] = the sum over n and spatial of x [n, channels, spatial] (a
// convolution's bias gradient); each row in float lanes, the rows in double.
void channel_sums(const float* x, int64_t n, int64_t channels, int64_t spatial, float* out);

}  // namespace lockstep::cpu
