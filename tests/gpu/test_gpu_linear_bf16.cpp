// linear on the GPU with bf16 storage (cuBLAS): the bound of bf16_library_check.h.
#include <catch2/catch.hpp>

#include "bf16_library_check.h"
#include "ops/linear.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_library;

TEST_CASE("gpu bf16: linear forward, backward data, backward weight and bias on cuBLAS", "[gpu][bf16][linear]") {
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
