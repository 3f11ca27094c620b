"""lockstep train --optimizer adamw: its defaults, its state in the checkpoint,
a resumed run equal bit for bit to an unbroken one, and the refusals (an SGD
checkpoint resumed with AdamW, SGD's flags with AdamW's and the reverse)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import QUICK, read_safetensors, run  # noqa: E402
from test_cli_best import tensors  # noqa: E402

# QUICK at AdamW's default rate (1e-3): the mlp on 1280 samples, 20 steps an
# epoch; a constant schedule, whose rate does not depend on --epochs (a cosine
# over one epoch is not the first epoch of a cosine over three).
ADAMW = [a for a in QUICK if a not in ("--lr", "0.05")] + ["--optimizer", "adamw", "--schedule", "constant"]


class CliOptimizer(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-cli-optimizer-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_adamw_resumed_after_an_epoch_equals_an_unbroken_run(self):
        unbroken, broken = self.path("unbroken.safetensors"), self.path("broken.safetensors")
        r = run(["train"] + ADAMW + ["--epochs", "3", "--checkpoint", unbroken], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        meta, saved, _ = read_safetensors(unbroken)
        # AdamW's defaults (timm's), saved, and its state under its own names.
        self.assertEqual((meta["extra.optimizer"], meta["extra.lr"], meta["extra.weight_decay"]),
                         ("adamw", "0.0010000000474974513", "0.05000000074505806"))
        self.assertEqual(meta["extra.betas"], "0.89999997615814209,0.99900001287460327")
        self.assertIn("exp_avg.fc1.weight", saved)
        self.assertIn("exp_avg_sq.fc1.weight", saved)
        self.assertFalse(any(name.startswith("momentum.") for name in saved))
        # Stopped after the first epoch and after the second, resumed each time:
        # the step count t, both moments and the weights go on as if unbroken.
        r = run(["train"] + ADAMW + ["--epochs", "1", "--checkpoint", broken], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        for epochs in ("2", "3"):
            r = run(["train", "--resume", broken, "--epochs", epochs, "--devices", "cpu"], self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
        want, got = tensors(unbroken), tensors(broken)
        self.assertEqual(sorted(got), sorted(want))
        self.assertEqual([name for name in want if got[name] != want[name]], [])
        self.assertEqual(read_safetensors(broken)[0]["step"], "60")
        # eval and predict read the weights and leave the optimizer's state.
        e = run(["eval", "--checkpoint", unbroken, "--devices", "cpu"], self.tmp)
        self.assertEqual(e.returncode, 0, e.stderr)
        self.assertRegex(e.stdout, r"loss [0-9.]+ accuracy [0-9.]+%")

    def test_a_checkpoint_keeps_its_optimizer_on_resume_even_forced(self):
        sgd, adamw = self.path("sgd.safetensors"), self.path("adamw.safetensors")
        r = run(["train"] + QUICK + ["--epochs", "1", "--checkpoint", sgd], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(["train"] + ADAMW + ["--epochs", "1", "--checkpoint", adamw], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        for ck, other in ((sgd, "adamw"), (adamw, "sgd")):
            for force in ([], ["--force"]):
                with self.subTest(checkpoint=ck, force=force):
                    before = tensors(ck)
                    r = run(["train", "--resume", ck, "--devices", "cpu",
                             "--epochs", "2", "--optimizer", other] + force, self.tmp)
                    self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                    self.assertIn("the checkpoint was trained with --optimizer %s" % ("sgd" if ck == sgd else "adamw"),
                                  r.stderr)
                    self.assertIn("cannot take up (not even with --force)", r.stderr)
                    self.assertEqual(tensors(ck), before)

    def test_each_optimizer_refuses_the_others_flags(self):
        for args, needle in ((["--optimizer", "adamw", "--momentum", "0.8"], "--momentum and --nesterov are SGD's"),
                             (["--optimizer", "adamw", "--nesterov"], "--momentum and --nesterov are SGD's"),
                             (["--betas", "0.9,0.99"], "--betas and --eps are AdamW's"),
                             (["--eps", "1e-6"], "--betas and --eps are AdamW's"),
                             (["--optimizer", "adamw", "--betas", "0.9"], "--betas '0.9': expected two numbers"),
                             (["--optimizer", "adamw", "--betas", "0.9,1"], "--betas '0.9,1': expected two numbers"),
                             (["--optimizer", "adam"], "--optimizer")):
            with self.subTest(args=args):
                r = run(["train"] + QUICK + ["--epochs", "1"] + args, self.tmp)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn(needle, r.stderr)


if __name__ == "__main__":
    unittest.main()
