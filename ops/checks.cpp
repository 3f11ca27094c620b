#include "ops/checks.h"

#include "base/error.h"

namespace lockstep::ops {

void check_tensor(const char* op, Context& ctx, const char* what, const Tensor& t) {
  LS_CHECK(t.defined(), op, ": ", what, " is not allocated");
  LS_CHECK(t.dtype() == DType::f32, op, ": ", what, " is ", dtype_name(t.dtype()), ", expected f32");
  LS_CHECK(t.device() == ctx.device(), op, ": ", what, " on ", t.device().str(), ", context on ",
           ctx.device().str());
}

}  // namespace lockstep::ops
