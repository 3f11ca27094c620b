#include "kernels/cuda/linear_cuda.h"

#include <climits>

#include "base/cuda/cuda_check.h"
#include "kernels/cuda/cuda_libraries.h"
#include "base/error.h"
#include "kernels/cuda/tensor_ops_cuda.h"

namespace lockstep::cuda {

namespace {
int blas_int(int64_t v, const char* what) {
  LS_CHECK(v >= 0 && v <= INT_MAX, "cuBLAS takes 32-bit sizes: ", what, " ", v, " is too large");
  return static_cast<int>(v);
}
}  // namespace

void linear_forward(CudaLibraries& state, const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t in_features, int64_t out_features) {
  if (batch == 0) return;
  const int n = blas_int(batch, "batch"), f = blas_int(in_features, "in_features"),
            o = blas_int(out_features, "out_features");
  const float one = 1.0f, zero = 0.0f;
  if (bias) fill_rows(state.compute_stream, y, bias, batch, out_features);
  // y^T [o, n] = (w^T stored [f, o])^T * x^T [f, n]
  LS_CUBLAS_CHECK(cublasSgemm(state.cublas, CUBLAS_OP_T, CUBLAS_OP_N, o, n, f, &one, w, f, x, f, bias ? &one : &zero,
                              y, o));
}

void linear_backward_data(CudaLibraries& state, const float* dy, const float* w, float* dx, int64_t batch,
                          int64_t in_features, int64_t out_features, bool accumulate) {
  if (batch == 0) return;
  const int n = blas_int(batch, "batch"), f = blas_int(in_features, "in_features"),
            o = blas_int(out_features, "out_features");
  const float one = 1.0f, zero = 0.0f;
  // dx^T [f, n] = w^T (stored [f, o]) * dy^T [o, n]
  LS_CUBLAS_CHECK(cublasSgemm(state.cublas, CUBLAS_OP_N, CUBLAS_OP_N, f, n, o, &one, w, f, dy, o,
                              accumulate ? &one : &zero, dx, f));
}

void linear_backward_weight(CudaLibraries& state, const float* x, const float* dy, float* dw, int64_t batch,
                            int64_t in_features, int64_t out_features) {
  if (batch == 0) {
    LS_CUDA_CHECK(cudaMemsetAsync(dw, 0, sizeof(float) * in_features * out_features, state.compute_stream));
    return;
  }
  const int n = blas_int(batch, "batch"), f = blas_int(in_features, "in_features"),
            o = blas_int(out_features, "out_features");
  const float one = 1.0f, zero = 0.0f;
  // dw^T [f, o] = x^T [f, n] * (dy^T stored [o, n])^T
  LS_CUBLAS_CHECK(cublasSgemm(state.cublas, CUBLAS_OP_N, CUBLAS_OP_T, f, o, n, &one, x, f, dy, o, &zero, dw, f));
}

void linear_backward_bias(CudaLibraries& state, const float* dy, float* db, int64_t batch, int64_t out_features) {
  column_sums(state.compute_stream, dy, batch, out_features, db);
}

}  // namespace lockstep::cuda
