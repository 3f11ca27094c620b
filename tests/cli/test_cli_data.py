"""End-to-end tests that a checkpoint's data is the data a later command
finds (eval without --data, train --resume), run by CTest (tests/cli.cmake).

A checkpoint keeps its class names, its data's absolute path and the data's
identity (sample and class counts, a fingerprint). Before these checks a
renamed class folder gave 0.00% under the old names in eval and a resumed run
trained on permuted labels; a relative --data was found again from whatever
folder the later command ran in. --normalize chooses the normalisation that
the checkpoint then carries to eval, predict and --resume.
"""
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_outputs import BIN, CliTestCase, count_steps, png, read, run, write_idx, write_image_folder  # noqa: E402


def write_noise_pngs(folder, classes, per_class, size):
    """Grey PNGs of random pixels: slow to decode (nothing for zlib to find),
    quick to write."""
    import zlib
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0)
    for name in classes:
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        for i in range(per_class):
            rows = b"".join(b"\x00" + os.urandom(size) for _ in range(size))
            with open(os.path.join(folder, name, "%d.png" % i), "wb") as f:
                f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) +
                        chunk(b"IEND", b""))

QUICK = ["--devices", "cpu", "--model", "mlp", "--batch", "8", "--lr", "0.05", "--seed", "3", "--input", "1x8x8"]


