// The emulated cuDNN against naive loops: convolution in its three directions
// and pooling, on padded, strided, odd shapes and non-packed descriptors, with
// alpha/beta blending; and the errors the real library gives (or should):
// short workspace, unsupported descriptors, mismatched shapes, a handle of
// another device, host pointers. These prove the stand-in, not cuDNN's own
// numerics or algorithm choice.
#include <catch2/catch.hpp>
#include <cudnn.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "emu_runtime.h"  // lockstep_emu_interface exports emu/runtime

namespace {

// Four emulated devices (the NCCL tests use up to 4), unless the run sets a count.
const int kDevicesSet = (setenv("LOCKSTEP_EMU_DEVICES", "4", 0), 0);

struct DeviceBuffer {
  float* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count, float fill = 0.0f) : n(count) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)) == cudaSuccess);
    upload(std::vector<float>(n, fill));
  }
  explicit DeviceBuffer(const std::vector<float>& v) : DeviceBuffer(v.size()) { upload(v); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<float>& v) {
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  std::vector<float> download() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<float> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

std::vector<float> values(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(((i * 37 + seed * 11) % 23)) / 7.0f - 1.5f;
  return v;
}

// TF32 by arithmetic, independent of the stand-in's bit twiddling: 11
// significant bits (10 stored), round to nearest even (std::nearbyint in the
// default rounding mode). For the normal values the tests use.
float tf32_reference(float v) {
  int exponent = 0;
  const double mantissa = std::frexp(static_cast<double>(v), &exponent);  // [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11));
}

void require_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(1e-4).epsilon(1e-4));
  }
}

struct Shape {
  int n, c, h, w, k, kernel, stride, pad;
  int oh() const { return (h + 2 * pad - kernel) / stride + 1; }
  int ow() const { return (w + 2 * pad - kernel) / stride + 1; }
  size_t x_count() const { return size_t(n) * c * h * w; }
  size_t y_count() const { return size_t(n) * k * oh() * ow(); }
  size_t w_count() const { return size_t(k) * c * kernel * kernel; }
};

// Naive loops over packed NCHW: x[n][c][h][w], w[k][c][r][s], y[n][k][i][j].
template <typename F> void taps(const Shape& s, F f) {
  for (int n = 0; n < s.n; ++n)
    for (int k = 0; k < s.k; ++k)
      for (int i = 0; i < s.oh(); ++i)
        for (int j = 0; j < s.ow(); ++j)
          for (int c = 0; c < s.c; ++c)
            for (int r = 0; r < s.kernel; ++r)
              for (int q = 0; q < s.kernel; ++q) {
                int h = i * s.stride + r - s.pad, w = j * s.stride + q - s.pad;
                if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
                f(((size_t(n) * s.c + c) * s.h + h) * s.w + w, ((size_t(k) * s.c + c) * s.kernel + r) * s.kernel + q,
                  ((size_t(n) * s.k + k) * s.oh() + i) * s.ow() + j);
              }
}

struct Cudnn {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit Cudnn(const Shape& s) {
    REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w) == 0);
    REQUIRE(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.k, s.oh(), s.ow()) == 0);
    REQUIRE(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.k, s.c, s.kernel, s.kernel) == 0);
    REQUIRE(cudnnSetConvolution2dDescriptor(conv, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) == 0);
    // The naive loops compute plain FP32: FMA math. (The default math lets
    // the stand-in round its operands to TF32, as cuDNN may from Ampere on;
    // the TF32 case below checks that.)
    REQUIRE(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS);
  }
  ~Cudnn() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroy(handle);
  }
};

const Shape kOdd{2, 3, 7, 5, 4, 3, 2, 1};  // odd extents, stride 2, padding 1

std::string last_error() {
  char text[512] = {};
  cudnnGetLastErrorString(text, sizeof text);
  return text;
}

bool category(cudnnStatus_t s, cudnnStatus_t expected) { return CUDNN_STATUS_CATEGORY(s) == expected; }

}  // namespace

