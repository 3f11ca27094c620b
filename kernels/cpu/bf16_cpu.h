#pragma once
// Precision bf16 on the CPU: the conversions between FP32 storage and bf16
// (kernels/bf16_math.h), over n elements on the compute pool.
#include <cstdint>

namespace lockstep::cpu {

// x[i] = x[i] rounded to bf16, kept in FP32 storage (what a GPU storing the
// value in bf16 and reading it back would hold).
void round_to_bf16_in_place(float* x, int64_t n);
// out[i] = the bf16 bits of x[i], rounded to nearest even.
void narrow_to_bf16(const float* x, uint16_t* out, int64_t n);
// out[i] = the float value of bf16 bits b[i] (exact).
void widen_from_bf16(const uint16_t* b, float* out, int64_t n);

}  // namespace lockstep::cpu
