// cublasSgemm and cublasGemmEx on the stream's worker through OpenBLAS:
// cuBLAS is column-major, so CblasColMajor with the same arguments computes
// exactly what it computes. Arguments are checked as cuBLAS documents
// (INVALID_VALUE), and every matrix must be device memory of the handle's
// device (MAPPING_ERROR otherwise, where a GPU would fault). In
// CUBLAS_TF32_TENSOR_OP_MATH, float A and B are rounded to TF32 first
// (kernels/tf32_math.h), as tensor cores take them.
//
// cublasGemmEx computes the type combinations lockstep uses, all with
// CUBLAS_COMPUTE_32F and float alpha/beta: float A, B, C (what cublasSgemm
// computes), and bf16 A and B (CUDA_R_16BF) with a bf16 or a float C, rows
// of the cuBLAS guide's cublasGemmEx table of supported combinations. bf16
// elements are widened exactly, the product is cblas_sgemm's in FP32 (the
// same summation as the float case), and a bf16 C is rounded to nearest even
// once, after alpha * AB + beta * C. Every other combination is
// CUBLAS_STATUS_NOT_SUPPORTED: those cuBLAS refuses (mixed A and B types, a
// bf16 C from float A and B, a bf16 compute type), and those it supports but
// the stand-in does not compute (half, double, integer, complex), so the
// emulator never accepts a call a GPU would refuse.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "emu/cublas/internal.h"
#include "emu/runtime/emu_runtime.h"
#include "kernels/bf16_math.h"
#include "kernels/tf32_math.h"

using namespace lockstep::emu::cublas;

namespace {

bool transposes(cublasOperation_t op) { return op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

size_t element_bytes(cudaDataType t) { return t == CUDA_R_16BF ? 2 : sizeof(float); }

// Elements a column-major rows x cols matrix with leading dimension ld spans.
size_t span_elements(int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return 0;
  return size_t(ld) * size_t(cols - 1) + size_t(rows);
}

cublasStatus_t check_matrix(const char* call, const void* p, cudaDataType type, int rows, int cols, int ld,
                            int device, const char* what) {
  const size_t bytes = span_elements(rows, cols, ld) * element_bytes(type);
  if (bytes == 0) return CUBLAS_STATUS_SUCCESS;
  if (!lockstep::emu::is_device_range(p, bytes, device)) {
    std::string why = std::string(what) + " (" + std::to_string(rows) + "x" + std::to_string(cols) + ", ld " +
                      std::to_string(ld) + ") is not inside device memory of device " + std::to_string(device);
    return report(CUBLAS_STATUS_MAPPING_ERROR, call, why.c_str());
  }
  if (reinterpret_cast<uintptr_t>(p) % element_bytes(type) != 0) {
    std::string why = std::string(what) + " is not aligned to its elements";
    return report(CUBLAS_STATUS_INVALID_VALUE, call, why.c_str());
  }
  return CUBLAS_STATUS_SUCCESS;
}

bool tf32_operands(cublasMath_t math) {
  return (math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) == CUBLAS_TF32_TENSOR_OP_MATH;
}

// A float copy of the span a column-major matrix covers (the gaps between
// columns too: they are never read): float values rounded to TF32 when
// `tf32`, bf16 values widened exactly.
std::vector<float> float_copy(const void* p, cudaDataType type, int rows, int cols, int ld, bool tf32) {
  std::vector<float> copy(span_elements(rows, cols, ld));
  if (type == CUDA_R_16BF) {
    auto* b = static_cast<const lockstep::bf16_bits*>(p);
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = lockstep::bf16_to_float(b[i]);
  } else {
    auto* f = static_cast<const float*>(p);
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = tf32 ? lockstep::round_to_tf32(f[i]) : f[i];
  }
  return copy;
}

struct Operand {
  const void* p;
  cudaDataType type;
  int ld;
};

// C = alpha op(A) op(B) + beta C, every type already checked to be one the
// stand-in computes.
cublasStatus_t gemm(const char* call, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, int k, const float* alpha, Operand A, Operand B, const float* beta, void* C,
                    cudaDataType c_type, int ldc) {
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, call, "the handle is null");
  const bool valid_ops = (transa == CUBLAS_OP_N || transposes(transa)) && (transb == CUBLAS_OP_N || transposes(transb));
  if (!valid_ops) return report(CUBLAS_STATUS_INVALID_VALUE, call, "transa/transb must be N, T or C");
  if (m < 0 || n < 0 || k < 0) return report(CUBLAS_STATUS_INVALID_VALUE, call, "m, n and k must not be negative");
  const int a_rows = transposes(transa) ? k : m, a_cols = transposes(transa) ? m : k;
  const int b_rows = transposes(transb) ? n : k, b_cols = transposes(transb) ? k : n;
  const int lda = A.ld, ldb = B.ld;
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
    if (cublasStatus_t s = check_matrix(call, A.p, A.type, a_rows, a_cols, lda, device, "A")) return s;
    if (cublasStatus_t s = check_matrix(call, B.p, B.type, b_rows, b_cols, ldb, device, "B")) return s;
  }
  if (cublasStatus_t s = check_matrix(call, C, c_type, m, n, ldc, device, "C")) return s;

