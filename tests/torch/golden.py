"""Golden end-to-end runs: PyTorch trains resnet20 and simple-cnn (dropout off)
for a few SGD steps from its own initial weights on fixed random batches;
tests/cpu/test_golden.cpp loads those weights into our model by name, takes the
same steps through the replica manager and compares every loss and the final
parameters and running statistics.

File contents: "init.<name>" and "final.<name>" for every parameter and BN
running statistic (our names: the PyTorch models of bench/peers/pytorch_train.py
are built to match; num_batches_tracked is dropped), "batch<k>.images" and
"batch<k>.labels" (as floats) for each step, "loss" [steps], the mean
cross-entropy of each step's batch before its update, and "grad0.<name>" for
every parameter: the first step's gradient (before weight decay), which points
at the layer when the end results disagree. The hyper-parameters are in the
metadata, so the C++ side takes them from here.

Why the runs are guarded. A ReLU network trained in float32 is not a
continuous function of its rounding: an activation within rounding distance of
zero may be kept by one implementation and dropped by the other, and that one
pixel changes the gradient of the weights around it by several per cent
(resnet20 with 8 samples of 3x16x16 at lr 0.05 has ~2 million ReLU inputs over
5 steps, and its final parameters differ by 0.5% of their scale between
PyTorch in float32 and in float64). So each configuration is first trained in
float64 as well, and the script refuses one where (1) a ReLU input comes
within `margin` of zero in any step, or (2) the float32 and float64 results
differ by more than 1e-5 of a tensor's scale (they differ by ~3e-6 when no
ReLU flips, by 1e-4 to 10% when one does). make_references.py names seeds that
pass; the checks stop a changed seed, shape or PyTorch version from turning the
golden test into a test of rounding luck.
"""

import collections

import torch
import torch.nn as nn
import torch.nn.functional as F

from pytorch_train import build_model, make_optimizer
from safetensors_io import write_safetensors

LR, MOMENTUM, WEIGHT_DECAY = 0.05, 0.9, 5e-4
CLASSES = 10


def named_tensors(model):
    return collections.OrderedDict(
        (k, v.detach().clone()) for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked"))


def initial_model(model_name, in_shape, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    model = build_model(model_name, in_shape, CLASSES, dropout=False)
    with torch.no_grad():
        # Batch norm away from its identity start, so a scale, shift or
        # running statistic that is not loaded (or loaded into the wrong
        # layer) shows from the first step.
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.uniform_(-0.2, 0.2, generator=gen)
                m.running_mean.normal_(0.0, 0.1, generator=gen)
                m.running_var.uniform_(0.5, 1.5, generator=gen)
    return model, gen


def train(model_name, in_shape, batch, steps, seed, dtype):
    """Returns the tensors to write and the smallest |ReLU input| seen."""
    model, gen = initial_model(model_name, in_shape, seed)
    model = model.to(dtype)
    smallest = [float("inf")]

    def record(module, inputs, output):
        smallest[0] = min(smallest[0], inputs[0].detach().abs().min().item())

    for m in model.modules():
        if isinstance(m, nn.ReLU):
            m.register_forward_hook(record)
    out = collections.OrderedDict()
    for k, v in named_tensors(model).items():
        out["init." + k] = v
    model.train()
    opt = make_optimizer(model, LR, MOMENTUM, WEIGHT_DECAY)
    losses = []
    for s in range(steps):
        images = torch.randn(batch, *in_shape, generator=gen)
        labels = torch.randint(0, CLASSES, (batch,), generator=gen)
        loss = F.cross_entropy(model(images.to(dtype)), labels)
        opt.zero_grad()
        loss.backward()
        if s == 0:
            for k, p in model.named_parameters():
                out["grad0." + k] = p.grad.detach().clone()
        opt.step()
        out["batch%d.images" % s], out["batch%d.labels" % s] = images, labels.float()
        losses.append(loss.item())
    out["loss"] = torch.tensor(losses, dtype=torch.float64)
    for k, v in named_tensors(model).items():
        out["final." + k] = v
    return out, smallest[0]


def write(path, model_name, in_shape, batch, steps, seed, margin):
    ref, _ = train(model_name, in_shape, batch, steps, seed, torch.float32)
    exact, smallest = train(model_name, in_shape, batch, steps, seed, torch.float64)
    what = "%s %s, batch %d, seed %d" % (model_name, in_shape, batch, seed)
    if smallest < margin:
        raise SystemExit("golden %s: a ReLU input of %.3g comes within the margin %.3g of zero, so float32 "
                         "implementations may disagree on it; pick another seed" % (what, smallest, margin))
    for k, want in exact.items():
        if k.startswith("batch"):
            continue
        scale = want.abs().max().item()
        err = (ref[k].double() - want).abs().max().item()
        if err > 1e-5 * scale + 1e-12:
            raise SystemExit("golden %s: %s differs by %.3g (of %.3g) between float32 and float64: the run is "
                             "too sensitive to rounding to be a golden test; pick another seed" % (what, k, err, scale))
    meta = {
        "model": model_name, "input": "x".join(str(d) for d in in_shape), "classes": CLASSES, "batch": batch,
        "steps": steps, "lr": repr(LR), "momentum": repr(MOMENTUM), "weight_decay": repr(WEIGHT_DECAY),
        "relu_margin": "%.3g" % smallest, "torch_version": torch.__version__,
    }
    write_safetensors(path, ref, meta)
