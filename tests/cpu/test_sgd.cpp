#include <catch2/catch.hpp>

#include "ops/sgd.h"

using namespace lockstep;

namespace {
// Arenas with two tensors: a weight with decay [2] and a bias without [1].
ParameterArenas two_tensor_arenas() {
  return ParameterArenas({{"w", Shape{2}, Init::zeros, true}, {"b", Shape{1}, Init::zeros, false}}, Device::cpu(),
                         true);
}
void set(Tensor t, std::vector<float> v) { t.copy_from(Tensor::from_vector(t.shape(), v)); }
}  // namespace

TEST_CASE("sgd momentum with weight decay equals a hand-computed three-step sequence", "[sgd]") {
  Context ctx(Device::cpu());
  ParameterArenas a = two_tensor_arenas();
  set(a.param(0), {1.0f, -2.0f});
  set(a.param(1), {0.5f});
  SgdConfig config{0.9f, 0.1f, false};
  const float lr = 0.1f;
  // Gradients fed at each step (the optimizer clears them).
  std::vector<std::vector<float>> gw = {{0.5f, 1.0f}, {-1.0f, 0.0f}, {0.25f, 0.5f}};
  std::vector<float> gb = {1.0f, 1.0f, -2.0f};
  // By hand, w0: g=0.5+0.1*1=0.6, v=0.6, w=1-0.06=0.94
  //   step2: g=-1+0.094=-0.906, v=0.54-0.906=-0.366, w=0.94+0.0366=0.9766
  //   step3: g=0.25+0.09766=0.34766, v=-0.3294+0.34766=0.01826, w=0.9766-0.001826=0.974774
  // w1: g=1-0.2=0.8, v=0.8, w=-2.08; g=0-0.208=-0.208, v=0.72-0.208=0.512, w=-2.1312;
  //   g=0.5-0.21312=0.28688, v=0.4608+0.28688=0.74768, w=-2.205968
  // b (no decay): v=1, b=0.4; v=1.9, b=0.21; v=1.71-2=-0.29, b=0.239
  for (int s = 0; s < 3; ++s) {
    set(a.grad(0), gw[s]);
    set(a.grad(1), {gb[s]});
    ops::sgd_step(ctx, a, config, lr);
  }
  std::vector<float> w = a.param(0).to_vector();
  REQUIRE(w[0] == Approx(0.974774f).epsilon(1e-5));
  REQUIRE(w[1] == Approx(-2.205968f).epsilon(1e-5));
  REQUIRE(a.param(1).to_vector()[0] == Approx(0.239f).epsilon(1e-5));
  for (float g : a.grads.to_vector()) REQUIRE(g == 0.0f);  // cleared for the next step
}

TEST_CASE("sgd nesterov equals a hand-computed three-step sequence", "[sgd]") {
  Context ctx(Device::cpu());
  ParameterArenas a = two_tensor_arenas();
  set(a.param(0), {1.0f, 0.0f});
  SgdConfig config{0.5f, 0.2f, true};
  // w0, grads 1, 1, 1; lr 0.1; decay 0.2:
  //  g=1.2, v=1.2, step=1.2+0.6=1.8, w=0.82
  //  g=1.164, v=0.6+1.164=1.764, step=1.164+0.882=2.046, w=0.6154
  //  g=1.12308, v=0.882+1.12308=2.00508, step=1.12308+1.00254=2.12562, w=0.402838
  for (int s = 0; s < 3; ++s) {
    set(a.grad(0), {1.0f, 0.0f});
    ops::sgd_step(ctx, a, config, 0.1f);
  }
  REQUIRE(a.param(0).to_vector()[0] == Approx(0.402838f).epsilon(1e-5));
  REQUIRE(a.param(0).to_vector()[1] == 0.0f);
}

