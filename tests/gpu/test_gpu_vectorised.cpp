// The element-wise kernels' two paths (kernels/cuda/stored_vec.cuh's
// launch_map): four elements per 8-byte (bf16) or 16-byte (float) access when
// every pointer is aligned for it, one element at a time otherwise. Each
// kernel runs on views at element offsets 0-4 (1-3: not aligned for the
// four-wide access; 4: aligned, not at the start of the storage), on operands
// with different offsets (one aligned, one not), and on counts 1, 3, 5, 8 and
// 4k+1 (a 1-3 element tail after the groups of four), in both stored types,
// against the CPU reference bit for bit: the paths differ in access width
// only, never in the math per element.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/bf16_math.h"
#include "kernels/cuda/bf16_operands_cuda.h"
#include "kernels/cuda/tensor_ops_cuda.h"
#include "ops/bf16.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/tensor_ops.h"
#include "runtime/cuda/cuda_context.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;

namespace {

const int64_t kCounts[] = {1, 3, 5, 8, 4 * 257 + 1};
// (offset of the inputs, offset of the output), in elements.
const std::pair<int64_t, int64_t> kOffsets[] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {0, 3}, {1, 0}};

std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = round_to_bf16(x);
  return v;
}

// `values` in `dtype` on the GPU, `offset` elements into its storage (the
// caller passes bf16-representable values for bf16).
Tensor on_gpu(DType dtype, const std::vector<float>& values, int64_t offset) {
  const Shape s{static_cast<int64_t>(values.size())};
  Tensor storage = Tensor::zeros(Shape{s.numel() + offset}, Device::cuda(0), dtype);
  Tensor t = storage.view(offset, s);
  t.copy_from(dtype == DType::bf16 ? Tensor::from_vector_bf16(s, values) : Tensor::from_vector(s, values));
  return t;
}

// The GPU's values against the CPU's FP32 results, rounded to bf16 when the
// GPU stores bf16 (one rounding at the store); compared as bits.
void require_bits(const Tensor& gpu, const std::vector<float>& cpu, DType dtype, const std::string& what) {
  const std::vector<float> got = gpu.to_vector();
  const std::vector<float> want = dtype == DType::bf16 ? rounded(cpu) : cpu;
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      INFO(what << ": element " << i << " of " << got.size() << ": gpu " << got[i] << ", cpu " << want[i]);
      REQUIRE(std::memcmp(&got[i], &want[i], sizeof(float)) == 0);
    }
  }
}

// Runs `fill` on a zeroed `dtype` view of want.size() elements `offset`
// elements into its storage, then compares the view with `want`.
template <typename Fill>
void check_fill(Context& gpu, DType dtype, int64_t offset, const std::vector<float>& want, const char* what,
                Fill fill) {
  Tensor y = on_gpu(dtype, std::vector<float>(want.size(), 0.0f), offset);
  fill(y);
  gpu.synchronize();
  require_bits(y, want, dtype, what);
}

const char* name(DType dtype) { return dtype == DType::bf16 ? "bf16" : "f32"; }

}  // namespace

TEST_CASE("vectorised relu, add, copy and dropout on misaligned views equal the cpu bit for bit",
          "[gpu][handwritten][vectorised][relu][add][tensor_ops][dropout]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t n : kCounts) {
      for (auto [in, out] : kOffsets) {
        for (bool accumulate : {false, true}) {
          INFO(name(dtype) << ", n " << n << ", inputs at " << in << ", output at " << out << ", accumulate "
                           << accumulate);
          const Shape s{n};
          auto values = [&](uint64_t seed) {
            auto v = random_values(n, 13 * n + seed);
            return dtype == DType::bf16 ? rounded(v) : v;
          };
          const auto a = values(1), b = values(2), old = values(3);
          Tensor ga = on_gpu(dtype, a, in), gb = on_gpu(dtype, b, in);
          Tensor ca = Tensor::from_vector(s, a), cb = Tensor::from_vector(s, b);

          Tensor gy = on_gpu(dtype, old, out), cy = Tensor::from_vector(s, old);
          ops::relu_forward(gpu, ga, gy);
          ops::relu_forward(cpu, ca, cy);
          gpu.synchronize();
          require_bits(gy, cy.to_vector(), dtype, "relu");

          // Backward from y = relu(a) (at the output's offset) and dy = b.
          Tensor gdx = on_gpu(dtype, old, out), cdx = Tensor::from_vector(s, old);
          ops::relu_backward(gpu, gy, gb, gdx, accumulate);
          ops::relu_backward(cpu, cy, cb, cdx, accumulate);
          gpu.synchronize();
          require_bits(gdx, cdx.to_vector(), dtype, "relu backward");

          Tensor gsum = on_gpu(dtype, old, out), csum = Tensor::from_vector(s, old);
          ops::add(gpu, ga, gb, gsum);
          ops::add(cpu, ca, cb, csum);
          gpu.synchronize();
          require_bits(gsum, csum.to_vector(), dtype, "add");

          Tensor gdst = on_gpu(dtype, old, out), cdst = Tensor::from_vector(s, old);
          ops::copy_or_add(gpu, ga, gdst, accumulate);
          ops::copy_or_add(cpu, ca, cdst, accumulate);
          gpu.synchronize();
          require_bits(gdst, cdst.to_vector(), dtype, "copy_or_add");

          const StepInfo step{5, 2, 7};
          Tensor gd = on_gpu(dtype, old, out), cd = Tensor::from_vector(s, old);
          ops::dropout_forward(gpu, step, ga, gd, 0.4f, 3);
          ops::dropout_forward(cpu, step, ca, cd, 0.4f, 3);
          Tensor gdd = on_gpu(dtype, old, out), cdd = Tensor::from_vector(s, old);
          ops::dropout_backward(gpu, step, gb, gdd, 0.4f, 3, accumulate);
          ops::dropout_backward(cpu, step, cb, cdd, 0.4f, 3, accumulate);
          gpu.synchronize();
          require_bits(gd, cd.to_vector(), dtype, "dropout");
          require_bits(gdd, cdd.to_vector(), dtype, "dropout backward");
        }
      }
    }
  }
}

