"""PyTorch's results for lockstep's ops on random inputs: tests/cpu/test_torch_oracle.cpp
runs our ops on the same inputs and compares.

Each case "<case>.<tensor>" holds the inputs, the upstream gradient "dy" and
PyTorch's output and gradients; hyper-parameters sit in the metadata
("<case>.stride" ...). Odd shapes on purpose: batch 3, channel counts that are
not powers of two, non-square images, strides that do not divide the image.
"""

import collections

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors


def leaf(t):
    return t.detach().clone().requires_grad_(True)


def conv_case(out, meta, name, gen, batch, cin, cout, h, w, kernel, stride, padding, bias):
    x = leaf(torch.randn(batch, cin, h, w, generator=gen))
    wt = leaf(torch.randn(cout, cin, kernel, kernel, generator=gen) * 0.3)
    b = leaf(torch.randn(cout, generator=gen)) if bias else None
    y = F.conv2d(x, wt, b, stride=stride, padding=padding)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    out[name + ".x"], out[name + ".w"], out[name + ".dy"] = x, wt, dy
    out[name + ".y"], out[name + ".dx"], out[name + ".dw"] = y, x.grad, wt.grad
    if bias:
        out[name + ".b"], out[name + ".db"] = b, b.grad
    meta[name + ".stride"], meta[name + ".padding"], meta[name + ".bias"] = stride, padding, int(bias)


def batchnorm_cases(out, gen):
    n, c, h, w = 3, 5, 7, 5
    # Channel means far from zero (up to 20 standard deviations) catch a
    # variance computed as E[x^2] - mean^2.
    shift = torch.tensor([0.0, 3.0, -2.0, 20.0, 0.5]).view(1, c, 1, 1)
    x = leaf(torch.randn(n, c, h, w, generator=gen) * 1.5 + shift)
    gamma = leaf(torch.rand(c, generator=gen) + 0.5)
    beta = leaf(torch.randn(c, generator=gen) * 0.2)
    running_mean = torch.randn(c, generator=gen) * 0.5
    running_var = torch.rand(c, generator=gen) + 0.5
    out["bn.running_mean"], out["bn.running_var"] = running_mean.clone(), running_var.clone()

    # Eval first: the training call below updates the running statistics in place.
    with torch.no_grad():
        out["bn.y_eval"] = F.batch_norm(x, running_mean, running_var, gamma, beta, training=False, eps=1e-5)

    rm, rv = running_mean.clone(), running_var.clone()
    y = F.batch_norm(x, rm, rv, gamma, beta, training=True, momentum=0.1, eps=1e-5)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    var, mean = torch.var_mean(x.detach(), dim=(0, 2, 3), unbiased=False)
    out["bn.x"], out["bn.gamma"], out["bn.beta"], out["bn.dy"] = x, gamma, beta, dy
    out["bn.y"], out["bn.dx"], out["bn.dgamma"], out["bn.dbeta"] = y, x.grad, gamma.grad, beta.grad
    out["bn.batch_mean"], out["bn.batch_var"] = mean, var
    out["bn.running_mean_after"], out["bn.running_var_after"] = rm, rv


def pool_case(out, meta, name, gen, kind, kernel, stride, padding):
    x = leaf(torch.randn(3, 5, 7, 5, generator=gen))
    if kind == "max":
        y = F.max_pool2d(x, kernel, stride, padding)
    elif kind == "avg":
        y = F.avg_pool2d(x, kernel, stride, padding, count_include_pad=True)
    else:
        y = F.adaptive_avg_pool2d(x, 1)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    out[name + ".x"], out[name + ".dy"], out[name + ".y"], out[name + ".dx"] = x, dy, y, x.grad
    meta[name + ".kernel"], meta[name + ".stride"], meta[name + ".padding"] = kernel, stride, padding


def linear_case(out, gen):
    x = leaf(torch.randn(3, 7, generator=gen))
    w = leaf(torch.randn(5, 7, generator=gen) * 0.4)
    b = leaf(torch.randn(5, generator=gen))
    y = F.linear(x, w, b)
    dy = torch.randn(y.shape, generator=gen)
    y.backward(dy)
    out["linear.x"], out["linear.w"], out["linear.b"], out["linear.dy"] = x, w, b, dy
    out["linear.y"], out["linear.dx"], out["linear.dw"], out["linear.db"] = y, x.grad, w.grad, b.grad


def cross_entropy_case(out, gen):
    batch, classes = 6, 7
    # Logits up to ~15 apart: the softmax must be taken around the row maximum.
    logits = leaf(torch.randn(batch, classes, generator=gen) * 5.0)
    labels = torch.randint(0, classes, (batch,), generator=gen)
    loss_sum = F.cross_entropy(logits, labels, reduction="sum")
    (loss_sum / batch).backward()  # the gradient scaled by 1/B, as the replica manager asks
    out["ce.logits"], out["ce.labels"] = logits, labels.float()
    out["ce.loss_sum"] = loss_sum.detach().reshape(1)
    out["ce.grad"] = logits.grad
    out["ce.correct"] = (logits.argmax(1) == labels).sum().float().reshape(1)


def resized_crop_case(out, meta, gen):
    # torchvision's resized_crop on a tensor: the box, then a bilinear resize
    # with half-pixel centres (align_corners=False, no antialiasing: the box is
    # never larger than the image, so the resize only enlarges).
    c, h, w = 3, 9, 11
    x = torch.rand(c, h, w, generator=gen)
    out["resized_crop.x"] = x
    for i, (top, left, bh, bw) in enumerate([(1, 2, 5, 7), (0, 0, h, w), (3, 4, 2, 3), (0, 5, 9, 6)]):
        box = x[:, top:top + bh, left:left + bw].unsqueeze(0)
        y = F.interpolate(box, size=(h, w), mode="bilinear", align_corners=False)[0]
        out["resized_crop.y%d" % i] = y
        out["resized_crop.y%d_flipped" % i] = torch.flip(y, [2])
        meta["resized_crop.box%d" % i] = "%d %d %d %d" % (top, left, bh, bw)
    meta["resized_crop.boxes"] = 4


def write(path):
    gen = torch.Generator().manual_seed(20240611)
    out, meta = collections.OrderedDict(), {}
    conv_case(out, meta, "conv_s2p1", gen, 3, 3, 5, 7, 5, kernel=3, stride=2, padding=1, bias=True)
    conv_case(out, meta, "conv_k1", gen, 3, 3, 5, 7, 5, kernel=1, stride=1, padding=0, bias=True)
    conv_case(out, meta, "conv_k3_b1", gen, 1, 5, 3, 6, 7, kernel=3, stride=1, padding=0, bias=False)
    batchnorm_cases(out, gen)
    pool_case(out, meta, "maxpool", gen, "max", 3, 2, 1)
    pool_case(out, meta, "maxpool2", gen, "max", 2, 2, 0)
    pool_case(out, meta, "avgpool", gen, "avg", 3, 2, 1)
    pool_case(out, meta, "gap", gen, "global", 0, 0, 0)
    linear_case(out, gen)
    cross_entropy_case(out, gen)
    resized_crop_case(out, meta, gen)
    meta["torch_version"] = torch.__version__
    write_safetensors(path, out, meta)
