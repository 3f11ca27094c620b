#pragma once
// The conversions precision bf16 (runtime/precision.h) needs: on the CPU,
// which keeps activations in FP32 storage holding bf16 values, rounding in
// place where a GPU would store bf16; on either device, the bf16 copy of the
// weights (ParameterArenas::params_bf16) and the network's input converted
// from FP32. On a GPU both run as CUDA kernels (kernels/cuda/bf16_cuda.h).
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// Every value of the f32 tensor `x` rounded to bf16 (to nearest even), in place.
void round_to_bf16(Context& ctx, Tensor& x);
// Precision bf16 on the CPU (f32 storage holding what a GPU stores in
// bf16): rounds `x` to bf16 in place where a GPU would store it in bf16 (a
// pass's output or gradient that the graph does not round itself). Any other
// precision or device, or a bf16 tensor: nothing to do.
void round_where_gpu_stores_bf16(Context& ctx, Tensor& x);
// dst = src converted: f32 to bf16 (rounded) or bf16 to f32 (exact); the same
// element count, both on the context's device.
void convert(Context& ctx, const Tensor& src, Tensor& dst);

}  // namespace lockstep::ops
