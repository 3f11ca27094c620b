"""scripts/gpu-quick-finetune, the fine-tuning step of `scripts/gpu-check quick`,
on the emulated GPU build: tv-resnet18 from a torchvision state dict
(scripts/make-tv-init), an epoch with its backbone frozen (which must leave
every backbone tensor bit for bit), then an epoch at --backbone-lr-scale 0.1.

    LOCKSTEP_BIN=build-emu/lockstep /usr/bin/python3 tests/build/test_gpu_quick_finetune.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "scripts", "gpu-quick-finetune")
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
from test_cli import write_jpeg_classes  # noqa: E402

LOCKSTEP = os.environ.get("LOCKSTEP_BIN", "")
TRAIN = ["--batch", "4", "--lr", "0.01", "--test-fraction", "0.25", "--warmup-epochs", "0"]


class QuickFinetune(unittest.TestCase):
    def setUp(self):
        if not LOCKSTEP:
            self.skipTest("LOCKSTEP_BIN is not set (the emulated build's lockstep)")
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-quick-finetune-")
        self.photos = os.path.join(self.dir.name, "photos")
        write_jpeg_classes(self.photos, ["a", "b"], 8, 40)
        self.init = os.path.join(self.dir.name, "tv-resnet18.safetensors")
        subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "scripts", "make-tv-init"), self.init], check=True)

    def tearDown(self):
        self.dir.cleanup()

    def run_step(self, devices, seconds=800):
        env = dict(os.environ, LOCKSTEP_EMU_DEVICES=str(devices))
        log = os.path.join(self.dir.name, "train.log")
        args = [SCRIPT, LOCKSTEP, self.init, self.photos, "3x32x32", str(seconds), log, os.path.join(self.dir.name, "w")]
        args += TRAIN + ["--devices", ",".join(str(d) for d in range(devices))]
        r = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        with open(log) if os.path.exists(log) else open(os.devnull) as f:
            return r.returncode, r.stdout.splitlines(), f.read()

    def test_frozen_then_scaled_on_one_emulated_device(self):
        rc, lines, log = self.run_step(1)
        self.assertEqual(rc, 0, "\n".join(lines) + log[-3000:])
        self.assertEqual(len(lines), 2, lines)
        self.assertRegex(lines[0], r"^fine-tune tv-resnet18, frozen backbone, 1 epoch: loss [0-9.]+, \d+ img/s; "
                                   r"the backbone's [1-9]\d* tensors bit-identical to the init, the classifier trained$")
        self.assertRegex(lines[1], r"^fine-tune tv-resnet18, every layer at backbone-lr-scale 0.1, .*: loss [0-9.]+, "
                                   r"\d+ img/s; [1-9]\d* of the backbone's \d+ tensors moved$")

    def test_no_time_left_is_reported_not_run(self):
        rc, lines, _ = self.run_step(1, seconds=20)
        self.assertEqual(rc, 1)
        self.assertEqual(lines, ["FAIL: fine-tune tv-resnet18, frozen backbone, 1 epoch: not run, no time left"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
