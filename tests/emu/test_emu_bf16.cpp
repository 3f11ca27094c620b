// The emulated cuDNN and cuBLAS with bf16 data (CUDNN_DATA_BFLOAT16,
// CUDA_R_16BF) against naive loops: convolution in its three directions,
// NCHW and NHWC, pooling, and cublasGemmEx with a bf16 or a float C. The
// operands are small multiples of 1/8, exact in bf16, so every product and
// every FP32 sum here is exact whatever the order: the expected outputs are
// the exact sums rounded to bf16 by arithmetic (below), and must match bit
// for bit. The type combinations the real libraries refuse are refused.
// These prove the stand-ins, not cuDNN's or cuBLAS's own numerics.
#include <catch2/catch.hpp>
#include <cublas_v2.h>
#include <cudnn.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emu_runtime.h"  // lockstep_emu_interface exports emu/runtime

namespace {

const int kDevicesSet = (setenv("LOCKSTEP_EMU_DEVICES", "4", 0), 0);

// bf16 by arithmetic, independent of the stand-ins' bit twiddling: 8
// significant bits, round to nearest even (std::nearbyint in the default
// rounding mode). For the normal values the tests use.
float bf16_reference(double v) {
  if (v == 0.0) return 0.0f;
  int exponent = 0;
  const double mantissa = std::frexp(v, &exponent);  // [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(mantissa, 8)), exponent - 8));
}

// A bf16 value's bits: the high half of the float's (exact for bf16 values).
uint16_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  REQUIRE((u & 0xffffu) == 0);
  return uint16_t(u >> 16);
}
float value_of(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Multiples of 1/8 in [-1.5, 1.25]: exact in bf16, products exact in FP32.
std::vector<float> eighths(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int((i * 7 + size_t(seed) * 5) % 23) - 12) / 8.0f;
  return v;
}

struct Bf16Buffer {
  uint16_t* p = nullptr;
  size_t n = 0;
  explicit Bf16Buffer(const std::vector<float>& v) : n(v.size()) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), n * 2) == cudaSuccess);
    std::vector<uint16_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = bits_of(v[i]);
    REQUIRE(cudaMemcpy(p, b.data(), n * 2, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~Bf16Buffer() { cudaFree(p); }
  Bf16Buffer(const Bf16Buffer&) = delete;
  Bf16Buffer& operator=(const Bf16Buffer&) = delete;
  std::vector<float> download() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<uint16_t> b(n);
    REQUIRE(cudaMemcpy(b.data(), p, n * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = value_of(b[i]);
    return v;
  }
};

struct FloatBuffer {
  float* p = nullptr;
  size_t n = 0;
  explicit FloatBuffer(const std::vector<float>& v) : n(v.size()) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), n * 4) == cudaSuccess);
    REQUIRE(cudaMemcpy(p, v.data(), n * 4, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~FloatBuffer() { cudaFree(p); }
  FloatBuffer(const FloatBuffer&) = delete;
  FloatBuffer& operator=(const FloatBuffer&) = delete;
  std::vector<float> download() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<float> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

// Convolution problem; logical NCHW indices, stored as `nhwc` says.
struct Conv {
  int n = 2, c = 3, h = 7, w = 6, k = 5, r = 3, stride = 2, pad = 1;
  bool nhwc = false;
  int oh() const { return (h + 2 * pad - r) / stride + 1; }
  int ow() const { return (w + 2 * pad - r) / stride + 1; }
  size_t x_at(int in, int ic, int ih, int iw) const {
    return nhwc ? ((size_t(in) * h + ih) * w + iw) * c + ic : ((size_t(in) * c + ic) * h + ih) * w + iw;
  }
  size_t y_at(int in, int ik, int i, int j) const {
    return nhwc ? ((size_t(in) * oh() + i) * ow() + j) * k + ik : ((size_t(in) * k + ik) * oh() + i) * ow() + j;
  }
  size_t w_at(int ik, int ic, int ir, int is) const {
    return nhwc ? ((size_t(ik) * r + ir) * r + is) * c + ic : ((size_t(ik) * c + ic) * r + ir) * r + is;
  }
  template <typename F> void taps(F f) const {
    for (int in = 0; in < n; ++in)
      for (int ik = 0; ik < k; ++ik)
        for (int i = 0; i < oh(); ++i)
          for (int j = 0; j < ow(); ++j)
            for (int ic = 0; ic < c; ++ic)
              for (int ir = 0; ir < r; ++ir)
                for (int is = 0; is < r; ++is) {
                  const int ih = i * stride + ir - pad, iw = j * stride + is - pad;
                  if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                  f(x_at(in, ic, ih, iw), w_at(ik, ic, ir, is), y_at(in, ik, i, j));
                }
  }
};

struct CudnnConv {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  CudnnConv(const Conv& s, cudnnDataType_t data, cudnnDataType_t filter, cudnnDataType_t compute) {
    const cudnnTensorFormat_t f = s.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(x, f, data, s.n, s.c, s.h, s.w) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(y, f, data, s.n, s.k, s.oh(), s.ow()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetFilter4dDescriptor(w, filter, f, s.k, s.c, s.r, s.r) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                            compute) == CUDNN_STATUS_SUCCESS);
  }
  ~CudnnConv() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroy(handle);
  }
};

