"""End-to-end tests of what `lockstep train` writes and checks before training,
run by CTest (tests/cli.cmake).

Each test builds its own small data set in a temporary folder (IDX files, or
image folders of PNGs written here without PIL), so that no test can damage a
data set of the machine's, whatever the binary does.
"""
import fcntl
import gzip
import json
import os
import resource
import signal
import struct
import subprocess
import tempfile
import time
import unittest
import zlib

BIN = os.environ.get("LOCKSTEP_BIN", "build/lockstep")
QUICK = ["--devices", "cpu", "--model", "mlp", "--batch", "16", "--lr", "0.05", "--seed", "3"]
ONE = QUICK + ["--epochs", "1"]


def run(args, cwd, timeout=300):
    return subprocess.run([BIN] + args, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout)


def write_idx(folder, count, size, test_count=None):
    """An IDX data set of count training and test_count test images of size x size, 10 classes."""
    os.makedirs(folder, exist_ok=True)
    test_count = count if test_count is None else test_count
    for prefix, n in (("train", count), ("t10k", test_count)):
        pixels = bytes((i * 37 + (i // (size * size)) * 11) % 256 for i in range(n * size * size))
        with gzip.open(os.path.join(folder, prefix + "-images-idx3-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, size, size) + pixels)
        with gzip.open(os.path.join(folder, prefix + "-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))


def png(width, height, seed):
    """A greyscale PNG, written with zlib alone."""
    rows = b"".join(b"\x00" + bytes((x * 13 + y * 7 + seed * 31) % 256 for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write_image_folder(folder, classes, per_class, size=8):
    """classes: folder names as bytes (any bytes a Linux file name may hold)."""
    for c, name in enumerate(classes):
        path = os.path.join(os.fsencode(folder), name)
        os.makedirs(path, exist_ok=True)
        for i in range(per_class):
            with open(os.path.join(path, b"%d.png" % i), "wb") as f:
                f.write(png(size, size, c * 100 + i))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def count_steps(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for line in f if '"step"' in line)


class CliTestCase(unittest.TestCase):
    """A temporary folder per test, and the check that a run was refused."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-outputs-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, *names):
        return os.path.join(self.tmp, *names)

    def assert_refused(self, r, *needles):
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        for needle in needles:
            self.assertIn(needle, lines[0])
        self.assertNotIn("epoch 1/", r.stdout)  # refused before training


class CliOutputs(CliTestCase):
    def test_outputs_never_overwrite_inputs_or_other_files(self):
        data = self.path("data")
        write_idx(data, 64, 8)
        labels = os.path.join(data, "t10k-labels-idx1-ubyte.gz")
        before = read(labels)
        base = ["train"] + ONE + ["--data", data]
        for option in ("--checkpoint", "--metrics"):
            for force in ([], ["--force"]):
                with self.subTest(option=option, force=force):
                    r = run(base + [option, labels] + force, self.tmp)
                    self.assert_refused(r, option + " " + labels, "--data " + data)
                    self.assertEqual(read(labels), before)

        notes = self.path("notes.txt")
        with open(notes, "w") as f:
            f.write("precious\n")
        for option in ("--checkpoint", "--metrics"):
            with self.subTest(option=option):
                r = run(base + [option, notes], self.tmp)
                self.assert_refused(r, option + " " + notes, "--force")
                self.assertEqual(read(notes), b"precious\n")
        r = run(base + ["--checkpoint", notes, "--force"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)

        # Its own kinds of file it replaces as before.
        metrics = self.path("m.jsonl")
        for _ in range(2):
            r = run(base + ["--checkpoint", self.path("ck"), "--metrics", metrics], self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
        r = run(base + ["--checkpoint", self.path("ck"), "--metrics", self.path("ck")], self.tmp)
        self.assert_refused(r, "--metrics " + self.path("ck"))

    def test_checks_before_the_first_epoch(self):
        data, small = self.path("data"), self.path("small")
        write_idx(data, 64, 8)
        write_idx(small, 64, 6)
        base = ["train"] + ONE + ["--data", data]
        ck = ["--checkpoint", self.path("ck")]
        cases = [
            (ck + ["--test-data", small], ["--test-data " + small, "[1, 6, 6]", "[1, 8, 8]"]),
            (["--checkpoint", "/proc/lockstep.ck"], ["--checkpoint /proc/lockstep.ck", "cannot create files"]),
            (ck + ["--metrics", "/proc/lockstep.jsonl"], ["--metrics /proc/lockstep.jsonl", "cannot create files"]),
            (["--checkpoint", self.tmp], ["--checkpoint " + self.tmp, "is a folder"]),
        ]
        for args, needles in cases:
            with self.subTest(args=args):
                r = run(base + args, self.tmp)
                self.assert_refused(r, *needles)
        self.assertFalse(os.path.exists(self.path("ck")))

    def test_class_folders_of_any_bytes_survive_the_checkpoint(self):
        data = self.path("photos")
        write_image_folder(data, [b"caf\xe9", b"plain", b"\xff\xfe"], 12)
        ck = self.path("ck")
        r = run(["train"] + ONE + ["--data", data, "--input", "1x8x8", "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        meta = json.loads(read(ck)[8:8 + struct.unpack("<Q", read(ck)[:8])[0]])["__metadata__"]
        exact = [bytes.fromhex(h) for h in json.loads(meta["class_names_hex"])]
        self.assertEqual(sorted(exact), sorted([b"caf\xe9", b"plain", b"\xff\xfe"]))
        e = subprocess.run([BIN, "eval", "--checkpoint", ck, "--devices", "cpu"], cwd=self.tmp, capture_output=True)
        self.assertEqual(e.returncode, 0, e.stderr)
        self.assertIn(b"caf\xe9 ", e.stdout)  # the class's own bytes, matched to its folder again
        # predict --json: every line is JSON (UTF-8), with the exact bytes of a name that is not
        # UTF-8 beside it as hex (before: an abort on nlohmann's type_error 316).
        image = os.path.join(os.fsencode(data), b"\xff\xfe", b"0.png")
        odd = os.path.join(os.fsencode(self.tmp), b"\xe9t\xe9.png")
        with open(image, "rb") as f, open(odd, "wb") as g:
            g.write(f.read())
        p = subprocess.run([BIN, "predict", "--checkpoint", ck, "--json", "--top", "3", odd], cwd=self.tmp,
                           capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        line = json.loads(p.stdout.decode("utf-8"))
        self.assertEqual(bytes.fromhex(line["image_hex"]), odd)
        self.assertEqual(sorted(bytes.fromhex(c["class_hex"]) if "class_hex" in c else c["class"].encode()
                                for c in line["top"]), sorted([b"caf\xe9", b"plain", b"\xff\xfe"]))

    def test_skip_bad_images_applies_to_the_test_set(self):
        data = self.path("photos")
        write_image_folder(os.path.join(data, "train"), [b"a", b"b"], 12)
        write_image_folder(os.path.join(data, "test"), [b"a", b"b"], 4)
        with open(os.path.join(data, "test", "b", "broken.png"), "wb") as f:
            f.write(png(8, 8, 1)[:40])
        args = ["train"] + ONE + ["--data", data, "--input", "1x8x8", "--checkpoint", self.path("ck")]
        r = run(args, self.tmp)
        # Without the flag, the bad test image stops the run before training, naming it.
        self.assert_refused(r, "broken.png")
        r = run(args + ["--skip-bad-images"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("epoch 1/1", r.stdout)
        self.assertIn("broken.png", r.stderr)

    def test_max_image_pixels_and_argument_errors_name_the_option(self):
        data = self.path("photos")
        write_image_folder(data, [b"a", b"b"], 8, size=16)
        base = ["train"] + QUICK + ["--data", data, "--input", "1x8x8", "--checkpoint", self.path("ck")]
        r = run(base + ["--epochs", "1", "--max-image-pixels", "255"], self.tmp)
        self.assert_refused(r, "--max-image-pixels", "256 pixels")
        r = run(base + ["--epochs", "1", "--max-image-pixels", "256"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        cases = [
            (["--batch-per-device", str(2**62), "--replicas", "4"], "--batch-per-device"),
            (["--max-image-pixels", "0"], "--max-image-pixels"),
            (["--epochs", "many"], "--epochs"),
            (["--replicas", "99999999999999999999"], "--replicas"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                r = run(base + args, self.tmp)
                lines = [l for l in r.stderr.splitlines() if l.strip()]
                self.assertIn(r.returncode, (1, 2), r.stderr)
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn(needle, lines[0])

    def slow_run(self, ck, metrics, extra=()):
        """A run slow enough per step (resnet20, batch 64, on the CPU) to be caught mid-step."""
        data = self.path("data")
        if not os.path.exists(data):
            write_idx(data, 256, 32, test_count=16)
        args = ["train", "--devices", "cpu", "--model", "resnet20", "--batch", "64", "--epochs", "3", "--data", data,
                "--checkpoint", ck, "--metrics", metrics] + list(extra)
        return subprocess.Popen([BIN] + args, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def wait_for_steps(self, proc, metrics, steps):
        deadline = time.time() + 240
        while count_steps(metrics) < steps:
            self.assertIsNone(proc.poll(), "the run ended early")
            self.assertLess(time.time(), deadline, "no step within 240 s")
            time.sleep(0.02)

    def test_a_second_run_on_one_checkpoint_is_refused_naming_the_first(self):
        ck = self.path("ck")
        first = self.slow_run(ck, self.path("first.jsonl"))
        try:
            self.wait_for_steps(first, self.path("first.jsonl"), 1)
            r = run(["train"] + ONE + ["--data", self.path("data"), "--checkpoint", ck], self.tmp)
            self.assert_refused(r, "checkpoint " + ck, "process %d" % first.pid)
        finally:
            first.kill()
            first.communicate()
        # The lock went with the killed process. (--force: the killed run may have written its first
        # epoch's checkpoint, of another model, which a new run replaces only when told.)
        r = run(["train"] + ONE + ["--data", self.path("data"), "--checkpoint", ck, "--force"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_live_runs_metrics_and_checkpoint_are_refused_to_a_second_run_under_any_option(self):
        # Before: two runs on one --metrics both ran, interleaving their lines; a run whose --metrics was
        # another live run's --checkpoint ran too, and that checkpoint later replaced its metrics.
        ck, metrics = self.path("ck"), self.path("first.jsonl")
        first = self.slow_run(ck, metrics)
        try:
            self.wait_for_steps(first, metrics, 1)
            data = ["--data", self.path("data")]
            r = run(["train"] + ONE + data + ["--checkpoint", self.path("b"), "--metrics", metrics], self.tmp)
            self.assert_refused(r, "--metrics " + metrics + " is being written by another lockstep run",
                                "process %d" % first.pid)
            r = run(["train"] + ONE + data + ["--checkpoint", self.path("c"), "--metrics", ck], self.tmp)
            self.assert_refused(r, "--metrics " + ck + " is being written by another lockstep run",
                                "process %d" % first.pid)
            self.assertFalse(os.path.exists(self.path("b")) or os.path.exists(self.path("c")))
        finally:
            first.kill()
            first.communicate()

    def test_ctrl_c_twice_stops_at_once_and_keeps_the_checkpoint(self):
        ck, metrics = self.path("ck"), self.path("m.jsonl")
        # An epoch of 4 steps gives a checkpoint to keep.
        proc = self.slow_run(ck, metrics)
        self.wait_for_steps(proc, metrics, 5)
        before = read(ck)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertLess(time.time() - sent, 2.0, "the second Ctrl-C did not stop the run at once")
        self.assertEqual(proc.returncode, -signal.SIGINT, err)
        self.assertIn("stopped at once", err)
        self.assertEqual(read(ck), before)  # the epoch-1 checkpoint, not one written on the way out
        leftovers = [n for n in os.listdir(self.tmp) if n.startswith("ck.tmp")]
        # A write cut short may leave its temporary file; the next run removes it.
        r = run(["train", "--resume", ck, "--devices", "cpu", "--epochs", "1"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([n for n in os.listdir(self.tmp) if n.startswith("ck.tmp")], [], leftovers)

    def test_without_gnuplot_the_run_names_no_picture_it_did_not_draw(self):
        # A GPU machine without gnuplot printed "training curve: X.png" under
        # the notice that X.png could not be drawn.
        empty = self.path("no-tools")
        os.makedirs(empty)
        ck = self.path("ck")
        r = subprocess.run([BIN, "train"] + ONE + ["--checkpoint", ck], cwd=self.tmp, capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, PATH=empty))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("notice: no training-curve picture " + ck + ".png: gnuplot is not on PATH", r.stderr)
        self.assertNotIn("training curve:", r.stdout)
        self.assertIn("checkpoint: " + ck, r.stdout)
        self.assertFalse(os.path.exists(ck + ".png"))

    def test_a_run_killed_while_gnuplot_draws_leaves_no_temporary_file(self):
        # A gnuplot that never finishes holds the run inside the drawing of
        # its first picture; the run is then killed (as a second Ctrl-C or
        # the OOM killer would): nothing of the drawing's stays in TMPDIR.
        tmpdir, bin_dir, mark = self.path("tmpdir"), self.path("bin"), self.path("gnuplot.pid")
        os.makedirs(tmpdir)
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "gnuplot"), "w") as f:
            f.write('#!/bin/sh\necho $$ > "%s.part" && mv "%s.part" "%s"\nexec sleep 600\n' % (mark, mark, mark))
        os.chmod(os.path.join(bin_dir, "gnuplot"), 0o755)
        data = self.path("data")
        write_idx(data, 64, 8)
        env = dict(os.environ, TMPDIR=tmpdir, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        proc = subprocess.Popen([BIN, "train"] + ONE + ["--data", data, "--checkpoint", self.path("ck"),
                                                        "--plot", self.path("curve.png")],
                                cwd=self.tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while not os.path.exists(mark):
            if proc.poll() is not None:
                self.fail("the run ended before drawing: " + proc.communicate()[1])
            self.assertLess(time.time(), deadline, "gnuplot was not started within 120 s")
            time.sleep(0.02)
        with open(mark) as f:
            gnuplot = int(f.read())
        proc.kill()
        proc.communicate(timeout=60)
        os.kill(gnuplot, signal.SIGKILL)
        self.assertEqual(os.listdir(tmpdir), [])
        self.assertFalse(os.path.exists(self.path("curve.png")))

    def test_a_metrics_file_that_cannot_grow_stops_the_run_with_whole_lines_and_the_checkpoint_kept(self):
        # A full disk, as the file-size limit gives it (EFBIG where ENOSPC would come): the
        # metrics file reaches the limit within the first step of the resumed epoch. Before,
        # the line was cut mid-way, the later ones were lost, and the run ended with exit 0.
        data = self.path("data")
        write_idx(data, 64, 8)
        ck, metrics = self.path("ck"), self.path("m.jsonl")
        r = run(["train"] + ONE + ["--data", data, "--checkpoint", ck, "--metrics", metrics], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        kept = read(ck)
        with open(metrics) as f:
            line = f.readline()
        limit = len(kept) + 4096
        with open(metrics, "a") as f:  # lines of lockstep's own, up to a few bytes short of the limit
            while os.path.getsize(metrics) + len(line) < limit:
                f.write(line)
                f.flush()
            pad = limit - 10 - os.path.getsize(metrics) - len('{"type":"pad","x":""}\n')
            f.write('{"type":"pad","x":"%s"}\n' % ("x" * pad))
        before = read(metrics)

        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG instead of a kill
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        r = subprocess.run([BIN, "train", "--resume", ck, "--devices", "cpu",
                            "--epochs", "2", "--metrics", metrics], cwd=self.tmp,
                           capture_output=True, text=True, errors="replace", timeout=300, preexec_fn=limited)
        self.assertGreater(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("cannot write the metrics file " + metrics + ": File too large", r.stderr)
        self.assertEqual(read(metrics), before)  # cut back to its last whole line
        self.assertEqual(read(ck), kept)

    def test_a_new_run_replaces_an_earlier_runs_files_saying_so_and_another_models_only_when_forced(self):
        # Before: a new run on another run's --checkpoint and --metrics replaced that run's
        # checkpoint (of any model) and truncated its metrics without a word.
        data = self.path("data")
        write_idx(data, 64, 8)
        ck, metrics = self.path("ck"), self.path("m.jsonl")
        base = ["train"] + ONE + ["--data", data, "--checkpoint", ck, "--metrics", metrics]
        r = run(base, self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("notice: --", r.stderr)
        r = run(base, self.tmp)  # the same model again: replaced, and said
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("notice: --checkpoint %s holds an earlier run's checkpoint of 'mlp 1x8x8 10' (epoch 1, step 4), "
                      "which this run replaces" % ck, r.stderr)
        self.assertIn("notice: --metrics %s holds an earlier run's lines, which this run replaces" % metrics, r.stderr)
        kept = read(ck)
        other = [a if a != "mlp" else "small-cnn" for a in base]
        r = run(other, self.tmp)
        self.assert_refused(r, "--checkpoint " + ck, "'mlp 1x8x8 10'", "this run of 'small-cnn 1x8x8 10'",
                            "--resume " + ck, "--force")
        self.assertEqual(read(ck), kept)
        r = run(other + ["--force"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("small-cnn", read(ck)[:4096].decode("utf-8", "replace"))
        r = run(["train", "--resume", ck, "--devices", "cpu",
                 "--epochs", "2", "--metrics", metrics], self.tmp)  # its own files: no word
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("notice: --checkpoint", r.stderr)
        self.assertNotIn("notice: --metrics", r.stderr)

    def test_pictures_never_overwrite_inputs_checkpoints_or_other_files(self):
        data = self.path("data")
        write_idx(data, 64, 8)
        labels = os.path.join(data, "t10k-labels-idx1-ubyte.gz")
        base = ["train"] + ONE + ["--data", data]
        ck, metrics = self.path("ck"), self.path("m.jsonl")
        r = run(base + ["--checkpoint", ck, "--metrics", metrics], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        notes = self.path("notes.txt")
        with open(notes, "w") as f:
            f.write("precious\n")
        kept = {p: read(p) for p in (ck, metrics, labels, notes)}

        def unchanged():
            for p, before in kept.items():
                self.assertEqual(read(p), before, p)

        # eval --plot: never the checkpoint or the data, whatever --force says;
        # another kind of file only with --force.
        evaluate = ["eval", "--checkpoint", ck, "--devices", "cpu", "--data", data, "--plot"]
        for target, force, needles in ((ck, [], ["--plot " + ck, "the input --checkpoint"]),
                                       (ck, ["--force"], ["--plot " + ck, "the input --checkpoint"]),
                                       (labels, ["--force"], ["--plot " + labels, "--data " + data]),
                                       (metrics, [], ["--plot " + metrics, "is not a PNG picture", "--force"]),
                                       (notes, [], ["--plot " + notes, "is not a PNG picture"])):
            with self.subTest(command="eval", target=target, force=force):
                r = run(evaluate + [target] + force, self.tmp)
                self.assert_refused(r, *needles)
                unchanged()
        # train's curve: --plot, or the checkpoint's name with .png.
        for args, needles in (
                (["--checkpoint", self.path("m.png")], ["--checkpoint " + self.path("m.png"),
                                                       "the training curve (--plot) " + self.path("m.png"),
                                                       "name the same file"]),
                (["--checkpoint", ck, "--plot", labels, "--force"], ["--plot " + labels, "--data " + data]),
                (["--checkpoint", ck, "--plot", notes], ["--plot " + notes, "is not a PNG picture"]),
                (["--checkpoint", self.path("ck2"), "--metrics", self.path("m2.jsonl"), "--plot",
                  self.path("m2.jsonl")], ["--metrics " + self.path("m2.jsonl"), "--plot", "name the same file"]),
                (["--checkpoint", self.path("ck3"), "--plot", self.path("ck3.lock")],
                 ["--plot " + self.path("ck3.lock"), "the lock file of --checkpoint", "name the same file"]),
                (["--checkpoint", self.path("ck4"), "--plot", "/dev/null"],
                 ["--plot /dev/null", "not a regular file"])):
            with self.subTest(command="train", args=args):
                r = run(base + args, self.tmp)
                self.assert_refused(r, *needles)
                unchanged()
        for name in ("m.png", "ck2", "ck3", "ck3.lock", "ck4"):
            self.assertFalse(os.path.exists(self.path(name)), name)
        # Told so, a picture replaces a file of another kind; a PNG it replaces anyway.
        r = run(evaluate + [notes, "--force"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read(notes)[:8], b"\x89PNG\r\n\x1a\n")
        r = run(evaluate + [notes], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_every_writer_refuses_a_link_and_eval_plot_waits_for_no_other_writer(self):
        # Before: eval --plot took no lock (a live run drawing the same picture was raced) and, like
        # train's checkpoint, metrics and curve and cache's -o, replaced a link by its file (the
        # link's target left stale) or, for --metrics, appended through it.
        data = self.path("data")
        write_idx(data, 64, 8)
        ck = self.path("ck")
        r = run(["train"] + ONE + ["--data", data, "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        target = self.path("target.png")
        with open(target, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\nsomeone's picture")
        kept = read(target)
        link = self.path("link.png")
        os.symlink(target, link)
        evaluate = ["eval", "--checkpoint", ck, "--devices", "cpu", "--plot"]
        photos = self.path("photos")
        write_image_folder(photos, [b"a", b"b"], 2)
        for args, option in ((evaluate + [link], "--plot"),
                             (evaluate + [link, "--force"], "--plot"),
                             (["train"] + ONE + ["--data", data, "--checkpoint", link], "--checkpoint"),
                             (["train"] + ONE + ["--data", data, "--checkpoint", self.path("ck2"), "--metrics", link],
                              "--metrics"),
                             (["train"] + ONE + ["--data", data, "--checkpoint", self.path("ck3"), "--plot", link],
                              "--plot"),
                             (["cache", photos, "--input", "1x4x4", "-o", link, "--force"], "-o")):
            with self.subTest(args=args):
                r = run(args, self.tmp)
                self.assert_refused(r, option + " " + link + " is a symbolic link")
                self.assertTrue(os.path.islink(link))
                self.assertEqual(read(target), kept)
        self.assertFalse(os.path.exists(self.path("ck2")) or os.path.exists(self.path("ck3")))
        # A link to a device stays a metrics file's way to a terminal or /dev/null.
        os.symlink("/dev/null", self.path("null"))
        r = run(["train"] + ONE + ["--data", data, "--checkpoint", self.path("ck4"), "--metrics", self.path("null")],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The confusion matrix is locked as train's outputs are: a live writer of it is named.
        plot = self.path("confusion.png")
        with open(plot + ".lock", "w") as holder:
            holder.write("lockstep pid 4242\n")
            holder.flush()
            fcntl.flock(holder, fcntl.LOCK_EX)
            r = run(evaluate + [plot], self.tmp)
            self.assert_refused(r, "--plot " + plot + " is being written by another lockstep run (process 4242")
            self.assertFalse(os.path.exists(plot))
        os.remove(plot + ".lock")
        r = run(evaluate + [plot], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read(plot)[:8], b"\x89PNG\r\n\x1a\n")
        self.assertFalse(os.path.exists(plot + ".lock"))

    def test_a_checkpoints_saved_picture_path_is_never_written(self):
        data = self.path("data")
        write_idx(data, 64, 8)
        ck = self.path("ck")
        r = run(["train"] + ONE + ["--data", data, "--checkpoint", ck, "--plot", self.path("first.png")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        # An edited checkpoint naming another file as its picture (the
        # metadata lies outside the checksum): resuming never writes it.
        victim = self.path("victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        blob = read(ck)
        size = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + size])
        self.assertNotIn("plot", header["__metadata__"])  # no output path is saved
        header["__metadata__"]["plot"] = victim
        encoded = json.dumps(header).encode()
        encoded += b" " * ((8 - len(encoded) % 8) % 8)
        with open(ck, "wb") as f:
            f.write(struct.pack("<Q", len(encoded)) + encoded + blob[8 + size:])
        r = run(["train", "--resume", ck, "--epochs", "2"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read(victim), b"precious\n")
        self.assertIn("training curve: " + self.path("ck.png"), r.stdout)
        self.assertEqual(read(self.path("ck.png"))[:4], b"\x89PNG")

    def test_edited_checkpoint_settings_are_named_by_train_and_eval(self):
        data = self.path("data")
        write_idx(data, 64, 8)
        ck = self.path("ck")
        r = run(["train"] + ONE + ["--data", data, "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        blob = read(ck)
        size = struct.unpack("<Q", blob[:8])[0]

        def edited(key, value):
            header = json.loads(blob[8:8 + size])
            header["__metadata__"][key] = value
            encoded = json.dumps(header).encode()
            encoded += b" " * ((8 - len(encoded) % 8) % 8)
            path = self.path("edited-" + key)
            with open(path, "wb") as f:
                f.write(struct.pack("<Q", len(encoded)) + encoded + blob[8 + size:])
            return path

        # The metadata lies outside the checksum: each command names the
        # setting and its value instead of failing in a number parser.
        r = run(["eval", "--checkpoint", edited("extra.test_fraction", "half"), "--devices", "cpu"], self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("its setting 'test_fraction' is \"half\", not a fraction in [0, 1)", r.stderr)
        self.assertNotIn("stod", r.stderr)
        r = run(["train", "--resume", edited("extra.batch", "many"), "--epochs", "2"], self.tmp)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the checkpoint's setting 'batch' (--batch) is \"many\", not a valid value", r.stderr)
        self.assertNotIn("stoll", r.stderr)

    def test_pictures_of_any_name_and_class_names_with_line_breaks_are_drawn(self):
        data = self.path("photos")
        write_image_folder(data, [b"two\nlines", b"it's", b"plain"], 12)
        ck = self.path("ck")
        curve = self.path("it's a \"curve\".png")
        r = run(["train"] + ONE + ["--data", data, "--input", "1x8x8", "--checkpoint", ck, "--plot", curve],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("notice: no training-curve picture", r.stderr)
        self.assertEqual(read(curve)[:4], b"\x89PNG")
        confusion = self.path("$(touch pwned) it's.png")
        e = run(["eval", "--checkpoint", ck, "--devices", "cpu", "--plot", confusion], self.tmp)
        self.assertEqual(e.returncode, 0, e.stderr)
        self.assertEqual(read(confusion)[:4], b"\x89PNG")
        self.assertFalse(os.path.exists(self.path("pwned")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "pwned")))
        # Nothing but the pictures, the checkpoint and the data is left behind.
        self.assertEqual(sorted(os.listdir(self.tmp)), sorted(["photos", "ck", os.path.basename(curve),
                                                              os.path.basename(confusion)]))

if __name__ == "__main__":
    unittest.main()