TEST_CASE("emulated cudnn: forward convolution equals naive loops for each emulated algorithm", "[emu][cudnn]") {
  for (Shape s : {kOdd, Shape{1, 2, 4, 4, 3, 1, 1, 0}, Shape{3, 1, 6, 9, 2, 4, 3, 2}}) {
    Cudnn d(s);
    auto x = values(s.x_count(), 1), w = values(s.w_count(), 2);
    std::vector<float> want(s.y_count(), 0.0f);
    taps(s, [&](size_t xi, size_t wi, size_t yi) { want[yi] += x[xi] * w[wi]; });
    for (auto algo : {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM}) {
      size_t bytes = 1;
      REQUIRE(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, algo, &bytes) == 0);
      CHECK((algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM ? bytes > 0 : bytes == 0));
      DeviceBuffer dx(x), dw(w), dy(s.y_count(), 9.0f), ws(bytes / 4 + 1);
      const float one = 1.0f, zero = 0.0f;
      REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, dx.p, d.w, dw.p, d.conv, algo, ws.p, bytes, &zero, d.y,
                                      dy.p) == CUDNN_STATUS_SUCCESS);
      require_close(dy.download(), want);
    }
  }
}

TEST_CASE("emulated cudnn: the default math computes on TF32-rounded operands, FMA math on FP32 ones",
          "[emu][cudnn]") {
  const Shape s = kOdd;
  Cudnn d(s);
  auto x = values(s.x_count(), 11), w = values(s.w_count(), 12);
  std::vector<float> fp32(s.y_count(), 0.0f), tf32(s.y_count(), 0.0f);
  taps(s, [&](size_t xi, size_t wi, size_t yi) {
    fp32[yi] += x[xi] * w[wi];
    tf32[yi] += tf32_reference(x[xi]) * tf32_reference(w[wi]);
  });
  auto run = [&](cudnnMathType_t math) {
    REQUIRE(cudnnSetConvolutionMathType(d.conv, math) == CUDNN_STATUS_SUCCESS);
    DeviceBuffer dx(x), dw(w), dy(s.y_count(), 0.0f);
    const float one = 1.0f, zero = 0.0f;
    REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, dx.p, d.w, dw.p, d.conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                    dy.p) == CUDNN_STATUS_SUCCESS);
    return dy.download();
  };
  const std::vector<float> by_default = run(CUDNN_DEFAULT_MATH), by_fma = run(CUDNN_FMA_MATH);
  require_close(by_default, tf32);
  require_close(by_fma, fp32);
  // The two differ by about TF32's precision (10 mantissa bits), far above the comparison's 1e-4.
  double largest = 0.0;
  for (size_t i = 0; i < fp32.size(); ++i) largest = std::max(largest, std::abs(double(by_default[i]) - by_fma[i]));
  CHECK(largest > 1e-3);
}

TEST_CASE("emulated cudnn: backward data and filter equal naive loops, beta accumulates", "[emu][cudnn]") {
  const Shape s = kOdd;
  Cudnn d(s);
  auto x = values(s.x_count(), 3), w = values(s.w_count(), 4), dy = values(s.y_count(), 5);
  auto prior_dx = values(s.x_count(), 6), prior_dw = values(s.w_count(), 7);
  const float alpha = 0.5f, beta = 2.0f;
  std::vector<float> want_dx(s.x_count(), 0.0f), want_dw(s.w_count(), 0.0f);
  taps(s, [&](size_t xi, size_t wi, size_t yi) {
    want_dx[xi] += dy[yi] * w[wi];
    want_dw[wi] += dy[yi] * x[xi];
  });
  for (size_t i = 0; i < want_dx.size(); ++i) want_dx[i] = alpha * want_dx[i] + beta * prior_dx[i];
  for (size_t i = 0; i < want_dw.size(); ++i) want_dw[i] = alpha * want_dw[i] + beta * prior_dw[i];
  DeviceBuffer gx(x), gw(w), gdy(dy);
  for (auto algo : {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1}) {
    size_t bytes = 0;
    REQUIRE(cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle, d.w, d.y, d.conv, d.x, algo, &bytes) == 0);
    DeviceBuffer gdx(prior_dx), ws(bytes / 4 + 1);
    REQUIRE(cudnnConvolutionBackwardData(d.handle, &alpha, d.w, gw.p, d.y, gdy.p, d.conv, algo, ws.p, bytes, &beta,
                                         d.x, gdx.p) == CUDNN_STATUS_SUCCESS);
    require_close(gdx.download(), want_dx);
  }
  for (auto algo : {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1}) {
    size_t bytes = 0;
    REQUIRE(cudnnGetConvolutionBackwardFilterWorkspaceSize(d.handle, d.x, d.y, d.conv, d.w, algo, &bytes) == 0);
    DeviceBuffer gdw(prior_dw), ws(bytes / 4 + 1);
    REQUIRE(cudnnConvolutionBackwardFilter(d.handle, &alpha, d.x, gx.p, d.y, gdy.p, d.conv, algo, ws.p, bytes, &beta,
                                           d.w, gdw.p) == CUDNN_STATUS_SUCCESS);
    require_close(gdw.download(), want_dw);
  }
}