TEST_CASE("vectorised bf16 conversions and rounding on misaligned views equal the cpu bit for bit",
          "[gpu][handwritten][vectorised][bf16]") {
  Context gpu(Device::cuda(0));
  for (int64_t n : kCounts) {
    for (auto [in, out] : kOffsets) {
      INFO("n " << n << ", source at " << in << ", destination at " << out);
      const Shape s{n};
      // Values with bits below bf16's mantissa, and exact ties (1 + 2^-8
      // rounds down to even, 1 + 3 * 2^-8 up), so the rounding is exercised.
      auto v = random_values(n, 29 * n + 1, -1e3f, 1e3f);
      for (int64_t i = 0; i < n; i += 3) v[i] = (i % 2 ? 1.0f + 0x1p-8f : 1.0f + 0x3p-8f) * (i % 4 ? -1.0f : 1.0f);
      std::vector<float> want(v.size());
      for (size_t i = 0; i < v.size(); ++i) want[i] = round_to_bf16(v[i]);

      Tensor narrow = on_gpu(DType::bf16, std::vector<float>(n, 0.0f), out);
      ops::convert(gpu, on_gpu(DType::f32, v, in), narrow);
      gpu.synchronize();
      require_bits(narrow, want, DType::bf16, "f32 to bf16");

      Tensor wide = on_gpu(DType::f32, std::vector<float>(n, 0.0f), out);
      ops::convert(gpu, on_gpu(DType::bf16, want, in), wide);
      gpu.synchronize();
      require_bits(wide, want, DType::f32, "bf16 to f32");

      Tensor in_place = on_gpu(DType::f32, v, in);
      ops::round_to_bf16(gpu, in_place);
      gpu.synchronize();
      require_bits(in_place, want, DType::f32, "round to bf16");
    }
  }
}

TEST_CASE("vectorised bias fills on misaligned views put each channel's bias in place",
          "[gpu][handwritten][vectorised][conv2d][linear]") {
  Context gpu(Device::cuda(0));
  cudaStream_t stream = gpu.cuda()->compute_stream;
  const auto bias = random_values(7, 91, -4.0f, 4.0f);  // not bf16 values: the bf16 stores round them
  Tensor fp32_bias = Tensor::from_vector(Shape{7}, bias, Device::cuda(0));
  Tensor bf16_bias = Tensor::from_vector_bf16(Shape{7}, rounded(bias), Device::cuda(0));
  for (int64_t offset : {0, 1, 2, 3, 4}) {
    // Linear's bias: rows of `cols` outputs, counts 3, 5, 8 and 4k+1 (257 rows of 1 .. 3 x 7 = 21).
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 3}, {1, 5}, {2, 4}, {257, 1}, {3, 7}}) {
      std::vector<float> want(rows * cols);
      for (int64_t i = 0; i < rows * cols; ++i) want[i] = bias[i % cols];
      for (DType dtype : {DType::f32, DType::bf16}) {
        INFO(name(dtype) << " rows " << rows << " x " << cols << " at offset " << offset);
        check_fill(gpu, dtype, offset, want, "fill_rows", [&](Tensor& y) {
          if (dtype == DType::bf16) cuda::fill_rows(stream, y.bf16_data(), fp32_bias.data(), rows, cols);
          else cuda::fill_rows(stream, y.data(), fp32_bias.data(), rows, cols);
        });
      }
    }
    // The bf16 library calls' bias, from either bias type, both memory formats.
    for (auto [n, channels, spatial] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {1, 3, 1}, {1, 5, 1},
                                         {3, 7, 5}, {2, 4, 4}, {1, 3, 7}}) {
      for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
        const bool channels_last = format == MemoryFormat::nhwc || spatial == 1;
        const int64_t total = n * channels * spatial;
        std::vector<float> want(total);
        for (int64_t i = 0; i < total; ++i)
          want[i] = bias[channels_last ? i % channels : (i / spatial) % channels];
        for (bool bf16 : {false, true}) {
          INFO("broadcast " << n << " x " << channels << " x " << spatial << " at offset " << offset << ", nhwc "
                            << (format == MemoryFormat::nhwc) << ", bf16 bias " << bf16);
          const cuda::BiasRef ref{bf16 ? static_cast<const void*>(bf16_bias.bf16_data()) : fp32_bias.data(), bf16};
          check_fill(gpu, DType::bf16, offset, want, "broadcast_bias_bf16", [&](Tensor& y) {
            cuda::broadcast_bias_bf16(stream, ref, y.bf16_data(), n, channels, spatial, format);
          });
        }
      }
    }
  }
}

