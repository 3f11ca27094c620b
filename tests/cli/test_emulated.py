"""End-to-end tests of `lockstep` in the emulated GPU build (-DLOCKSTEP_GPU=emulated).

The CUDA path of every layer runs on emulated devices (the CPU underneath);
these tests compare it with the CPU backend on the same data and seed. They
prove the CUDA code's logic and ordering, never its speed or cuDNN's numerics.
"""
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_cli import read_safetensors, run  # noqa: E402

# 20 steps: 640 Fashion-MNIST samples at batch 32, simple-cnn (every layer
# kind: conv, pooling, relu, dropout, linear, loss), no test set beyond 64;
# the settings the CPU and GPU defaults differ in (augmentation, warmup) given.
# The CPU runs the im2col reference convolution, the arithmetic the emulated
# cuDNN runs too (as the gpu tests do: tests/gpu_main.cpp); the oneDNN
# convolution's own rounding tipped a ReLU within 20 steps here (6.7e-4
# normwise, against 1.5e-7 between 2 CPU replicas and 1).
os.environ.setdefault("LOCKSTEP_CPU_CONV", "im2col")

# --precision fp32: the GPU default, tf32, rounds the emulated cuDNN's and
# cuBLAS's operands to TF32, while the CPU computes in FP32.
RUN = ["--model", "simple-cnn", "--limit", "640", "--test-limit", "64", "--batch", "32", "--epochs", "1",
       "--lr", "0.05", "--schedule", "constant", "--augment", "none", "--warmup-epochs", "0", "--seed", "11",
       "--threads", "1", "--precision", "fp32"]


def floats(raw):
    return struct.unpack("<%df" % (len(raw) // 4), raw)


def normwise_relative(a, b):
    diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    ref = math.sqrt(sum(y * y for y in b))
    return diff / max(ref, 1e-30)


class Emulated(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-emu-cli-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def train(self, name, devices):
        ck = os.path.join(self.tmp, name)
        r = run(["train"] + RUN + devices + ["--checkpoint", ck], self.tmp, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return read_safetensors(ck)[1]

    def test_two_emulated_devices_train_as_the_cpu(self):
        gpu = self.train("gpu.safetensors", ["--devices", "0,1"])
        cpu = self.train("cpu.safetensors", ["--devices", "cpu", "--replicas", "2"])
        self.assertEqual(sorted(gpu), sorted(cpu))
        params = [k for k in cpu if not k.startswith("momentum")]
        self.assertTrue(params)
        a = [x for k in sorted(params) for x in floats(gpu[k][1])]
        b = [x for k in sorted(params) for x in floats(cpu[k][1])]
        self.assertGreater(len(b), 1000)
        self.assertLess(normwise_relative(a, b), 1e-4)

    def test_two_emulated_devices_train_in_nhwc_as_the_cpu_in_nchw(self):
        # NHWC activations, KRSC filter copies and flatten's transpose on the
        # emulated GPUs; the checkpoint's weights are those of NCHW on the CPU.
        gpu = self.train("gpu.safetensors", ["--devices", "0,1", "--memory-format", "nhwc"])
        cpu = self.train("cpu.safetensors", ["--devices", "cpu", "--replicas", "2"])
        params = [k for k in cpu if not k.startswith("momentum")]
        a = [x for k in sorted(params) for x in floats(gpu[k][1])]
        b = [x for k in sorted(params) for x in floats(cpu[k][1])]
        self.assertGreater(len(b), 1000)
        self.assertLess(normwise_relative(a, b), 1e-4)

    def test_bf16_on_a_gpu_is_refused_before_training(self):
        ck = os.path.join(self.tmp, "bf16.safetensors")
        r = run(["train"] + RUN[:-1] + ["bf16", "--devices", "0", "--checkpoint", ck], self.tmp, timeout=120)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("--precision bf16 runs on the CPU backend only in this build", lines[0])
        self.assertIn("cuda:0", lines[0])
        self.assertFalse(os.path.exists(ck))
        self.assertNotIn("training ", r.stdout)

    def test_info_says_the_devices_are_emulated(self):
        r = subprocess.run([os.environ.get("LOCKSTEP_BIN", "build/lockstep"), "info"], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, LOCKSTEP_EMU_DEVICES="2"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("emulated", r.stdout.lower())
        self.assertNotIn("NVIDIA", r.stdout)


if __name__ == "__main__":
    unittest.main()
