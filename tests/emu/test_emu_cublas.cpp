// The emulated cublasSgemm against naive column-major loops for every
// transpose combination and leading dimensions larger than the rows, with
// alpha/beta; and the errors cuBLAS documents (or a GPU would fault with).
// This proves the stand-in, not cuBLAS's own numerics.
#include <catch2/catch.hpp>
#include <cublas_v2.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "emu_runtime.h"  // lockstep_emu_interface exports emu/runtime

namespace {

const int kDevicesSet = (setenv("LOCKSTEP_EMU_DEVICES", "4", 0), 0);

struct DeviceBuffer {
  float* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(const std::vector<float>& v) : n(v.size()) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMemcpy(p, v.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<float> download() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<float> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float((i * 29 + seed * 13) % 19) / 5.0f - 1.7f;
  return v;
}

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS); }
  ~Handle() { cublasDestroy(h); }
};

}  // namespace

TEST_CASE("emulated cublas: sgemm equals naive loops for every transpose pair and lda > rows", "[emu][cublas]") {
  Handle handle;
  const int m = 5, n = 4, k = 3;
  for (auto ta : {CUBLAS_OP_N, CUBLAS_OP_T})
    for (auto tb : {CUBLAS_OP_N, CUBLAS_OP_T})
      for (float beta : {0.0f, 0.5f}) {
        INFO("transa " << ta << " transb " << tb << " beta " << beta);
        // op(A) is m x k, op(B) is k x n; stored column-major with padding rows.
        const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
        const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
        const int lda = a_rows + 2, ldb = b_rows + 1, ldc = m + 3;
        auto a = values(size_t(lda) * a_cols, 1), b = values(size_t(ldb) * b_cols, 2);
        auto c = values(size_t(ldc) * n, 3);
        if (beta == 0.0f)
          for (float& v : c) v = std::numeric_limits<float>::quiet_NaN();  // must not leak in
        auto opa = [&](int i, int l) { return ta == CUBLAS_OP_N ? a[size_t(l) * lda + i] : a[size_t(i) * lda + l]; };
        auto opb = [&](int l, int j) { return tb == CUBLAS_OP_N ? b[size_t(j) * ldb + l] : b[size_t(l) * ldb + j]; };
        const float alpha = 1.5f;
        std::vector<float> want = c;
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < m; ++i) {
            float sum = 0.0f;
            for (int l = 0; l < k; ++l) sum += opa(i, l) * opb(l, j);
            float& out = want[size_t(j) * ldc + i];
            out = alpha * sum + (beta == 0.0f ? 0.0f : beta * out);
          }
        DeviceBuffer ga(a), gb(b), gc(c);
        REQUIRE(cublasSgemm(handle.h, ta, tb, m, n, k, &alpha, ga.p, lda, gb.p, ldb, &beta, gc.p, ldc) ==
                CUBLAS_STATUS_SUCCESS);
        auto got = gc.download();
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < ldc; ++i) {
            size_t at = size_t(j) * ldc + i;
            if (i < m) {
              REQUIRE(got[at] == Approx(want[at]).epsilon(1e-5));
            } else {
              // Rows past m are not C's: untouched, NaN included.
              REQUIRE((std::isnan(c[at]) ? std::isnan(got[at]) : got[at] == c[at]));
            }
          }
      }
}

TEST_CASE("emulated cublas: k = 0 scales C by beta, m = 0 does nothing", "[emu][cublas]") {
  Handle handle;
  std::vector<float> c = {1, 2, 3, 4};
  DeviceBuffer gc(c), dummy(std::vector<float>(1, 0.0f));
  const float alpha = 1.0f, beta = 2.0f;
  REQUIRE(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 0, &alpha, dummy.p, 2, dummy.p, 1, &beta, gc.p, 2) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(gc.download() == std::vector<float>{2, 4, 6, 8});
  REQUIRE(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 2, &alpha, nullptr, 1, nullptr, 2, &beta, nullptr, 1) ==
          CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("emulated cublas: invalid arguments, host pointers and another device's handle", "[emu][cublas]") {
  Handle handle;
  const float one = 1.0f;
  DeviceBuffer a(values(16, 1)), c(values(16, 2));
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 1, 1, &one, nullptr, 1, nullptr, 1, &one, nullptr, 1) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 3, a.p, 4, &one, c.p, 4) ==
        CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 2, &one, a.p, 1, a.p, 2, &one, c.p, 4) ==
        CUBLAS_STATUS_INVALID_VALUE);  // lda < k for op T
  CHECK(cublasSgemm(handle.h, cublasOperation_t(9), CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, a.p, 4, &one, c.p, 4) ==
        CUBLAS_STATUS_INVALID_VALUE);
  std::vector<float> host(16);
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, host.data(), 4, a.p, 4, &one, c.p, 4) ==
        CUBLAS_STATUS_MAPPING_ERROR);
  // A matrix that runs past its allocation (ldc 5 over 16 floats).
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, a.p, 4, &one, c.p, 5) ==
        CUBLAS_STATUS_MAPPING_ERROR);
  CHECK(cublasSetMathMode(handle.h, cublasMath_t(1234)) == CUBLAS_STATUS_INVALID_VALUE);
  REQUIRE(cublasSetMathMode(handle.h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
  cublasMath_t mode;
  REQUIRE(cublasGetMathMode(handle.h, &mode) == CUBLAS_STATUS_SUCCESS);
  CHECK(mode == CUBLAS_TF32_TENSOR_OP_MATH);
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE)) == "CUBLAS_STATUS_INVALID_VALUE");
  // A workspace must be device memory, 256-byte aligned.
  CHECK(cublasSetWorkspace(handle.h, host.data(), 64) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSetWorkspace(handle.h, reinterpret_cast<char*>(a.p) + 4, 32) == CUBLAS_STATUS_INVALID_VALUE);
  REQUIRE(cublasSetWorkspace(handle.h, a.p, 64) == CUBLAS_STATUS_SUCCESS);
  cudaStream_t stream = nullptr, got = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  REQUIRE(cublasSetStream(handle.h, stream) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasGetStream(handle.h, &got) == CUBLAS_STATUS_SUCCESS);
  CHECK(got == stream);
  REQUIRE(cublasSetStream(handle.h, nullptr) == CUBLAS_STATUS_SUCCESS);
  cudaStreamDestroy(stream);

  if (lockstep::emu::device_count() < 2) {
    WARN("the other-device case needs 2 emulated devices (LOCKSTEP_EMU_DEVICES); skipped");
    return;
  }
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, a.p, 4, &one, c.p, 4) ==
        CUBLAS_STATUS_NOT_INITIALIZED);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  DeviceBuffer* other = nullptr;
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  other = new DeviceBuffer(values(16, 3));
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(cublasSgemm(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, a.p, 4, &one, other->p, 4) ==
        CUBLAS_STATUS_MAPPING_ERROR);
  delete other;
}
