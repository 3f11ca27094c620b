#!/usr/bin/python3
"""The peer of bench_loader's photo rows: PyTorch's own input pipeline,
torchvision.datasets.ImageFolder with Resize((size, size)) and ToTensor
(what lockstep's loader gives: the image stretched to size x size, floats
in [0, 1]), through torch.utils.data.DataLoader(batch_size, shuffle=True,
num_workers=W, persistent_workers=True) for each W of --workers.

Each timing builds a DataLoader and runs --epochs epochs over it; the first
epoch (which also starts the worker processes) and the later ones are timed
apart. PyTorch decodes every image in every epoch. Each case keeps the
fastest of --repeat timings. Prints one JSON object: {"peer": ..., "cases":
[{workload, workers, images, seconds, seconds_all, images_per_s}]}, the
workloads "photos first epoch" and "photos later epochs"."""
import argparse
import json
import sys
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="image folder (one sub-folder per class)")
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--workers", default="1,2", help="DataLoader num_workers values, comma-separated")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per timing (the first timed apart)")
    parser.add_argument("--repeat", type=int, default=2, help="timings taken; the fastest is kept")
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    if args.epochs < 2:
        sys.exit("torch_loader: --epochs must be at least 2 (the first epoch is timed apart)")
    torch.set_num_threads(1)  # the main process only collates
    transform = transforms.Compose([transforms.Resize((args.size, args.size)), transforms.ToTensor()])
    dataset = datasets.ImageFolder(args.dir, transform=transform)
    cases = []
    checksum = 0.0
    for workers in (int(w) for w in args.workers.split(",")):
        first, later = [], []
        for _ in range(args.repeat):
            loader = DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=workers,
                                persistent_workers=workers > 0)
            times = []
            for _ in range(args.epochs):
                start = time.perf_counter()
                for images, labels in loader:
                    checksum += float(images[0, 0, 0, 0])
                times.append(time.perf_counter() - start)
            first.append(times[0])
            later.append(sum(times[1:]))
            del loader
        for workload, seconds, count in (("photos first epoch", first, len(dataset)),
                                         ("photos later epochs", later, len(dataset) * (args.epochs - 1))):
            best = min(seconds)
            cases.append({"workload": workload, "workers": workers, "images": count, "seconds": best,
                          "seconds_all": seconds, "images_per_s": count / best})
    print(json.dumps({"peer": "PyTorch %s DataLoader, torchvision %s ImageFolder" % (torch.__version__,
                                                                                        torchvision.__version__),
                      "cases": cases, "checksum": checksum}))


if __name__ == "__main__":
    main()
