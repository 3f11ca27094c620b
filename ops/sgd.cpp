#include "ops/sgd.h"

#include "base/error.h"
#include "ops/dispatch.h"
#include "kernels/cpu/sgd_cpu.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/sgd_cuda.h"
#endif

namespace lockstep {

void sgd_step(Context& ctx, ParameterArenas& arenas, const SgdConfig& config, float lr) {
  LS_CHECK(arenas.momentum.defined(), "sgd_step on arenas without a momentum buffer");
  LS_CHECK(lr >= 0.0f && config.momentum >= 0.0f && config.weight_decay >= 0.0f, "sgd_step: negative lr ", lr,
           ", momentum ", config.momentum, " or weight decay ", config.weight_decay);
  LS_CHECK(arenas.params.device() == ctx.device(), "sgd_step: arenas on ", arenas.params.device().str(),
           ", context on ", ctx.device().str());
  SgdHyper hyper{lr, config.momentum, config.weight_decay, config.nesterov};
  const auto& segments = arenas.segments();
  ops::dispatch(
      "sgd_step", ctx,
      [&] {
        cpu::sgd_momentum(arenas.params.data(), arenas.grads.data(), arenas.momentum.data(), segments.data(),
                          static_cast<int>(segments.size()), hyper);
      },
      LS_CUDA_TWIN(gpu, {
        cuda::sgd_momentum(gpu.compute_stream, arenas.params.data(), arenas.grads.data(), arenas.momentum.data(),
                           arenas.total(), segments, hyper);
      }));
}

}  // namespace lockstep
