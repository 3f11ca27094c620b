#!/usr/bin/python3
"""Fine-tuning recipes side by side on Fashion-MNIST: SGD against AdamW,
each with and without an EMA of the weights, from the same export, for the
same steps, over several seeds.

usage: bench/recipes/compare_recipes.py LOCKSTEP OUTDIR [--seeds N] [--epochs E]

The export: tv-resnet18 trained on all ten classes (250 images each, three
epochs, seed 3). Each arm then trains a new 5-class classifier with the whole
network on the five classes hardest to tell apart (Pullover, Dress, Coat,
Shirt, Ankle boot; 40 training and 100 test images each), for the same
epochs and batch, once per seed (the classifier's initialisation and the
data order). An arm's figure is the final test accuracy `lockstep train`
prints (with --ema, that of the averaged weights); the table gives each
arm's median and range over the seeds. OUTDIR gets the data folders, the
checkpoints, `recipes.json` and `recipes.md`.

A benchmark of outcomes, not of speed: the figures depend on the seeds and
on the machine's kernels (OpenBLAS and oneDNN pick theirs from the CPU), so
quote them with the machine line and the command.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys

# The fine-tuning test's folders of Fashion-MNIST PNGs (Debian's data set).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "cli"))
from test_cli import write_fashion_classes  # noqa: E402

HARD = [2, 3, 4, 6, 9]

# Each arm's optimizer flags; the learning rates are each optimizer's usual
# fine-tuning choice (SGD's as the fine-tuning test uses it, AdamW's timm's
# default), the weight decay each one's default in lockstep.
ARMS = [
    ("sgd", ["--optimizer", "sgd", "--lr", "0.02"]),
    ("sgd + ema", ["--optimizer", "sgd", "--lr", "0.02", "--ema", "0.99"]),
    ("adamw", ["--optimizer", "adamw", "--lr", "1e-3"]),
    ("adamw + ema", ["--optimizer", "adamw", "--lr", "1e-3", "--ema", "0.99"]),
]


def run(lockstep, args, cwd):
    r = subprocess.run([lockstep] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("compare_recipes: `lockstep %s` failed (%d):\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def machine_line():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return "%s, %d cores, %s" % (model or platform.processor(), os.cpu_count(), platform.platform())


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("lockstep")
    p.add_argument("outdir")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=4)
    o = p.parse_args(argv)
    lockstep, out = os.path.abspath(o.lockstep), os.path.abspath(o.outdir)
    os.makedirs(out, exist_ok=True)
    ten, other = os.path.join(out, "ten"), os.path.join(out, "other")
    if not os.path.isdir(ten):
        write_fashion_classes(ten, "train", list(range(10)), 250)
        write_fashion_classes(os.path.join(other, "train"), "train", HARD, 40)
        write_fashion_classes(os.path.join(other, "test"), "t10k", HARD, 100)
    base = ["train", "--devices", "cpu", "--model", "tv-resnet18", "--input", "1x28x28", "--augment", "none"]
    pretrained, export = os.path.join(out, "pretrained.safetensors"), os.path.join(out, "pretrained-tv.safetensors")
    if not os.path.exists(export):
        run(lockstep, base + ["--seed", "3", "--data", ten, "--batch", "32", "--epochs", "3", "--lr", "0.05",
                              "--checkpoint", pretrained], out)
        run(lockstep, ["export", pretrained, export], out)

    seeds = list(range(1, o.seeds + 1))
    results = {}
    for name, flags in ARMS:
        results[name] = []
        for seed in seeds:
            ck = os.path.join(out, "%s-%d.safetensors" % (name.replace(" + ", "-"), seed))
            text = run(lockstep, base + ["--seed", str(seed), "--data", other, "--epochs", str(o.epochs), "--batch",
                                         "20", "--init", export, "--checkpoint", ck, "--force"] + flags, out)
            results[name].append(float(re.search(r"^all +([0-9.]+)%", text, re.M).group(1)))
            print("%-12s seed %d: %.1f%%" % (name, seed, results[name][-1]), flush=True)

    command = "bench/recipes/compare_recipes.py LOCKSTEP OUTDIR --seeds %d --epochs %d" % (o.seeds, o.epochs)
    lines = ["fine-tuning recipes: tv-resnet18 export (10 classes) -> 5 hard classes, %d epochs of 200 images, "
             "batch 20, seeds %s" % (o.epochs, seeds), "",
             "| recipe | median accuracy | range | per seed |", "| :-- | --: | --: | :-- |"]
    for name, _ in ARMS:
        acc = results[name]
        lines.append("| %s | %.1f%% | %.1f-%.1f%% | %s |" % (name, statistics.median(acc), min(acc), max(acc),
                                                          ", ".join("%.1f" % a for a in acc)))
    lines += ["", "machine: " + machine_line(), "command: " + command]
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "recipes.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(out, "recipes.json"), "w") as f:
        json.dump({"machine": machine_line(), "command": command, "seeds": seeds, "epochs": o.epochs,
                   "arms": {name: {"flags": flags, "accuracy": results[name]} for name, flags in ARMS}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
