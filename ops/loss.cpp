#include "ops/loss.h"

#include "base/error.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/stored_type.h"
#include "kernels/cpu/loss_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/loss_cuda.h"
#endif

namespace lockstep::ops {

bool mixed_targets(const Tensor& labels) {
  return labels.shape().rank() == 2 && labels.dim(1) == kMixedTargetWidth;
}

void check_labels(const Tensor& labels, int64_t classes) {
  std::vector<int32_t> host = labels.to_label_vector();
  if (!mixed_targets(labels)) {
    for (size_t i = 0; i < host.size(); ++i)
      LS_CHECK(host[i] >= 0 && host[i] < classes, "label ", host[i], " of sample ", i, " is outside [0, ", classes,
               ")");
    return;
  }
  for (size_t i = 0; i < host.size() / kMixedTargetWidth; ++i) {
    const MixedTarget t = mixed_target_of(host.data() + i * kMixedTargetWidth);
    for (int32_t label : {t.a, t.b})
      LS_CHECK(label >= 0 && label < classes, "label ", label, " of sample ", i, " is outside [0, ", classes, ")");
    LS_CHECK(t.lam >= 0.0f && t.lam <= 1.0f, "mixing weight ", t.lam, " of sample ", i, " is outside [0, 1]");
  }
}

namespace {
int check_loss_shapes(const Tensor& logits, const Tensor& labels, const Tensor* logits_grad, float smoothing) {
  LS_CHECK(smoothing >= 0.0f && smoothing < 1.0f, "softmax_cross_entropy: label smoothing ", smoothing,
           " outside [0, 1)");
  LS_CHECK(logits.shape().rank() == 2, "softmax_cross_entropy: logits must be [N, classes], got ",
           logits.shape().str());
  LS_CHECK(labels.shape().rank() == 1 || mixed_targets(labels),
           "softmax_cross_entropy: labels must be [N] or mixed targets [N, 3], got ", labels.shape().str());
  LS_CHECK(labels.dim(0) == logits.dim(0), "softmax_cross_entropy: ", labels.dim(0), " labels for ", logits.dim(0),
           " rows");
  if (logits_grad)
    LS_CHECK(logits_grad->shape() == logits.shape(), "softmax_cross_entropy: gradient ", logits_grad->shape().str(),
             " for logits ", logits.shape().str());
  return static_cast<int>(logits.dim(1));
}

LossSums cpu_loss(const Tensor& logits, const Tensor& labels, int classes, float scale, float* grad, float smoothing) {
  check_labels(labels, classes);
  return cpu::softmax_cross_entropy(logits.data(), labels.labels(), logits.dim(0), classes, scale, grad, smoothing,
                                    mixed_targets(labels));
}
}  // namespace

StepMetrics softmax_cross_entropy(Context& ctx, const Tensor& logits, const Tensor& labels, float scale,
                                  Tensor* logits_grad, float label_smoothing) {
  const int classes = check_loss_shapes(logits, labels, logits_grad, label_smoothing);
  [[maybe_unused]] const DType dtype = check_stored("softmax_cross_entropy", ctx, {&logits, logits_grad});
  int64_t rows = logits.dim(0);
  StepMetrics m;
  m.count = rows;
  if (rows == 0) return m;
  LossSums sums = dispatch(
      "softmax_cross_entropy", ctx,
      [&] { return cpu_loss(logits, labels, classes, scale, elems<float>(logits_grad), label_smoothing); },
      LS_CUDA_TWIN(gpu, {
        DeviceGuard guard(gpu.device);  // the host waits for the result anyway: the guard costs nothing that matters
        cuda::LossScratch scratch{gpu.reduce_scratch, CudaState::reduce_scratch_bytes, gpu.readback,
                                  CudaState::readback_bytes};
        return with_stored_type(dtype, [&](auto tag) {
          using T = decltype(tag);
          return cuda::softmax_cross_entropy(gpu.compute_stream, scratch, elems<T>(logits), labels.labels(), rows,
                                             classes, scale, elems<T>(logits_grad), label_smoothing,
                                             mixed_targets(labels));
        });
      }));
  m.loss_sum = sums.loss_sum;
  m.correct = sums.correct;
  return m;
}

MetricsReadback softmax_cross_entropy_queued(Context& ctx, const Tensor& logits, const Tensor& labels, float scale,
                                             Tensor* logits_grad, float label_smoothing) {
  const int classes = check_loss_shapes(logits, labels, logits_grad, label_smoothing);
  [[maybe_unused]] const DType dtype = check_stored("softmax_cross_entropy", ctx, {&logits, logits_grad});
  const int64_t rows = logits.dim(0);
  return dispatch(
      "softmax_cross_entropy", ctx,
      [&]() -> MetricsReadback {
        StepMetrics m;
        m.count = rows;
        if (rows > 0) {
          LossSums sums = cpu_loss(logits, labels, classes, scale, elems<float>(logits_grad), label_smoothing);
          m.loss_sum = sums.loss_sum;
          m.correct = sums.correct;
        }
        return [m] { return m; };
      },
      LS_CUDA_TWIN(gpu, -> MetricsReadback {
        static_assert(cuda::kLossResultBytes <= CudaState::step_metrics_bytes);
        cuda::LossScratch scratch{gpu.reduce_scratch, CudaState::reduce_scratch_bytes, nullptr, 0};
        auto* result = static_cast<cuda::LossResult*>(gpu.step_metrics);
        auto* host = static_cast<cuda::LossResult*>(gpu.step_metrics_host);
        with_stored_type(dtype, [&](auto tag) {
          using T = decltype(tag);
          cuda::softmax_cross_entropy_queued(gpu.compute_stream, scratch, elems<T>(logits), labels.labels(), rows,
                                             classes, scale, elems<T>(logits_grad), result, host, label_smoothing,
                                             mixed_targets(labels));
        });
        // The labels tensor is kept alive for the bad-label message.
        return [state = &gpu, host, labels, rows, classes] {
          DeviceGuard guard(state->device);
          cuda_synchronize_compute(*state);
          LossSums sums = cuda::loss_sums_of(state->compute_stream, *host, labels.labels(), classes,
                                             mixed_targets(labels));
          StepMetrics m;
          m.count = rows;
          m.loss_sum = sums.loss_sum;
          m.correct = sums.correct;
          return m;
        };
      }));
}

}  // namespace lockstep::ops