// Packed [a, b, h, w] values moved to [a, h, w, b] (channels last), or back.
std::vector<float> channels_last(const std::vector<float>& v, int a, int b, int h, int w, bool back = false) {
  std::vector<float> out(v.size());
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < b; ++j)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const size_t planar = ((size_t(i) * b + j) * h + y) * w + x, last = ((size_t(i) * h + y) * w + x) * b + j;
          if (back) out[planar] = v[last];
          else out[last] = v[planar];
        }
  return out;
}

TEST_CASE("emulated cudnn: NHWC tensors with an NHWC (KRSC) filter, all three directions", "[emu][cudnn]") {
  const Shape s = kOdd;
  Cudnn d(s);
  // Every descriptor channels last: x and y NHWC, the filter [K, R, S, C].
  REQUIRE(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w) == 0);
  REQUIRE(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, s.n, s.k, s.oh(), s.ow()) == 0);
  REQUIRE(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, s.k, s.c, s.kernel, s.kernel) == 0);
  auto x = values(s.x_count(), 1), w = values(s.w_count(), 2), dy = values(s.y_count(), 3);
  std::vector<float> want_y(s.y_count(), 0.0f), want_dx(s.x_count(), 0.0f), want_dw(s.w_count(), 0.0f);
  taps(s, [&](size_t xi, size_t wi, size_t yi) {
    want_y[yi] += x[xi] * w[wi];
    want_dx[xi] += dy[yi] * w[wi];
    want_dw[wi] += dy[yi] * x[xi];
  });
  DeviceBuffer gx(channels_last(x, s.n, s.c, s.h, s.w)), gw(channels_last(w, s.k, s.c, s.kernel, s.kernel)),
      gdy(channels_last(dy, s.n, s.k, s.oh(), s.ow())), gy(s.y_count()), gdx(s.x_count()), gdw(s.w_count());
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, gx.p, d.w, gw.p, d.conv,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                  gy.p) == CUDNN_STATUS_SUCCESS);
  require_close(channels_last(gy.download(), s.n, s.k, s.oh(), s.ow(), true), want_y);
  size_t data_bytes = 0, filter_bytes = 0;
  REQUIRE(cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle, d.w, d.y, d.conv, d.x,
                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &data_bytes) == 0);
  REQUIRE(cudnnGetConvolutionBackwardFilterWorkspaceSize(d.handle, d.x, d.y, d.conv, d.w,
                                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, &filter_bytes) == 0);
  DeviceBuffer data_ws(data_bytes / 4 + 1), filter_ws(filter_bytes / 4 + 1);
  REQUIRE(cudnnConvolutionBackwardData(d.handle, &one, d.w, gw.p, d.y, gdy.p, d.conv,
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, data_ws.p, data_bytes, &zero, d.x,
                                       gdx.p) == CUDNN_STATUS_SUCCESS);
  require_close(channels_last(gdx.download(), s.n, s.c, s.h, s.w, true), want_dx);
  REQUIRE(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, gx.p, d.y, gdy.p, d.conv,
                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, filter_ws.p, filter_bytes, &zero, d.w,
                                         gdw.p) == CUDNN_STATUS_SUCCESS);
  require_close(channels_last(gdw.download(), s.k, s.c, s.kernel, s.kernel, true), want_dw);
  // The KRSC filter read as KCRS is another filter: the result differs.
  cudnnFilterDescriptor_t kcrs = nullptr;
  REQUIRE(cudnnCreateFilterDescriptor(&kcrs) == 0);
  REQUIRE(cudnnSetFilter4dDescriptor(kcrs, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.k, s.c, s.kernel, s.kernel) == 0);
  REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, gx.p, kcrs, gw.p, d.conv,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                  gy.p) == CUDNN_STATUS_SUCCESS);
  auto wrong = channels_last(gy.download(), s.n, s.k, s.oh(), s.ow(), true);
  bool differs = false;
  for (size_t i = 0; i < wrong.size(); ++i) differs |= !(std::fabs(wrong[i] - want_y[i]) < 1e-4f);
  CHECK(differs);
  cudnnDestroyFilterDescriptor(kcrs);
}

