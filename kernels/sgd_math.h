#pragma once
// SGD with momentum, PyTorch semantics (dampening 0):
//   g += wd * w;  v = mu * v + g;  w -= lr * (nesterov ? g + mu * v : v);  g = 0.
// Written once for the CPU loop and the fused CUDA kernel.
#include "kernels/host_device.h"

namespace lockstep {

struct SgdHyper {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;  // applied only to segments marked decay
  bool nesterov = false;
};

LS_HD void sgd_momentum_element(float& w, float& g, float& v, float lr, float momentum, float decay, bool nesterov) {
  float grad = g + decay * w;
  float velocity = momentum * v + grad;
  v = velocity;
  w -= lr * (nesterov ? grad + momentum * velocity : velocity);
  g = 0.0f;
}

}  // namespace lockstep
