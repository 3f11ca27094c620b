#include "ops/sgd.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "ops/dispatch.h"
#include "kernels/cpu/sgd_cpu.h"
#include "kernels/ema_math.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/sgd_cuda.h"
#endif

namespace lockstep {

void ops::sgd_step(Context& ctx, ParameterArenas& arenas, const SgdConfig& config, float lr, const float* lr_on_device) {
  optimizer_step(ctx, arenas, config, lr, 0, lr_on_device);
}

namespace {
// AdamW's own hyper-parameters, checked; the hyper-parameters told.
void set_adamw(SgdHyper& hyper, const SgdConfig& config, const ParameterArenas& arenas) {
  LS_CHECK(arenas.exp_avg_sq.defined() && arenas.exp_avg_sq.numel() == arenas.momentum.numel(),
           "optimizer_step: AdamW on arenas without its second-moment arena (ParameterArenas::add_adamw_state)");
  LS_CHECK(config.beta1 >= 0.0f && config.beta1 < 1.0f && config.beta2 >= 0.0f && config.beta2 < 1.0f,
           "optimizer_step: AdamW's betas ", config.beta1, ", ", config.beta2, " do not lie in [0, 1)");
  LS_CHECK(config.eps > 0.0f && std::isfinite(config.eps), "optimizer_step: AdamW's eps ", config.eps,
           " is not a positive number");
  hyper.adamw = true;
  hyper.beta1 = config.beta1;
  hyper.beta2 = config.beta2;
  hyper.eps = config.eps;
  // As PyTorch: 1 - beta in double (Python's float), rounded once.
  hyper.one_minus_beta1 = float(1.0 - double(config.beta1));
  hyper.one_minus_beta2 = float(1.0 - double(config.beta2));
}
void check_ema_decay(double decay, const char* what) {
  LS_CHECK(decay > 0.0 && decay < 1.0, what, ": the moving average's decay ", decay, " does not lie in (0, 1)");
}
}  // namespace

void ops::optimizer_step(Context& ctx, ParameterArenas& arenas, const SgdConfig& config, float lr, uint64_t step,
                         const float* lr_on_device, const uint64_t* step_on_device) {
  LS_CHECK(arenas.momentum.defined(), "sgd_step on arenas without a momentum buffer");
  LS_CHECK(!step_on_device || ctx.device().is_cuda(), "optimizer_step: a step in device memory on ",
           ctx.device().str());
  LS_CHECK(lr >= 0.0f && config.momentum >= 0.0f && config.weight_decay >= 0.0f && config.clip_grad_norm >= 0.0f,
           "sgd_step: negative lr ", lr, ", momentum ", config.momentum, ", weight decay ", config.weight_decay,
           " or gradient clipping norm ", config.clip_grad_norm);
  LS_CHECK(arenas.params.device() == ctx.device(), "sgd_step: arenas on ", arenas.params.device().str(),
           ", context on ", ctx.device().str());
  LS_CHECK(!lr_on_device || ctx.device().is_cuda(), "sgd_step: a learning rate in device memory on ",
           ctx.device().str());
  const auto& segments = arenas.segments();
  LS_CHECK(std::isfinite(config.backbone_lr_scale) && config.backbone_lr_scale >= 0.0f,
           "sgd_step: the backbone's learning-rate scale ", config.backbone_lr_scale, " is not a number >= 0");
  LS_CHECK(config.backbone_elements == 0 || config.backbone_elements == arenas.total() ||
               std::any_of(segments.begin(), segments.end(),
                           [&](const ArenaSegment& seg) { return seg.offset == config.backbone_elements; }),
           "sgd_step: the backbone's ", config.backbone_elements, " elements do not end where a parameter of the ",
           arenas.total(), "-element arena starts");
  const bool bf16_copy = arenas.params_bf16.defined();
  LS_CHECK(!bf16_copy || (arenas.params_bf16.numel() == arenas.total() && arenas.params_bf16.dtype() == DType::bf16 &&
                          arenas.params_bf16.device() == ctx.device()),
           "sgd_step: the bf16 copy of the weights is not a bf16 tensor of ", arenas.total(), " elements on ",
           ctx.device().str());
  uint16_t* weights_bf16 = bf16_copy ? arenas.params_bf16.bf16_data() : nullptr;
  SgdHyper hyper{lr, config.momentum, config.weight_decay, config.nesterov};
  hyper.lr_on_device = lr_on_device;
  hyper.scaled_elements = config.backbone_elements;
  hyper.lr_scale = config.backbone_lr_scale;
  hyper.step = step;
  hyper.step_on_device = step_on_device;
  if (config.optimizer == Optimizer::adamw) set_adamw(hyper, config, arenas);
  float* exp_avg_sq = hyper.adamw ? arenas.exp_avg_sq.data() : nullptr;
  float* ema = nullptr;
  if (config.ema_decay != 0.0) {
    check_ema_decay(config.ema_decay, "optimizer_step");
    LS_CHECK(arenas.ema.defined() && arenas.ema.numel() == arenas.params.numel(),
             "optimizer_step: a moving average of the weights on arenas without one (ParameterArenas::add_ema)");
    hyper.ema_decay = config.ema_decay;
    ema = arenas.ema.data();
  }
  ops::dispatch(
      "sgd_step", ctx,
      [&] {
        float scale = 1.0f;
        if (config.clip_grad_norm > 0.0f) {
          scale = clip_coefficient(cpu::sum_of_squares(arenas.grads.data(), arenas.total()), config.clip_grad_norm);
          hyper.grad_scale = &scale;
        }
        cpu::sgd_momentum(arenas.params.data(), arenas.grads.data(), arenas.momentum.data(), segments.data(),
                          static_cast<int>(segments.size()), hyper, weights_bf16, exp_avg_sq, ema);
      },
      LS_CUDA_TWIN(gpu, {
        if (config.clip_grad_norm > 0.0f) {
          // The coefficient stays on the device: partial sums, then the scale after them.
          const size_t partial_bytes = cuda::clip_scale_scratch_bytes();
          char* scratch = reinterpret_cast<char*>(ctx.workspace(partial_bytes + 16));
          float* scale = reinterpret_cast<float*>(scratch + partial_bytes);
          cuda::clip_scale(gpu.compute_stream, arenas.grads.data(), arenas.total(), config.clip_grad_norm, scratch,
                           scale);
          hyper.grad_scale = scale;
        }
        cuda::sgd_momentum(gpu.compute_stream, arenas.params.data(), arenas.grads.data(), arenas.momentum.data(),
                           arenas.total(), segments, hyper, weights_bf16, exp_avg_sq, ema);
      }));
  if (bf16_copy) arenas.params_bf16_stale = false;
}

void ops::ema_average(Context& ctx, Tensor& average, const Tensor& value, double decay, uint64_t step,
                      const uint64_t* step_on_device) {
  check_ema_decay(decay, "ema_average");
  LS_CHECK(average.numel() == value.numel() && average.device() == ctx.device() && value.device() == ctx.device(),
           "ema_average: an average of ", average.numel(), " values on ", average.device().str(), " for ",
           value.numel(), " on ", value.device().str(), ", context on ", ctx.device().str());
  LS_CHECK(!step_on_device || ctx.device().is_cuda(), "ema_average: a step in device memory on ", ctx.device().str());
  ops::dispatch(
      "ema_average", ctx,
      [&] { cpu::ema_average(average.data(), value.data(), value.numel(), ema_weight(decay, step)); },
      LS_CUDA_TWIN(gpu, {
        cuda::ema_average(gpu.compute_stream, average.data(), value.data(), value.numel(), decay, step,
                          step_on_device);
      }));
}

}  // namespace lockstep
