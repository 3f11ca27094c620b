#pragma once
// torch.optim.AdamW's steps on fixed weights and gradients (tests/golden/
// adamw.safetensors, written by tests/torch/adamw_oracle.py), replayed through
// lockstep's fused optimizer step on one context: the CPU twin, or a GPU's
// kernel. Every step's weights, exp_avg and exp_avg_sq are compared with
// PyTorch's (within 1e-6 relative; see adamw_torch.cpp).
#include "runtime/context.h"

namespace lockstep::testing {

struct AdamwReplay {
  bool bf16_copy = false;        // arenas with the bf16 weight copy, checked against the fp32 weights each step
  bool rates_on_device = false;  // lr and step read from device memory, as in a replayed CUDA graph (GPU only)
};

// REQUIREs every step against PyTorch's; returns how many steps were compared.
int replay_torch_adamw(Context& ctx, const AdamwReplay& how);

}  // namespace lockstep::testing
