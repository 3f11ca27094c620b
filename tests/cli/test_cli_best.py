"""lockstep train --keep-best and --early-stop: the best epoch's checkpoint kept,
training stopped after epochs without improvement, and both across --resume."""
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import QUICK, metrics_lines, read_bytes, read_safetensors, run, write_jpeg_classes  # noqa: E402

# QUICK on the whole test set (so eval, which tests on all of it, agrees), and
# a learning rate that warms up over two epochs to one too high for the mlp:
# clipped, it stays finite, but the test accuracy peaks at epoch 3 and falls.
FALLING = [a for a in QUICK if a not in ("--test-limit", "500", "--lr", "0.05")] + [
    "--lr", "0.5", "--clip-grad-norm", "1", "--schedule", "constant", "--warmup-epochs", "2"]


def tensors(path):
    return {name: (shape, raw) for name, (shape, raw, _) in read_safetensors(path)[1].items()}


class CliBest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-cli-best-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_keep_best_holds_the_checkpoint_of_the_best_epoch(self):
        ck, metrics = self.path("run.safetensors"), self.path("run.jsonl")
        r = run(["train"] + FALLING + ["--epochs", "5", "--keep-best", "--checkpoint", ck, "--metrics", metrics],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        scores = [e["test_accuracy"] for e in metrics_lines(metrics, "epoch")]
        best = scores.index(max(scores)) + 1  # the first of equal scores
        self.assertLess(best, 5, "the recipe should make the scores fall: %s" % scores)
        self.assertGreaterEqual(best, 2, "--warmup-epochs 2 needs --epochs 2 for the reference run: %s" % scores)
        # A metrics line for each improvement, the last at the best epoch.
        improvements = metrics_lines(metrics, "best")
        self.assertEqual(improvements[-1]["epoch"], best)
        self.assertEqual(improvements[-1]["checkpoint"], self.path("run.best.safetensors"))
        self.assertEqual([i["test_accuracy"] for i in improvements], sorted(set(i["test_accuracy"] for i in improvements)))
        self.assertIn("checkpoint written to " + self.path("run.best.safetensors"), r.stdout)
        # The same weights, statistics and momentum as a run stopped at the best epoch.
        reference = self.path("reference.safetensors")
        r = run(["train"] + FALLING + ["--epochs", str(best), "--checkpoint", reference], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(tensors(self.path("run.best.safetensors")), tensors(reference))
        self.assertNotEqual(tensors(ck), tensors(reference))
        # A checkpoint that eval reads, scoring what the epoch scored.
        e = run(["eval", "--checkpoint", self.path("run.best.safetensors"), "--devices", "cpu"], self.tmp)
        self.assertEqual(e.returncode, 0, e.stderr)
        evaluated = re.search(r"loss ([0-9.]+) accuracy ([0-9.]+)%", e.stdout).groups()
        self.assertEqual(evaluated[1], "%.2f" % (100.0 * scores[best - 1]))

    def test_early_stop_stops_after_the_epochs_without_improvement_and_stays_stopped(self):
        ck, metrics = self.path("run.safetensors"), self.path("run.jsonl")
        args = FALLING + ["--epochs", "8", "--early-stop", "2", "--checkpoint", ck, "--metrics", metrics]
        r = run(["train"] + args, self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        scores = [e["test_accuracy"] for e in metrics_lines(metrics, "epoch")]
        best = scores.index(max(scores)) + 1
        self.assertEqual(len(scores), best + 2, scores)
        self.assertIn("stopped early after epoch %d" % (best + 2), r.stdout)
        self.assertIn("best epoch %d: test accuracy %.2f%%; its checkpoint was not kept" % (
            best, 100.0 * scores[best - 1]), r.stdout)
        stop = metrics_lines(metrics, "early_stop")
        self.assertEqual([(s["epoch"], s["best_epoch"], s["best_checkpoint"]) for s in stop], [(best + 2, best, None)])
        # Resumed, it trains no further and leaves the checkpoint as it was.
        before = read_bytes(ck)
        r = run(["train", "--resume", ck, "--devices", "cpu", "--metrics", metrics], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("stopped early at epoch %d: nothing to train" % (best + 2), r.stdout)
        self.assertIn("best epoch %d" % best, r.stdout)
        self.assertEqual(len(metrics_lines(metrics, "epoch")), best + 2)
        self.assertEqual(read_bytes(ck), before)
        # A larger patience goes on from there, counting the epochs already without improvement.
        r = run(["train", "--resume", ck, "--devices", "cpu", "--metrics", metrics, "--early-stop", "3"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        scores = [e["test_accuracy"] for e in metrics_lines(metrics, "epoch")]
        if max(scores[best + 2:]) <= scores[best - 1]:
            self.assertEqual(len(scores), best + 3, scores)
            self.assertIn("stopped early after epoch %d" % (best + 3), r.stdout)

    def test_early_stop_names_the_kept_best_checkpoint(self):
        ck = self.path("run.safetensors")
        r = run(["train"] + FALLING + ["--epochs", "8", "--early-stop", "1", "--keep-best", "--checkpoint", ck],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"best epoch \d+: test accuracy [0-9.]+%; its checkpoint is " +
                         re.escape(self.path("run.best.safetensors")))

    def test_keep_best_refuses_another_file_and_a_run_without_a_test_set(self):
        ck, best = self.path("run.safetensors"), self.path("run.best.safetensors")
        with open(best, "w") as f:
            f.write("my notes\n")
        r = run(["train"] + QUICK + ["--epochs", "1", "--keep-best", "--checkpoint", ck], self.tmp)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--keep-best", r.stderr)
        self.assertIn(best, r.stderr)
        self.assertEqual(read_bytes(best), b"my notes\n")
        r = run(["train"] + QUICK + ["--epochs", "1", "--keep-best", "--checkpoint", ck, "--force"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(set(tensors(best)), set(tensors(ck)))
        # Another model's best checkpoint is another run's: kept unless --force.
        cnn = [{"mlp": "simple-cnn", "1280": "64", "500": "64"}.get(a, a) for a in QUICK]
        r = run(["train"] + cnn + ["--epochs", "1", "--keep-best", "--checkpoint", self.path("cnn.safetensors")],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        shutil.copy(self.path("cnn.best.safetensors"), best)
        r = run(["train"] + QUICK + ["--epochs", "1", "--keep-best", "--checkpoint", ck], self.tmp)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--keep-best " + best + " holds an earlier run's checkpoint of", r.stderr)
        # Without a test set there is no score to compare.
        data = self.path("pictures")
        write_jpeg_classes(os.path.join(data, "train"), ["a", "b"], 4, 8)
        for flag in (["--keep-best"], ["--early-stop", "2"]):
            r = run(["train", "--devices", "cpu", "--model", "mlp", "--data", os.path.join(data, "train"),
                     "--test-fraction", "0", "--input", "3x8x8", "--epochs", "1", "--checkpoint",
                     self.path("pictures.safetensors")] + flag, self.tmp)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(flag[0] + " compares the test accuracy of each epoch", r.stderr)
            self.assertIn("has no test set", r.stderr)


if __name__ == "__main__":
    unittest.main()
