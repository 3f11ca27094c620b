"""End-to-end tests of the decoded-image cache file (`lockstep cache`, then
`lockstep train --data FILE` or the cache found beside the folder), run by
CTest (tests/cli.cmake).

Training from the cache must give the very losses training from the folder
gives; a cache that no longer matches its folder, a damaged one, a foreign
file or a cache of another --input must stop the run naming the file.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_outputs import BIN, CliTestCase, png, read, run, write_image_folder  # noqa: E402

INPUT = ["--input", "1x8x8"]
QUICK = ["--devices", "cpu", "--model", "mlp", "--batch", "8", "--lr", "0.05", "--seed", "3"] + INPUT


def step_losses(metrics):
    with open(metrics) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return ([l["loss"] for l in lines if l["type"] == "step"],
            [l.get("test_loss") for l in lines if l["type"] == "epoch"])


class CliCache(CliTestCase):
    def make_data(self):
        data = self.path("photos")
        write_image_folder(data, [b"cat", b"dog", b"eel"], 12, size=12)
        return data

    def cache(self, data, extra=()):
        r = run(["cache", data, "--seed", "3", "--threads", "2"] + INPUT + list(extra), self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def train(self, data, name, extra=()):
        metrics = self.path(name + ".jsonl")
        r = run(["train"] + QUICK + ["--epochs", "1", "--data", data, "--checkpoint", self.path(name + ".ck"),
                                     "--metrics", metrics] + list(extra), self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r, step_losses(metrics)

    def test_training_from_the_cache_gives_the_folders_losses(self):
        data = self.make_data()
        _, from_folder = self.train(data, "folder", ["--cache-mb", "0"])
        self.assertGreater(len(from_folder[0]), 2)

        cache = self.path("photos.cache")
        r = self.cache(data, ["-o", cache])
        self.assertIn("36 images (33 train, 3 test)", r.stdout)
        self.assertIn(cache, r.stdout)
        r, from_cache = self.train(cache, "cache")
        self.assertIn("decoded images read from the cache file " + cache, r.stdout)
        self.assertEqual(from_cache, from_folder)
        r = run(["eval", "--checkpoint", self.path("cache.ck"), "--devices", "cpu"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # Beside the folder: found by itself.
        r = self.cache(data)
        self.assertIn(data + ".lockstep-cache", r.stdout)
        r, beside = self.train(data, "beside")
        self.assertIn("decoded images read from the cache file " + data + ".lockstep-cache", r.stdout)
        self.assertEqual(beside, from_folder)
        # Another --input: the folder is read, with a notice.
        r = run(["train"] + QUICK[:-2] + ["--input", "1x6x6", "--epochs", "1", "--data", data, "--checkpoint",
                                          self.path("other.ck")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("read from the cache file", r.stdout)
        self.assertIn("notice: the cache file " + data + ".lockstep-cache", r.stderr)

    def test_a_cache_file_gives_the_input_and_test_fraction_a_run_leaves_out(self):
        data = self.make_data()
        _, from_folder = self.train(data, "folder", ["--cache-mb", "0", "--test-fraction", "0.25"])
        cache = self.path("photos.cache")
        self.cache(data, ["-o", cache, "--test-fraction", "0.25"])
        metrics = self.path("taken.jsonl")
        unsized = [a for a in QUICK if a not in INPUT]
        r = run(["train"] + unsized + ["--epochs", "1", "--data", cache, "--checkpoint", self.path("taken.ck"),
                                       "--metrics", metrics], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("decoded images read from the cache file " + cache +
                      " (lockstep cache), with its --input 1x8x8 --test-fraction 0.25", r.stdout)
        self.assertEqual(step_losses(metrics), from_folder)
        # The checkpoint says what was trained: eval and --resume find 1x8x8 there.
        r = run(["eval", "--checkpoint", self.path("taken.ck"), "--devices", "cpu"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run(["train", "--resume", self.path("taken.ck"), "--epochs", "2", "--devices", "cpu"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_stale_cache_is_refused_naming_the_changed_file_and_rebuilt_on_request(self):
        data = self.make_data()
        cache = self.path("photos.cache")
        self.cache(data, ["-o", cache])
        self.cache(data)
        with open(os.path.join(data, "dog", "3.png"), "wb") as f:
            f.write(png(20, 20, 999))
        for path in (cache, data):
            with self.subTest(data=path):
                r = run(["train"] + QUICK + ["--epochs", "1", "--data", path, "--checkpoint", self.path("ck")],
                        self.tmp)
                self.assert_refused(r, "is stale", "dog/3.png changed", "lockstep cache " + data + " --input 1x8x8",
                                    "--seed 3")
        os.remove(os.path.join(data, "eel", "0.png"))
        r = run(["train"] + QUICK + ["--epochs", "1", "--data", cache, "--checkpoint", self.path("ck")], self.tmp)
        self.assert_refused(r, cache, "eel/0.png was removed")
        # Asked again, lockstep cache rebuilds it.
        self.cache(data, ["-o", cache])
        self.train(cache, "rebuilt")

    def test_cut_damaged_foreign_or_other_input_caches_are_refused_naming_the_file(self):
        data = self.make_data()
        cache = self.path("photos.cache")
        self.cache(data, ["-o", cache])
        whole = read(cache)
        bad = self.path("bad.cache")
        cases = {
            "cut short": whole[: len(whole) // 2],
            "checksum": whole[:200] + bytes([whole[200] ^ 4]) + whole[201:],
            "not a lockstep cache file": b"GIF89a" + whole[6:],
        }
        for needle, content in cases.items():
            with self.subTest(case=needle):
                with open(bad, "wb") as f:
                    f.write(content)
                r = run(["train"] + QUICK + ["--epochs", "1", "--data", bad, "--checkpoint", self.path("ck")],
                        self.tmp)
                self.assert_refused(r, bad, needle)
        r = run(["train"] + QUICK[:-2] + ["--input", "3x8x8", "--epochs", "1", "--data", cache, "--checkpoint",
                                          self.path("ck")], self.tmp)
        self.assert_refused(r, cache, "--input: the cache holds 1x8x8 samples, this run asks 3x8x8")

    def test_a_writer_stopped_or_killed_mid_write_leaves_the_old_cache_whole(self):
        data = self.path("photos")
        write_image_folder(data, [b"cat", b"dog"], 150, size=96)
        cache = self.path("photos.cache")
        self.cache(data, ["-o", cache])
        old = read(cache)
        args = [BIN, "cache", data, "--input", "3x64x64", "--threads", "1", "-o", cache]
        writer = subprocess.Popen(args, cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while not glob.glob(cache + ".tmp.*") and writer.poll() is None and time.time() < deadline:
                time.sleep(0.002)
            writer.send_signal(signal.SIGSTOP)
            self.assertIsNone(writer.poll(), "the writer ended before it could be stopped mid-write")
            self.assertEqual(glob.glob(cache + ".tmp.*"), [cache + ".tmp.%d" % writer.pid])
            # A second writer while the first holds the lock: refused, naming the cache.
            r = run(["cache", data, "--input", "1x8x8", "-o", cache], self.tmp)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(cache + ": another lockstep cache is writing it", r.stderr)
            writer.kill()
        finally:
            writer.kill()
            writer.wait()
        # Killed mid-write: the old cache is whole and trains; the next writer clears the leftover.
        self.assertEqual(read(cache), old)
        self.train(cache, "after-kill")
        self.cache(data, ["-o", cache])
        self.assertEqual(glob.glob(cache + ".tmp.*"), [])
        self.assertEqual(read(cache), old)

    def test_cache_refuses_what_it_cannot_cache_and_replaces_no_other_file(self):
        data = self.make_data()
        notes = self.path("notes.txt")
        with open(notes, "w") as f:
            f.write("keep me")
        r = run(["cache", data, "--input", "1x8x8", "-o", notes], self.tmp)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(notes, r.stderr)
        self.assertEqual(read(notes), b"keep me")
        r = run(["cache", data], self.tmp)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--input", r.stderr)
        r = run(["cache", self.path("missing"), "--input", "1x8x8"], self.tmp)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(self.path("missing"), r.stderr)


if __name__ == "__main__":
    unittest.main()
