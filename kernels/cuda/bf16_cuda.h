#pragma once
// The conversions of precision bf16 on the GPU (the CPU twins:
// kernels/cpu/bf16_cpu.h): FP32 to bf16 storage (rounded to nearest, ties to
// even) and back (exact), for the bf16 copy of the master weights and the
// network's input; and rounding FP32 values in place.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lockstep::cuda {

// dst[i] = src[i] in dst's stored type: Src, Dst one of float, bf16_bits
// (kernels/stored_type.h), instantiated for float -> bf16_bits and back.
template <typename Src, typename Dst> void convert_stored(cudaStream_t stream, const Src* src, Dst* dst, int64_t n);
// x[i] = round_to_bf16(x[i]) (kernels/bf16_math.h) over n floats.
void round_to_bf16(cudaStream_t stream, float* x, int64_t n);

}  // namespace lockstep::cuda
