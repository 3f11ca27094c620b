"""torchvision 0.14's TrivialAugmentWide operations on small stored uint8
images: tests/cpu/test_trivial_augment.cpp and
tests/gpu/test_gpu_trivial_augment.cpp apply lockstep's to the same images
and compare every byte.

Each operation goes through torchvision's own _apply_op (the function
TrivialAugmentWide.forward calls, nearest interpolation, no fill) with the
magnitude TrivialAugmentWide draws for a bin and a sign, read from its own
_augmentation_space: no formula of ours stands between torchvision and the
stored result. The images, each with the operations it tests:
- an RGB one of 9x10 (odd rows, more columns than rows, so a rotation about
  the wrong centre or a transposed shear shows): every operation;
- a grey one of 24x22 whose levels span only 40..199: the operations that
  map levels (equalize needs 255 pixels or more to do anything), sharpness
  and rotation on one channel;
- an RGB one of 25x24 whose top level holds 100 of a channel's 600 pixels:
  equalize leaves the top level out of its step (500 // 255, not 600 // 255),
  autocontrast and contrast.

Stored: "image<i>" (C, H, W, the bytes as floats), "image<i>.cases" ([n, 4]:
operation index, bin, 1 for the negative sign, the magnitude torchvision
used) and "image<i>.out" ([n, C, H, W], torchvision's bytes as floats).
"""

import collections

import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import TrivialAugmentWide, _apply_op

from safetensors_io import write_safetensors

SIGNED_BINS = (1, 17, 30)
UNSIGNED_BINS = (0, 3, 13, 22, 30)
ALL = None
LEVELS = ("Identity", "Rotate", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize")
STATISTICS = ("AutoContrast", "Equalize", "Contrast")


def images():
    """(image, the names of the operations it is tested with, or ALL)."""
    gen = torch.Generator().manual_seed(46)
    rgb = torch.zeros(3, 9, 10)
    ys, xs = torch.meshgrid(torch.arange(9.0), torch.arange(10.0), indexing="ij")
    rgb[0] = 20 * xs + 3 * ys
    rgb[1] = 25 * ys + 5 * xs
    rgb[2] = 128 + 60 * torch.sin(xs + ys)
    rgb += torch.randint(-40, 41, rgb.shape, generator=gen)
    grey = torch.randint(40, 200, (1, 24, 22), generator=gen).float()
    top = torch.randint(0, 250, (3, 25, 24), generator=gen).float()
    top.view(3, -1)[0, torch.randperm(600, generator=gen)[:100]] = 250.0
    return [(img.clamp(0, 255).round().to(torch.uint8), ops)
            for img, ops in ((rgb, ALL), (grey, LEVELS), (top, STATISTICS))]


def cases(names):
    """(operation index, name, bin, negative, magnitude) of every case of the operations `names` (ALL: every
    one), in torchvision's order of operations."""
    space = TrivialAugmentWide()._augmentation_space(31)
    out = []
    for index, (name, (magnitudes, signed)) in enumerate(space.items()):
        if names is not ALL and name not in names:
            continue
        if magnitudes.ndim == 0:
            out.append((index, name, 0, False, 0.0))
            continue
        for b in SIGNED_BINS if signed else UNSIGNED_BINS:
            for negative in (False, True) if signed else (False,):
                magnitude = float(magnitudes[b].item())
                out.append((index, name, b, negative, -magnitude if negative else magnitude))
    return out


def write(path):
    out = collections.OrderedDict()
    counts = []
    for i, (img, names) in enumerate(images()):
        results, rows = [], []
        for index, name, b, negative, magnitude in cases(names):
            result = _apply_op(img, name, magnitude, interpolation=InterpolationMode.NEAREST, fill=None)
            assert result.dtype == torch.uint8 and result.shape == img.shape
            results.append(result.float())
            rows.append([float(index), float(b), 1.0 if negative else 0.0, magnitude])
        out["image%d" % i] = img.float()
        out["image%d.cases" % i] = torch.tensor(rows, dtype=torch.float64)
        out["image%d.out" % i] = torch.stack(results)
        counts.append(str(len(rows)))
    meta = {"images": 3, "cases": ",".join(counts), "torch_version": torch.__version__}
    write_safetensors(path, out, meta)
