"""scripts/gpu-quick-loader, the loader step of `scripts/gpu-check quick`, on
the emulated GPU build: an epoch on a folder of JPEGs, `lockstep cache`, an
epoch from the cache, each reported as one line from its metrics file.

    LOCKSTEP_BIN=build-emu/lockstep /usr/bin/python3 tests/build/test_gpu_quick_loader.py
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "scripts", "gpu-quick-loader")
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
from test_cli import write_jpeg_classes  # noqa: E402

LOCKSTEP = os.environ.get("LOCKSTEP_BIN", "")
# The smallest run that still trains: 2 classes of 12 JPEGs, 16x16, simple-cnn.
TRAIN = ["--model", "simple-cnn", "--batch", "8", "--augment", "none", "--warmup-epochs", "0"]
LINE = r"^loader, %s: \d+ img/s; [0-9.]+ s of the epoch's [0-9.]+ s (waited for the loader|in the data phase)"


class QuickLoader(unittest.TestCase):
    def setUp(self):
        if not LOCKSTEP:
            self.skipTest("LOCKSTEP_BIN is not set (the emulated build's lockstep)")
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-quick-loader-")
        self.photos = os.path.join(self.dir.name, "photos")
        write_jpeg_classes(self.photos, ["a", "b"], 12, 20)

    def tearDown(self):
        self.dir.cleanup()

    def run_step(self, devices, seconds=600, extra=()):
        work = os.path.join(self.dir.name, "work")
        env = dict(os.environ, LOCKSTEP_EMU_DEVICES=str(devices))
        args = [SCRIPT, LOCKSTEP, self.photos, "3x16x16", str(seconds), os.path.join(self.dir.name, "train.log"), work]
        args += TRAIN + ["--devices", ",".join(str(d) for d in range(devices))] + list(extra)
        r = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        return r.returncode, r.stdout.splitlines(), work

    def check_epochs(self, devices):
        rc, lines, work = self.run_step(devices)
        with open(os.path.join(self.dir.name, "train.log")) as f:
            log = f.read()
        self.assertEqual(rc, 0, "\n".join(lines) + log)
        self.assertEqual(len(lines), 2, lines)
        self.assertRegex(lines[0], LINE % "photo folder decoded every epoch")
        self.assertRegex(lines[1], LINE % "the same images from a cache file")
        # Each line comes from its own run's metrics file.
        for name in ("folder.jsonl", "cache.jsonl"):
            with open(os.path.join(work, name)) as f:
                self.assertIn('"type":"epoch"', f.read())
        self.assertTrue(os.path.exists(os.path.join(work, "photos.lockstep-cache")))

    def test_one_emulated_device_reports_both_epochs(self):
        self.check_epochs(1)

    def test_two_emulated_devices_report_both_epochs(self):
        self.check_epochs(2)

    def test_a_failed_run_is_reported_not_passed(self):
        rc, lines, _ = self.run_step(1, extra=["--model", "no-such-model"])
        self.assertEqual(rc, 1, lines)
        self.assertTrue(lines and all(re.match(r"^FAIL: loader, ", l) for l in lines), lines)
        self.assertRegex(lines[0], r"photo folder decoded every epoch: exit [1-9]")

    def test_no_time_left_is_reported_not_run(self):
        rc, lines, _ = self.run_step(1, seconds=5)
        self.assertEqual(rc, 1)
        self.assertEqual(lines, ["FAIL: loader, photo folder decoded every epoch: not run, no time left",
                                 "FAIL: loader, lockstep cache: not run, no time left"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
