#!/usr/bin/python3
"""Writes PyTorch's reference results for the torch-tagged C++ tests into a
directory: the files stored in tests/golden, which the tests read, are made so
(tests/golden/README.md), and the CTest fixture torch_references makes them
anew in the build tree to check the stored ones (tests/torch.cmake):
  ops.safetensors                op-by-op results (ops_oracle.py)
  adamw.safetensors              5 steps of torch.optim.AdamW on fixed weights and gradients (adamw_oracle.py)
  trivial_augment.safetensors    torchvision's TrivialAugmentWide operations on three small images (trivial_oracle.py)
  ema.safetensors                6 steps of timm's moving average over SGD and AdamW, and of statistics (ema_oracle.py)
  golden_resnet20.safetensors    5 SGD steps of resnet20, 8 samples of 3x8x8 (golden.py)
  golden_simple_cnn.safetensors  5 SGD steps of simple-cnn, 8 samples of 1x28x28 (golden.py)
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "peers"))  # the PyTorch models

import adamw_oracle  # noqa: E402
import ema_oracle  # noqa: E402
import golden  # noqa: E402
import ops_oracle  # noqa: E402
import trivial_oracle  # noqa: E402


def main(argv):
    if len(argv) != 1:
        print("usage: make_references.py OUTPUT_DIR", file=sys.stderr)
        return 2
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    ops_oracle.write(os.path.join(out, "ops.safetensors"))
    adamw_oracle.write(os.path.join(out, "adamw.safetensors"))
    trivial_oracle.write(os.path.join(out, "trivial_augment.safetensors"))
    ema_oracle.write(os.path.join(out, "ema.safetensors"))
    # Seeds and margins: see golden.py. Every ReLU input of these runs stays
    # this far from zero in float64, well beyond the float32 error of either
    # side at that depth (~3e-6 after resnet20's 19 layers and 5 steps, ~1e-7
    # two layers from the data in simple-cnn); 3x8x8 images keep resnet20's
    # ~500k ReLU inputs few enough for such a margin to exist.
    golden.write(os.path.join(out, "golden_resnet20.safetensors"), "resnet20", (3, 8, 8), batch=8, steps=5, seed=215,
                 margin=1e-5)
    golden.write(os.path.join(out, "golden_simple_cnn.safetensors"), "simple-cnn", (1, 28, 28), batch=8, steps=5,
                 seed=22, margin=1e-6)
    print("wrote PyTorch references to", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