class CliData(CliTestCase):
    def train(self, data, extra=(), cwd=None):
        ck = self.path("ck")
        r = run(["train"] + QUICK + ["--epochs", "1", "--data", data, "--checkpoint", ck] + list(extra),
                cwd or self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return ck

    def evaluate(self, ck, cwd=None):
        return run(["eval", "--checkpoint", ck, "--devices", "cpu"], cwd or self.tmp)

    def test_renamed_added_or_removed_classes_are_refused_naming_them(self):
        data = self.path("data")
        write_image_folder(data, [b"cat", b"dog", b"eel"], 10)
        ck = self.train(data)
        r = self.evaluate(ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        kept = read(ck)
        resume = ["train", "--resume", ck, "--epochs", "2", "--devices", "cpu"]

        os.rename(os.path.join(data, "dog"), os.path.join(data, "wolf"))
        for args in (["eval", "--checkpoint", ck, "--devices", "cpu"], resume):
            with self.subTest(command=args[0], change="renamed"):
                r = run(args, self.tmp)
                self.assert_refused(r, "the classes of the data at " + data, "not in the data: dog",
                                    "not in the checkpoint: wolf", ck)
        os.rename(os.path.join(data, "wolf"), os.path.join(data, "dog"))

        shutil.rmtree(os.path.join(data, "eel"))
        write_image_folder(data, [b"fox"], 10)
        for args in (["eval", "--checkpoint", ck, "--devices", "cpu"], resume):
            with self.subTest(command=args[0], change="one added, one removed"):
                r = run(args, self.tmp)
                self.assert_refused(r, "not in the data: eel", "not in the checkpoint: fox")
        self.assertEqual(read(ck), kept)

    def test_a_relative_data_path_is_found_again_from_any_folder(self):
        # Trained in folder a on a/data; evaluated from folder b, which has a data folder of its own.
        a, b = self.path("a"), self.path("b")
        write_image_folder(os.path.join(a, "data"), [b"cat", b"dog"], 10)
        write_image_folder(os.path.join(b, "data"), [b"ant", b"bee", b"cow"], 10)
        ck = self.train("data", cwd=a)
        r = self.evaluate(ck, cwd=b)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(" on " + os.path.join(a, "data") + " ", r.stdout)

    def test_changed_files_are_told_and_a_mid_epoch_resume_on_them_is_refused(self):
        data = self.path("data")
        write_image_folder(data, [b"cat", b"dog", b"eel"], 10)
        ck = self.train(data)
        # Ten more images in every class: the training set and the held-out tenth both grow.
        for c, name in enumerate(["cat", "dog", "eel"]):
            for i in range(10, 20):
                with open(os.path.join(data, name, "%d.png" % i), "wb") as f:
                    f.write(png(8, 8, c * 100 + i))
        r = self.evaluate(ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"notice: the test data at %s changed since the checkpoint was trained: "
                                   r"samples: 3 then, 6 now" % data)
        r = run(["train", "--resume", ck, "--epochs", "2", "--devices", "cpu"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"notice: the training data at %s changed since the checkpoint: "
                                   r"samples: 27 then, 54 now" % data)

        # A run stopped mid-epoch, then its data changed: the rest of the epoch would be drawn
        # from another order, so the resume is refused, naming the change.
        slow = self.path("slow")
        write_image_folder(slow, [b"cat", b"dog", b"eel"], 100)
        ck2, metrics = self.path("ck2"), self.path("m.jsonl")
        proc = subprocess.Popen([BIN, "train", "--devices", "cpu", "--model", "resnet20", "--batch", "64",
                                 "--epochs", "1", "--data", slow, "--checkpoint", ck2, "--metrics", metrics],
                                cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 240
        while count_steps(metrics) < 1 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 130, out + err)
        for i in range(100, 110):  # ten more cats: one more held out, nine more to train on
            with open(os.path.join(slow, "cat", "%d.png" % i), "wb") as f:
                f.write(png(8, 8, 12345 + i))
        r = run(["train", "--resume", ck2, "--devices", "cpu"], self.tmp)
        self.assert_refused(r, "--resume " + ck2, "of an epoch", "the training data at " + slow, "changed since",
                            "samples: 270 then, ")

    def normalization(self, ck):
        blob = read(ck)
        (size,) = struct.unpack("<Q", blob[:8])
        meta = json.loads(blob[8:8 + size])["__metadata__"]
        values = json.loads(meta["extra.normalization"])
        return meta["extra.normalize"], values["mean"], values["std"]

    def test_normalize_is_saved_and_kept_by_eval_and_resume(self):
        data = self.path("data")
        write_image_folder(data, [b"cat", b"dog"], 10)
        rgb = QUICK[:-1] + ["3x8x8"]
        ck = self.path("ck")

        def train(*extra):
            return run(["train"] + rgb + ["--epochs", "1", "--data", data, "--checkpoint", ck] + list(extra), self.tmp)

        r = train("--normalize", "imagenet")
        self.assertEqual(r.returncode, 0, r.stderr)
        kind, mean, std = self.normalization(ck)
        self.assertEqual(kind, "imagenet")
        for got, want in zip(mean + std, [0.485, 0.456, 0.406, 0.229, 0.224, 0.225]):
            self.assertAlmostEqual(got, want, places=6)
        # eval normalises as the run did: its loss is the run's last test loss.
        test_loss = float(re.findall(r"test loss ([0-9.]+)", r.stdout)[-1])
        e = self.evaluate(ck)
        self.assertEqual(e.returncode, 0, e.stderr)
        self.assertAlmostEqual(float(re.search(r"loss ([0-9.]+) accuracy", e.stdout).group(1)), test_loss, places=4)
        # A resume keeps it; another kind would make another run: refused unless --force, which then applies it.
        before = read(ck)
        r = run(["train", "--resume", ck, "--devices", "cpu", "--epochs", "2", "--normalize", "none"], self.tmp)
        self.assert_refused(r, "--normalize none differs from the checkpoint's imagenet", "--force")
        self.assertEqual(read(ck), before)
        r = run(["train", "--resume", ck, "--devices", "cpu",
                 "--epochs", "2", "--normalize", "none", "--force"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.normalization(ck), ("none", [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]))
        r = run(["train", "--resume", ck, "--devices", "cpu", "--epochs", "3"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.normalization(ck), ("none", [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]))
        # The default is the data set's own statistics; imagenet's needs three channels.
        os.remove(ck)
        r = train()
        self.assertEqual(r.returncode, 0, r.stderr)
        kind, mean, std = self.normalization(ck)
        self.assertEqual(kind, "dataset")
        self.assertNotAlmostEqual(mean[0], 0.485, places=3)
        idx = self.path("idx")
        write_idx(idx, 32, 8)
        r = run(["train"] + QUICK[:-2] + ["--epochs", "1", "--data", idx, "--checkpoint", self.path("ck2"),
                                          "--normalize", "imagenet"], self.tmp)
        self.assert_refused(r, "--normalize imagenet", "1 channel", "dataset or none")

    def test_label_smoothing_trains_saved_and_resumed(self):
        data = self.path("idx")
        write_idx(data, 64, 8)
        base = ["train"] + QUICK[:-2] + ["--epochs", "1", "--data", data]
        losses = {}
        for name, extra in (("plain", []), ("zero", ["--label-smoothing", "0"]), ("smooth", ["--label-smoothing", "0.3"])):
            r = run(base + ["--checkpoint", self.path(name), "--metrics", self.path(name + ".jsonl")] + extra, self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(self.path(name + ".jsonl")) as f:
                losses[name] = [json.loads(line)["loss"] for line in f if '"step"' in line]
        # 0 is the plain loss to the bit; 0.3 another loss from the first step on (same weights, same batch).
        self.assertEqual(losses["zero"], losses["plain"])
        self.assertNotEqual(losses["smooth"][0], losses["plain"][0])
        self.assertTrue(all(math.isfinite(x) for x in losses["smooth"]))
        blob = read(self.path("smooth"))
        meta = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])["__metadata__"]
        self.assertAlmostEqual(float(meta["extra.label_smoothing"]), 0.3, places=6)
        r = run(["train", "--resume", self.path("smooth"), "--devices", "cpu", "--epochs", "2"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        blob = read(self.path("smooth"))
        meta = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])["__metadata__"]
        self.assertAlmostEqual(float(meta["extra.label_smoothing"]), 0.3, places=6)
        for value in ("1", "-0.1", "nan"):
            with self.subTest(value=value):
                r = run(base + ["--checkpoint", self.path("bad"), "--label-smoothing", value], self.tmp)
                self.assertIn(r.returncode, (1, 2), r.stdout + r.stderr)
                self.assertIn("--label-smoothing", r.stderr)
                self.assertFalse(os.path.exists(self.path("bad")))

    def test_mixup_and_cutmix_train_saved_and_resumed_as_the_unbroken_run(self):
        data = self.path("idx")
        write_idx(data, 60, 8)  # batches of 8: the last of each epoch is of 4
        base = ["train"] + QUICK[:-2] + ["--data", data]
        # A constant rate: a schedule over 1 epoch would differ from one over 2.
        mix = ["--mixup", "0.8", "--cutmix", "1.0", "--mixup-prob", "0.9", "--label-smoothing", "0.1",
               "--schedule", "constant"]

        def losses(name):
            with open(self.path(name + ".jsonl")) as f:
                return {r["step"]: r["loss"] for r in map(json.loads, f) if r.get("type") == "step"}

        def trained(name, extra):
            r = run(base + ["--checkpoint", self.path(name), "--metrics", self.path(name + ".jsonl")] + extra,
                    self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r

        trained("plain", ["--epochs", "1", "--label-smoothing", "0.1"])
        r = trained("mixed", ["--epochs", "2"] + mix)
        self.assertIn("mixing batches: mixup 0.8, cutmix 1", r.stdout)
        self.assertNotEqual(losses("mixed")[1], losses("plain")[1])
        self.assertTrue(all(math.isfinite(x) for x in losses("mixed").values()))
        blob = read(self.path("mixed"))
        meta = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])["__metadata__"]
        for key, value in (("mixup", 0.8), ("cutmix", 1.0), ("mixup_prob", 0.9), ("mixup_switch_prob", 0.5)):
            self.assertAlmostEqual(float(meta["extra." + key]), value, places=6)
        # One epoch, then resumed for the second: the second epoch's batches
        # mix as the unbroken run's did (each draw from seed, epoch, batch).
        trained("first", ["--epochs", "1"] + mix)
        r = run(["train", "--resume", self.path("first"), "--epochs", "2", "--devices", "cpu", "--metrics",
                 self.path("rest.jsonl")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        rest, whole = losses("rest"), losses("mixed")
        self.assertTrue(rest)
        for step, loss in rest.items():
            self.assertEqual(loss, whole[step], "step %d" % step)
        for flag, value in (("--mixup", "-1"), ("--cutmix", "nan"), ("--mixup-prob", "1.5"),
                            ("--mixup-switch-prob", "-0.1")):
            with self.subTest(flag=flag, value=value):
                r = run(base + ["--epochs", "1", "--checkpoint", self.path("bad"), flag, value], self.tmp)
                self.assertIn(r.returncode, (1, 2), r.stdout + r.stderr)
                self.assertIn(flag, r.stderr)
                self.assertFalse(os.path.exists(self.path("bad")))


    def test_a_run_that_waited_for_its_loader_says_so_at_the_end_naming_the_remedies(self):
        # A loader that cannot keep up (one thread decoding 1200x1200 PNGs in
        # every epoch for a model that steps in well under a millisecond) and
        # one that can (in-memory IDX images for small-cnn). The notice is
        # printed exactly when the epochs' waits (the metrics file's
        # data_wait_seconds) exceed 5% of their time; the slow run's do by far
        # on a quiet machine (over 50%), the quick run's stay far below (under
        # 1%). How the trainer measures the wait: tests/cpu/test_trainer.cpp.
        photos = self.path("photos")
        write_noise_pngs(photos, ["a", "b", "c"], 8, 1200)
        idx = self.path("idx")
        write_idx(idx, 640, 28, test_count=64)
        notice = "notice: the steps waited for data"
        fractions = {}
        for name, args in [("slow", ["--data", photos, "--model", "mlp", "--input", "1x8x8", "--batch", "4",
                                     "--threads", "1", "--cache-mb", "0"]),
                           ("quick", ["--data", idx, "--model", "small-cnn", "--batch", "128", "--threads", "1"])]:
            with self.subTest(run=name):
                metrics = self.path(name + ".jsonl")
                r = run(["train", "--devices", "cpu", "--epochs", "2", "--seed", "3", "--checkpoint",
                         self.path(name), "--metrics", metrics] + args, self.tmp)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                with open(metrics) as f:
                    epochs = [d for d in map(json.loads, f) if d["type"] == "epoch"]
                self.assertEqual(len(epochs), 2)
                waited = sum(e["data_wait_seconds"] for e in epochs)
                seconds = sum(e["seconds"] for e in epochs)
                self.assertTrue(0.0 <= waited <= seconds, (waited, seconds))
                fractions[name] = waited / seconds
                self.assertEqual(notice in r.stderr, fractions[name] > 0.05, (fractions[name], r.stderr))
                if notice in r.stderr:
                    line = next(l for l in r.stderr.splitlines() if notice in l)
                    self.assertIn("--threads (now 1)", line)
                    self.assertIn("`lockstep cache`", line)
                    self.assertIn("%.0f%%" % (100 * fractions[name]), line)
        self.assertGreater(fractions["slow"], 0.05, fractions)
        self.assertLess(fractions["quick"], 0.05, fractions)

if __name__ == "__main__":
    unittest.main()
