"""lockstep train --ema: the moving average in the checkpoint (ema.* tensors),
a resumed run equal bit for bit to an unbroken one, eval reporting the
average's figures (those of a checkpoint whose weights are the average) and
--no-ema the weights', the per-epoch evaluation on the average, an old
checkpoint resumed with --ema, and the refusals."""
import json
import os
import struct
import sys
import tempfile
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import QUICK, metrics_lines, read_safetensors, run  # noqa: E402
from test_cli_best import tensors  # noqa: E402

# QUICK with a constant schedule, whose rate does not depend on --epochs, and
# a decay the 20 steps of an epoch reach (the warm-up caps it at 0.9 from step 21 on).
EMA = QUICK + ["--schedule", "constant", "--ema", "0.9"]


def swap_in_average(src, dst):
    """A copy of checkpoint `src` whose weights and statistics are its ema.* tensors (and the other way
    round), with its CRC-32 made again as lockstep computes it: the data of the tensors in file order."""
    with open(src, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header_bytes = blob[8:8 + size]
    header = json.loads(header_bytes)
    data = bytearray(blob[8 + size:])
    swapped = 0
    for name, entry in header.items():
        if name == "__metadata__" or "ema." + name not in header:
            continue
        (a0, a1), (b0, b1) = entry["data_offsets"], header["ema." + name]["data_offsets"]
        data[a0:a1], data[b0:b1] = blob[8 + size + b0:8 + size + b1], blob[8 + size + a0:8 + size + a1]
        swapped += 1
    old_crc = header["__metadata__"]["crc32"].encode()
    new_crc = ("%08x" % (zlib.crc32(bytes(data)) & 0xFFFFFFFF)).encode()
    with open(dst, "wb") as f:
        f.write(blob[:8] + header_bytes.replace(b'"crc32":"' + old_crc, b'"crc32":"' + new_crc) + bytes(data))
    return swapped


def figures(stdout):
    """eval's line of loss and accuracy."""
    return [line for line in stdout.splitlines() if " accuracy " in line and " loss " in line][0]


class CliEma(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-cli-ema-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_ema_resumed_after_an_epoch_equals_an_unbroken_run(self):
        unbroken, broken = self.path("unbroken.safetensors"), self.path("broken.safetensors")
        r = run(["train"] + EMA + ["--epochs", "2", "--checkpoint", unbroken], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("weights: exponential moving average (decay 0.9)", r.stdout)
        meta, saved, _ = read_safetensors(unbroken)
        self.assertEqual(meta["extra.ema"], "0.90000000000000002")
        # Every weight and statistic has its average, which differs from it.
        model = [n for n in saved if "." in n and n.split(".")[0] not in ("momentum", "ema")]
        self.assertIn("fc1.weight", model)
        self.assertEqual(sorted("ema." + n for n in model), sorted(n for n in saved if n.startswith("ema.")))
        self.assertNotEqual(saved["ema.fc1.weight"][1], saved["fc1.weight"][1])
        # Stopped after the first epoch, resumed: the weights, the momentum and
        # the averages go on as if unbroken, bit for bit.
        r = run(["train"] + EMA + ["--epochs", "1", "--checkpoint", broken], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(["train", "--resume", broken, "--epochs", "2", "--devices", "cpu"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("holds no moving average", r.stdout)
        want, got = tensors(unbroken), tensors(broken)
        self.assertEqual(sorted(got), sorted(want))
        self.assertEqual([name for name in want if got[name] != want[name]], [])

    def test_eval_of_an_ema_run_reports_the_average(self):
        ck, swapped, metrics = self.path("ema.safetensors"), self.path("swapped.safetensors"), self.path("m.jsonl")
        # The whole test set, as eval tests it.
        whole = [a for a in EMA if a not in ("--test-limit", "500")]
        r = run(["train"] + whole + ["--epochs", "1", "--checkpoint", ck, "--metrics", metrics], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(swap_in_average(ck, swapped), 0)
        average = run(["eval", "--checkpoint", ck, "--devices", "cpu"], self.tmp)
        self.assertEqual(average.returncode, 0, average.stderr)
        self.assertIn("weights: exponential moving average (decay 0.9)", average.stdout)
        raw = run(["eval", "--checkpoint", ck, "--devices", "cpu", "--no-ema"], self.tmp)
        self.assertEqual(raw.returncode, 0, raw.stderr)
        self.assertIn("weights: raw (--no-ema)", raw.stdout)
        # A checkpoint whose weights are the average, read raw: the same figures as eval of the average.
        by_hand = run(["eval", "--checkpoint", swapped, "--devices", "cpu", "--no-ema"], self.tmp)
        self.assertEqual(by_hand.returncode, 0, by_hand.stderr)
        self.assertEqual(figures(average.stdout).replace(ck, ""), figures(by_hand.stdout).replace(swapped, ""))
        self.assertNotEqual(figures(average.stdout).replace(ck, ""), figures(raw.stdout).replace(ck, ""))
        # The epoch's evaluation during training was the average's too.
        epoch = metrics_lines(metrics, "epoch")[-1]
        self.assertIn("loss %.4f accuracy %.2f%%" % (epoch["test_loss"], 100.0 * epoch["test_accuracy"]),
                      figures(average.stdout))

    def test_predict_of_an_ema_run_uses_the_average(self):
        try:
            from PIL import Image
        except ImportError:
            self.skipTest("PIL is not importable from this interpreter")
        ck, swapped, image = self.path("ema.safetensors"), self.path("swapped.safetensors"), self.path("band.png")
        r = run(["train"] + EMA + ["--epochs", "1", "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        swap_in_average(ck, swapped)
        img = Image.new("L", (28, 28))  # a bright vertical band on black
        for y in range(2, 26):
            for x in range(9, 19):
                img.putpixel((x, y), 220)
        img.save(image)
        average = run(["predict", "--checkpoint", ck, "--json", "--top", "10", image], self.tmp)
        self.assertEqual(average.returncode, 0, average.stderr)
        # JSON lines keep stdout to the predictions; the note goes to stderr.
        self.assertIn("weights: exponential moving average (decay 0.9)", average.stderr)
        by_hand = run(["predict", "--checkpoint", swapped, "--json", "--top", "10", "--no-ema", image], self.tmp)
        raw = run(["predict", "--checkpoint", ck, "--json", "--top", "10", "--no-ema", image], self.tmp)
        self.assertIn("weights: raw (--no-ema)", raw.stderr)
        top = [json.loads(p.stdout)["top"] for p in (average, by_hand, raw)]
        self.assertEqual(top[0], top[1])
        self.assertNotEqual(top[0], top[2])
        table = run(["predict", "--checkpoint", ck, image], self.tmp)
        self.assertEqual(table.stdout.splitlines()[0], "weights: exponential moving average (decay 0.9)")

    def test_an_old_checkpoint_resumed_with_ema_starts_the_average_from_its_weights(self):
        ck = self.path("plain.safetensors")
        r = run(["train"] + QUICK + ["--schedule", "constant", "--epochs", "1", "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(any(n.startswith("ema.") for n in read_safetensors(ck)[1]))
        r = run(["train", "--resume", ck, "--devices", "cpu", "--epochs", "2", "--ema", "0.9"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("holds no moving average of its weights; --ema starts one from them now", r.stdout)
        saved = read_safetensors(ck)[1]
        self.assertIn("ema.fc1.weight", list(saved))
        self.assertNotEqual(saved["ema.fc1.weight"][1], saved["fc1.weight"][1])

    def test_ema_refuses_a_decay_outside_0_1(self):
        for decay in ("0", "1", "1.5", "-0.1"):
            with self.subTest(decay=decay):
                r = run(["train"] + QUICK + ["--epochs", "1", "--ema", decay], self.tmp)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn("--ema", r.stderr)


if __name__ == "__main__":
    unittest.main()
