// The step cost model of the roofline bound (layers/step_cost.h): FLOPs and
// bytes of a tiny graph against counts made by hand, and the forward
// multiply-adds of torchvision's ImageNet networks at 224x224 against the
// figures torchvision publishes for them.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/models.h"
#include "layers/pool.h"
#include "layers/relu.h"
#include "layers/step_cost.h"

using namespace lockstep;

namespace {

// data [2, 7, 7] -> c1: conv 3x3 stride 2 pad 1, 3 out, bias -> [3, 4, 4]
// -> r1: relu -> c2: conv 1x1, 4 out, no bias -> [4, 4, 4] -> pool: global
// average -> [4, 1, 1] -> flat -> fc: linear 5.
std::unique_ptr<Graph> tiny_graph() {
  auto g = std::make_unique<Graph>(Shape{2, 7, 7}, 5, "tiny");
  g->then("c1", std::make_unique<Conv2d>(3, 3, 2, 1, true));
  g->then("r1", std::make_unique<ReLU>());
  g->then("c2", std::make_unique<Conv2d>(4, 1, 1, 0, false));
  g->then("pool", std::make_unique<GlobalAvgPool>());
  g->then("flat", std::make_unique<Flatten>());
  g->then("fc", std::make_unique<Linear>(5));
  return g;
}

const LayerCost& find(const StepCost& cost, const std::string& name) {
  for (const LayerCost& l : cost.layers)
    if (l.name == name) return l;
  FAIL("no layer " << name);
  throw 0;
}

// Forward multiply-adds of the matrix layers (their bias additions count
// half a multiply-add each here, under 0.1% of the totals below:
// one per output element against hundreds of multiply-adds).
double forward_macs(const StepCost& cost) {
  double flops = 0;
  for (const LayerCost& l : cost.layers)
    if (l.matrix) flops += l.forward_flops;
  return flops / 2;
}

// torchvision's resnet18: 7x7/2 stem, 3x3/2 max pool, [2, 2, 2, 2] basic
// blocks of 64..512 with 1x1 conv + bn shortcuts where the shape changes,
// average pool, fc 1000. lockstep's own resnet18 is the CIFAR variant (3x3
// stem, no pool), so the ImageNet one is built here from the same layers.
std::unique_ptr<Graph> torchvision_resnet18() {
  auto g = std::make_unique<Graph>(Shape{3, 224, 224}, 1000, "torchvision resnet18");
  auto conv_bn = [&](const std::string& name, const std::string& in, int64_t out, int k, int s, int p, bool relu) {
    g->add(name + ".conv", std::make_unique<Conv2d>(out, k, s, p, false), {in});
    std::string x = g->then(name + ".bn", std::make_unique<BatchNorm2d>());
    return relu ? g->then(name + ".relu", std::make_unique<ReLU>()) : x;
  };
  conv_bn("stem", "input", 64, 7, 2, 3, true);
  std::string x = g->then("stem.pool", std::make_unique<MaxPool2d>(3, 2, 1));
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s)
    for (int b = 0; b < 2; ++b) {
      const std::string name = "s" + std::to_string(s) + "." + std::to_string(b);
      const int stride = s > 0 && b == 0 ? 2 : 1;
      std::string a = conv_bn(name + ".a", x, widths[s], 3, stride, 1, true);
      std::string c = conv_bn(name + ".b", a, widths[s], 3, 1, 1, false);
      std::string skip = stride != 1 || in != widths[s] ? conv_bn(name + ".down", x, widths[s], 1, stride, 0, false) : x;
      g->add(name + ".add", std::make_unique<Add>(), {c, skip});
      x = g->then(name + ".relu", std::make_unique<ReLU>());
      in = widths[s];
    }
  g->then("pool", std::make_unique<GlobalAvgPool>());
  g->then("flatten", std::make_unique<Flatten>());
  g->then("fc", std::make_unique<Linear>(1000));
  return g;
}

class Mystery final : public Layer {
public:
  std::string type() const override { return "mystery"; }
  Shape output_shape(const std::vector<Shape>& inputs) const override { return inputs[0]; }
  void forward(Context&, const std::vector<Tensor>&, Tensor&, Mode, const StepInfo&) override {}
  void backward(Context&, const std::vector<Tensor>&, const Tensor&, const Tensor&, std::vector<Tensor>&,
                const std::vector<GradMode>&) override {}
};

}  // namespace

TEST_CASE("step cost: conv and linear FLOPs of a tiny graph equal the hand count", "[step_cost]") {
  auto g = tiny_graph();
  StepCostOptions o;
  o.batch = 2;
  const StepCost cost = step_cost(*g, o);
  // c1: 2 x 3 x 4 x 4 = 96 outputs of 2 x 3 x 3 = 18 multiply-adds: 1728;
  // bias 96. It reads the data, which has no gradient: no backward-data.
  const LayerCost& c1 = find(cost, "c1");
  CHECK(c1.matrix);
  CHECK(c1.parameters == 3 * 2 * 9 + 3);
  CHECK(c1.forward_flops == 2 * 1728 + 96);
  CHECK(c1.backward_data_flops == 0);
  CHECK(c1.backward_weight_flops == 2 * 1728 + 96);
  // c2: 2 x 4 x 4 x 4 = 128 outputs of 3 multiply-adds: 384; no bias.
  const LayerCost& c2 = find(cost, "c2");
  CHECK(c2.forward_flops == 768);
  CHECK(c2.backward_data_flops == 768);
  CHECK(c2.backward_weight_flops == 768);
  // fc: 2 x 5 outputs of 4 multiply-adds: 40; bias 10.
  const LayerCost& fc = find(cost, "fc");
  CHECK(fc.matrix);
  CHECK(fc.forward_flops == 90);
  CHECK(fc.backward_data_flops == 80);
  CHECK(fc.backward_weight_flops == 90);
  CHECK_FALSE(find(cost, "r1").matrix);
  // The graph's nodes, then the loss and the update.
  REQUIRE(cost.layers.size() == 8);
  CHECK(cost.layers[6].name == "loss");
  CHECK(cost.layers[7].type == "sgd");
  CHECK(cost.layers[7].parameters == 57 + 12 + 25);
}

