#include "ops/linear.h"

#include "base/error.h"
#include "ops/checks.h"
#include "kernels/cpu/linear_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/linear_cuda.h"
#include "runtime/cuda/cuda_context.h"
#endif

namespace lockstep::ops {

namespace {

void check_matrix(const char* op, Context& ctx, const char* what, const Tensor& t) {
  check_tensor(op, ctx, what, t);
  LS_CHECK(t.shape().rank() == 2, op, ": ", what, " ", t.shape().str(), " is not a matrix");
}

// Checks x [N, F], w [O, F] and y [N, O] against each other (x or y may stand
// for its gradient).
void check_product(const char* op, const Tensor& x, const Tensor& w, const Tensor& y) {
  LS_CHECK(x.dim(1) == w.dim(1) && y.dim(0) == x.dim(0) && y.dim(1) == w.dim(0), op, ": input ", x.shape().str(),
           ", weight ", w.shape().str(), " and output ", y.shape().str(), " do not fit [N, F], [O, F], [N, O]");
}

}  // namespace

void linear_forward(Context& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const char* op = "linear forward";
  check_matrix(op, ctx, "input", x);
  check_matrix(op, ctx, "weight", w);
  check_matrix(op, ctx, "output", y);
  check_product(op, x, w, y);
  if (bias) {
    check_tensor(op, ctx, "bias", *bias);
    LS_CHECK(bias->shape() == Shape{w.dim(0)}, op, ": bias ", bias->shape().str(), " for weight ", w.shape().str());
  }
  if (ctx.device().is_cpu())
    return cpu::linear_forward(x.data(), w.data(), bias ? bias->data() : nullptr, y.data(), x.dim(0), w.dim(1),
                               w.dim(0));
#if LOCKSTEP_WITH_CUDA
  cuda::linear_forward(*ctx.cuda(), x.data(), w.data(), bias ? bias->data() : nullptr, y.data(), x.dim(0), w.dim(1),
                       w.dim(0));
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void linear_backward_data(Context& ctx, const Tensor& dy, const Tensor& w, Tensor& dx, bool accumulate) {
  const char* op = "linear backward data";
  check_matrix(op, ctx, "output gradient", dy);
  check_matrix(op, ctx, "weight", w);
  check_matrix(op, ctx, "input gradient", dx);
  check_product(op, dx, w, dy);
  if (ctx.device().is_cpu())
    return cpu::linear_backward_data(dy.data(), w.data(), dx.data(), dx.dim(0), w.dim(1), w.dim(0), accumulate);
#if LOCKSTEP_WITH_CUDA
  cuda::linear_backward_data(*ctx.cuda(), dy.data(), w.data(), dx.data(), dx.dim(0), w.dim(1), w.dim(0), accumulate);
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void linear_backward_weight(Context& ctx, const Tensor& x, const Tensor& dy, Tensor& dw) {
  const char* op = "linear backward weight";
  check_matrix(op, ctx, "input", x);
  check_matrix(op, ctx, "output gradient", dy);
  check_matrix(op, ctx, "weight gradient", dw);
  check_product(op, x, dw, dy);
  if (ctx.device().is_cpu())
    return cpu::linear_backward_weight(x.data(), dy.data(), dw.data(), x.dim(0), dw.dim(1), dw.dim(0));
#if LOCKSTEP_WITH_CUDA
  cuda::linear_backward_weight(*ctx.cuda(), x.data(), dy.data(), dw.data(), x.dim(0), dw.dim(1), dw.dim(0));
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

void linear_backward_bias(Context& ctx, const Tensor& dy, Tensor& db) {
  const char* op = "linear backward bias";
  check_matrix(op, ctx, "output gradient", dy);
  check_tensor(op, ctx, "bias gradient", db);
  LS_CHECK(db.shape() == Shape{dy.dim(1)}, op, ": bias gradient ", db.shape().str(), " for output gradient ",
           dy.shape().str());
  if (ctx.device().is_cpu()) return cpu::linear_backward_bias(dy.data(), db.data(), dy.dim(0), dy.dim(1));
#if LOCKSTEP_WITH_CUDA
  cuda::linear_backward_bias(*ctx.cuda(), dy.data(), db.data(), dy.dim(0), dy.dim(1));
#else
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

}  // namespace lockstep::ops