TEST_CASE("emulated cudnn: strides are used as given, beta 0 never reads y", "[emu][cudnn]") {
  const Shape s = kOdd;
  Cudnn d(s);
  auto x = values(s.x_count(), 8), w = values(s.w_count(), 9);
  std::vector<float> want(s.y_count(), 0.0f);
  taps(s, [&](size_t xi, size_t wi, size_t yi) { want[yi] += x[xi] * w[wi]; });
  // x with padded rows and planes; y in NHWC (channels innermost).
  const int hs = s.w + 3, cs = hs * s.h + 2, ns = cs * s.c + 5;
  std::vector<float> strided(size_t(ns) * s.n, std::numeric_limits<float>::quiet_NaN());
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int q = 0; q < s.w; ++q)
          strided[size_t(n) * ns + c * cs + h * hs + q] = x[((size_t(n) * s.c + c) * s.h + h) * s.w + q];
  cudnnTensorDescriptor_t xs = nullptr, ys = nullptr;
  REQUIRE(cudnnCreateTensorDescriptor(&xs) == 0);
  REQUIRE(cudnnCreateTensorDescriptor(&ys) == 0);
  REQUIRE(cudnnSetTensor4dDescriptorEx(xs, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w, ns, cs, hs, 1) == 0);
  REQUIRE(cudnnSetTensor4dDescriptor(ys, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, s.n, s.k, s.oh(), s.ow()) == 0);
  DeviceBuffer gx(strided), gw(w), gy(s.y_count(), std::numeric_limits<float>::quiet_NaN());
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cudnnConvolutionForward(d.handle, &one, xs, gx.p, d.w, gw.p, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                  nullptr, 0, &zero, ys, gy.p) == CUDNN_STATUS_SUCCESS);
  auto nhwc = gy.download();
  std::vector<float> got(s.y_count());
  for (int n = 0; n < s.n; ++n)
    for (int k = 0; k < s.k; ++k)
      for (int i = 0; i < s.oh(); ++i)
        for (int j = 0; j < s.ow(); ++j)
          got[((size_t(n) * s.k + k) * s.oh() + i) * s.ow() + j] =
              nhwc[((size_t(n) * s.oh() + i) * s.ow() + j) * s.k + k];
  require_close(got, want);

  // The same data read through a packed descriptor is a different (wrong) result.
  DeviceBuffer gy2(s.y_count());
  REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, gx.p, d.w, gw.p, d.conv,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                  gy2.p) == CUDNN_STATUS_SUCCESS);
  auto wrong = gy2.download();
  bool differs = false;
  for (size_t i = 0; i < wrong.size(); ++i) differs |= !(std::fabs(wrong[i] - want[i]) < 1e-4f);
  CHECK(differs);
  cudnnDestroyTensorDescriptor(xs);
  cudnnDestroyTensorDescriptor(ys);
}