std::vector<float> to_bf16(const std::vector<double>& exact) {
  std::vector<float> v(exact.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = bf16_reference(exact[i]);
  return v;
}

}  // namespace

TEST_CASE("emulated cudnn: bf16 convolutions (PSEUDO_BFLOAT16_CONFIG) equal naive loops rounded once",
          "[emu][cudnn][bf16]") {
  for (bool nhwc : {false, true}) {
    INFO((nhwc ? "NHWC" : "NCHW"));
    Conv s;
    s.nhwc = nhwc;
    const size_t xn = size_t(s.n) * s.c * s.h * s.w, yn = size_t(s.n) * s.k * s.oh() * s.ow(),
                 wn = size_t(s.k) * s.c * s.r * s.r;
    const auto x = eighths(xn, 1), w = eighths(wn, 2), dy = eighths(yn, 3), old_dx = eighths(xn, 4);
    std::vector<double> y_exact(yn, 0.0), dx_exact(xn, 0.0), dw_exact(wn, 0.0);
    s.taps([&](size_t xi, size_t wi, size_t yi) {
      y_exact[yi] += double(x[xi]) * w[wi];
      dx_exact[xi] += double(dy[yi]) * w[wi];
      dw_exact[wi] += double(x[xi]) * dy[yi];
    });
    for (size_t i = 0; i < xn; ++i) dx_exact[i] += old_dx[i];  // beta = 1 blends onto dx
    // The sums need more than bf16's 8 bits: the rounding is exercised.
    size_t inexact = 0;
    for (double v : y_exact) inexact += double(bf16_reference(v)) != v;
    REQUIRE(inexact >= yn / 10);

    CudnnConv d(s, CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT);
    Bf16Buffer gx(x), gw(w), gdy(dy), gy(std::vector<float>(yn, 0.0f)), gdx(old_dx), gdw(std::vector<float>(wn, 0.0f));
    const float one = 1.0f, zero = 0.0f;
    size_t bytes = 0;
    REQUIRE(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                    &bytes) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, gx.p, d.w, gw.p, d.conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                    gy.p) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnConvolutionBackwardData(d.handle, &one, d.w, gw.p, d.y, gdy.p, d.conv,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &one, d.x,
                                         gdx.p) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, gx.p, d.y, gdy.p, d.conv,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &zero, d.w,
                                           gdw.p) == CUDNN_STATUS_SUCCESS);
    CHECK(gy.download() == to_bf16(y_exact));
    CHECK(gdx.download() == to_bf16(dx_exact));
    CHECK(gdw.download() == to_bf16(dw_exact));
  }
}

TEST_CASE("emulated cudnn: convolution type configurations cuDNN does not have are refused",
          "[emu][cudnn][bf16]") {
  Conv s;
  const size_t xn = size_t(s.n) * s.c * s.h * s.w, yn = size_t(s.n) * s.k * s.oh() * s.ow(),
               wn = size_t(s.k) * s.c * s.r * s.r;
  Bf16Buffer gx(eighths(xn, 1)), gdy(eighths(yn, 2));
  FloatBuffer gdw(std::vector<float>(wn, 0.0f));
  const float one = 1.0f, zero = 0.0f;
  SECTION("bf16 x and dy with a float dw (no such configuration)") {
    CudnnConv d(s, CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT);
    REQUIRE(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, gx.p, d.y, gdy.p, d.conv,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &zero, d.w,
                                           gdw.p) == CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
    int got = 0;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
    REQUIRE(cudnnGetConvolutionBackwardFilterAlgorithm_v7(d.handle, d.x, d.y, d.conv, d.w, 8, &got, perf) ==
            CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  }
  SECTION("bf16 data with a bf16 compute type (cuDNN computes bf16 in float only)") {
    CudnnConv d(s, CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16);
    Bf16Buffer gdw16(std::vector<float>(wn, 0.0f));
    REQUIRE(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, gx.p, d.y, gdy.p, d.conv,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &zero, d.w,
                                           gdw16.p) == CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  }
  SECTION("half data is not emulated") {
    CudnnConv d(s, CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT);
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv, d.y, 8, &got, perf) ==
            CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  }
}

