#include "ops/linear.h"

#include "base/error.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "kernels/cpu/linear_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/linear_cuda.h"
#endif

namespace lockstep::ops {

namespace {

// A matrix operand: rank 2 (its dtype and device are operand_dtype's checks).
void check_rank2(const char* op, const char* what, const Tensor& t) {
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
  const DType dtype = operand_dtype(op, ctx, {{"input", &x}, {"weight", &w}, {"output", &y}});
  check_rank2(op, "input", x);
  check_rank2(op, "weight", w);
  check_rank2(op, "output", y);
  check_product(op, x, w, y);
  if (bias) {
    check_bias_dtype(op, ctx, "bias", *bias, dtype);
    LS_CHECK(bias->shape() == Shape{w.dim(0)}, op, ": bias ", bias->shape().str(), " for weight ", w.shape().str());
  }
  dispatch(
      op, ctx,
      [&] {
        cpu::linear_forward(x.data(), w.data(), bias ? bias->data() : nullptr, y.data(), x.dim(0), w.dim(1), w.dim(0));
      },
      LS_CUDA_TWIN(gpu, {
        if (dtype == DType::bf16)
          cuda::linear_forward(gpu, x.bf16_data(), w.bf16_data(),
                               {bias ? bias->raw() : nullptr, bias && bias->dtype() == DType::bf16}, y.bf16_data(),
                               x.dim(0), w.dim(1), w.dim(0));
        else
          cuda::linear_forward(gpu, x.data(), w.data(), bias ? bias->data() : nullptr, y.data(), x.dim(0), w.dim(1),
                               w.dim(0));
      }));
}

void linear_backward_data(Context& ctx, const Tensor& dy, const Tensor& w, Tensor& dx, bool accumulate) {
  const char* op = "linear backward data";
  const DType dtype = operand_dtype(op, ctx, {{"output gradient", &dy}, {"weight", &w}, {"input gradient", &dx}});
  check_rank2(op, "output gradient", dy);
  check_rank2(op, "weight", w);
  check_rank2(op, "input gradient", dx);
  check_product(op, dx, w, dy);
  dispatch(
      op, ctx,
      [&] { cpu::linear_backward_data(dy.data(), w.data(), dx.data(), dx.dim(0), w.dim(1), w.dim(0), accumulate); },
      LS_CUDA_TWIN(gpu, {
        if (dtype == DType::bf16)
          cuda::linear_backward_data(gpu, dy.bf16_data(), w.bf16_data(), dx.bf16_data(), dx.dim(0), w.dim(1),
                                     w.dim(0), accumulate);
        else
          cuda::linear_backward_data(gpu, dy.data(), w.data(), dx.data(), dx.dim(0), w.dim(1), w.dim(0), accumulate);
      }));
}

void linear_backward_weight(Context& ctx, const Tensor& x, const Tensor& dy, Tensor& dw) {
  const char* op = "linear backward weight";
  const DType dtype = operand_dtype(op, ctx, {{"input", &x}, {"output gradient", &dy}});
  check_rank2(op, "input", x);
  check_rank2(op, "output gradient", dy);
  check_matrix(op, ctx, "weight gradient", dw);
  check_product(op, x, dw, dy);
  dispatch(op, ctx, [&] { cpu::linear_backward_weight(x.data(), dy.data(), dw.data(), x.dim(0), dw.dim(1), dw.dim(0)); },
           LS_CUDA_TWIN(gpu, {
             if (dtype == DType::bf16)
               cuda::linear_backward_weight(gpu, x.bf16_data(), dy.bf16_data(), dw.data(), x.dim(0), dw.dim(1),
                                            dw.dim(0));
             else
               cuda::linear_backward_weight(gpu, x.data(), dy.data(), dw.data(), x.dim(0), dw.dim(1), dw.dim(0));
           }));
}

void linear_backward_bias(Context& ctx, const Tensor& dy, Tensor& db) {
  const char* op = "linear backward bias";
  const DType dtype = operand_dtype(op, ctx, {{"output gradient", &dy}});
  check_rank2(op, "output gradient", dy);
  check_tensor(op, ctx, "bias gradient", db);
  LS_CHECK(db.shape() == Shape{dy.dim(1)}, op, ": bias gradient ", db.shape().str(), " for output gradient ",
           dy.shape().str());
  dispatch(op, ctx, [&] { cpu::linear_backward_bias(dy.data(), db.data(), dy.dim(0), dy.dim(1)); },
           LS_CUDA_TWIN(gpu, {
             if (dtype == DType::bf16)
               cuda::linear_backward_bias(gpu, dy.bf16_data(), db.data(), dy.dim(0), dy.dim(1));
             else
               cuda::linear_backward_bias(gpu, dy.data(), db.data(), dy.dim(0), dy.dim(1));
           }));
}

}  // namespace lockstep::ops
