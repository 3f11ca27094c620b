#pragma once
// torch.optim.AdamW's steps on fixed weights and gradients (tests/golden/
// adamw.safetensors, written by tests/torch/adamw_oracle.py), replayed through
// lockstep's fused optimizer step on one context: the CPU twin, or a GPU's
// kernel. Every step's weights, exp_avg and exp_avg_sq are compared with
// PyTorch's (within 1e-6 relative; see adamw_torch.cpp).
#include <string>
#include <vector>

#include "ops/sgd.h"
#include "runtime/context.h"
#include "training/safetensors.h"

namespace lockstep::testing {

struct AdamwReplay {
  bool bf16_copy = false;        // arenas with the bf16 weight copy, checked against the fp32 weights each step
  bool rates_on_device = false;  // lr and step read from device memory, as in a replayed CUDA graph (GPU only)
};

// REQUIREs every step against PyTorch's; returns how many steps were compared.
int replay_torch_adamw(Context& ctx, const AdamwReplay& how);

// REQUIREs |got - want| <= 1e-6 |want| + 1e-7 max|want| element by element
// (the floor: values near zero that are sums of terms of opposite signs).
void require_close(const std::vector<float>& got, const HostTensor& want, const std::string& what);
// "a,b,c" -> {"a", "b", "c"}: the lists the oracles keep in their metadata.
std::vector<std::string> split(const std::string& text);

// Arenas (with momentum) of an oracle's tensors `names` at their stored
// "<name>.init" values, the weights (names with "weight") decayed, the biases
// not; with the bf16 weight copy when asked.
ParameterArenas stored_arenas(const SafetensorsFile& file, const std::vector<std::string>& names, Device device,
                              bool bf16_copy);
// One ops::optimizer_step with the stored gradients "<name>.grad<step>", at
// rate `lr`: given by the host, or (`on_device`) read from device memory as a
// replayed CUDA graph reads them, the host saying another step. Waits for it,
// then REQUIREs the gradients cleared and the bf16 copy (where the arenas
// have one) the updated weights rounded.
void stored_step(Context& ctx, ParameterArenas& arenas, const SafetensorsFile& file,
                 const std::vector<std::string>& names, const SgdConfig& config, float lr, size_t step,
                 bool on_device);

}  // namespace lockstep::testing
