#include "ops/operand_dtype.h"

#include <string>

#include "base/error.h"

namespace lockstep::ops {

namespace {
void check_placed(const char* op, Context& ctx, const char* what, const Tensor& t) {
  LS_CHECK(t.defined(), op, ": ", what, " is not allocated");
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ",
           ctx.device().str());
}
}  // namespace

DType operand_dtype(const char* op, Context& ctx, std::initializer_list<NamedTensor> operands) {
  const NamedTensor& first = *operands.begin();
  for (const NamedTensor& o : operands) check_placed(op, ctx, o.what, *o.tensor);
  const DType dtype = first.tensor->dtype();
  for (const NamedTensor& o : operands)
    LS_CHECK(o.tensor->dtype() == dtype, op, ": ", first.what, " is ", dtype_name(dtype), " but ", o.what, " is ",
             dtype_name(o.tensor->dtype()), " (the operands are all f32, or all bf16 on a GPU)");
  LS_CHECK(dtype == DType::f32 || dtype == DType::bf16, op, ": ", first.what, " is ", dtype_name(dtype),
           ", expected f32 or bf16");
  LS_CHECK(dtype == DType::f32 || !ctx.device().is_cpu(), op,
           ": bf16 tensors on the CPU (the CPU's bf16 mode keeps bf16 values in f32 storage, ops/bf16.h; bf16 "
           "storage is the GPU's)");
  return dtype;
}

void check_bias_dtype(const char* op, Context& ctx, const char* what, const Tensor& bias, DType operands) {
  check_placed(op, ctx, what, bias);
  const bool ok = bias.dtype() == DType::f32 || (operands == DType::bf16 && bias.dtype() == DType::bf16);
  LS_CHECK(ok, op, ": ", what, " is ", dtype_name(bias.dtype()), " with ", dtype_name(operands),
           " operands (f32 operands take an f32 ", what, ", bf16 ones an f32 or a bf16 one)");
}

}  // namespace lockstep::ops
