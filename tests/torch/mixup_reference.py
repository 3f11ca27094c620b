"""Values for tests/cpu/test_mixup.cpp: timm's Mixup in 'batch' mode
(timm/data/mixup.py), re-derived here from its documented behaviour (timm is
not installed): for stored draws, the mixed images, CutMix's box and
corrected lam, the soft targets, and PyTorch's cross-entropy with those
probability targets (torch >= 1.10) and its gradient, in double.

Run with /usr/bin/python3 (torch 1.13); paste its output into the test."""
import numpy as np
import torch
import torch.nn.functional as F

B, C, H, W = 5, 2, 3, 4
CLASSES, SMOOTHING = 5, 0.1
LABELS = [3, 0, 2, 1, 4]


def batch():
    # The test's pattern: exact in f32.
    x = torch.empty(B, C, H, W, dtype=torch.float32)
    for b in range(B):
        for c in range(C):
            for h in range(H):
                for w in range(W):
                    x[b, c, h, w] = ((b * 37 + c * 11 + h * 5 + w * 3) % 17) / 8.0 - 1.0
    return x


def mixup(x, lam):
    # timm: the flip scaled by 1 - lam, added to x scaled by lam (f32 tensors, Python float scalars).
    flipped = x.flip(0).mul_(1.0 - lam)
    return x.mul_(lam).add_(flipped)


def cutmix_box(h, w, lam, cy, cx):
    # timm's rand_bbox for a stored centre, then correct_lam.
    ratio = np.sqrt(1 - lam)
    cut_h, cut_w = int(h * ratio), int(w * ratio)
    yl = np.clip(cy - cut_h // 2, 0, h)
    yh = np.clip(cy + cut_h // 2, 0, h)
    xl = np.clip(cx - cut_w // 2, 0, w)
    xh = np.clip(cx + cut_w // 2, 0, w)
    return int(yl), int(yh), int(xl), int(xh), 1.0 - (yh - yl) * (xh - xl) / float(h * w)


def cutmix(x, lam, cy, cx):
    yl, yh, xl, xh, lam = cutmix_box(H, W, lam, cy, cx)
    x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
    return x, lam


def targets(lam):
    # timm's mixup_target, in double.
    off = SMOOTHING / CLASSES
    on = 1.0 - SMOOTHING + off
    y = torch.tensor(LABELS)
    y1 = torch.full((B, CLASSES), off, dtype=torch.float64).scatter_(1, y.view(-1, 1), on)
    y2 = torch.full((B, CLASSES), off, dtype=torch.float64).scatter_(1, y.flip(0).view(-1, 1), on)
    return y1 * lam + y2 * (1.0 - lam)


def literal(v):
    text = "%.9g" % v
    return (text if "." in text or "e" in text else text + ".0") + "f"


def floats(name, t):
    values = ", ".join(literal(v) for v in t.reshape(-1).tolist())
    print("const std::vector<float> %s = {%s};" % (name, values))


def doubles(name, t):
    values = ", ".join(repr(float(v)) for v in t.reshape(-1).tolist())
    print("const std::vector<double> %s = {%s};" % (name, values))


MIX_LAM = 0.3137
floats("kMixupImages", mixup(batch(), MIX_LAM))
CUT_LAM, CUT_CY, CUT_CX = 0.41, 2, 3
x, lam = cutmix(batch(), CUT_LAM, CUT_CY, CUT_CX)
floats("kCutmixImages", x)
print("constexpr double kCutmixLam = %r;" % lam)
doubles("kMixupTargets", targets(MIX_LAM))

# Boxes: (h, w, lam, cy, cx) -> (yl, yh, xl, xh, corrected lam), borders included.
cases = [(3, 4, 0.41, 2, 3), (32, 32, 0.25, 0, 31), (32, 32, 0.25, 16, 16), (224, 224, 0.0001, 100, 5),
         (224, 160, 0.999, 7, 9), (7, 5, 0.5, 6, 0), (1, 1, 0.2, 0, 0)]
rows = []
for h, w, lam, cy, cx in cases:
    yl, yh, xl, xh, corrected = cutmix_box(h, w, lam, cy, cx)
    rows.append("{%d, %d, %r, %d, %d, %d, %d, %d, %d, %r}" % (h, w, lam, cy, cx, yl, yh, xl, xh, corrected))
print("const std::vector<BoxCase> kBoxes = {" + ", ".join(rows) + "};")

# The loss on the mixed targets: PyTorch's cross-entropy with probability targets, summed.
logits = torch.tensor([[1.5, -0.25, 0.75, 2.0, -1.0], [0.5, 3.0, 0.0, 0.1, 0.2], [0.3, 0.4, -2.0, 1.0, 0.0],
                       [2.5, 2.5, -0.5, 0.25, 1.0], [-1.0, 0.0, 1.0, 2.0, 3.0]], dtype=torch.float64,
                      requires_grad=True)
loss = F.cross_entropy(logits, targets(MIX_LAM), reduction="sum")
loss.backward()
doubles("kLossLogits", logits.detach())
print("constexpr double kTorchMixedLoss = %r;" % loss.item())
doubles("kTorchMixedGrad", logits.grad)
