#pragma once
// timm's moving average of the weights (ModelEmaV3 with its warm-up, written
// out by tests/torch/ema_oracle.py into tests/golden/ema.safetensors) over
// torch.optim.SGD's and torch.optim.AdamW's steps on fixed weights and
// gradients, replayed through lockstep's fused optimizer step (which moves
// the average in the same pass) on one context: the CPU twin, or a GPU's
// kernel. Every step's weights and average are compared with the oracle's
// (within 1e-6 relative, support/adamw_torch.h's require_close).
#include "ops/sgd.h"
#include "runtime/context.h"

namespace lockstep::testing {

struct EmaReplay {
  Optimizer optimizer = Optimizer::sgd;
  bool bf16_copy = false;       // arenas with the bf16 weight copy: the average stays the fp32 weights'
  bool step_on_device = false;  // lr and step read from device memory, as in a replayed CUDA graph (GPU only)
};

// REQUIREs every step against the oracle's; returns how many steps were compared.
int replay_torch_ema(Context& ctx, const EmaReplay& how);
// The running statistics' average (ops::ema_average) on the stored values,
// every step REQUIREd against the oracle's; returns how many steps were compared.
int replay_torch_ema_statistics(Context& ctx, bool step_on_device);

}  // namespace lockstep::testing
