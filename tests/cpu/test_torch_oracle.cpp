// Our ops against PyTorch (a second, independent oracle beside the finite
// differences of the layer tests). tests/torch/ops_oracle.py writes random
// inputs, upstream gradients and PyTorch's results into ops.safetensors,
// stored in tests/golden (support/golden_files.h); these tests run our ops on
// the same inputs, in every stage, and tests/torch.cmake runs them again on
// the file it regenerates.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "data/augment.h"
#include "ops/batchnorm.h"
#include "ops/conv.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/pool.h"
#include "support/golden_files.h"
#include "training/safetensors.h"

using namespace lockstep;

namespace {

const SafetensorsFile& references() {
  static const SafetensorsFile file = [] {
    return read_safetensors(lockstep::testing::golden_file("ops.safetensors"));
  }();
  return file;
}

Tensor torch_tensor(const std::string& name) {
  const HostTensor& t = references().at(name);
  return Tensor::from_vector(t.shape, t.values);
}

int meta_int(const std::string& key) { return std::stoi(references().metadata.at(key)); }

// |got - want| <= rtol * |want| + floor * max|want|. A float32 result that is
// a sum of n rounded products may differ between two correct summation orders
// (our im2col + sgemm or loop against PyTorch's oneDNN/ATen kernels) by about
// n * 6e-8 times the size of its terms; with n <= ~100 here that is below
// 1e-5 of the tensor's scale. Values close to zero come from cancellation, so
// their relative error means nothing while their absolute error stays of that
// order: hence the absolute floor, 1e-5 of the largest reference value.
void require_close(const Tensor& got, const std::string& name, double rtol = 1e-4, double floor = 1e-5) {
  const HostTensor& want = references().at(name);
  std::vector<float> g = got.to_vector();
  REQUIRE(g.size() == want.values.size());
  double scale = 0.0;
  for (float v : want.values) scale = std::max(scale, double(std::abs(v)));
  double worst = 0.0;
  size_t worst_at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double excess = std::abs(double(g[i]) - want.values[i]) - rtol * std::abs(want.values[i]) - floor * scale;
    if (i == 0 || excess > worst) worst = excess, worst_at = i;
  }
  INFO(name << " element " << worst_at << ": ours " << g[worst_at] << ", PyTorch " << want.values[worst_at]
            << " (tolerance " << rtol << " relative + " << floor * scale << ")");
  REQUIRE(worst <= 0.0);
}

}  // namespace

TEST_CASE("conv2d forward and backward equal PyTorch's", "[torch][ops]") {
  for (std::string c : {"conv_s2p1", "conv_k1", "conv_k3_b1"}) {
    DYNAMIC_SECTION(c) {
      Context ctx(Device::cpu());
      Tensor x = torch_tensor(c + ".x"), w = torch_tensor(c + ".w"), dy = torch_tensor(c + ".dy");
      const int stride = meta_int(c + ".stride"), padding = meta_int(c + ".padding");
      const bool bias = meta_int(c + ".bias") != 0;
      Tensor b = bias ? torch_tensor(c + ".b") : Tensor();
      Tensor y = Tensor::empty(references().at(c + ".y").shape);
      ops::conv2d_forward(ctx, x, w, bias ? &b : nullptr, y, stride, padding);
      require_close(y, c + ".y");
      Tensor dx = Tensor::empty(x.shape()), dw = Tensor::empty(w.shape());
      ops::conv2d_backward_data(ctx, dy, w, dx, stride, padding, false);
      ops::conv2d_backward_filter(ctx, x, dy, dw, stride, padding);
      require_close(dx, c + ".dx");
      require_close(dw, c + ".dw");
      if (bias) {
        Tensor db = Tensor::empty(b.shape());
        ops::conv2d_backward_bias(ctx, dy, db);
        require_close(db, c + ".db");
      }
    }
  }
}

TEST_CASE("batchnorm2d in training mode equals PyTorch's, running statistics included", "[torch][ops]") {
  Context ctx(Device::cpu());
  Tensor x = torch_tensor("bn.x"), gamma = torch_tensor("bn.gamma"), beta = torch_tensor("bn.beta"), dy = torch_tensor("bn.dy");
  const int64_t c = x.dim(1);
  Tensor y = Tensor::empty(x.shape());
  Tensor mean = Tensor::empty(Shape{c}), var = Tensor::empty(Shape{c});
  Tensor saved_mean = Tensor::empty(Shape{c}), saved_inv_std = Tensor::empty(Shape{c});
  ops::batchnorm_forward_train(ctx, x, gamma, beta, 1e-5f, y, mean, var, saved_mean, saved_inv_std);
  require_close(y, "bn.y");
  require_close(mean, "bn.batch_mean");
  require_close(var, "bn.batch_var");

  Tensor dx = Tensor::empty(x.shape()), dgamma = Tensor::empty(Shape{c}), dbeta = Tensor::empty(Shape{c});
  ops::batchnorm_backward(ctx, x, dy, gamma, saved_mean, saved_inv_std, dgamma, dbeta, &dx, false);
  require_close(dx, "bn.dx");
  require_close(dgamma, "bn.dgamma");
  require_close(dbeta, "bn.dbeta");

  // PyTorch updates with the unbiased variance of the N*H*W values per channel.
  BatchNormState state;
  state.running_mean = torch_tensor("bn.running_mean");
  state.running_var = torch_tensor("bn.running_var");
  state.momentum = 0.1f;
  ops::batchnorm_update_running(ctx, state, mean, var, x.dim(0) * x.dim(2) * x.dim(3));
  require_close(state.running_mean, "bn.running_mean_after");
  require_close(state.running_var, "bn.running_var_after");
}

