#pragma once
// Fully connected products on tensors of one device, one function per cuBLAS
// call (plus the bias) it maps to. Layouts: x [N, F], w [O, F], bias [O],
// y [N, O]. Each throws lockstep::Error naming the op and the shapes when
// they do not fit.
//
// Storage types (operand_dtype in ops/checks.h): x, w, y, dx, dy all f32, or all bf16
// on a GPU (cublasGemmEx with CUDA_R_16BF operands and CUBLAS_COMPUTE_32F:
// FP32 accumulation, each bf16 output rounded to nearest even once). With
// bf16 operands the bias is f32 or bf16 (rounded to bf16, added to the FP32
// sum before its one rounding); dw and db stay f32, and dw is the FP32
// product itself (cuBLAS writes a float C from bf16 A and B), not rounded to
// bf16. bf16 tensors on the CPU, or mixed operand types, are an Error.
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// y = x w^T + bias; `bias` may be null.
void linear_forward(Context& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);
// dx = dy w (written, or added when `accumulate`).
void linear_backward_data(Context& ctx, const Tensor& dy, const Tensor& w, Tensor& dx, bool accumulate);
// dw = dy^T x (written).
void linear_backward_weight(Context& ctx, const Tensor& x, const Tensor& dy, Tensor& dw);
// db = the sum of dy over the batch (written).
void linear_backward_bias(Context& ctx, const Tensor& dy, Tensor& db);

}  // namespace lockstep::ops
