// Softmax cross-entropy on the GPU with bf16 logits: the bound of bf16_kernel_check.h.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "bf16_kernel_check.h"
#include "ops/loss.h"

using namespace lockstep;
using namespace lockstep::testing::bf16_kernels;
using lockstep::testing::random_values;

TEST_CASE("bf16 softmax cross-entropy on the gpu: fp32 loss, bf16 gradient", "[gpu][bf16][loss]") {
  Context gpu(Device::cuda(0));
  Context cpu(Device::cpu());
  for (int64_t classes : {3, 10, 100}) {
    INFO("classes " << classes);
    const int64_t rows = 67;
    const Shape s{rows, classes};
    const auto z = rounded(random_values(s.numel(), 20 + classes, -4.0f, 4.0f));
    std::vector<int32_t> labels(rows);
    for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 7) % classes);
    Tensor gz = bf16_on_gpu(s, z), gg = bf16_on_gpu(s, std::vector<float>(s.numel()));
    Tensor cz = f32_on_cpu(s, z), cg = f32_on_cpu(s, std::vector<float>(s.numel()));
    const StepMetrics gm = ops::softmax_cross_entropy(gpu, gz, Tensor::from_labels(labels, Device::cuda(0)),
                                                      1.0f / rows, &gg);
    const StepMetrics cm = ops::softmax_cross_entropy(cpu, cz, Tensor::from_labels(labels), 1.0f / rows, &cg);
    REQUIRE(gm.correct == cm.correct);
    REQUIRE(std::fabs(gm.loss_sum - cm.loss_sum) <= 1e-5 * std::fabs(cm.loss_sum));
    require_bound(gg.to_vector(), cg.to_vector(), "gradient");
  }
}
