"""Processes of one run under mpirun agree on --init, run by CTest (label mpi, tests/mpi.cmake).

The pretrained weights are compared by their contents (a CRC-32 and size, before the first collective),
not by their path, which may differ between hosts. Before, rank 1's --init was read and ignored: only
rank 0's weights were saved, whatever rank 1 trained.
"""
import json
import os
import struct
import subprocess
import tempfile
import unittest

from test_mpi import BIN, MPIRUN, env, write_idx_dataset


def write_weights(path, value):
    """A small safetensors file of one F32 tensor: the check compares bytes, before any is loaded."""
    data = struct.pack("<4f", value, value, value, value)
    header = json.dumps({"conv1.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, len(data)]}}).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    return path


class MpiInit(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-mpi-init-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def two_different(self, first, second, timeout=300):
        """One job of two processes started with different arguments (an MPMD launch)."""
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-x", "LOCKSTEP_CPU_THREADS",
               "-np", "1", BIN] + first + [":", "-np", "1", BIN] + second
        return subprocess.run(cmd, cwd=self.tmp, capture_output=True, text=True, timeout=timeout, env=env())

    def test_processes_given_other_init_weights_or_none_are_refused_naming_init(self):
        data = write_idx_dataset(self.path("data"), train=24, test=20, side=28)
        ck = self.path("ck.safetensors")
        base = ["train", "--data", data, "--devices", "cpu", "--model", "tv-resnet18", "--batch", "8", "--epochs",
                "1", "--threads", "1", "--normalize", "dataset", "--checkpoint", ck]
        a, b = write_weights(self.path("a.safetensors"), 1.0), write_weights(self.path("b.safetensors"), 2.0)
        # The same bytes under another path (as on another host) are the same weights: not a disagreement.
        same = self.path("copy-of-a.safetensors")
        with open(a, "rb") as src, open(same, "wb") as dst:
            dst.write(src.read())
        cases = [
            (base + ["--init", a], base + ["--init", b],
             r"--init \(the pretrained weights' contents\): crc32 [0-9a-f]{8} of \d+ bytes on process 0; "
             r"crc32 [0-9a-f]{8} of \d+ bytes on process 1"),
            (base + ["--init", a], base,
             r"--init \(the pretrained weights' contents\): crc32 [0-9a-f]{8} of \d+ bytes on process 0; "
             r"none on process 1"),
        ]
        for first, second, expected in cases:
            with self.subTest(second=second[-2:]):
                r = self.two_different(first, second)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertRegex(r.stderr, expected)
                self.assertIn("were started with different settings", r.stderr)
                self.assertFalse(os.path.exists(ck), r.stdout + r.stderr)
        # Copies agree: the run goes past the comparison to the weights themselves (which are not a model's).
        r = self.two_different(base + ["--init", a], base + ["--init", same])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertNotIn("different settings", r.stderr)
        self.assertIn("missing tensor", r.stderr)


if __name__ == "__main__":
    unittest.main()
