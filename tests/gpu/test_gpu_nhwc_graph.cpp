// Training with channels-last activations (ContextOptions::memory_format
// nhwc) on GPU replicas: cuDNN's NHWC convolutions with KRSC filter copies,
// the NHWC batch-norm, pooling and element-wise kernels, flatten's transpose.
// An NHWC run must end where the NCHW run on the same devices does, within
// the rounding of a different summation order: cuDNN picks other algorithms
// for NHWC on a real GPU, so the check is a tolerance, not bits:
// parameters, momentum and running statistics within 1e-4 of (|value| + the
// tensor's RMS), losses within 1e-4 relative, held-out logits as parameters.
// Both runs in strict FP32 (reference_options), on 1 and 2 devices.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "gpu_compare.h"
#include "runtime/device.h"
#include "support/format_runs.h"
#include "support/layer_harness.h"
#include "support/replica_models.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

FormatRun train_on_gpus(const std::string& name, const Shape& sample, int devices, MemoryFormat format) {
  ReplicaOptions options;
  options.context = reference_options();
  options.context.memory_format = format;
  return train_in_format(name, sample, cuda_devices(devices), options);
}

void require_close_runs(const FormatRun& nhwc, const FormatRun& nchw) {
  const RunOutcome &a = nhwc.outcome, &b = nchw.outcome;
  REQUIRE(a.metrics.size() == b.metrics.size());
  for (size_t s = 0; s < a.metrics.size(); ++s) {
    INFO("step " << s);
    REQUIRE(a.metrics[s].count == b.metrics[s].count);
    REQUIRE(a.metrics[s].loss_sum == Approx(b.metrics[s].loss_sum).epsilon(1e-4));
    require_close_scaled(nhwc.logits[s], nchw.logits[s], 1e-4, "held-out logits");
  }
  require_close_scaled(a.params, b.params, 1e-4, "parameters");
  require_close_scaled(a.momentum, b.momentum, 1e-4, "momentum");
  require_close_scaled(a.state, b.state, 1e-4, "running statistics");
}

}  // namespace

TEST_CASE("simple-cnn small-cnn and resnet20 train in nhwc on gpu replicas as in nchw", "[gpu][nhwc][replica]") {
  const int most = std::min(cuda_device_count(), 2);
  for (int devices = 1; devices <= most; ++devices)
    for (std::string name : {"simple-cnn", "small-cnn", "resnet20"}) {
      INFO(name << " on " << devices << " device(s)");
      const Shape sample = name == "resnet20" ? Shape{3, 8, 8} : Shape{1, 12, 12};
      const FormatRun nchw = train_on_gpus(name, sample, devices, MemoryFormat::nchw);
      const FormatRun nhwc = train_on_gpus(name, sample, devices, MemoryFormat::nhwc);
      REQUIRE(nhwc.activation_format == MemoryFormat::nhwc);
      require_close_runs(nhwc, nchw);
    }
}
