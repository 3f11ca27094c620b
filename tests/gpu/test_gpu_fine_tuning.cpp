// A frozen or slower backbone on a GPU against the CPU reference: the frozen
// layers' forward in inference mode inside a training step (NCHW and NHWC,
// FP32 and bf16), backward stopping at the classifier, and the fused SGD
// kernel's scaled learning rate.
#include <catch2/catch.hpp>

#include "distributed/replica_manager.h"
#include "gpu_compare.h"
#include "layers/graph.h"
#include "support/layer_harness.h"
#include "support/replica_models.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {
const Shape sample{3, 8, 8};
}  // namespace

TEST_CASE("gpu training with a frozen or scaled backbone equals the cpu reference", "[gpu][fine-tuning]") {
  const bool frozen = GENERATE(true, false);
  const std::string format = GENERATE(std::string("nchw"), std::string("nhwc"));
  const bool bf16 = GENERATE(false, true);
  INFO((frozen ? "frozen" : "scaled 0.1") << ", " << format << (bf16 ? ", bf16" : ", fp32"));
  ReplicaOptions gpu_options, cpu_options;
  gpu_options.context = reference_options();
  gpu_options.context.memory_format = format == "nhwc" ? MemoryFormat::nhwc : MemoryFormat::nchw;
  if (bf16) gpu_options.context.precision = cpu_options.context.precision = Precision::bf16;
  // Two replicas where the backbone is frozen: its batch norm then uses the
  // running statistics, so the split does not change the result; a training
  // batch norm normalises each replica's slice alone (no --sync-bn) and is compared on one.
  const std::vector<Device> devices = frozen ? std::vector<Device>{Device::cuda(0), Device::cuda(0)}
                                             : std::vector<Device>{Device::cuda(0)};
  ReplicaManager gpu(small_cnn_for_fine_tuning(sample, 5, frozen), devices, gpu_options);
  ReplicaManager cpu(small_cnn_for_fine_tuning(sample, 5, frozen), {Device::cpu()}, cpu_options);
  SgdConfig sgd{0.9f, 5e-3f, false};
  sgd.backbone_elements = static_cast<Graph&>(cpu.model(0)).head_param_offset();
  sgd.backbone_lr_scale = frozen ? 0.0f : 0.1f;
  const std::vector<float> params_before = gpu.model(0).arenas().params.to_vector();
  const std::vector<float> state_before = gpu.model(0).state_arena().to_vector();
  for (int step = 0; step < 4; ++step) {
    HostBatch batch = pinned_batch(12, sample, 40 + step);
    const StepMetrics g = gpu.train_step(batch, 0.05f, sgd);
    const StepMetrics c = cpu.train_step(batch, 0.05f, sgd);
    REQUIRE(g.loss_sum == Approx(c.loss_sum).epsilon(bf16 ? 1e-2 : 1e-5));
  }
  const std::vector<float> params = gpu.model(0).arenas().params.to_vector();
  if (frozen) {
    for (int64_t i = 0; i < sgd.backbone_elements; ++i) REQUIRE(params[i] == params_before[i]);
    REQUIRE(gpu.model(0).state_arena().to_vector() == state_before);
  }
  REQUIRE(params[sgd.backbone_elements] != params_before[sgd.backbone_elements]);
  if (bf16) {
    require_normwise_close(params, cpu.model(0).arenas().params.to_vector(), 1e-2, "parameters");
    require_normwise_close(gpu.model(0).state_arena().to_vector(), cpu.model(0).state_arena().to_vector(), 1e-2,
                           "running statistics");
  } else {
    require_close(params, cpu.model(0).arenas().params.to_vector(), 1e-4, 1e-6);
    require_close(gpu.model(0).state_arena().to_vector(), cpu.model(0).state_arena().to_vector(), 1e-4, 1e-6);
  }
}
