#pragma once
// A float's bit pattern and back, on the host (memcpy, which compilers turn
// into a register move) and in CUDA device code (the intrinsics), for the
// rounding helpers of tf32_math.h and bf16_math.h.
#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace lockstep {

LS_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

LS_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// Rounds a float's bits to nearest, ties to even, at bit `drop` (13 for
// TF32, 16 for bf16; the `drop` low mantissa bits become zero). Infinities
// stay; a NaN stays a NaN, made quiet (bit 22, kept by both formats) so that
// clearing its low bits cannot turn it into an infinity. A finite value past
// the largest the narrower format holds rounds to infinity, as an IEEE
// conversion does.
LS_HD uint32_t round_mantissa_bits(uint32_t u, int drop) {
  const uint32_t low = (1u << drop) - 1u;
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x007fffffu) ? ((u | 0x00400000u) & ~low) : u;
  const uint32_t lsb = (u >> drop) & 1u;
  u += (low >> 1) + lsb;  // a carry out of the mantissa raises the exponent, as it should
  return u & ~low;
}

}  // namespace lockstep
