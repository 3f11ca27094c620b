#!/usr/bin/python3
"""The peer of bench_loader: what a PyTorch data pipeline does per sample,
with PIL, single-threaded, into float32 CHW arrays.

  jpeg-folder: torchvision's ImageFolder default loader and Resize((size,
    size)): Image.open, convert("RGB"/"L"), resize with Resize's default
    filter (BILINEAR; PIL antialiases when shrinking), then ToTensor's /255.
    PIL decodes the whole JPEG, as ImageFolder does.
  jpeg-folder draft: the same with Image.draft first, so libjpeg-turbo
    decodes at a reduced DCT scale (1/2, 1/4 or 1/8), the equivalent of what
    lockstep does (it uses every M/8 scale); the resize takes draft's box.
  fashion-mnist+aug: torchvision's FashionMNIST item (Image.fromarray,
    mode L) through RandomCrop(28, padding=4), RandomHorizontalFlip,
    ToTensor and Normalize.

Nothing is held against PIL: files are read in order (no shuffle), samples
are not collated into batches, numpy stands in for torch's tensor ops
(cheaper per call), and each case keeps the fastest of --repeat timings
(and, apart, the least process CPU time). Prints one JSON object: {"peer":
..., "cases": [{workload, method, images, seconds, seconds_all, cpu_seconds,
images_per_s, threads}]}."""
import argparse
import gzip
import json
import os
import random
import sys
import time

import numpy as np
import PIL
from PIL import Image, ImageOps

BILINEAR = getattr(Image, "Resampling", Image).BILINEAR
FLIP_LEFT_RIGHT = getattr(Image, "Transpose", Image).FLIP_LEFT_RIGHT


def image_files(root):
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        files += [os.path.join(dirpath, f) for f in sorted(filenames)
                  if not f.startswith(".") and f.lower().endswith((".jpg", ".jpeg", ".png", ".bmp", ".gif"))]
    return files


def load(path, size, mode):
    with open(path, "rb") as f:  # torchvision's pil_loader
        img = Image.open(f)
        img = img.convert(mode).resize((size, size), BILINEAR)
    array = np.asarray(img, dtype=np.float32) / 255.0
    return array.reshape(size, size, -1).transpose(2, 0, 1)


def load_draft(path, size, mode):
    with open(path, "rb") as f:
        img = Image.open(f)
        drafted = img.draft(mode, (size, size))
        box = drafted[1] if drafted else None
        img = img.convert(mode).resize((size, size), BILINEAR, box=box)
    array = np.asarray(img, dtype=np.float32) / 255.0
    return array.reshape(size, size, -1).transpose(2, 0, 1)


def read_idx_images(directory):
    for name in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rb") as f:
                data = f.read()
            n, h, w = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
            return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, h, w)
    sys.exit(f"pil_loader: no train-images-idx3-ubyte[.gz] in {directory}")


def fashion_sample(pixels, mean, std, rng, padding=4):
    img = Image.fromarray(pixels, mode="L")
    h, w = pixels.shape
    img = ImageOps.expand(img, border=padding, fill=0)  # RandomCrop's zero padding
    top, left = rng.randint(0, 2 * padding), rng.randint(0, 2 * padding)
    img = img.crop((left, top, left + w, top + h))
    if rng.random() < 0.5:
        img = img.transpose(FLIP_LEFT_RIGHT)
    array = np.asarray(img, dtype=np.float32) / 255.0
    return ((array - mean) / std).reshape(1, h, w)


def timed(workload, method, count, repeat, one_pass):
    one_pass()  # warm-up: the same page cache and allocator state as lockstep's warm-up epoch
    times, cpu_times = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        one_pass()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    best = min(times)
    return {"workload": workload, "method": method, "images": count, "seconds": best, "seconds_all": times,
            "cpu_seconds": min(cpu_times), "images_per_s": count / best, "threads": 1}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="image folder (one sub-folder per class)")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--grey", action="store_true")
    parser.add_argument("--epochs", type=int, default=4, help="passes over the files per timing")
    parser.add_argument("--repeat", type=int, default=3, help="timings taken; the fastest is kept")
    parser.add_argument("--fashion", help="Fashion-MNIST folder: also time the augmented Fashion-MNIST case")
    args = parser.parse_args()
    files = image_files(args.dir)
    if not files:
        sys.exit(f"pil_loader: no images under {args.dir}")
    mode = "L" if args.grey else "RGB"
    cases = []
    checksum = 0.0

    if args.fashion:
        images = read_idx_images(args.fashion)
        mean = np.float32(images.mean() / 255.0)
        std = np.float32(images.std() / 255.0)
        rng = random.Random(0)

        def fashion_pass():
            nonlocal checksum
            for pixels in images:
                checksum += float(fashion_sample(pixels, mean, std, rng)[0, 0, 0])

        cases.append(timed("fashion-mnist+aug", "Image.fromarray, pad+crop 28 (padding 4), flip, /255, normalise",
                           len(images), args.repeat, fashion_pass))

    name = f"jpeg-folder 96->{args.size}"
    for workload, loader, method in (
            (name, load, f"open, convert {mode}, resize BILINEAR: full decode (torchvision ImageFolder + Resize)"),
            (name + " draft", load_draft, f"the same after Image.draft({mode}, {args.size}x{args.size}): DCT-scaled decode")):
        def jpeg_pass(loader=loader):
            nonlocal checksum
            for _ in range(args.epochs):
                for path in files:
                    checksum += float(loader(path, args.size, mode)[0, 0, 0])

        cases.append(timed(workload, method, len(files) * args.epochs, args.repeat, jpeg_pass))

    print(json.dumps({"peer": "PIL " + PIL.__version__, "cases": cases, "checksum": checksum}))


if __name__ == "__main__":
    main()
