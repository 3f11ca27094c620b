"""PyTorch's torch.optim.AdamW on fixed weights and gradients: tests/cpu/test_adamw.cpp
and tests/gpu/test_gpu_adamw.cpp run lockstep's fused AdamW on the same numbers
and compare every step's weights and state.

Four tensors laid out as a lockstep arena would hold them: a conv-like weight
and its bias, then a linear-like weight and its bias. The weights take weight
decay, the biases not (two parameter groups, as timm's and lockstep's rule);
the first two form the "backbone", whose learning rate is scaled by
BACKBONE_SCALE (their own groups). The learning rate changes every step (a
schedule), so the bias corrections and the decay differ each step.

Stored: "<tensor>.init", "<tensor>.grad<s>" (the gradient fed at step s),
"<tensor>.param<s>", ".exp_avg<s>", ".exp_avg_sq<s>" (after step s); the
hyper-parameters and per-step rates in the metadata.
"""

import collections

import torch

from safetensors_io import write_safetensors

SHAPES = collections.OrderedDict([("conv.weight", (4, 3, 2, 2)), ("conv.bias", (4,)),
                                  ("fc.weight", (5, 7)), ("fc.bias", (5,))])
DECAY = {"conv.weight": True, "conv.bias": False, "fc.weight": True, "fc.bias": False}
BACKBONE = ("conv.weight", "conv.bias")
BACKBONE_SCALE = 0.5
LRS = [0.01, 0.02, 0.015, 0.005, 0.01]
BETAS = (0.9, 0.999)
EPS = 1e-8
WEIGHT_DECAY = 0.05


def f32(x):
    """The value as lockstep holds it (a float32), for PyTorch's Python float."""
    return float(torch.tensor(x, dtype=torch.float32))


def write(path):
    gen = torch.Generator().manual_seed(46)
    out, meta = collections.OrderedDict(), {}
    params = collections.OrderedDict()
    for name, shape in SHAPES.items():
        params[name] = torch.randn(shape, generator=gen).requires_grad_(True)
        out[name + ".init"] = params[name].detach().clone()
    betas = (f32(BETAS[0]), f32(BETAS[1]))
    groups = [{"params": [p], "name": n, "weight_decay": f32(WEIGHT_DECAY) if DECAY[n] else 0.0}
              for n, p in params.items()]
    optimizer = torch.optim.AdamW(groups, lr=LRS[0], betas=betas, eps=f32(EPS))
    for step, lr in enumerate(LRS):
        for group in optimizer.param_groups:
            # lockstep's rate of a backbone element is the float32 product lr * scale.
            group["lr"] = f32(f32(lr) * BACKBONE_SCALE) if group["name"] in BACKBONE else f32(lr)
        for name, p in params.items():
            # Gradients of mixed sizes, a few exactly zero (padding-like elements).
            g = torch.randn(p.shape, generator=gen) * (0.1 if step % 2 else 1.0)
            g.view(-1)[0] = 0.0
            p.grad = g
            out["%s.grad%d" % (name, step)] = g.clone()
        optimizer.step()
        for name, p in params.items():
            state = optimizer.state[p]
            out["%s.param%d" % (name, step)] = p.detach().clone()
            out["%s.exp_avg%d" % (name, step)] = state["exp_avg"].clone()
            out["%s.exp_avg_sq%d" % (name, step)] = state["exp_avg_sq"].clone()
    meta["steps"] = len(LRS)
    meta["lrs"] = ",".join(repr(f32(lr)) for lr in LRS)
    meta["beta1"], meta["beta2"], meta["eps"] = repr(betas[0]), repr(betas[1]), repr(f32(EPS))
    meta["weight_decay"] = repr(f32(WEIGHT_DECAY))
    meta["backbone_scale"] = repr(BACKBONE_SCALE)
    meta["tensors"] = ",".join(SHAPES)
    meta["torch_version"] = torch.__version__
    write_safetensors(path, out, meta)