TEST_CASE("emulated cudnn: a workspace smaller than the algorithm's is BAD_PARAM", "[emu][cudnn]") {
  const Shape s = kOdd;
  Cudnn d(s);
  size_t bytes = 0;
  REQUIRE(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                  &bytes) == 0);
  REQUIRE(bytes > 0);
  DeviceBuffer x(s.x_count()), w(s.w_count()), y(s.y_count()), ws(bytes / 4);
  const float one = 1.0f, zero = 0.0f;
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws.p,
                                bytes - 4, &zero, d.y, y.p) == CUDNN_STATUS_BAD_PARAM);
  CHECK(last_error().find("workspace") != std::string::npos);
  // A size larger than the allocation behind the pointer is caught too.
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws.p,
                                bytes + 64, &zero, d.y, y.p) == CUDNN_STATUS_BAD_PARAM);
  // An algorithm of the enum that is not emulated, and one outside it.
  CHECK(category(cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                                         ws.p, bytes, &zero, d.y, y.p),
                 CUDNN_STATUS_NOT_SUPPORTED));
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv, cudnnConvolutionFwdAlgo_t(42), ws.p, bytes,
                                &zero, d.y, y.p) == CUDNN_STATUS_BAD_PARAM);
}

TEST_CASE("emulated cudnn: unsupported descriptors and mismatched shapes are refused", "[emu][cudnn]") {
  const Shape s = kOdd;
  DeviceBuffer x(s.x_count()), w(s.w_count()), y(s.y_count());
  const float one = 1.0f, zero = 0.0f;
  auto forward = [&](Cudnn& d) {
    return cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y, y.p);
  };
  SECTION("bad values when set") {
    Cudnn d(s);
    CHECK(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, -1, 1, 1, 1) == CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolution2dDescriptor(d.conv, -1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
          CUDNN_STATUS_BAD_PARAM);
    CHECK(cudnnSetConvolutionMathType(d.conv, cudnnMathType_t(77)) == CUDNN_STATUS_BAD_PARAM);
  }
  SECTION("a data type other than float") {
    Cudnn d(s);
    REQUIRE(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, s.n, s.c, s.h, s.w) == 0);
    CHECK(category(forward(d), CUDNN_STATUS_NOT_SUPPORTED));
  }
  SECTION("dilation") {
    Cudnn d(s);
    REQUIRE(cudnnSetConvolution2dDescriptor(d.conv, s.pad, s.pad, s.stride, s.stride, 2, 2, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) == 0);
    CHECK(category(forward(d), CUDNN_STATUS_NOT_SUPPORTED));
  }
  SECTION("groups") {
    Cudnn d(s);
    REQUIRE(cudnnSetConvolutionGroupCount(d.conv, 3) == 0);
    CHECK(category(forward(d), CUDNN_STATUS_NOT_SUPPORTED));
  }
  SECTION("an output shape that does not follow from input and filter") {
    Cudnn d(s);
    REQUIRE(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.k, s.oh() + 1, s.ow()) == 0);
    CHECK(forward(d) == CUDNN_STATUS_BAD_PARAM);
    CHECK(last_error().find("y [") != std::string::npos);
  }
  SECTION("channels of input and filter differ") {
    Cudnn d(s);
    REQUIRE(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.k, s.c + 1, s.kernel, s.kernel) == 0);
    CHECK(forward(d) == CUDNN_STATUS_BAD_PARAM);
  }
  SECTION("a host pointer") {
    Cudnn d(s);
    std::vector<float> host(s.x_count());
    CHECK(cudnnConvolutionForward(d.handle, &one, d.x, host.data(), d.w, w.p, d.conv,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                  y.p) == CUDNN_STATUS_BAD_PARAM);
  }
  SECTION("in place") {
    Cudnn d(s);
    DeviceBuffer big(s.x_count() + s.y_count());
    CHECK(cudnnConvolutionForward(d.handle, &one, d.x, big.p, d.w, w.p, d.conv,
                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero, d.y,
                                  big.p + 1) == CUDNN_STATUS_BAD_PARAM);
  }
}

