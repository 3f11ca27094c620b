"""torchvision 0.14's TrivialAugmentWide operations on small stored uint8
images: tests/cpu/test_trivial_augment.cpp and
tests/gpu/test_gpu_trivial_augment.cpp apply lockstep's to the same images
and compare every byte.

Each operation goes through torchvision's own _apply_op (the function
TrivialAugmentWide.forward calls, nearest interpolation, no fill) with the
magnitude TrivialAugmentWide draws for a bin and a sign, read from its own
_augmentation_space: no formula of ours stands between torchvision and the
stored result. The images: an RGB one of 9x10 (odd rows, more columns than
rows, so a rotation about the wrong centre or a transposed shear shows), a
grey one of 8x7 whose levels span only 40..199 (autocontrast and equalize
have something to do), and an RGB one of 4x3 with a level taking more than
half the pixels (equalize's step).

Stored: "image<i>" (C, H, W, the bytes as floats), "image<i>.cases" ([n, 4]:
operation index, bin, 1 for the negative sign, the magnitude torchvision
used) and "image<i>.out" ([n, C, H, W], torchvision's bytes as floats).
"""

import collections

import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import TrivialAugmentWide, _apply_op

from safetensors_io import write_safetensors

SIGNED_BINS = (1, 9, 17, 30)
UNSIGNED_BINS = (0, 3, 13, 22, 30)


def images():
    gen = torch.Generator().manual_seed(46)
    rgb = torch.zeros(3, 9, 10)
    ys, xs = torch.meshgrid(torch.arange(9.0), torch.arange(10.0), indexing="ij")
    rgb[0] = 20 * xs + 3 * ys
    rgb[1] = 25 * ys + 5 * xs
    rgb[2] = 128 + 60 * torch.sin(xs + ys)
    rgb += torch.randint(-40, 41, rgb.shape, generator=gen)
    grey = torch.randint(40, 200, (1, 8, 7), generator=gen).float()
    small = torch.randint(0, 256, (3, 4, 3), generator=gen).float()
    small[:, :3, :] = 77.0
    return [img.clamp(0, 255).round().to(torch.uint8) for img in (rgb, grey, small)]


def cases():
    """(operation index, name, bin, negative) of every case, in torchvision's order of operations."""
    space = TrivialAugmentWide()._augmentation_space(31)
    out = []
    for index, (name, (magnitudes, signed)) in enumerate(space.items()):
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
    all_cases = cases()
    for i, img in enumerate(images()):
        results, rows = [], []
        for index, name, b, negative, magnitude in all_cases:
            result = _apply_op(img, name, magnitude, interpolation=InterpolationMode.NEAREST, fill=None)
            assert result.dtype == torch.uint8 and result.shape == img.shape
            results.append(result.float())
            rows.append([float(index), float(b), 1.0 if negative else 0.0, magnitude])
        out["image%d" % i] = img.float()
        out["image%d.cases" % i] = torch.tensor(rows, dtype=torch.float64)
        out["image%d.out" % i] = torch.stack(results)
    meta = {"images": 3, "cases": len(all_cases), "torch_version": torch.__version__}
    write_safetensors(path, out, meta)
