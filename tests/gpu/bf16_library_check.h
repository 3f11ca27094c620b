#pragma once
// bf16 storage through the library ops on the GPU: cuDNN
// convolution (forward, backward data, backward filter, bias gradient) and
// pooling (max, average, forward and backward), cuBLAS linear (forward,
// backward data, backward weight, bias gradient), with bf16 tensors on the
// GPU, NCHW and NHWC, odd shapes, against the CPU's FP32 ops run on the same
// bf16-rounded operands.
//
// The bound, per element of a bf16 output: |gpu - ref| <= ulp_bf16(ref) +
// 2^-12 rms(ref), where ref is the FP32 reference rounded to bf16. Both sides
// sum the same bf16-exact products in FP32, in different orders; the sums
// differ by a few FP32 ulps of the terms (the normwise 2^-12 rms term, far
// above that and far below a bf16 ulp of a typical output), and rounding two
// nearly equal sums to bf16 can land them one bf16 ulp apart. FP32 outputs
// (the linear weight gradient, the bias gradients) are compared normwise at
// 1e-5, as every FP32 GPU result is. The bound is shown to fail when the
// reference is computed on the unrounded operands: bf16 rounding of the
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bf16_kernel_check.h"
#include "gpu_compare.h"
#include "runtime/context.h"
#include "support/layer_harness.h"

namespace lockstep::testing::bf16_library {

using bf16_kernels::rounded;

// The bf16 ulp at |v|: 8 significant bits.
inline double bf16_ulp(double v) {
  if (v == 0.0) return std::ldexp(1.0, -133);
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 8);
}

// The number of elements outside the bound (0: within it).
inline size_t outside_bf16_bound(const std::vector<float>& gpu, const std::vector<float>& ref,
                                 const std::string& what) {
  REQUIRE(gpu.size() == ref.size());
  const double slack = std::ldexp(lockstep::testing::rms(ref), -12);
  size_t outside = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double diff = std::fabs(double(gpu[i]) - double(ref[i]));
    if (!(diff <= bf16_ulp(ref[i]) + slack)) {
      if (outside == 0) UNSCOPED_INFO(what << ": element " << i << ": gpu " << gpu[i] << ", ref " << ref[i]);
      ++outside;
    }
  }
  return outside;
}

// The operands of one case: values in stored order for `format`, and the
// tensors made of them, bf16 on the GPU and f32 (the same values) on the CPU.
class Operands {
public:
  Operands(MemoryFormat format, bool round_reference) : format_(format), round_reference_(round_reference) {}

  // A bf16 GPU tensor of values from `seed` (rounded to bf16) and its CPU twin:
  // f32 holding the same bf16 values, or (round_reference off) the unrounded ones.
  std::pair<Tensor, Tensor> image(const Shape& s, uint64_t seed, bool images = true) {
    const MemoryFormat f = images && s.rank() == 4 ? format_ : MemoryFormat::nchw;
    const std::vector<float> raw = random_values(s.numel(), seed, -1.0f, 1.0f);
    Tensor gpu = Tensor::from_vector_bf16(s, raw).with_format(f).to(Device::cuda(0));
    Tensor cpu = Tensor::from_vector(s, round_reference_ ? rounded(raw) : raw).with_format(f);
    return {gpu, cpu};
  }
  std::pair<Tensor, Tensor> zeros(const Shape& s, bool images = true) {
    const MemoryFormat f = images && s.rank() == 4 ? format_ : MemoryFormat::nchw;
    return {Tensor::zeros(s, Device::cuda(0), DType::bf16).with_format(f), Tensor::zeros(s).with_format(f)};
  }

private:
  MemoryFormat format_;
  bool round_reference_;
};

inline std::vector<float> host(Context& gpu, const Tensor& t) {
  gpu.synchronize();
  return t.to(Device::cpu()).to_vector();
}

struct Outcome {
  std::vector<std::pair<std::string, size_t>> bf16_outside;  // bf16 outputs: elements outside the bound
  std::vector<std::pair<std::string, bool>> f32_close;        // f32 outputs: within 1e-5 normwise
};

// Runs `body` (which fills the named outputs of both sides) and compares.
using Body = std::function<void(Context& gpu, Context& cpu, Operands& o, Outcome& out)>;

inline Outcome run_case(MemoryFormat format, bool round_reference, const Body& body) {
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  Context cpu(Device::cpu(), lockstep::testing::reference_options());
  Operands o(format, round_reference);
  Outcome out;
  body(gpu, cpu, o, out);
  return out;
}

// Compares a bf16 GPU output with the f32 CPU one rounded to bf16.
inline void compare_bf16(Context& gpu, const char* what, const Tensor& g, const Tensor& c, Outcome& out) {
  REQUIRE(g.dtype() == DType::bf16);
  out.bf16_outside.emplace_back(what, outside_bf16_bound(host(gpu, g), rounded(c.to_vector()), what));
}

inline void compare_f32(Context& gpu, const char* what, const Tensor& g, const Tensor& c, Outcome& out) {
  REQUIRE(g.dtype() == DType::f32);
  const std::vector<float> got = host(gpu, g), want = c.to_vector();
  const double floor = lockstep::testing::rms(want);
  bool close = true;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - double(want[i])) <= 1e-5 * (std::fabs(want[i]) + floor))) close = false;
  out.f32_close.emplace_back(what, close);
}

// Within the bound (the operands rounded for the reference) and, for the
// outputs listed in `must_fail`, outside it when the reference is not.
inline void check(const Body& body, std::initializer_list<std::string> must_fail) {
  for (MemoryFormat format : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
    INFO(memory_format_name(format));
    const Outcome good = run_case(format, true, body);
    REQUIRE(!good.bf16_outside.empty());
    for (const auto& [what, outside] : good.bf16_outside) {
      INFO(what);
      CHECK(outside == 0);
    }
    for (const auto& [what, close] : good.f32_close) {
      INFO(what);
      CHECK(close);
    }
    const Outcome bad = run_case(format, false, body);
    for (const std::string& name : must_fail) {
      INFO(name << " against a reference on unrounded operands");
      bool failed = false;
      for (const auto& [what, outside] : bad.bf16_outside)
        if (what == name) failed = outside > 0;
      for (const auto& [what, close] : bad.f32_close)
        if (what == name) failed = !close;
      CHECK(failed);
    }
  }
}

}  // namespace lockstep::testing::bf16_library