TEST_CASE("step cost: bytes of a tiny graph follow the minimum traffic model", "[step_cost]") {
  auto g = tiny_graph();
  StepCostOptions o;
  o.batch = 2;
  const StepCost fp32 = step_cost(*g, o);
  // c1 forward reads x (2 x 98), W and b (57), writes y (96); backward reads
  // dy, x and W... but not W: no dx for the data; writes dW. 4 bytes each.
  CHECK(find(fp32, "c1").forward_bytes == (196 + 57 + 96) * 4);
  CHECK(find(fp32, "c1").backward_bytes == (96 + 196 + 57) * 4);
  // relu forward x and y; backward dy and y read, dx written.
  CHECK(find(fp32, "r1").forward_bytes == 2 * 96 * 4);
  CHECK(find(fp32, "r1").backward_bytes == 3 * 96 * 4);
  // c2 backward: dy (128), x (96) and W (12) read, dW (12) and dx (96) written.
  CHECK(find(fp32, "c2").backward_bytes == (128 + 96 + 12 + 12 + 96) * 4);
  CHECK(find(fp32, "flat").bytes() == 0);
  // The update: fp32 weight, momentum read and written, the gradient read.
  CHECK(find(fp32, "sgd update").bytes() == 94 * 20);

  // bf16: activations and the conv/linear weight copy in 2 bytes; the update
  // keeps fp32 master weights and momentum and writes the bf16 copy too.
  o.activation_bytes = 2;
  o.weight_bytes = 2;
  o.weight_copy = true;
  const StepCost bf16 = step_cost(*g, o);
  CHECK(find(bf16, "c2").forward_bytes == (96 + 12 + 128) * 2);
  CHECK(find(bf16, "r1").bytes() == find(fp32, "r1").bytes() / 2);
  CHECK(find(bf16, "sgd update").bytes() == 94 * (16 + 2 + 2));
  CHECK(bf16.flops() == fp32.flops());
  // The totals are the sums of the rows.
  double bytes = 0;
  for (const LayerCost& l : bf16.layers) bytes += l.bytes();
  CHECK(bf16.bytes() == bytes);
}

TEST_CASE("step cost: torchvision's ImageNet networks have their published forward multiply-adds", "[step_cost]") {
  StepCostOptions o;  // batch 1
  // torchvision's model table: resnet18 1.81 GFLOPS, resnet50 4.09, vgg16
  // 15.47 (multiply-adds of one 224x224 image). The graphs are checked to be
  // torchvision's by their parameter counts first.
  auto r18 = torchvision_resnet18();
  const StepCost r18_cost = step_cost(*r18, o);
  CHECK(r18_cost.layers.back().parameters == 11689512);
  CHECK(forward_macs(r18_cost) == Approx(1.81e9).epsilon(0.03));

  auto r50 = build_model("resnet50", Shape{3, 224, 224}, 1000);
  const StepCost r50_cost = step_cost(*r50, o);
  CHECK(r50_cost.layers.back().parameters == 25557032);
  CHECK(forward_macs(r50_cost) == Approx(4.09e9).epsilon(0.03));

  auto vgg = build_model("vgg16", Shape{3, 224, 224}, 1000);
  const StepCost vgg_cost = step_cost(*vgg, o);
  CHECK(vgg_cost.layers.back().parameters == 138357544);
  CHECK(forward_macs(vgg_cost) == Approx(15.47e9).epsilon(0.03));

  // A training step is three passes of the matrix work, less the first
  // layer's backward-data, and scales with the batch.
  o.batch = 4;
  const StepCost r18_batch = step_cost(*r18, o);
  CHECK(forward_macs(r18_batch) == Approx(4 * forward_macs(r18_cost)));
  CHECK(r18_batch.flops() > 2.9 * 2 * forward_macs(r18_batch));
  CHECK(r18_batch.flops() < 3.1 * 2 * forward_macs(r18_batch));
}

TEST_CASE("step cost: every built-in model is counted, an unknown layer is an error", "[step_cost]") {
  for (const std::string& name : model_names()) {
    auto g = build_model(name, Shape{3, 32, 32}, 10);
    const StepCost cost = step_cost(*g, StepCostOptions{});
    CHECK(cost.flops() > 0);
    CHECK(cost.bytes() > 0);
  }
  Graph g(Shape{4}, 4, "mystery");
  g.then("m", std::make_unique<Mystery>());
  CHECK_THROWS_WITH(step_cost(g, StepCostOptions{}), Catch::Contains("'m' of type mystery"));
  StepCostOptions zero;
  zero.batch = 0;
  CHECK_THROWS_WITH(step_cost(*tiny_graph(), zero), Catch::Contains("batch must be positive"));
}
