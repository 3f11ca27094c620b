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

MemoryFormat check_format(const char* op, const Tensor& first, std::initializer_list<const Tensor*> others) {
  for (const Tensor* t : others)
    LS_CHECK(!t || t->format() == first.format(), op, ": memory formats ", memory_format_name(first.format()),
             " and ", memory_format_name(t->format()), " mixed (every image tensor of the op must lie alike)");
  return first.format();
}

}  // namespace lockstep::ops
