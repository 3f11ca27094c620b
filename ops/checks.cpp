#include "ops/checks.h"

#include "base/error.h"

namespace lockstep::ops {

void check_device(const char* op, Context& ctx, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    LS_CHECK(t->device() == ctx.device(), op, ": tensor on ", t->device().str(), ", context on ", ctx.device().str());
}

void check_shape(const char* op, const char* what, const Tensor& t, const Shape& expected) {
  LS_CHECK(t.shape() == expected, op, ": ", what, " is ", t.shape().str(), ", expected ", expected.str());
}

void check_shape_and_device(const char* op, Context& ctx, const char* what, const Tensor& t, const Shape& expected) {
  check_shape(op, what, t, expected);
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ", ctx.device().str());
}

void check_tensor(const char* op, Context& ctx, const char* what, const Tensor& t) {
  LS_CHECK(t.defined(), op, ": ", what, " is not allocated");
  LS_CHECK(t.dtype() == DType::f32, op, ": ", what, " is ", dtype_name(t.dtype()), ", expected f32");
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ",
           ctx.device().str());
}

void check_matrix(const char* op, Context& ctx, const char* what, const Tensor& t) {
  check_tensor(op, ctx, what, t);
  LS_CHECK(t.shape().rank() == 2, op, ": ", what, " ", t.shape().str(), " is not a matrix");
}

void check_same(const char* op, Context& ctx, const Tensor& expected, std::initializer_list<const Tensor*> others) {
  check_device(op, ctx, {&expected});
  for (const Tensor* t : others)
    LS_CHECK(t->numel() == expected.numel(), op, ": shapes ", expected.shape().str(), " and ", t->shape().str(),
             " differ");
  // Element-wise ops pair elements by position, so the operands must lie alike.
  for (const Tensor* t : others)
    LS_CHECK(t->format() == expected.format(), op, ": memory formats ", memory_format_name(expected.format()),
             " and ", memory_format_name(t->format()), " differ (convert with ops::convert_format)");
  check_device(op, ctx, others);
}

namespace {

// The one rule of stored types: f32, or bf16 on a GPU.
void check_storable(const char* op, Context& ctx, const char* what, DType dtype) {
  LS_CHECK(dtype == DType::f32 || dtype == DType::bf16, op, ": ", what, " is ", dtype_name(dtype),
           ", expected f32 or bf16");
  LS_CHECK(dtype == DType::f32 || ctx.device().is_cuda(), op, ": bf16 tensors on ", ctx.device().str(),
           " (bf16 storage is a GPU mode; the CPU's bf16 mode rounds values held in f32 tensors, ops/bf16.h)");
}

void check_placed(const char* op, Context& ctx, const char* what, const Tensor& t) {
  LS_CHECK(t.defined(), op, ": ", what, " is not allocated");
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ",
           ctx.device().str());
}

}  // namespace

DType check_stored(const char* op, Context& ctx, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t) continue;
    if (!first) {
      first = t;
      check_storable(op, ctx, "a tensor", t->dtype());
    }
    LS_CHECK(t->dtype() == first->dtype(), op, ": tensors of ", dtype_name(first->dtype()), " and ",
             dtype_name(t->dtype()), " mixed (an op's activations share one stored type)");
  }
  return first ? first->dtype() : DType::f32;
}

DType operand_dtype(const char* op, Context& ctx, std::initializer_list<NamedTensor> operands) {
  const NamedTensor& first = *operands.begin();
  for (const NamedTensor& o : operands) check_placed(op, ctx, o.what, *o.tensor);
  const DType dtype = first.tensor->dtype();
  for (const NamedTensor& o : operands)
    LS_CHECK(o.tensor->dtype() == dtype, op, ": ", first.what, " is ", dtype_name(dtype), " but ", o.what, " is ",
             dtype_name(o.tensor->dtype()), " (the operands are all f32, or all bf16 on a GPU)");
  check_storable(op, ctx, first.what, dtype);
  return dtype;
}

void check_bias_dtype(const char* op, Context& ctx, const char* what, const Tensor& bias, DType operands) {
  check_placed(op, ctx, what, bias);
  const bool ok = bias.dtype() == DType::f32 || (operands == DType::bf16 && bias.dtype() == DType::bf16);
  LS_CHECK(ok, op, ": ", what, " is ", dtype_name(bias.dtype()), " with ", dtype_name(operands),
           " operands (f32 operands take an f32 ", what, ", bf16 ones an f32 or a bf16 one)");
}

void check_f32(const char* op, const char* what, const Tensor& t) {
  LS_CHECK(t.dtype() == DType::f32, op, ": ", what, " is ", dtype_name(t.dtype()), ", expected f32");
}

MemoryFormat check_format(const char* op, const Tensor& first, std::initializer_list<const Tensor*> others) {
  for (const Tensor* t : others)
    LS_CHECK(!t || t->format() == first.format(), op, ": memory formats ", memory_format_name(first.format()),
             " and ", memory_format_name(t->format()), " mixed (every image tensor of the op must lie alike)");
  return first.format();
}

}  // namespace lockstep::ops
