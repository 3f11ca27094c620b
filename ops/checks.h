#pragma once
// Argument checks the ops share: each throws an Error naming the op and what
// is wrong.
#include <initializer_list>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// Every tensor lives on ctx's device.
void check_device(const char* op, Context& ctx, std::initializer_list<const Tensor*> tensors);
// `t` (called `what` in the message) has the shape `expected`.
void check_shape(const char* op, const char* what, const Tensor& t, const Shape& expected);
// `t` has the shape `expected` and lives on ctx's device.
void check_shape_and_device(const char* op, Context& ctx, const char* what, const Tensor& t, const Shape& expected);
// `t` is allocated, f32 and on ctx's device.
void check_tensor(const char* op, Context& ctx, const char* what, const Tensor& t);
// check_tensor, and `t` is a matrix.
void check_matrix(const char* op, Context& ctx, const char* what, const Tensor& t);
// Every tensor has `expected`'s element count and memory format, and all live
// on ctx's device.
void check_same(const char* op, Context& ctx, const Tensor& expected, std::initializer_list<const Tensor*> others);
// The activations of an op (null ones skipped) share one stored type, f32
// or bf16, which is returned; bf16 only on a GPU context (the CPU's bf16 mode
// rounds values held in f32 tensors, ops/bf16.h). An op's FP32-only tensors
// (batch-norm parameters and statistics) are checked with check_f32.
DType check_stored(const char* op, Context& ctx, std::initializer_list<const Tensor*> tensors);
// check_stored for the library ops (conv, linear, pool), whose messages name
// each operand: every one allocated, on ctx's device, one stored type.
struct NamedTensor {
  const char* what;  // as the message names it: "input", "weight", ...
  const Tensor* tensor;
};
DType operand_dtype(const char* op, Context& ctx, std::initializer_list<NamedTensor> operands);
// A bias beside operands of `operands` dtype: f32 with f32 operands; f32 (the
// master bias, rounded to bf16 where it is added) or bf16 (its bf16 copy)
// with bf16 ones. Allocated and on ctx's device.
void check_bias_dtype(const char* op, Context& ctx, const char* what, const Tensor& bias, DType operands);
// `t` (called `what` in the message) is f32.
void check_f32(const char* op, const char* what, const Tensor& t);
// Every image tensor of an op lies alike: each of `others` (null ones skipped)
// has `first`'s memory format, which is returned.
MemoryFormat check_format(const char* op, const Tensor& first, std::initializer_list<const Tensor*> others);

}  // namespace lockstep::ops
