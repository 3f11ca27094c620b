#include "ops/loss.h"

#include "base/error.h"
#include "ops/dispatch.h"
#include "kernels/cpu/loss_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/loss_cuda.h"
#endif

namespace lockstep::ops {

void check_labels(const Tensor& labels, int64_t classes) {
  std::vector<int32_t> host = labels.to_label_vector();
  for (size_t i = 0; i < host.size(); ++i)
    LS_CHECK(host[i] >= 0 && host[i] < classes, "label ", host[i], " of sample ", i, " is outside [0, ", classes,
             ")");
}

StepMetrics softmax_cross_entropy(Context& ctx, const Tensor& logits, const Tensor& labels, float scale,
                                  Tensor* logits_grad) {
  LS_CHECK(logits.shape().rank() == 2, "softmax_cross_entropy: logits must be [N, classes], got ",
           logits.shape().str());
  int64_t rows = logits.dim(0);
  int classes = static_cast<int>(logits.dim(1));
  LS_CHECK(labels.numel() == rows, "softmax_cross_entropy: ", labels.numel(), " labels for ", rows, " rows");
  if (logits_grad)
    LS_CHECK(logits_grad->shape() == logits.shape(), "softmax_cross_entropy: gradient ", logits_grad->shape().str(),
             " for logits ", logits.shape().str());
  StepMetrics m;
  m.count = rows;
  if (rows == 0) return m;
  float* grad = logits_grad ? logits_grad->data() : nullptr;
  LossSums sums = dispatch(
      "softmax_cross_entropy", ctx,
      [&] {
        check_labels(labels, classes);
        return cpu::softmax_cross_entropy(logits.data(), labels.labels(), rows, classes, scale, grad);
      },
      LS_CUDA_TWIN(gpu, {
        DeviceGuard guard(gpu.device);  // the host waits for the result anyway: the guard costs nothing that matters
        cuda::LossScratch scratch{gpu.reduce_scratch, CudaState::reduce_scratch_bytes, gpu.readback,
                                  CudaState::readback_bytes};
        return cuda::softmax_cross_entropy(gpu.compute_stream, scratch, logits.data(), labels.labels(), rows, classes,
                                           scale, grad);
      }));
  m.loss_sum = sums.loss_sum;
  m.correct = sums.correct;
  return m;
}

}  // namespace lockstep::ops