TEST_CASE("emulated cudnn: a handle used while another device is current is an error", "[emu][cudnn]") {
  if (lockstep::emu::device_count() < 2) {
    WARN("needs 2 emulated devices (LOCKSTEP_EMU_DEVICES); skipped");
    return;
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const Shape s = kOdd;
  Cudnn d(s);
  DeviceBuffer x(s.x_count()), w(s.w_count()), y(s.y_count());
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                nullptr, 0, &zero, d.y, y.p) != CUDNN_STATUS_SUCCESS);
  CHECK(last_error().find("device 0") != std::string::npos);
  // Device 1 memory given to a device 0 handle.
  DeviceBuffer other(s.y_count());
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.p, d.w, w.p, d.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                nullptr, 0, &zero, d.y, other.p) == CUDNN_STATUS_BAD_PARAM);
}

TEST_CASE("emulated cudnn: heuristics and search list algorithms with workspace and status", "[emu][cudnn]") {
  const Shape s = kOdd;
  Cudnn d(s);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0;
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                 &got, perf) == 0);
  REQUIRE(got == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  CHECK(perf[0].status == CUDNN_STATUS_SUCCESS);
  CHECK(perf[1].status == CUDNN_STATUS_SUCCESS);
  CHECK(perf[0].memory != perf[1].memory);
  CHECK(perf[2].status != CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv, d.y, 1, &got, perf) == 0);
  CHECK(got == 1);

  DeviceBuffer x(values(s.x_count(), 1)), w(values(s.w_count(), 2)), y(s.y_count());
  // No workspace: only the algorithm that needs none runs.
  REQUIRE(cudnnFindConvolutionForwardAlgorithmEx(d.handle, d.x, x.p, d.w, w.p, d.conv, d.y, y.p,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, nullptr, 0) == 0);
  REQUIRE(got == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  CHECK(perf[0].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(perf[0].status == CUDNN_STATUS_SUCCESS);
  CHECK(perf[0].time >= 0.0f);
  for (int i = 1; i < got; ++i) CHECK(perf[i].status != CUDNN_STATUS_SUCCESS);
  // Enough workspace: both run; asking for 1 result gives 1.
  size_t bytes = 0;
  REQUIRE(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                  &bytes) == 0);
  DeviceBuffer ws(bytes / 4);
  REQUIRE(cudnnFindConvolutionForwardAlgorithmEx(d.handle, d.x, x.p, d.w, w.p, d.conv, d.y, y.p,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, ws.p, bytes) == 0);
  CHECK(perf[0].status == CUDNN_STATUS_SUCCESS);
  CHECK(perf[1].status == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnFindConvolutionForwardAlgorithmEx(d.handle, d.x, x.p, d.w, w.p, d.conv, d.y, y.p, 1, &got, perf, ws.p,
                                                 bytes) == 0);
  CHECK(got == 1);

  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  REQUIRE(cudnnGetConvolutionBackwardDataAlgorithm_v7(d.handle, d.w, d.y, d.conv, d.x,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, data) == 0);
  int deterministic = 0;
  for (int i = 0; i < got; ++i) deterministic += data[i].status == 0 && data[i].determinism == CUDNN_DETERMINISTIC;
  CHECK(deterministic == 1);
  cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  REQUIRE(cudnnFindConvolutionBackwardFilterAlgorithmEx(d.handle, d.x, x.p, d.y, y.p, d.conv, d.w, w.p,
                                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, filter, ws.p,
                                                        bytes) == 0);
  CHECK(filter[0].status == CUDNN_STATUS_SUCCESS);
}

