#pragma once
// Four consecutive stored values at once (kernels/stored_type.h's load and
// store, vectorised): one 16-byte access for float, one 8-byte access for
// bf16. Index i4 counts groups of four; the pointer must be vec4_aligned.
// Included by .cu files only.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/bf16_math.h"
#include "kernels/float_bits.h"

namespace lockstep::cuda::detail {

template <typename T> inline bool vec4_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

__device__ __forceinline__ float4 load4(const float* p, int64_t i4) { return reinterpret_cast<const float4*>(p)[i4]; }

// Element 0 of a pair is the low half of its 32-bit word (little-endian).
__device__ __forceinline__ float4 load4(const bf16_bits* p, int64_t i4) {
  const uint2 v = reinterpret_cast<const uint2*>(p)[i4];
  return make_float4(bits_float(v.x << 16), bits_float(v.x & 0xffff0000u), bits_float(v.y << 16),
                     bits_float(v.y & 0xffff0000u));
}

__device__ __forceinline__ void store4(float* p, int64_t i4, float4 v) { reinterpret_cast<float4*>(p)[i4] = v; }

__device__ __forceinline__ void store4(bf16_bits* p, int64_t i4, float4 v) {
  const auto pair = [](float lo, float hi) {
    return static_cast<uint32_t>(float_to_bf16(lo)) | (static_cast<uint32_t>(float_to_bf16(hi)) << 16);
  };
  reinterpret_cast<uint2*>(p)[i4] = make_uint2(pair(v.x, v.y), pair(v.z, v.w));
}

}  // namespace lockstep::cuda::detail
