#include "kernels/cuda/linear_cuda.h"

#include <climits>

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/bf16_operands_cuda.h"
#include "kernels/cuda/cuda_libraries.h"
#include "base/error.h"
#include "kernels/cuda/tensor_ops_cuda.h"

namespace lockstep::cuda {

namespace {
int blas_int(int64_t v, const char* what) {
  LS_CHECK(v >= 0 && v <= INT_MAX, "cuBLAS takes 32-bit sizes: ", what, " ", v, " is too large");
  return static_cast<int>(v);
}

struct Extents {
  int n, f, o;
};
Extents extents(int64_t batch, int64_t in_features, int64_t out_features) {
  return {blas_int(batch, "batch"), blas_int(in_features, "in_features"), blas_int(out_features, "out_features")};
}

// An empty batch's weight gradient is zeros (no product runs): true when written so.
bool zeros_for_empty_batch(CudaLibraries& state, float* dw, int64_t batch, int64_t count) {
  if (batch != 0) return false;
  LS_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * count, state.compute_stream));
  return true;
}

// C = A op B in cuBLAS's column-major terms with bf16 A and B (CUDA_R_16BF),
// FP32 accumulation (CUBLAS_COMPUTE_32F) and a C of `c_type`: a row of the
// cuBLAS guide's cublasGemmEx table (bf16 A, B with a bf16 or a float C).
void gemm_bf16(CudaLibraries& state, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
               const bf16_bits* a, int lda, const bf16_bits* b, int ldb, bool blend, void* c, cudaDataType c_type,
               int ldc) {
  const float one = 1.0f, zero = 0.0f;
  LS_CUBLAS_CHECK(cublasGemmEx(state.cublas, ta, tb, m, n, k, &one, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb,
                               blend ? &one : &zero, c, c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
}  // namespace

void linear_forward(CudaLibraries& state, const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t in_features, int64_t out_features) {
  if (batch == 0) return;
  const auto [n, f, o] = extents(batch, in_features, out_features);
  const float one = 1.0f, zero = 0.0f;
  if (bias) fill_rows(state.compute_stream, y, bias, batch, out_features);
  // y^T [o, n] = (w^T stored [f, o])^T * x^T [f, n]
  LS_CUBLAS_CHECK(cublasSgemm(state.cublas, CUBLAS_OP_T, CUBLAS_OP_N, o, n, f, &one, w, f, x, f, bias ? &one : &zero,
                              y, o));
}

void linear_backward_data(CudaLibraries& state, const float* dy, const float* w, float* dx, int64_t batch,
                          int64_t in_features, int64_t out_features, bool accumulate) {
  if (batch == 0) return;
  const auto [n, f, o] = extents(batch, in_features, out_features);
  const float one = 1.0f, zero = 0.0f;
  // dx^T [f, n] = w^T (stored [f, o]) * dy^T [o, n]
  LS_CUBLAS_CHECK(cublasSgemm(state.cublas, CUBLAS_OP_N, CUBLAS_OP_N, f, n, o, &one, w, f, dy, o,
                              accumulate ? &one : &zero, dx, f));
}

void linear_backward_weight(CudaLibraries& state, const float* x, const float* dy, float* dw, int64_t batch,
                            int64_t in_features, int64_t out_features) {
  if (zeros_for_empty_batch(state, dw, batch, in_features * out_features)) return;
  const auto [n, f, o] = extents(batch, in_features, out_features);
  const float one = 1.0f, zero = 0.0f;
  // dw^T [f, o] = x^T [f, n] * (dy^T stored [o, n])^T
  LS_CUBLAS_CHECK(cublasSgemm(state.cublas, CUBLAS_OP_N, CUBLAS_OP_T, f, o, n, &one, x, f, dy, o, &zero, dw, f));
}

void linear_backward_bias(CudaLibraries& state, const float* dy, float* db, int64_t batch, int64_t out_features) {
  column_sums(state.compute_stream, dy, batch, out_features, db);
}

void linear_forward(CudaLibraries& state, const bf16_bits* x, const bf16_bits* w, BiasRef bias, bf16_bits* y,
                    int64_t batch, int64_t in_features, int64_t out_features) {
  if (batch == 0) return;
  const auto [n, f, o] = extents(batch, in_features, out_features);
  broadcast_bias_bf16(state.compute_stream, bias, y, batch, out_features, 1, MemoryFormat::nhwc);
  gemm_bf16(state, CUBLAS_OP_T, CUBLAS_OP_N, o, n, f, w, f, x, f, bias.data != nullptr, y, CUDA_R_16BF, o);
}

void linear_backward_data(CudaLibraries& state, const bf16_bits* dy, const bf16_bits* w, bf16_bits* dx, int64_t batch,
                          int64_t in_features, int64_t out_features, bool accumulate) {
  if (batch == 0) return;
  const auto [n, f, o] = extents(batch, in_features, out_features);
  gemm_bf16(state, CUBLAS_OP_N, CUBLAS_OP_N, f, n, o, w, f, dy, o, accumulate, dx, CUDA_R_16BF, f);
}

void linear_backward_weight(CudaLibraries& state, const bf16_bits* x, const bf16_bits* dy, float* dw, int64_t batch,
                            int64_t in_features, int64_t out_features) {
  if (zeros_for_empty_batch(state, dw, batch, in_features * out_features)) return;
  const auto [n, f, o] = extents(batch, in_features, out_features);
  gemm_bf16(state, CUBLAS_OP_N, CUBLAS_OP_T, f, o, n, x, f, dy, o, false, dw, CUDA_R_32F, f);
}

void linear_backward_bias(CudaLibraries& state, const bf16_bits* dy, float* db, int64_t batch, int64_t out_features) {
  column_sums(state.compute_stream, dy, batch, out_features, db);
}

}  // namespace lockstep::cuda
