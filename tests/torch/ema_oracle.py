"""timm's exponential moving average of the weights (ModelEmaV3 with its
warm-up, as timm's train.py calls it after each optimizer step) on fixed
weights and gradients, written out in Python with torch: tests/cpu/test_ema.cpp
and tests/gpu/test_gpu_ema.cpp run lockstep's fused optimizer pass, which also
moves the average, on the same numbers and compare every step's weights and
average, and lockstep's average of the running statistics on stored values.

timm's rule (timm/utils/model_ema.py, ModelEmaV3.get_decay and
apply_update_; use_warmup=True, warmup_gamma=1, warmup_power=2/3,
min_decay=0, update_after_step=0), called with step = the updates so far:
    k = max(0, step - 1)
    decay = 0 if k == 0 else max(min(1 - (1 + k) ** -(2/3), DECAY), 0)
    ema.lerp_(value, 1 - decay)          for every tensor of the state dict
The average starts as a copy of the model (timm's deepcopy). DECAY 0.55 is
small so that six steps cover the first (a copy), the warm-up (k = 1, 2) and
the cap (k >= 3).

The four tensors of adamw_oracle.py, a conv-like weight and bias and a
linear-like weight and bias, weight decay on the weights only; trained with
torch.optim.SGD (momentum 0.9) and with torch.optim.AdamW on the same
gradients. Stored: "<tensor>.init", "<tensor>.grad<s>", "<opt>.<tensor>.param<s>"
and "<opt>.<tensor>.ema<s>" (after step s; opt sgd or adamw); "stats.init",
"stats.value<s>" (running statistics after step s) and "stats.ema<s>"; the
settings in the metadata.
"""

import collections

import torch

from safetensors_io import write_safetensors

SHAPES = collections.OrderedDict([("conv.weight", (4, 3, 2, 2)), ("conv.bias", (4,)),
                                  ("fc.weight", (5, 7)), ("fc.bias", (5,))])
DECAYED = {"conv.weight": True, "conv.bias": False, "fc.weight": True, "fc.bias": False}
STATS = 6
DECAY = 0.55
LRS = [0.05, 0.1, 0.075, 0.025, 0.05, 0.04]
MOMENTUM = 0.9
WEIGHT_DECAY = 0.05
WARMUP_POWER = 2 / 3


def f32(x):
    """The value as lockstep holds it (a float32), for PyTorch's Python float."""
    return float(torch.tensor(x, dtype=torch.float32))


def timm_decay(step):
    """ModelEmaV3.get_decay(step) with use_warmup=True, as timm writes it."""
    k = max(0, step - 0 - 1)
    if k <= 0:
        return 0.0
    decay = 1 - (1 + k / 1.0) ** -WARMUP_POWER
    return max(min(decay, DECAY), 0.0)


def make_optimizer(kind, params):
    groups = [{"params": [p], "weight_decay": f32(WEIGHT_DECAY) if DECAYED[n] else 0.0} for n, p in params.items()]
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=LRS[0], momentum=f32(MOMENTUM))
    # lockstep's defaults as it holds them (floats).
    return torch.optim.AdamW(groups, lr=LRS[0], betas=(f32(0.9), f32(0.999)), eps=f32(1e-8))


def write(path):
    gen = torch.Generator().manual_seed(462)
    out, meta = collections.OrderedDict(), {}
    init = collections.OrderedDict((n, torch.randn(shape, generator=gen)) for n, shape in SHAPES.items())
    for name, value in init.items():
        out[name + ".init"] = value.clone()
    grads = []
    for step in range(len(LRS)):
        grads.append({n: torch.randn(shape, generator=gen) * (0.1 if step % 2 else 1.0) for n, shape in SHAPES.items()})
        for name, g in grads[-1].items():
            out["%s.grad%d" % (name, step)] = g.clone()
    for kind in ("sgd", "adamw"):
        params = collections.OrderedDict((n, v.clone().requires_grad_(True)) for n, v in init.items())
        ema = collections.OrderedDict((n, v.clone()) for n, v in init.items())
        optimizer = make_optimizer(kind, params)
        for step, lr in enumerate(LRS):
            for group in optimizer.param_groups:
                group["lr"] = f32(lr)
            for name, p in params.items():
                p.grad = grads[step][name].clone()
            optimizer.step()
            weight = 1.0 - timm_decay(step + 1)  # timm's train.py: step = num_updates after the increment
            with torch.no_grad():
                for name, p in params.items():
                    ema[name].lerp_(p, weight)
            for name, p in params.items():
                out["%s.%s.param%d" % (kind, name, step)] = p.detach().clone()
                out["%s.%s.ema%d" % (kind, name, step)] = ema[name].clone()
    # The running statistics: the values the combination leaves after each
    # step (any numbers will do: the average does not look at where they come from).
    stats = torch.rand(STATS, generator=gen) + 0.5
    out["stats.init"] = stats.clone()
    stats_ema = stats.clone()
    for step in range(len(LRS)):
        value = torch.rand(STATS, generator=gen) * 4.0 - 1.0
        stats_ema.lerp_(value, 1.0 - timm_decay(step + 1))
        out["stats.value%d" % step] = value
        out["stats.ema%d" % step] = stats_ema.clone()
    meta["steps"] = len(LRS)
    meta["decay"] = repr(DECAY)
    meta["lrs"] = ",".join(repr(f32(lr)) for lr in LRS)
    meta["momentum"] = repr(f32(MOMENTUM))
    meta["weight_decay"] = repr(f32(WEIGHT_DECAY))
    meta["tensors"] = ",".join(SHAPES)
    meta["torch_version"] = torch.__version__
    write_safetensors(path, out, meta)
