#include "ops/loss.h"

#include "base/error.h"
#include "kernels/cpu/loss_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/cuda/cuda_context.h"
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
  if (ctx.device().is_cpu()) {
    check_labels(labels, classes);
    auto sums = cpu::softmax_cross_entropy(logits.data(), labels.labels(), rows, classes, scale,
                                           logits_grad ? logits_grad->data() : nullptr);
    m.loss_sum = sums.loss_sum;
    m.correct = sums.correct;
    return m;
  }
#if LOCKSTEP_WITH_CUDA
  CudaState& state = *ctx.cuda();
  DeviceGuard guard(state.device);  // the host waits for the result anyway: the guard costs nothing that matters
  cuda::LossScratch scratch{state.reduce_scratch, CudaState::reduce_scratch_bytes, state.readback,
                            CudaState::readback_bytes};
  auto sums = cuda::softmax_cross_entropy(state.compute_stream, scratch, logits.data(), labels.labels(), rows, classes, scale,
                                          logits_grad ? logits_grad->data() : nullptr);
  m.loss_sum = sums.loss_sum;
  m.correct = sums.correct;
  return m;
#else
  LS_FAIL("softmax_cross_entropy on ", ctx.device().str(), ": this build has no CUDA backend");
#endif
}

}  // namespace lockstep::ops