TEST_CASE("emulated cudnn: max and average pooling forward and backward equal naive loops", "[emu][cudnn]") {
  const int n = 2, c = 3, h = 7, w = 6, k = 3, stride = 2, pad = 1;
  const int oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  const size_t xn = size_t(n) * c * h * w, yn = size_t(n) * c * oh * ow;
  cudnnHandle_t handle;
  REQUIRE(cudnnCreate(&handle) == 0);
  cudnnTensorDescriptor_t xd, yd;
  cudnnPoolingDescriptor_t pd;
  REQUIRE(cudnnCreateTensorDescriptor(&xd) == 0);
  REQUIRE(cudnnCreateTensorDescriptor(&yd) == 0);
  REQUIRE(cudnnCreatePoolingDescriptor(&pd) == 0);
  REQUIRE(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w) == 0);
  REQUIRE(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, oh, ow) == 0);
  auto x = values(xn, 3), dy = values(yn, 4), prior = values(xn, 5);
  DeviceBuffer gx(x), gdy(dy);
  for (bool max : {true, false}) {
    INFO((max ? "max" : "average"));
    REQUIRE(cudnnSetPooling2dDescriptor(pd, max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                        CUDNN_PROPAGATE_NAN, k, k, pad, pad, stride, stride) == 0);
    std::vector<float> want_y(yn), want_dx(xn, 0.0f);
    for (int p = 0; p < n * c; ++p)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          float best = -std::numeric_limits<float>::infinity(), sum = 0.0f;
          size_t arg = 0;
          for (int r = 0; r < k; ++r)
            for (int q = 0; q < k; ++q) {
              int hh = i * stride + r - pad, ww = j * stride + q - pad;
              if (hh < 0 || hh >= h || ww < 0 || ww >= w) continue;
              size_t xi = (size_t(p) * h + hh) * w + ww;
              sum += x[xi];
              if (x[xi] > best) best = x[xi], arg = xi;
            }
          size_t yi = (size_t(p) * oh + i) * ow + j;
          want_y[yi] = max ? best : sum / float(k * k);
          if (max) {
            want_dx[arg] += dy[yi];
          } else {
            for (int r = 0; r < k; ++r)
              for (int q = 0; q < k; ++q) {
                int hh = i * stride + r - pad, ww = j * stride + q - pad;
                if (hh >= 0 && hh < h && ww >= 0 && ww < w) want_dx[(size_t(p) * h + hh) * w + ww] += dy[yi] / (k * k);
              }
          }
        }
    const float one = 1.0f, zero = 0.0f;
    DeviceBuffer gy(yn, std::numeric_limits<float>::quiet_NaN());
    REQUIRE(cudnnPoolingForward(handle, pd, &one, xd, gx.p, &zero, yd, gy.p) == 0);
    require_close(gy.download(), want_y);
    DeviceBuffer gdx(prior);
    REQUIRE(cudnnPoolingBackward(handle, pd, &one, yd, gy.p, yd, gdy.p, xd, gx.p, &one, xd, gdx.p) == 0);
    for (size_t i = 0; i < xn; ++i) want_dx[i] += prior[i];
    require_close(gdx.download(), want_dx);
  }
  // What the stand-in does not compute, and a y that does not fit.
  REQUIRE(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_PROPAGATE_NAN, k, k, pad,
                                      pad, stride, stride) == 0);
  DeviceBuffer gy(yn);
  const float one = 1.0f, zero = 0.0f;
  CHECK(category(cudnnPoolingForward(handle, pd, &one, xd, gx.p, &zero, yd, gy.p), CUDNN_STATUS_NOT_SUPPORTED));
  REQUIRE(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, k, k, pad, pad, stride, stride) == 0);
  REQUIRE(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, oh, ow - 1) == 0);
  CHECK(cudnnPoolingForward(handle, pd, &one, xd, gx.p, &zero, yd, gy.p) == CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyPoolingDescriptor(pd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroy(handle);
}

TEST_CASE("emulated cudnn: version, stream and error strings", "[emu][cudnn]") {
  CHECK(cudnnGetVersion() == CUDNN_VERSION);
  CHECK(std::string(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM)) == "CUDNN_STATUS_BAD_PARAM");
  cudnnHandle_t handle;
  REQUIRE(cudnnCreate(&handle) == 0);
  cudaStream_t stream = nullptr, got = reinterpret_cast<cudaStream_t>(1);
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  REQUIRE(cudnnSetStream(handle, stream) == 0);
  REQUIRE(cudnnGetStream(handle, &got) == 0);
  CHECK(got == stream);
  cudnnDestroy(handle);
  cudaStreamDestroy(stream);
}
