#!/usr/bin/python3
"""The peer of bench_loader's image-folder case: decode and resize the same
JPEG files with PIL, single-threaded, into float32 CHW arrays in [0, 1] (what
lockstep's loader hands the trainer without normalisation). Prints one JSON
object: images, seconds, images_per_s."""
import argparse
import json
import os
import sys
import time

import numpy as np
import PIL
from PIL import Image

BILINEAR = getattr(Image, "Resampling", Image).BILINEAR


def image_files(root):
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        files += [os.path.join(dirpath, f) for f in sorted(filenames)
                  if not f.startswith(".") and f.lower().endswith((".jpg", ".jpeg", ".png", ".bmp", ".gif"))]
    return files


def load(path, size, mode):
    with Image.open(path) as img:
        img = img.convert(mode).resize((size, size), BILINEAR)
        array = np.asarray(img, dtype=np.float32) / 255.0
    return array.reshape(size, size, -1).transpose(2, 0, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True, help="image folder (one sub-folder per class)")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--grey", action="store_true")
    parser.add_argument("--epochs", type=int, default=4, help="passes over the files per timing")
    parser.add_argument("--repeat", type=int, default=3, help="timings taken; the fastest is kept")
    args = parser.parse_args()
    files = image_files(args.dir)
    if not files:
        sys.exit(f"pil_loader: no images under {args.dir}")
    mode = "L" if args.grey else "RGB"
    for path in files:  # warm-up pass: the same page cache as lockstep's warm-up epoch
        load(path, args.size, mode)
    seconds = float("inf")
    checksum = 0.0
    for _ in range(args.repeat):
        start = time.perf_counter()
        for _ in range(args.epochs):
            for path in files:
                checksum += float(load(path, args.size, mode)[0, 0, 0])
        seconds = min(seconds, time.perf_counter() - start)
    images = len(files) * args.epochs
    print(json.dumps({"peer": "PIL " + PIL.__version__, "images": images, "seconds": seconds,
                      "images_per_s": images / seconds, "threads": 1, "checksum": checksum}))


if __name__ == "__main__":
    main()
