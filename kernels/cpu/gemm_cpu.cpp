#include "kernels/cpu/gemm_cpu.h"

#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

namespace {
int blas_int(int64_t v) { return static_cast<int>(v); }

// Below about this many multiply-adds a part costs more to hand out than it saves.
constexpr int64_t min_part_flops = int64_t(1) << 18;

void call(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(m),
              blas_int(n), blas_int(k), alpha, a, blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
}
}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (in_parallel_region()) return call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const bool split_columns = n >= m;
  const int64_t split = split_columns ? n : m, other = split_columns ? m : n;
  const int64_t min_per_part = std::max<int64_t>(8, min_part_flops / std::max<int64_t>(1, other * k));
  parallel_for(split, min_per_part, [&](int64_t begin, int64_t end, int) {
    if (split_columns) {
      // Columns [begin, end) of C come from the same columns of op(B).
      const float* b_part = trans_b ? b + begin * ldb : b + begin;
      call(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_part, ldb, beta, c + begin, ldc);
    } else {
      // Rows [begin, end) of C come from the same rows of op(A).
      const float* a_part = trans_a ? a + begin : a + begin * lda;
      call(trans_a, trans_b, end - begin, n, k, alpha, a_part, lda, b, ldb, beta, c + begin * ldc, ldc);
    }
  });
}

}  // namespace lockstep::cpu
