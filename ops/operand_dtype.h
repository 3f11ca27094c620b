#pragma once
// The storage types the library ops (conv, linear, pool: cuDNN and cuBLAS on
// a GPU) take. Their activation operands are all f32, or all bf16 on a GPU
// (precision bf16 as PyTorch AMP runs it: bf16 operands, FP32 accumulation,
// bf16 outputs). A bf16 tensor on the CPU is refused: the CPU's bf16 mode
// keeps bf16 values in FP32 storage (ops/bf16.h), so a bf16 tensor there is a
// wiring mistake, named as one. Gradients of parameters stay f32 either way.
#include <initializer_list>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

struct NamedTensor {
  const char* what;  // as the message names it: "input", "weight", ...
  const Tensor* tensor;
};

// Each operand is allocated and on ctx's device, and all share one dtype:
// f32, or bf16 on a GPU. Returns it; throws an Error naming the op otherwise.
DType operand_dtype(const char* op, Context& ctx, std::initializer_list<NamedTensor> operands);

// A bias beside operands of `operands` dtype: f32 with f32 operands; f32 (the
// master bias, rounded to bf16 where it is added) or bf16 (its bf16 copy)
// with bf16 ones. Allocated and on ctx's device.
void check_bias_dtype(const char* op, Context& ctx, const char* what, const Tensor& bias, DType operands);

}  // namespace lockstep::ops
