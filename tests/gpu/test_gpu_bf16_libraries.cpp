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
// operands (2^-9 relative each) moves many outputs by more than an ulp.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "kernels/bf16_math.h"
#include "kernels/cuda/cudnn_plans.h"
#include "runtime/cuda/cuda_context.h"
#include "ops/conv.h"
#include "ops/linear.h"
#include "ops/memory_format.h"
#include "ops/pool.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;

namespace {

// The bf16 ulp at |v|: 8 significant bits.
double bf16_ulp(double v) {
  if (v == 0.0) return std::ldexp(1.0, -133);
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 8);
}

// The number of elements outside the bound (0: within it).
size_t outside_bf16_bound(const std::vector<float>& gpu, const std::vector<float>& ref, const std::string& what) {
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

std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = round_to_bf16(x);
  return v;
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

std::vector<float> host(Context& gpu, const Tensor& t) {
  gpu.synchronize();
  return t.to(Device::cpu()).to_vector();
}

struct Outcome {
  std::vector<std::pair<std::string, size_t>> bf16_outside;  // bf16 outputs: elements outside the bound
  std::vector<std::pair<std::string, bool>> f32_close;        // f32 outputs: within 1e-5 normwise
};

// Runs `body` (which fills the named outputs of both sides) and compares.
using Body = std::function<void(Context& gpu, Context& cpu, Operands& o, Outcome& out)>;

Outcome run_case(MemoryFormat format, bool round_reference, const Body& body) {
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  Context cpu(Device::cpu(), lockstep::testing::reference_options());
  Operands o(format, round_reference);
  Outcome out;
  body(gpu, cpu, o, out);
  return out;
}

// Compares a bf16 GPU output with the f32 CPU one rounded to bf16.
void compare_bf16(Context& gpu, const char* what, const Tensor& g, const Tensor& c, Outcome& out) {
  REQUIRE(g.dtype() == DType::bf16);
  out.bf16_outside.emplace_back(what, outside_bf16_bound(host(gpu, g), rounded(c.to_vector()), what));
}

void compare_f32(Context& gpu, const char* what, const Tensor& g, const Tensor& c, Outcome& out) {
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
void check(const Body& body, std::initializer_list<std::string> must_fail) {
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

}  // namespace

TEST_CASE("gpu bf16: convolution forward, backward data, backward filter and bias on cuDNN", "[gpu][bf16]") {
  // Odd extents: 5 input channels, 7 output channels, 11x9 images, stride 2, padding 1, batch 3.
  const Shape xs{3, 5, 11, 9}, ws{7, 5, 3, 3};
  const int stride = 2, padding = 1;
  const ConvGeometry g = ops::conv2d_geometry("test", xs, ws, stride, padding);
  const Shape ys{g.batch, g.out_channels, g.out_h, g.out_w};
  check(
      [&](Context& gpu, Context& cpu, Operands& o, Outcome& out) {
        auto [x, x_ref] = o.image(xs, 1);
        auto [w, w_ref] = o.image(ws, 2);
        auto [bias, bias_ref] = o.image(Shape{7}, 3, false);  // a bf16 bias
        auto [y, y_ref] = o.zeros(ys);
        ops::conv2d_forward(gpu, x, w, &bias, y, stride, padding);
        ops::conv2d_forward(cpu, x_ref, w_ref, &bias_ref, y_ref, stride, padding);
        compare_bf16(gpu, "y", y, y_ref, out);

        // The FP32 master bias is rounded to bf16 where it is added.
        Tensor bias_f32 = Tensor::from_vector(Shape{7}, rounded(bias_ref.to_vector())).to(Device::cuda(0));
        auto [y2, unused] = o.zeros(ys);
        ops::conv2d_forward(gpu, x, w, &bias_f32, y2, stride, padding);
        compare_bf16(gpu, "y with an f32 bias", y2, y_ref, out);

        auto [dy, dy_ref] = o.image(ys, 4);
        auto [dx, dx_ref] = o.image(xs, 5);  // accumulated onto
        ops::conv2d_backward_data(gpu, dy, w, dx, stride, padding, true);
        ops::conv2d_backward_data(cpu, dy_ref, w_ref, dx_ref, stride, padding, true);
        compare_bf16(gpu, "dx (accumulated)", dx, dx_ref, out);

        // dw: cuDNN's bf16 dw widened into f32; the reference rounds the FP32 sums.
        Tensor dw = Tensor::empty(ws, Device::cuda(0)).with_format(w.format());
        Tensor dw_ref = Tensor::empty(ws).with_format(w.format());
        ops::conv2d_backward_filter(gpu, x, dy, dw, stride, padding);
        ops::conv2d_backward_filter(cpu, x_ref, dy_ref, dw_ref, stride, padding);
        gpu.synchronize();
        const std::vector<float> dw_host = dw.to(Device::cpu()).to_vector();
        REQUIRE(rounded(dw_host) == dw_host);  // bf16 values held in f32
        out.bf16_outside.emplace_back("dw", outside_bf16_bound(dw_host, rounded(dw_ref.to_vector()), "dw"));

        Tensor db = Tensor::empty(Shape{7}, Device::cuda(0)), db_ref = Tensor::empty(Shape{7});
        ops::conv2d_backward_bias(gpu, dy, db);
        ops::conv2d_backward_bias(cpu, dy_ref, db_ref);
        compare_f32(gpu, "db", db, db_ref, out);
      },
      {"y", "dx (accumulated)", "dw", "db"});
}

TEST_CASE("gpu bf16: linear forward, backward data, backward weight and bias on cuBLAS", "[gpu][bf16]") {
  const int64_t n = 5, f = 37, o_features = 11;
  check(
      [&](Context& gpu, Context& cpu, Operands& o, Outcome& out) {
        auto [x, x_ref] = o.image(Shape{n, f}, 11);
        auto [w, w_ref] = o.image(Shape{o_features, f}, 12);
        auto [bias, bias_ref] = o.image(Shape{o_features}, 13);
        auto [y, y_ref] = o.zeros(Shape{n, o_features});
        ops::linear_forward(gpu, x, w, &bias, y);
        ops::linear_forward(cpu, x_ref, w_ref, &bias_ref, y_ref);
        compare_bf16(gpu, "y", y, y_ref, out);

        auto [dy, dy_ref] = o.image(Shape{n, o_features}, 14);
        auto [dx, dx_ref] = o.zeros(Shape{n, f});
        ops::linear_backward_data(gpu, dy, w, dx, false);
        ops::linear_backward_data(cpu, dy_ref, w_ref, dx_ref, false);
        compare_bf16(gpu, "dx", dx, dx_ref, out);

        // dw in FP32 straight from cublasGemmEx: not rounded to bf16.
        Tensor dw = Tensor::empty(Shape{o_features, f}, Device::cuda(0)), dw_ref = Tensor::empty(Shape{o_features, f});
        ops::linear_backward_weight(gpu, x, dy, dw);
        ops::linear_backward_weight(cpu, x_ref, dy_ref, dw_ref);
        compare_f32(gpu, "dw", dw, dw_ref, out);

        Tensor db = Tensor::empty(Shape{o_features}, Device::cuda(0)), db_ref = Tensor::empty(Shape{o_features});
        ops::linear_backward_bias(gpu, dy, db);
        ops::linear_backward_bias(cpu, dy_ref, db_ref);
        compare_f32(gpu, "db", db, db_ref, out);
      },
      {"y", "dx", "dw", "db"});
}

TEST_CASE("gpu bf16: max and average pooling forward and backward on cuDNN", "[gpu][bf16]") {
  const Shape xs{2, 3, 9, 7};
  const PoolWindow window{3, 2, 1};
  check(
      [&](Context& gpu, Context& cpu, Operands& o, Outcome& out) {
        const Shape ys = ops::pool_output_shape("test", xs, window);
        auto [x, x_ref] = o.image(xs, 21);
        auto [dy, dy_ref] = o.image(ys, 22);
        auto [ym, ym_ref] = o.zeros(ys);
        ops::max_pool2d_forward(gpu, x, ym, window);
        ops::max_pool2d_forward(cpu, x_ref, ym_ref, window);
        compare_bf16(gpu, "max y", ym, ym_ref, out);
        auto [dxm, dxm_ref] = o.zeros(xs);
        ops::max_pool2d_backward(gpu, x, ym, dy, dxm, window, false);
        ops::max_pool2d_backward(cpu, x_ref, ym_ref, dy_ref, dxm_ref, window, false);
        compare_bf16(gpu, "max dx", dxm, dxm_ref, out);

        auto [ya, ya_ref] = o.zeros(ys);
        ops::avg_pool2d_forward(gpu, x, ya, window);
        ops::avg_pool2d_forward(cpu, x_ref, ya_ref, window);
        compare_bf16(gpu, "avg y", ya, ya_ref, out);
        auto [dxa, dxa_ref] = o.image(xs, 23);  // accumulated onto
        ops::avg_pool2d_backward(gpu, x, ya, dy, dxa, window, true);
        ops::avg_pool2d_backward(cpu, x_ref, ya_ref, dy_ref, dxa_ref, window, true);
        compare_bf16(gpu, "avg dx (accumulated)", dxa, dxa_ref, out);
      },
      // Not "max y": rounding is monotonic, so the max of the rounded values
      // is the rounded max, and unrounded operands give the same reference.
      {"avg y", "avg dx (accumulated)"});
}

TEST_CASE("gpu bf16: the library ops refuse bf16 on the CPU and mixed storage types, naming the op",
          "[gpu][bf16]") {
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  Context cpu(Device::cpu(), lockstep::testing::reference_options());
  const Shape xs{1, 2, 5, 5}, ws{3, 2, 3, 3}, ys{1, 3, 3, 3};
  Tensor xb = Tensor::zeros(xs, Device::cuda(0), DType::bf16), wb = Tensor::zeros(ws, Device::cuda(0), DType::bf16);
  Tensor yb = Tensor::zeros(ys, Device::cuda(0), DType::bf16), yf = Tensor::zeros(ys, Device::cuda(0));
  Tensor wf = Tensor::zeros(ws, Device::cuda(0));
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, xb, wf, nullptr, yb, 1, 0),
                      Contains("conv2d forward") && Contains("weight is f32"));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, xb, wb, nullptr, yf, 1, 0), Contains("output is f32"));
  Tensor dwb = Tensor::zeros(ws, Device::cuda(0), DType::bf16);
  REQUIRE_THROWS_WITH(ops::conv2d_backward_filter(gpu, xb, yb, dwb, 1, 0),
                      Contains("conv2d backward filter") && Contains("weight gradient is bf16, expected f32"));
  Tensor bias_i32 = Tensor::from_labels({1, 2, 3}, Device::cuda(0));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, xb, wb, &bias_i32, yb, 1, 0), Contains("bias is i32"));
  Tensor bias_bf16 = Tensor::zeros(Shape{3}, Device::cuda(0), DType::bf16);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(gpu, Tensor::zeros(xs, Device::cuda(0)), wf, &bias_bf16, yf, 1, 0),
                      Contains("bias is bf16 with f32 operands"));
  Tensor xc = Tensor::zeros(xs, Device::cpu(), DType::bf16), wc = Tensor::zeros(ws, Device::cpu(), DType::bf16);
  Tensor yc = Tensor::zeros(ys, Device::cpu(), DType::bf16);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(cpu, xc, wc, nullptr, yc, 1, 0),
                      Contains("conv2d forward") && Contains("bf16 tensors on cpu"));
  Tensor mc = Tensor::zeros(Shape{2, 4}, Device::cpu(), DType::bf16);
  Tensor lw = Tensor::zeros(Shape{3, 4}, Device::cpu(), DType::bf16), lo = Tensor::zeros(Shape{2, 3}, Device::cpu(), DType::bf16);
  REQUIRE_THROWS_WITH(ops::linear_forward(cpu, mc, lw, nullptr, lo), Contains("linear forward") && Contains("CPU"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_forward(gpu, xb, yf, PoolWindow{3, 1, 0}),
                      Contains("max_pool2d") && Contains("output is f32"));
}

