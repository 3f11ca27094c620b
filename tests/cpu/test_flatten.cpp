#include <catch2/catch.hpp>

#include "layers/flatten.h"
#include "ops/memory_format.h"
#include "support/layer_harness.h"

using namespace lockstep;
using namespace lockstep::testing;

TEST_CASE("flatten keeps NCHW order in a C*H*W sample", "[flatten]") {
  for (int64_t batch : {1, 3}) {
    LayerHarness h(std::make_unique<Flatten>(), {Shape{3, 3, 5}}, batch, 1);
    REQUIRE(h.output.shape() == Shape{batch, 45});
    REQUIRE(h.forward().to_vector() == h.inputs[0].to_vector());
  }
  Flatten f;
  REQUIRE(f.output_shape({Shape{7}}) == Shape{7});
  REQUIRE(f.output_shape({Shape{2, 9}}) == Shape{18});
}

TEST_CASE("flatten gradients match finite differences", "[flatten][gradcheck]") {
  LayerHarness h(std::make_unique<Flatten>(), {Shape{3, 3, 5}}, 3, 2);
  check_gradients(h, {.max_points = 1000});
  check_accumulate_mode(h);
}

TEST_CASE("flatten rejects bad inputs, naming the layer and shapes", "[flatten][errors]") {
  Flatten f;
  f.name = "flat";
  REQUIRE_THROWS_WITH(f.output_shape({Shape{3, 0, 5}}), Catch::Contains("flatten 'flat' (input [3, 0, 5])"));
  REQUIRE_THROWS_WITH(f.output_shape({Shape{3}, Shape{3}}),
                      Catch::Contains("flatten 'flat' (input [3], [3])") && Catch::Contains("one input"));
}

TEST_CASE("flatten of an nhwc batch gives the nchw order and transposes its gradient back", "[flatten][nhwc]") {
  // PyTorch's flatten of a channels_last tensor: the logical (C, H, W) order.
  Context ctx(Device::cpu());
  for (const Shape& shape : {Shape{2, 3, 2, 4}, Shape{2, 3, 1, 1}}) {
    INFO("input " << shape.str());
    const int64_t features = shape.per_sample();
    const Tensor x_nchw = random_tensor(shape, 1);
    const Tensor x = ops::to_format(ctx, x_nchw, MemoryFormat::nhwc);
    Tensor y = Tensor::empty(Shape{shape[0], features});
    Flatten f;
    f.forward(ctx, {x}, y, Mode::train, {});
    REQUIRE(y.to_vector() == x_nchw.to_vector());

    const Tensor dy = random_tensor(Shape{shape[0], features}, 2);
    std::vector<Tensor> dx{Tensor::empty(shape).with_format(MemoryFormat::nhwc)};
    f.backward(ctx, {x}, y, dy, dx, {GradMode::write});
    REQUIRE(ops::to_format(ctx, dx[0], MemoryFormat::nchw).to_vector() == dy.to_vector());
    f.backward(ctx, {x}, y, dy, dx, {GradMode::add});  // a second consumer's term
    std::vector<float> twice = dy.to_vector();
    for (float& v : twice) v *= 2.0f;
    REQUIRE(ops::to_format(ctx, dx[0], MemoryFormat::nchw).to_vector() == twice);
  }
  // The plan may alias flatten's output to an NHWC input only where the two layouts agree.
  Flatten f;
  REQUIRE(f.output_may_alias_input(MemoryFormat::nchw));
  REQUIRE_FALSE(f.output_may_alias_input(MemoryFormat::nhwc));
  REQUIRE_FALSE(f.input_grad_may_alias_output_grad(MemoryFormat::nhwc));
}
