#!/usr/bin/python3
"""Checks that the PyTorch results stored in tests/golden are what
make_references.py makes: run by CTest (tests/torch.cmake) on the files its
fixture has just regenerated into the build tree, wherever torch is installed.

  check_references.py STORED_DIR REGENERATED_DIR

Every stored file must hold the same tensors, shapes and metadata as the
regenerated one, and values within 1e-5 of each tensor's largest magnitude:
the inputs are drawn from PyTorch's seeded generator and come out the same,
and its float32 results may differ in the last bits on another CPU, far below
that bound (golden.py refuses a run whose float32 and float64 results differ by
more); a changed script, seed, shape or PyTorch that moves them further fails
here. The torch version is reported, not compared. On a failure: regenerate
the stored files (tests/golden/README.md) after checking why they moved.
"""

import os
import sys

import numpy

from safetensors_io import read_safetensors

TOLERANCE = 1e-5


def check(stored_path, regenerated_path):
    """Returns a list of problems (empty: the files agree)."""
    name = os.path.basename(stored_path)
    if not os.path.exists(regenerated_path):
        return ["%s: make_references.py no longer writes it" % name]
    stored, stored_meta = read_safetensors(stored_path)
    made, made_meta = read_safetensors(regenerated_path)
    problems = []
    if stored_meta.get("torch_version") != made_meta.get("torch_version"):
        print("%s: stored from torch %s, regenerated with %s" % (name, stored_meta.get("torch_version"),
                                                                  made_meta.get("torch_version")))
    for key in sorted(set(stored_meta) | set(made_meta)):
        if key != "torch_version" and stored_meta.get(key) != made_meta.get(key):
            problems.append("%s: metadata %s is %r stored, %r regenerated" % (name, key, stored_meta.get(key),
                                                                              made_meta.get(key)))
    for key in [k for k in made if k not in stored]:
        problems.append("%s: %s is new (not stored)" % (name, key))
    identical = 0
    for key, want in made.items():
        if key not in stored:
            continue
        got = stored[key]
        if got.shape != want.shape:
            problems.append("%s: %s is %s stored, %s regenerated" % (name, key, got.shape, want.shape))
            continue
        if got.tobytes() == want.tobytes():
            identical += 1
            continue
        scale = float(numpy.abs(want).max()) if want.size else 0.0
        err = float(numpy.abs(got.astype(numpy.float64) - want.astype(numpy.float64)).max())
        if not err <= TOLERANCE * scale:
            problems.append("%s: %s differs by %.3g (of %.3g)" % (name, key, err, scale))
    for key in [k for k in stored if k not in made]:
        problems.append("%s: %s is stored but no longer made" % (name, key))
    print("%s: %d of %d tensors bit-identical, %d problem(s)" % (name, identical, len(made), len(problems)))
    return problems


def main(argv):
    if len(argv) != 2:
        print("usage: check_references.py STORED_DIR REGENERATED_DIR", file=sys.stderr)
        return 2
    stored_dir, made_dir = argv
    problems = []
    stored = sorted(f for f in os.listdir(stored_dir) if f.endswith(".safetensors"))
    made = sorted(f for f in os.listdir(made_dir) if f.endswith(".safetensors"))
    for f in made:
        if f not in stored:
            problems.append("%s: make_references.py writes it, tests/golden does not store it" % f)
    for f in stored:
        problems += check(os.path.join(stored_dir, f), os.path.join(made_dir, f))
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