TEST_CASE("gpu bf16: a convolution's cuDNN plan is keyed by its data type", "[gpu][bf16][conv]") {
  Context gpu(Device::cuda(0), lockstep::testing::reference_options());
  CudnnPlans& plans = *gpu.cuda()->plans;
  const Shape xs{2, 3, 6, 5}, ws{4, 3, 3, 3}, ys{2, 4, 4, 3};
  const std::vector<float> xv = random_values(xs.numel(), 31), wv = random_values(ws.numel(), 32);
  Tensor xf = Tensor::from_vector(xs, rounded(xv)).to(Device::cuda(0));
  Tensor wf = Tensor::from_vector(ws, rounded(wv)).to(Device::cuda(0));
  Tensor yf = Tensor::empty(ys, Device::cuda(0));
  ops::conv2d_forward(gpu, xf, wf, nullptr, yf, 1, 0);
  REQUIRE(plans.conv_plan_count() == 1);
  // The same geometry in bf16: a plan of its own (a float plan's descriptors
  // would read the bf16 bits as floats), reused on the second call.
  Tensor xb = Tensor::from_vector_bf16(xs, xv).to(Device::cuda(0));
  Tensor wb = Tensor::from_vector_bf16(ws, wv).to(Device::cuda(0));
  Tensor yb = Tensor::empty(ys, Device::cuda(0), DType::bf16);
  ops::conv2d_forward(gpu, xb, wb, nullptr, yb, 1, 0);
  REQUIRE(plans.conv_plan_count() == 2);
  ops::conv2d_forward(gpu, xb, wb, nullptr, yb, 1, 0);
  REQUIRE(plans.conv_plan_count() == 2);
  // And the bf16 result is the f32 one (on the same bf16 values) rounded, within the bound.
  CHECK(outside_bf16_bound(host(gpu, yb), rounded(host(gpu, yf)), "y") == 0);
}
