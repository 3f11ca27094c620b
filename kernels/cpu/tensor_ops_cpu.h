#pragma once
// CPU loops for the shape-only and summing layers (add, flatten).
#include <cstdint>

namespace lockstep::cpu {

// y = a + b.
void add(const float* a, const float* b, float* y, int64_t n);
// dst = src, or dst += src when accumulate: passes a gradient through unchanged.
void copy_or_add(const float* src, float* dst, int64_t n, bool accumulate);

}  // namespace lockstep::cpu