TEST_CASE("sgd with gradient clipping scales the gradients to the global norm before weight decay", "[sgd]") {
  Context ctx(Device::cpu());
  ParameterArenas a = two_tensor_arenas();
  set(a.param(0), {1.0f, -2.0f});
  set(a.param(1), {0.5f});
  // Gradients (3, 0) and (4): global norm 5; clipped to norm 1 they are (0.6, 0) and (0.8).
  SgdConfig config{0.0f, 0.1f, false, 1.0f};
  set(a.grad(0), {3.0f, 0.0f});
  set(a.grad(1), {4.0f});
  ops::sgd_step(ctx, a, config, 0.5f);
  // w: g = 0.6 * (1 - 1e-6/5 roughly) + 0.1 * 1 -> w = 1 - 0.5 * 0.7; w1: g = 0 + 0.1 * -2 -> -2 + 0.1
  REQUIRE(a.param(0).to_vector()[0] == Approx(0.65f).epsilon(1e-5));
  REQUIRE(a.param(0).to_vector()[1] == Approx(-1.9f).epsilon(1e-6));
  REQUIRE(a.param(1).to_vector()[0] == Approx(0.1f).epsilon(1e-5));  // 0.5 - 0.5 * 0.8, no decay

  // Below the norm, nothing changes: the same as without clipping.
  ParameterArenas b = two_tensor_arenas(), c = two_tensor_arenas();
  for (ParameterArenas* x : {&b, &c}) {
    set(x->param(0), {1.0f, -2.0f});
    set(x->grad(0), {0.3f, 0.0f});
    set(x->grad(1), {0.4f});
  }
  ops::sgd_step(ctx, b, SgdConfig{0.9f, 0.1f, false, 1.0f}, 0.5f);
  ops::sgd_step(ctx, c, SgdConfig{0.9f, 0.1f, false, 0.0f}, 0.5f);
  REQUIRE(b.params.to_vector() == c.params.to_vector());
  REQUIRE(b.momentum.to_vector() == c.momentum.to_vector());
  REQUIRE_THROWS_WITH(ops::sgd_step(ctx, b, SgdConfig{0.9f, 0.1f, false, -1.0f}, 0.5f),
                      Catch::Contains("gradient clipping norm -1"));
}

TEST_CASE("sgd refuses a negative learning rate", "[sgd]") {
  Context ctx(Device::cpu());
  ParameterArenas a = two_tensor_arenas();
  REQUIRE_THROWS_WITH(ops::sgd_step(ctx, a, SgdConfig{}, -1.0f), Catch::Contains("negative lr"));
}

TEST_CASE("sgd steps the backbone at lr times its scale and the classifier at lr", "[sgd]") {
  Context ctx(Device::cpu());
  // Backbone: a decayed weight and a bias; the classifier: a decayed weight.
  const std::vector<ParamSpec> specs = {{"conv.w", Shape{6}, Init::zeros, true},
                                        {"bn.b", Shape{3}, Init::zeros, false},
                                        {"fc.w", Shape{5}, Init::zeros, true}};
  const auto fill = [&](ParameterArenas& a) {
    for (size_t i = 0; i < specs.size(); ++i) {
      std::vector<float> w, g;
      for (int64_t k = 0; k < specs[i].shape.numel(); ++k) {
        w.push_back(0.3f * float(k + 1) - float(i));
        g.push_back(0.7f - 0.2f * float(k) + float(i));
      }
      set(a.param(i), w);
      set(a.grad(i), g);
    }
  };
  const int64_t head = ParameterArenas(specs, Device::cpu(), true).entries()[2].offset;
  const float lr = 0.1f;
  for (float scale : {0.25f, 0.0f}) {
    INFO("scale " << scale);
    ParameterArenas scaled(specs, Device::cpu(), true), slow(specs, Device::cpu(), true),
        fast(specs, Device::cpu(), true);
    SgdConfig config{0.9f, 0.1f, false};
    std::vector<float> before;
    for (int step = 0; step < 2; ++step) {
      for (ParameterArenas* a : {&scaled, &slow, &fast}) fill(*a);
      if (step == 0) before = scaled.params.to_vector();
      SgdConfig with_backbone = config;
      with_backbone.backbone_elements = head;
      with_backbone.backbone_lr_scale = scale;
      ops::sgd_step(ctx, scaled, with_backbone, lr);
      ops::sgd_step(ctx, slow, config, lr * scale);
      ops::sgd_step(ctx, fast, config, lr);
    }
    const std::vector<float> got = scaled.params.to_vector(), want_slow = slow.params.to_vector(),
                             want_fast = fast.params.to_vector();
    for (int64_t i = 0; i < scaled.total(); ++i) {
      INFO("element " << i);
      REQUIRE(got[i] == (i < head ? want_slow[i] : want_fast[i]));
      if (scale == 0.0f && i < head) REQUIRE(got[i] == before[i]);  // frozen: weight decay moves nothing
    }
    REQUIRE(got[head] != before[head]);
  }
}

TEST_CASE("sgd refuses a backbone that ends inside a parameter or a scale below 0", "[sgd]") {
  Context ctx(Device::cpu());
  ParameterArenas a = two_tensor_arenas();
  SgdConfig config;
  config.backbone_elements = 1;  // inside "w"
  config.backbone_lr_scale = 0.5f;
  REQUIRE_THROWS_WITH(ops::sgd_step(ctx, a, config, 0.1f), Catch::Contains("backbone's 1 elements do not end where"));
  config.backbone_elements = a.entries()[1].offset;
  config.backbone_lr_scale = -1.0f;
  REQUIRE_THROWS_WITH(ops::sgd_step(ctx, a, config, 0.1f), Catch::Contains("learning-rate scale -1"));
  config.backbone_lr_scale = 0.5f;
  REQUIRE_NOTHROW(ops::sgd_step(ctx, a, config, 0.1f));
}
