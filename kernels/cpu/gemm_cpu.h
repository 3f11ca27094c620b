#pragma once
// Single-precision GEMM on the CPU pool: C[M, N] = alpha op(A) op(B) + beta C,
// row-major, op(X) = X or X^T. The larger of N and M is cut into contiguous
// blocks, one single-threaded OpenBLAS call per pool part. Each element of C
// is summed over the whole of K by one call, so thread counts change only how
// OpenBLAS rounds a block's edge (float rounding, not a different sum). From
// inside a parallel region it is one plain call.
#include <cstdint>

namespace lockstep::cpu {

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace lockstep::cpu