TEST_CASE("batchnorm2d in eval mode equals PyTorch's", "[torch][ops]") {
  Context ctx(Device::cpu());
  Tensor x = torch_tensor("bn.x");
  Tensor y = Tensor::empty(x.shape());
  ops::batchnorm_forward_eval(ctx, x, torch_tensor("bn.gamma"), torch_tensor("bn.beta"), torch_tensor("bn.running_mean"), torch_tensor("bn.running_var"),
                              1e-5f, y);
  require_close(y, "bn.y_eval");
}

TEST_CASE("max and average pooling equal PyTorch's", "[torch][ops]") {
  for (std::string c : {"maxpool", "maxpool2", "avgpool"}) {
    DYNAMIC_SECTION(c) {
      Context ctx(Device::cpu());
      PoolWindow window{meta_int(c + ".kernel"), meta_int(c + ".stride"), meta_int(c + ".padding")};
      Tensor x = torch_tensor(c + ".x"), dy = torch_tensor(c + ".dy");
      Tensor y = Tensor::empty(ops::pool_output_shape("test", x.shape(), window));
      REQUIRE(y.shape() == references().at(c + ".y").shape);
      Tensor dx = Tensor::empty(x.shape());
      if (c == "avgpool") {
        ops::avg_pool2d_forward(ctx, x, y, window);
        ops::avg_pool2d_backward(ctx, x, y, dy, dx, window, false);
      } else {
        ops::max_pool2d_forward(ctx, x, y, window);
        ops::max_pool2d_backward(ctx, x, y, dy, dx, window, false);
      }
      require_close(y, c + ".y");
      require_close(dx, c + ".dx");
    }
  }
}

TEST_CASE("global average pooling equals PyTorch's", "[torch][ops]") {
  Context ctx(Device::cpu());
  Tensor x = torch_tensor("gap.x"), dy = torch_tensor("gap.dy");
  Tensor y = Tensor::empty(Shape{x.dim(0), x.dim(1), 1, 1}), dx = Tensor::empty(x.shape());
  ops::global_avg_pool_forward(ctx, x, y);
  ops::global_avg_pool_backward(ctx, dy, dx, false);
  require_close(y, "gap.y");
  require_close(dx, "gap.dx");
}

TEST_CASE("linear forward and backward equal PyTorch's", "[torch][ops]") {
  Context ctx(Device::cpu());
  Tensor x = torch_tensor("linear.x"), w = torch_tensor("linear.w"), b = torch_tensor("linear.b"), dy = torch_tensor("linear.dy");
  Tensor y = Tensor::empty(Shape{x.dim(0), w.dim(0)});
  ops::linear_forward(ctx, x, w, &b, y);
  require_close(y, "linear.y");
  Tensor dx = Tensor::empty(x.shape()), dw = Tensor::empty(w.shape()), db = Tensor::empty(b.shape());
  ops::linear_backward_data(ctx, dy, w, dx, false);
  ops::linear_backward_weight(ctx, x, dy, dw);
  ops::linear_backward_bias(ctx, dy, db);
  require_close(dx, "linear.dx");
  require_close(dw, "linear.dw");
  require_close(db, "linear.db");
}

TEST_CASE("softmax cross-entropy equals PyTorch's: loss sum and the 1/B-scaled gradient", "[torch][ops]") {
  Context ctx(Device::cpu());
  Tensor logits = torch_tensor("ce.logits");
  std::vector<int32_t> labels;
  for (float v : references().at("ce.labels").values) labels.push_back(static_cast<int32_t>(v));
  Tensor grad = Tensor::empty(logits.shape());
  const int64_t batch = logits.dim(0);
  StepMetrics m = ops::softmax_cross_entropy(ctx, logits, Tensor::from_labels(labels), 1.0f / float(batch), &grad);
  REQUIRE(m.count == batch);
  REQUIRE(m.correct == static_cast<int64_t>(references().at("ce.correct").values[0]));
  require_close(Tensor::from_vector(Shape{1}, {static_cast<float>(m.loss_sum)}), "ce.loss_sum");
  require_close(grad, "ce.grad");
}

TEST_CASE("the random resized crop's box resize equals PyTorch's bilinear interpolation, mirrored or not",
          "[torch][ops]") {
  const Tensor x = torch_tensor("resized_crop.x");
  const Shape shape = x.shape();
  const std::vector<float> in = x.to_vector();
  for (int i = 0; i < meta_int("resized_crop.boxes"); ++i) {
    std::istringstream box(references().metadata.at("resized_crop.box" + std::to_string(i)));
    data::AugmentDraw draw;
    box >> draw.top >> draw.left >> draw.height >> draw.width;
    for (bool flip : {false, true}) {
      INFO("box " << box.str() << (flip ? ", mirrored" : ""));
      draw.flip = flip;
      std::vector<float> out(in.size());
      data::apply_augmentation(in.data(), out.data(), shape, 0, draw);
      require_close(Tensor::from_vector(shape, out),
                    "resized_crop.y" + std::to_string(i) + (flip ? "_flipped" : ""), 1e-6, 1e-6);
    }
  }
}