  // cuBLAS may use its workspace for any call: touching it makes a workspace
  // freed while the handle still holds it visible to ASan.
  auto* workspace = static_cast<unsigned char*>(handle->workspace);
  const size_t scribble = std::min<size_t>(handle->workspace_bytes, 256);
  const bool tf32 = tf32_operands(handle->math);
  auto work = [=] {
    if (scribble) std::memset(workspace, 0xA5, scribble);
    // A bf16 C is computed in a float copy and rounded back once at the end.
    std::vector<float> c_copy;
    float* c = static_cast<float*>(C);
    if (c_type == CUDA_R_16BF) {
      c_copy.assign(span_elements(m, n, ldc), 0.0f);
      if (b != 0.0f) c_copy = float_copy(C, c_type, m, n, ldc, false);
      c = c_copy.data();
    }
    if (b == 0.0f) {
      // beta == 0: C is written, never read (NaN in C must not survive).
      for (int j = 0; j < n; ++j) std::fill(c + size_t(j) * ldc, c + size_t(j) * ldc + m, 0.0f);
    } else if (!reads_ab && b != 1.0f) {
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) c[size_t(j) * ldc + i] *= b;
    }
    if (reads_ab) {
      std::vector<float> a_copy, b_copy;
      const float *a_used = static_cast<const float*>(A.p), *b_used = static_cast<const float*>(B.p);
      if (tf32 || A.type == CUDA_R_16BF) {
        a_copy = float_copy(A.p, A.type, a_rows, a_cols, lda, tf32);
        b_copy = float_copy(B.p, B.type, b_rows, b_cols, ldb, tf32);
        a_used = a_copy.data();
        b_used = b_copy.data();
      }
      cblas_sgemm(CblasColMajor, transposes(transa) ? CblasTrans : CblasNoTrans,
                  transposes(transb) ? CblasTrans : CblasNoTrans, m, n, k, a, a_used, lda, b_used, ldb, b, c, ldc);
    }
    if (c_type == CUDA_R_16BF) {
      auto* out = static_cast<lockstep::bf16_bits*>(C);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) out[size_t(j) * ldc + i] = lockstep::float_to_bf16(c[size_t(j) * ldc + i]);
    }
  };
  cudaError_t e = lockstep::emu::enqueue(handle->stream, call, std::move(work));
  if (e != cudaSuccess) return report(CUBLAS_STATUS_EXECUTION_FAILED, call, cudaGetErrorName(e));
  return CUBLAS_STATUS_SUCCESS;
}

// The combinations described at the top of the file; NOT_SUPPORTED names the rest.
cublasStatus_t check_types(const char* call, cudaDataType a, cudaDataType b, cudaDataType c,
                           cublasComputeType_t compute) {
  if (compute != CUBLAS_COMPUTE_32F)
    return report(CUBLAS_STATUS_NOT_SUPPORTED, call,
                  "only CUBLAS_COMPUTE_32F is emulated (FP32 accumulation, float alpha and beta)");
  if (a != b) return report(CUBLAS_STATUS_NOT_SUPPORTED, call, "A and B of different types (cuBLAS has no such row)");
  if (a == CUDA_R_32F && c == CUDA_R_32F) return CUBLAS_STATUS_SUCCESS;
  if (a == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) return CUBLAS_STATUS_SUCCESS;
  if (a == CUDA_R_32F)
    return report(CUBLAS_STATUS_NOT_SUPPORTED, call, "float A and B take a float C only (cuBLAS has no other row)");
  return report(CUBLAS_STATUS_NOT_SUPPORTED, call,
                "types not emulated (float A, B, C; bf16 A, B with a bf16 or float C are)");
}

}  // namespace

extern "C" cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         const float* B, int ldb, const float* beta, float* C, int ldc) {
  return gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, {A, CUDA_R_32F, lda}, {B, CUDA_R_32F, ldb},
              beta, C, CUDA_R_32F, ldc);
}

extern "C" cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                       int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                       int lda, const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
                                       cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                       cublasGemmAlgo_t algo) {
  const char* call = "cublasGemmEx";
  if (!handle) return report(CUBLAS_STATUS_NOT_INITIALIZED, call, "the handle is null");
  if (cublasStatus_t s = check_types(call, Atype, Btype, Ctype, computeType)) return s;
  // The algorithm is a hint cuBLAS may ignore (deprecated since Ampere); the
  // value must still be one of the enum's.
  const bool known_algo = (algo >= CUBLAS_GEMM_DEFAULT && algo <= CUBLAS_GEMM_ALGO23) ||
                          (algo >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && algo <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
  if (!known_algo) return report(CUBLAS_STATUS_INVALID_VALUE, call, "unknown cublasGemmAlgo_t");
  return gemm(call, handle, transa, transb, m, n, k, static_cast<const float*>(alpha), {A, Atype, lda},
              {B, Btype, ldb}, static_cast<const float*>(beta), C, Ctype, ldc);
}
