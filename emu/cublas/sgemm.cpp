// cublasSgemm on the stream's worker through OpenBLAS: cuBLAS is column-major,
// so CblasColMajor with the same arguments computes exactly what it computes.
// Arguments are checked as cuBLAS documents (INVALID_VALUE), and every matrix
// must be device memory of the handle's device (MAPPING_ERROR otherwise,
// where a GPU would fault). In CUBLAS_TF32_TENSOR_OP_MATH, A and B are
// rounded to TF32 first (kernels/tf32_math.h), as tensor cores take them.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "emu/cublas/internal.h"
#include "emu/runtime/emu_runtime.h"
#include "kernels/tf32_math.h"

using namespace lockstep::emu::cublas;

namespace {

bool transposes(cublasOperation_t op) { return op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

// Bytes a column-major rows x cols matrix with leading dimension ld spans.
size_t span_bytes(int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return 0;
  return (size_t(ld) * size_t(cols - 1) + size_t(rows)) * sizeof(float);
}

cublasStatus_t check_matrix(const float* p, int rows, int cols, int ld, int device, const char* what) {
  const size_t bytes = span_bytes(rows, cols, ld);
  if (bytes == 0) return CUBLAS_STATUS_SUCCESS;
  if (!lockstep::emu::is_device_range(p, bytes, device)) {
    std::string why = std::string(what) + " (" + std::to_string(rows) + "x" + std::to_string(cols) + ", ld " +
                      std::to_string(ld) + ") is not inside device memory of device " + std::to_string(device);
    return report(CUBLAS_STATUS_MAPPING_ERROR, "cublasSgemm", why.c_str());
  }
  return CUBLAS_STATUS_SUCCESS;
}

bool tf32_operands(cublasMath_t math) {
  return (math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) == CUBLAS_TF32_TENSOR_OP_MATH;
}

// A copy of the span a column-major matrix covers, every value rounded to
// TF32 (the gaps between columns too: they are never read).
std::vector<float> tf32_copy(const float* p, int rows, int cols, int ld) {
  std::vector<float> copy(span_bytes(rows, cols, ld) / sizeof(float));
  for (size_t i = 0; i < copy.size(); ++i) copy[i] = lockstep::round_to_tf32(p[i]);
  return copy;
}

}  // namespace

extern "C" cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         const float* B, int ldb, const float* beta, float* C, int ldc) {
  const char* call = "cublasSgemm";
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, call, "the handle is null");
  const bool valid_ops = (transa == CUBLAS_OP_N || transposes(transa)) && (transb == CUBLAS_OP_N || transposes(transb));
  if (!valid_ops) return report(CUBLAS_STATUS_INVALID_VALUE, call, "transa/transb must be N, T or C");
  if (m < 0 || n < 0 || k < 0) return report(CUBLAS_STATUS_INVALID_VALUE, call, "m, n and k must not be negative");
  const int a_rows = transposes(transa) ? k : m, a_cols = transposes(transa) ? m : k;
  const int b_rows = transposes(transb) ? n : k, b_cols = transposes(transb) ? k : n;
  if (lda < std::max(1, a_rows)) return report(CUBLAS_STATUS_INVALID_VALUE, call, "lda is smaller than op(A)'s rows");
  if (ldb < std::max(1, b_rows)) return report(CUBLAS_STATUS_INVALID_VALUE, call, "ldb is smaller than op(B)'s rows");
  if (ldc < std::max(1, m)) return report(CUBLAS_STATUS_INVALID_VALUE, call, "ldc is smaller than m");
  if (!alpha || !beta) return report(CUBLAS_STATUS_INVALID_VALUE, call, "alpha or beta is null");
  if (cublasStatus_t s = check_handle(handle, call)) return s;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;  // nothing to compute, as in cuBLAS

  // Host pointer mode (the default): the scalars are read now.
  const float a = *alpha, b = *beta;
  const bool reads_ab = a != 0.0f && k > 0;
  const int device = handle->device;
  if (reads_ab) {
    if (cublasStatus_t s = check_matrix(A, a_rows, a_cols, lda, device, "A")) return s;
    if (cublasStatus_t s = check_matrix(B, b_rows, b_cols, ldb, device, "B")) return s;
  }
  if (cublasStatus_t s = check_matrix(C, m, n, ldc, device, "C")) return s;

  // cuBLAS may use its workspace for any call: touching it makes a workspace
  // freed while the handle still holds it visible to ASan.
  auto* workspace = static_cast<unsigned char*>(handle->workspace);
  const size_t scribble = std::min<size_t>(handle->workspace_bytes, 256);
  const bool tf32 = tf32_operands(handle->math);
  auto work = [=] {
    if (scribble) std::memset(workspace, 0xA5, scribble);
    if (b == 0.0f) {
      // beta == 0: C is written, never read (NaN in C must not survive).
      for (int j = 0; j < n; ++j) std::fill(C + size_t(j) * ldc, C + size_t(j) * ldc + m, 0.0f);
    } else if (!reads_ab && b != 1.0f) {
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) C[size_t(j) * ldc + i] *= b;
    }
    if (reads_ab) {
      std::vector<float> a_tf32, b_tf32;
      const float *a_used = A, *b_used = B;
      if (tf32) {
        a_tf32 = tf32_copy(A, a_rows, a_cols, lda);
        b_tf32 = tf32_copy(B, b_rows, b_cols, ldb);
        a_used = a_tf32.data();
        b_used = b_tf32.data();
      }
      cblas_sgemm(CblasColMajor, transposes(transa) ? CblasTrans : CblasNoTrans,
                  transposes(transb) ? CblasTrans : CblasNoTrans, m, n, k, a, a_used, lda, b_used, ldb, b, C, ldc);
    }
  };
  cudaError_t e = lockstep::emu::enqueue(handle->stream, call, std::move(work));
  if (e != cudaSuccess) return report(CUBLAS_STATUS_EXECUTION_FAILED, call, cudaGetErrorName(e));
  return CUBLAS_STATUS_SUCCESS;
}
