"""End-to-end tests of what lockstep reads as a hostile user hands it over
(issue 44): counts that would start threads without end, FIFOs, devices and
dangling links where files are expected, a cache file cut while a run reads
it, images that fail only while decoding, data of the wrong shape for a
model, and `eval` given the very folder a run split. Each must stop or skip
with a message naming the file or option, never hang, crash or pass in
silence. Run by CTest (tests/cli.cmake); each makes its own tiny data.
"""
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli_outputs import BIN, ONE, CliTestCase, run, write_idx, write_image_folder  # noqa: E402

MLP = ["--devices", "cpu", "--model", "mlp", "--batch", "4", "--lr", "0.05", "--seed", "3"]
# A FIFO opened for reading blocks until a writer comes: a hang is a failure after this long.
HANG = 20


class CliInputs(CliTestCase):
    def photos(self, classes=(b"cat", b"dog"), per_class=5):
        data = self.path("photos")
        write_image_folder(data, list(classes), per_class, size=12)
        return data

    def test_thread_counts_are_bounded_in_every_command_before_a_thread_starts(self):
        # Before: cache ended in "terminate called without an active exception"
        # (abort, exit 134); train and eval started 32,000 threads before failing.
        data = self.photos()
        idx = self.path("idx")
        write_idx(idx, 64, 8)
        r = run(["train"] + ONE + ["--data", idx, "--checkpoint", self.path("ck")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        for args in (["cache", data, "--input", "1x8x8", "-o", self.path("c.cache")],
                     ["train"] + ONE + ["--data", idx, "--checkpoint", self.path("ck2")],
                     ["eval", "--checkpoint", self.path("ck")]):
            with self.subTest(command=args[0]):
                r = run(args + ["--threads", "100000"], self.tmp, timeout=60)
                self.assert_refused(r, "--threads 100000: more than the 1024 threads lockstep starts",
                                    "give at most 1024")
        self.assertFalse(os.path.exists(self.path("c.cache")))
        self.assertFalse(os.path.exists(self.path("ck2")))

    def test_huge_replica_and_batch_counts_are_refused_naming_the_option_before_allocating(self):
        # Before: --replicas 2147483647 ended in "std::bad_alloc" (a list of 2^31 devices made first),
        # --replicas 100000 started 315 threads before failing, and --batch 2^63 - 1 overflowed the CPU's
        # memory check to a small figure and was let through.
        idx = self.path("idx")
        write_idx(idx, 64, 8)
        train = ["train", "--devices", "cpu", "--model", "mlp", "--epochs", "1", "--data", idx, "--checkpoint",
                 self.path("ck")]
        for replicas in ("2147483647", "100000", "1025"):
            with self.subTest(replicas=replicas):
                r = run(train + ["--replicas", replicas], self.tmp, timeout=60)
                self.assert_refused(r, "--replicas %s: more than the 1024 replicas lockstep starts on one device"
                                    % replicas, "give at most 1024")
        big = str(2 ** 63 - 1)
        r = run(train + ["--batch", big], self.tmp, timeout=60)
        self.assert_refused(r, "--batch %s of samples [1, 8, 8]: the activations of a training step" % big,
                            "more than the", "give a smaller --batch")
        self.assertFalse(os.path.exists(self.path("ck")))

    def test_a_fifo_as_weights_or_as_the_cache_beside_the_data_is_refused_not_waited_on(self):
        data = self.photos()
        fifo = self.path("weights.safetensors")
        os.mkfifo(fifo)
        r = run(["train", "--devices", "cpu", "--model", "tv-resnet18", "--epochs", "1", "--data", data, "--input",
                 "3x32x32", "--init", fifo, "--checkpoint", self.path("ck")], self.tmp, timeout=HANG)
        self.assert_refused(r, "pretrained weights " + fifo + " is a FIFO (named pipe), not a regular file")
        os.mkfifo(data + ".lockstep-cache")
        r = run(["train"] + MLP + ["--epochs", "1", "--input", "1x8x8", "--data", data, "--checkpoint",
                                   self.path("ck")], self.tmp, timeout=HANG)
        self.assert_refused(r, "cache file " + data + ".lockstep-cache (found beside " + data,
                            "is a FIFO (named pipe), not a regular file", "remove it to read the folder")
        self.assertFalse(os.path.exists(self.path("ck")))

    def test_dangling_or_device_links_in_a_class_folder_are_refused_or_skipped_by_name(self):
        # Before: both were left out without a word, even without --skip-bad-images.
        data = self.photos()
        dangling = os.path.join(data, "cat", "gone.png")
        device = os.path.join(data, "dog", "zero.png")
        os.symlink(self.path("nowhere.png"), dangling)
        os.symlink("/dev/zero", device)
        train = ["train"] + MLP + ["--epochs", "1", "--input", "1x8x8", "--test-fraction", "0", "--data", data,
                                   "--checkpoint", self.path("ck")]
        r = run(train, self.tmp, timeout=HANG)
        self.assert_refused(r, "image " + dangling + " is a link to nothing (dangling)")
        os.remove(dangling)
        r = run(train, self.tmp, timeout=HANG)
        self.assert_refused(r, "image " + device + " is a character device, not a regular file")
        os.symlink(self.path("nowhere.png"), dangling)
        r = run(train + ["--skip-bad-images"], self.tmp, timeout=HANG)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("skipped 2 bad images", r.stdout + r.stderr)
        self.assertIn(dangling, r.stdout + r.stderr)
        self.assertIn(device, r.stdout + r.stderr)

    def test_predict_names_a_fifo_or_a_dangling_link_in_a_folder_instead_of_leaving_it_out(self):
        # Before: "folder ... holds no images", the two left out without a word.
        data = self.photos(per_class=1)
        checkpoint = self.path("ck")
        r = run(["train"] + MLP + ["--epochs", "1", "--input", "1x8x8", "--test-fraction", "0", "--data", data,
                                   "--checkpoint", checkpoint], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        fifo = os.path.join(data, "cat", "pipe.png")
        dangling = os.path.join(data, "cat", "gone.png")
        os.mkfifo(fifo)
        os.symlink(self.path("nowhere.png"), dangling)
        r = run(["predict", "--checkpoint", checkpoint, data], self.tmp, timeout=HANG)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("image " + fifo + ": is a FIFO (named pipe), not a regular file", r.stderr)
        self.assertIn("image " + dangling + ": is a link to nothing (dangling)", r.stderr)
        self.assertIn("0.png", r.stdout)

    def test_a_cache_budget_that_is_not_a_number_is_refused(self):
        # Before: --cache-mb nan became the default budget, a quarter of the memory.
        idx = self.path("idx")
        write_idx(idx, 64, 8)
        r = run(["train"] + ONE + ["--data", idx, "--cache-mb", "nan", "--checkpoint", self.path("ck")], self.tmp)
        self.assert_refused(r, "--cache-mb must be a number of MiB, 0 or more", "got nan")

    def test_cache_skip_bad_images_skips_and_names_a_jpeg_that_fails_while_decoding(self):
        # The header reads well, the data runs out: only decoding tells (before: the cache stopped on it).
        from PIL import Image
        data = self.photos()
        good = self.path("good.jpg")
        Image.effect_noise((64, 64), 80).convert("RGB").save(good, quality=90)
        with open(good, "rb") as f:
            whole = f.read()
        bad = os.path.join(data, "cat", "cut.jpg")
        with open(bad, "wb") as f:
            f.write(whole[: whole.find(b"\xff\xda") + 40])
        cache = self.path("photos.cache")
        r = run(["cache", data, "--input", "1x8x8", "--test-fraction", "0.4", "--seed", "3", "-o", cache], self.tmp)
        self.assert_refused(r, "cannot decode image " + bad)
        r = run(["cache", data, "--input", "1x8x8", "--test-fraction", "0.4", "--seed", "3", "--skip-bad-images", "-o", cache],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("skipped 1 bad image: cannot decode image " + bad, r.stderr)
        self.assertIn("10 images", r.stdout)
        # The cache holds the 10 good images, and says which it left out when a run reads it.
        r = run(["train"] + MLP + ["--epochs", "1", "--skip-bad-images", "--data", cache, "--checkpoint",
                                   self.path("ck")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(bad, r.stdout + r.stderr)

    def test_a_cache_cut_while_a_run_reads_it_stops_the_run_naming_it_and_keeps_the_checkpoint(self):
        # Before: Bus error (SIGBUS, exit 135), no message: the cache was memory-mapped.
        data = self.photos()
        cache = self.path("photos.cache")
        r = run(["cache", data, "--input", "1x8x8", "--test-fraction", "0.4", "--seed", "3", "-o", cache], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        checkpoint = self.path("ck")
        train = subprocess.Popen([BIN, "train"] + MLP + ["--epochs", "100000", "--data", cache, "--checkpoint",
                                                         checkpoint], cwd=self.tmp, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 60
            while not os.path.exists(checkpoint) and train.poll() is None and time.time() < deadline:
                time.sleep(0.002)
            os.truncate(cache, 4096)
            _, err = train.communicate(timeout=60)
        finally:
            train.kill()
            train.wait()
        self.assertEqual(train.returncode, 1, err)
        self.assertIn("cache file " + cache + " was cut short while this run read it", err)
        self.assertIn("rename it over the old", err)
        r = run(["eval", "--checkpoint", checkpoint, "--data", data], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_eval_on_the_folder_the_run_split_evaluates_its_held_out_part_only(self):
        # Before: all 10 images, the 6 the model trained on included.
        data = self.photos()
        checkpoint = self.path("ck")
        r = run(["train"] + MLP + ["--epochs", "1", "--input", "1x8x8", "--test-fraction", "0.4", "--data", data,
                                   "--checkpoint", checkpoint], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for given in (data, os.path.relpath(data, self.tmp), data + "/"):
            with self.subTest(data=given):
                r = run(["eval", "--checkpoint", checkpoint, "--data", given], self.tmp)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("(4 samples)", r.stdout)
                self.assertIn("is the folder the checkpoint trained on: evaluating its 4 held-out images only "
                              "(--test-fraction 0.4, --seed 3), not the 6 it trained on", r.stderr)

    def test_eval_on_data_of_other_channels_names_both_shapes_and_the_remedy(self):
        # Before: "Loader: normalisation has 3 means and 3 stds for samples of [1, 8, 8]".
        data = self.photos(classes=[b"%d" % c for c in range(10)], per_class=3)
        idx = self.path("idx")
        write_idx(idx, 64, 8, test_count=16)
        checkpoint = self.path("ck")
        r = run(["train"] + MLP + ["--epochs", "1", "--input", "3x8x8", "--test-fraction", "0.4", "--data", data,
                                   "--checkpoint", checkpoint], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run(["eval", "--checkpoint", checkpoint, "--data", idx], self.tmp)
        self.assert_refused(r, "the data at " + idx + " has samples of [1, 8, 8], and the checkpoint's model takes "
                            "[3, 8, 8] (1 channel against 3)", "or train a model on this data")


if __name__ == "__main__":
    unittest.main()
