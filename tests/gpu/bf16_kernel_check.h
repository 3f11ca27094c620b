#pragma once
// The hand-written kernels with bf16 storage: each GPU op on bf16
// tensors against the CPU's FP32 op run on the same bf16-rounded inputs, its
// outputs then rounded to bf16 (what one rounding at the store gives).
//
// Element-wise ops (relu, add, copy/accumulate, dropout, the memory-format
// conversion, batch-norm inference, the pool's backward) compute the same
// float expression from the same floats on both sides: bit for bit.
//
// Reductions (batch-norm training forward and backward, the pool's forward,
// the loss gradient) sum in another order than the CPU (the GPU's one-pass
// shifted moments, block trees), so their FP32 results differ from the CPU's
// in the last bits, relative ~1e-6 at most. Rounding to bf16 (a step of 2^-8
// relative) then gives the same bf16 value except when the exact result lies
// within ~1e-6 relative of a rounding boundary: a fraction of about
// 1e-6 / 2^-8 = 3e-4 of the values, each then one bf16 step off. The bound
// checked: every value within one bf16 step, and at most 1 in 500 values off
// at all. A kernel that truncated instead of rounding to nearest, or rounded
// an intermediate (x - mean, xhat) to bf16 before the last multiply, is off
// on about half the values: "the bound rejects ..." (test_gpu_batchnorm2d_bf16.cpp)
// shows it does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/bf16_math.h"
#include "ops/memory_format.h"
#include "support/layer_harness.h"

namespace lockstep::testing::bf16_kernels {

inline constexpr double kMaxOffFraction = 1.0 / 500.0;

inline std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_to_bf16(v[i]);
  return out;
}

// The value of a bf16 rounded toward zero (truncated): what a careless store would keep.
inline std::vector<float> truncated(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    bits &= 0xffff0000u;
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

// Position of a bf16 value on the number line in steps (the sign-magnitude
// bits made monotonic), so a difference counts bf16 steps.
inline int64_t bf16_rank(float x) {
  const int32_t b = static_cast<int32_t>(float_to_bf16(x));
  return (b & 0x8000) ? -static_cast<int64_t>(b & 0x7fff) : static_cast<int64_t>(b);
}

struct Agreement {
  int64_t off = 0;       // values not equal
  int64_t worst = 0;     // the largest distance, in bf16 steps
  int64_t first_off = -1;
};

inline Agreement agreement(const std::vector<float>& gpu, const std::vector<float>& expected) {
  Agreement a;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const int64_t d = std::llabs(bf16_rank(gpu[i]) - bf16_rank(expected[i]));
    if (d != 0 && a.first_off < 0) a.first_off = static_cast<int64_t>(i);
    a.off += d != 0;
    a.worst = std::max(a.worst, d);
  }
  return a;
}

inline bool within_bound(const Agreement& a, size_t n) {
  return a.worst <= 1 && static_cast<double>(a.off) <= kMaxOffFraction * static_cast<double>(n);
}

// `gpu` holds bf16 values; `reference` the CPU's FP32 results, rounded here.
inline void require_bits(const std::vector<float>& gpu, const std::vector<float>& reference, const std::string& what) {
  REQUIRE(gpu.size() == reference.size());
  const Agreement a = agreement(gpu, rounded(reference));
  INFO(what << ": " << a.off << " of " << gpu.size() << " values differ, first at " << a.first_off);
  REQUIRE(a.off == 0);
}

inline void require_bound(const std::vector<float>& gpu, const std::vector<float>& reference, const std::string& what) {
  REQUIRE(gpu.size() == reference.size());
  const Agreement a = agreement(gpu, rounded(reference));
  INFO(what << ": " << a.off << " of " << gpu.size() << " values differ (at most " << kMaxOffFraction
            << " allowed), worst by " << a.worst << " bf16 steps, first at " << a.first_off);
  REQUIRE(within_bound(a, gpu.size()));
}

// A bf16 tensor on the GPU holding `values` rounded, starting `offset`
// elements into its storage (offsets 1-3: not aligned for the 8-byte
// accesses of four bf16 values), in `format`.
inline Tensor bf16_on_gpu(const Shape& shape, const std::vector<float>& values, int64_t offset = 0,
                          MemoryFormat format = MemoryFormat::nchw) {
  Tensor storage = Tensor::zeros(Shape{shape.numel() + offset}, Device::cuda(0), DType::bf16);
  Tensor t = storage.view(offset, shape).with_format(format);
  t.copy_from(Tensor::from_vector_bf16(shape, values).with_format(format));
  return t;
}

inline Tensor f32_on_cpu(const Shape& shape, const std::vector<float>& values,
                         MemoryFormat format = MemoryFormat::nchw) {
  return Tensor::from_vector(shape, values).with_format(format);
}

inline Tensor f32_on_gpu(const Shape& shape, const std::vector<float>& values) {
  return Tensor::from_vector(shape, values, Device::cuda(0));
}

// Batch-norm inputs: channel c has mean means[c] and spread spreads[c].
inline std::vector<float> channel_values(const Shape& s, const std::vector<float>& means,
                                         const std::vector<float>& spreads, uint64_t seed) {
  std::vector<float> v = random_values(s.numel(), seed);
  const int64_t c = s[1], spatial = s[2] * s[3];
  for (int64_t i = 0; i < s.numel(); ++i) {
    const int64_t ch = (i / spatial) % c;
    v[i] = means[ch] + spreads[ch] * v[i];
  }
  return v;
}

// NCHW values of `s` in the element order of `format` (the order to_vector gives).
inline std::vector<float> in_format(const Shape& s, const std::vector<float>& nchw, MemoryFormat format) {
  if (format == MemoryFormat::nchw) return nchw;
  Context cpu(Device::cpu());
  return ops::to_format(cpu, f32_on_cpu(s, nchw), format).to_vector();
}

struct BnTensors {
  Tensor gamma, beta, batch_mean, batch_var, saved_mean, saved_inv_std;
};
inline BnTensors bn_tensors(Device device, int64_t c) {
  auto make = [&](uint64_t seed) { return Tensor::from_vector(Shape{c}, random_values(c, seed, 0.5f, 1.5f), device); };
  return {make(1), make(2), Tensor::zeros(Shape{c}, device), Tensor::zeros(Shape{c}, device),
          Tensor::zeros(Shape{c}, device), Tensor::zeros(Shape{c}, device)};
}

enum class Fused { none, relu, add_relu };

}  // namespace lockstep::testing::bf16_kernels
