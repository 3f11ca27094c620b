#!/usr/bin/python3
"""Prints the parameter counts of the PyTorch twins of our models (the numbers
written into tests/cpu/test_models.cpp): trainable parameters only, BN running
statistics excluded, as ParameterArenas' entries count them."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
from pytorch_train import MODEL_NAMES, build_model  # noqa: E402

for shape in [(3, 32, 32), (1, 28, 28)]:
    for name in MODEL_NAMES:
        model = build_model(name, shape, 10)
        print("%-10s %-8s %d" % (name, "x".join(map(str, shape)), sum(p.numel() for p in model.parameters())))