TEST_CASE("vectorised local sums of float and double buffers over unaligned ranges add in rank order",
          "[gpu][handwritten][vectorised][tensor_ops]") {
  Context gpu(Device::cuda(0));
  cudaStream_t stream = gpu.cuda()->compute_stream;
  const int64_t size = 4 * 257 + 8;
  for (int64_t begin : {0, 1, 2, 3, 4}) {
    for (int64_t count : kCounts) {
      for (int64_t misaligned_source : {-1, 2}) {  // -1: every source at the storage's start
        INFO("range [" << begin << ", " << begin + count << "), source " << misaligned_source << " shifted");
        const int64_t end = begin + count;
        // Three float sources; the shifted one starts an element into its storage.
        std::vector<std::vector<float>> host;
        std::vector<Tensor> storage;
        std::vector<const float*> srcs;
        for (int r = 0; r < 3; ++r) {
          host.push_back(random_values(size, 100 * begin + 10 * r + count, -1e3f, 1e3f));
          const int64_t shift = r == misaligned_source ? 1 : 0;
          storage.push_back(on_gpu(DType::f32, host.back(), shift));
          srcs.push_back(storage.back().data());
        }
        Tensor out = Tensor::zeros(Shape{size}, Device::cuda(0));
        cuda::sum_buffers(stream, srcs.data(), 3, out.data(), begin, end);
        gpu.synchronize();
        std::vector<float> want(size, 0.0f);
        for (int64_t i = begin; i < end; ++i) want[i] = (host[0][i] + host[1][i]) + host[2][i];
        require_bits(out, want, DType::f32, "sum_buffers (float)");

        // The same sums in double: buffers of 2 floats per double (the
        // communicator's double all-reduce does the same).
        std::vector<std::vector<double>> dhost;
        std::vector<Tensor> dstorage;
        std::vector<const double*> dsrcs;
        for (int r = 0; r < 3; ++r) {
          std::vector<double> d(size);
          for (int64_t i = 0; i < size; ++i) d[i] = double(host[r][i]) * (1.0 + 1e-9 * double(i));
          std::vector<float> words(2 * (size + 1), 0.0f);
          const int64_t shift = r == misaligned_source ? 1 : 0;
          std::memcpy(words.data() + 2 * shift, d.data(), size * sizeof(double));
          dstorage.push_back(Tensor::from_vector(Shape{2 * (size + 1)}, words, Device::cuda(0)));
          dsrcs.push_back(reinterpret_cast<const double*>(dstorage.back().data()) + shift);
          dhost.push_back(std::move(d));
        }
        Tensor dout = Tensor::zeros(Shape{2 * size}, Device::cuda(0));
        cuda::sum_buffers(stream, dsrcs.data(), 3, reinterpret_cast<double*>(dout.data()), begin, end);
        gpu.synchronize();
        const std::vector<float> dwords = dout.to_vector();
        std::vector<double> got(size);
        std::memcpy(got.data(), dwords.data(), size * sizeof(double));
        for (int64_t i = 0; i < size; ++i) {
          const double expected = i >= begin && i < end ? (dhost[0][i] + dhost[1][i]) + dhost[2][i] : 0.0;
          if (std::memcmp(&got[i], &expected, sizeof(double)) != 0) {
            INFO("double element " << i << ": gpu " << got[i] << ", expected " << expected);
            REQUIRE(std::memcmp(&got[i], &expected, sizeof(double)) == 0);
          }
        }
      }
    }
  }
}