TEST_CASE("emulated cudnn: bf16 max and average pooling equal naive loops rounded once", "[emu][cudnn][bf16]") {
  const int n = 2, c = 3, h = 7, w = 5, win = 3, stride = 2, pad = 1;
  const int oh = (h + 2 * pad - win) / stride + 1, ow = (w + 2 * pad - win) / stride + 1;
  const auto x = eighths(size_t(n) * c * h * w, 5), dy = eighths(size_t(n) * c * oh * ow, 6);
  std::vector<double> ymax(dy.size()), yavg(dy.size()), dxavg(x.size(), 0.0);
  for (int p = 0; p < n * c; ++p)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j) {
        double best = -1e30, sum = 0.0;
        const size_t yi = (size_t(p) * oh + i) * ow + j;
        for (int a = 0; a < win; ++a)
          for (int b = 0; b < win; ++b) {
            const int ih = i * stride + a - pad, iw = j * stride + b - pad;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const size_t xi = (size_t(p) * h + ih) * w + iw;
            best = std::max(best, double(x[xi]));
            sum += x[xi];
            dxavg[xi] += dy[yi] / double(win * win);
          }
        ymax[yi] = best;
        yavg[yi] = sum / (win * win);
      }
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnPoolingDescriptor_t pd = nullptr;
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateTensorDescriptor(&xd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateTensorDescriptor(&yd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreatePoolingDescriptor(&pd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, n, c, h, w) == 0);
  REQUIRE(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, n, c, oh, ow) == 0);
  const float one = 1.0f, zero = 0.0f;
  Bf16Buffer gx(x), gdy(dy), gy(std::vector<float>(dy.size(), 0.0f)), gdx(std::vector<float>(x.size(), 0.0f));

  REQUIRE(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN, win, win, pad, pad,
                                      stride, stride) == 0);
  REQUIRE(cudnnPoolingForward(handle, pd, &one, xd, gx.p, &zero, yd, gy.p) == CUDNN_STATUS_SUCCESS);
  CHECK(gy.download() == to_bf16(ymax));  // exact: a max of bf16 values

  REQUIRE(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_PROPAGATE_NAN, win, win,
                                      pad, pad, stride, stride) == 0);
  REQUIRE(cudnnPoolingForward(handle, pd, &one, xd, gx.p, &zero, yd, gy.p) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnPoolingBackward(handle, pd, &one, yd, gy.p, yd, gdy.p, xd, gx.p, &zero, xd, gdx.p) ==
          CUDNN_STATUS_SUCCESS);
  // A ninth is not exact in FP32: the average is within half a bf16 ulp of the
  // exact one plus FP32's error, i.e. equal to it rounded, or one bf16 ulp off.
  auto within_ulp = [](const std::vector<float>& got, const std::vector<double>& exact) {
    for (size_t i = 0; i < got.size(); ++i) {
      const double ulp = exact[i] == 0.0 ? 1e-6 : std::ldexp(1.0, std::ilogb(exact[i]) - 7);
      if (std::fabs(got[i] - exact[i]) > ulp) return false;
    }
    return true;
  };
  CHECK(within_ulp(gy.download(), yavg));
  CHECK(within_ulp(gdx.download(), dxavg));

  // x and y of different types: no such configuration.
  cudnnTensorDescriptor_t yf = nullptr;
  REQUIRE(cudnnCreateTensorDescriptor(&yf) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetTensor4dDescriptor(yf, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, oh, ow) == 0);
  FloatBuffer gyf(std::vector<float>(dy.size(), 0.0f));
  CHECK(cudnnPoolingForward(handle, pd, &one, xd, gx.p, &zero, yf, gyf.p) == CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  cudnnDestroyTensorDescriptor(yf);
  cudnnDestroyPoolingDescriptor(pd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroy(handle);
}

TEST_CASE("emulated cublas: GemmEx with bf16 A and B, a bf16 or float C, equals naive loops",
          "[emu][cublas][bf16]") {
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  const int m = 5, n = 4, k = 9;
  for (auto ta : {CUBLAS_OP_N, CUBLAS_OP_T})
    for (auto tb : {CUBLAS_OP_N, CUBLAS_OP_T})
      for (float beta : {0.0f, 1.0f}) {
        INFO("transa " << ta << " transb " << tb << " beta " << beta);
        const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
        const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
        const int lda = a_rows + 1, ldb = b_rows + 2, ldc = m + 1;
        const auto a = eighths(size_t(lda) * a_cols, 7), b = eighths(size_t(ldb) * b_cols, 8);
        const auto c = eighths(size_t(ldc) * n, 9);
        auto opa = [&](int i, int l) { return ta == CUBLAS_OP_N ? a[size_t(l) * lda + i] : a[size_t(i) * lda + l]; };
        auto opb = [&](int l, int j) { return tb == CUBLAS_OP_N ? b[size_t(j) * ldb + l] : b[size_t(l) * ldb + j]; };
        std::vector<double> exact(c.begin(), c.end());  // the padding rows of C stay as they are
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < m; ++i) {
            double sum = 0.0;
            for (int l = 0; l < k; ++l) sum += double(opa(i, l)) * opb(l, j);
            exact[size_t(j) * ldc + i] = sum + beta * c[size_t(j) * ldc + i];
          }
        Bf16Buffer ga(a), gb(b), gc16(c);
        FloatBuffer gc32(c);
        const float one = 1.0f;
        REQUIRE(cublasGemmEx(handle, ta, tb, m, n, k, &one, ga.p, CUDA_R_16BF, lda, gb.p, CUDA_R_16BF, ldb, &beta,
                             gc16.p, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
                CUBLAS_STATUS_SUCCESS);
        REQUIRE(cublasGemmEx(handle, ta, tb, m, n, k, &one, ga.p, CUDA_R_16BF, lda, gb.p, CUDA_R_16BF, ldb, &beta,
                             gc32.p, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) ==
                CUBLAS_STATUS_SUCCESS);
        CHECK(gc16.download() == to_bf16(exact));
        const std::vector<float> want32(exact.begin(), exact.end());  // exact in FP32
        CHECK(gc32.download() == want32);
      }
  cublasDestroy(handle);
}

TEST_CASE("emulated cublas: GemmEx type combinations cuBLAS does not have are refused", "[emu][cublas][bf16]") {
  cublasHandle_t handle = nullptr;
  REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  Bf16Buffer a16(eighths(16, 1));
  FloatBuffer a32(eighths(16, 2)), c32(eighths(16, 3));
  Bf16Buffer c16(eighths(16, 4));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&](const void* a, cudaDataType at, const void* b, cudaDataType bt, void* c, cudaDataType ct,
                  cublasComputeType_t compute) {
    return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, at, 4, b, bt, 4, &zero, c, ct, 4,
                        compute, CUBLAS_GEMM_DEFAULT);
  };
  // bf16 A with float B: A and B share a type in every row of cuBLAS's table.
  CHECK(gemm(a16.p, CUDA_R_16BF, a32.p, CUDA_R_32F, c32.p, CUDA_R_32F, CUBLAS_COMPUTE_32F) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  // float A and B with a bf16 C.
  CHECK(gemm(a32.p, CUDA_R_32F, a32.p, CUDA_R_32F, c16.p, CUDA_R_16BF, CUBLAS_COMPUTE_32F) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  // A compute type other than CUBLAS_COMPUTE_32F is not emulated.
  CHECK(gemm(a16.p, CUDA_R_16BF, a16.p, CUDA_R_16BF, c16.p, CUDA_R_16BF, CUBLAS_COMPUTE_32F_FAST_16BF) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  // The supported ones run.
  CHECK(gemm(a32.p, CUDA_R_32F, a32.p, CUDA_R_32F, c32.p, CUDA_R_32F, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_SUCCESS);
  CHECK(gemm(a16.p, CUDA_R_16BF, a16.p, CUDA_R_16BF, c32.p, CUDA_R_32F, CUBLAS_COMPUTE_32F) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cublasDestroy(handle);
}
