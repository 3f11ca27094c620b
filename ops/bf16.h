#pragma once
// The conversions precision bf16 (runtime/precision.h) needs. In this build
// bf16 runs on the CPU backend only (a GPU context refuses it): the CPU keeps
// activations in FP32 storage holding bf16 values, rounded with
// round_to_bf16 where a GPU would store bf16, and reads the bf16 copy of the
// weights (ParameterArenas::params_bf16) through convert. A GPU device is an
// Error here until the CUDA bf16 kernels exist.
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// Every value of the f32 tensor `x` rounded to bf16 (to nearest even), in place.
void round_to_bf16(Context& ctx, Tensor& x);
// dst = src converted: f32 to bf16 (rounded) or bf16 to f32 (exact); the same
// element count, both on the context's device.
void convert(Context& ctx, const Tensor& src, Tensor& dst);

}  // namespace lockstep::ops
