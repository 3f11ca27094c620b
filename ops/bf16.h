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
// dst = src converted: f32 to bf16 (rounded) or bf16 to f32 (exact); the same
// element count, both on the context's device.
void convert(Context& ctx, const Tensor& src, Tensor& dst);

}  // namespace lockstep::ops
