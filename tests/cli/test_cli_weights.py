"""End-to-end tests of weights in and out of `lockstep train` and `lockstep export`, run by CTest
(tests/cli.cmake): what --init accepts and refuses (values, kinds of file, flags that need it), what an
export carries (class names of any bytes, the input its model was trained on) and which files export
may replace. Each test makes its own small data (and torchvision's resnet18 state dict, with torch,
where a state dict of the right names is needed).
"""
import json
import os
import resource
import struct
import subprocess
import unittest

from test_cli_outputs import BIN, CliTestCase, ONE, read, run, write_idx, write_image_folder

TV = ["--devices", "cpu", "--model", "tv-resnet18", "--input", "3x32x32", "--batch", "4", "--epochs", "1",
      "--lr", "0.01", "--test-fraction", "0.34", "--augment", "none"]


def write_state_dict(path, tensors):
    """{name: torch tensor} as a safetensors file of F32 tensors (the safetensors package is not needed)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().float().contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return path


def read_metadata(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(size)).get("__metadata__", {})


class CliWeights(CliTestCase):
    def resnet18(self, classes=2):
        import torch
        import torchvision
        torch.manual_seed(0)
        return torchvision.models.resnet18(num_classes=classes).state_dict()

    def photos(self, classes=(b"a", b"b")):
        folder = self.path("photos")
        if not os.path.exists(folder):
            write_image_folder(folder, list(classes), 3)
        return folder

    def test_init_weights_not_finite_or_a_negative_variance_are_refused_naming_file_and_tensor(self):
        # Before: accepted, trained with and saved (a NaN weight ended as "training diverged; try a
        # lower --lr", naming no file; a negative variance trained on without a word).
        ck = self.path("ck.safetensors")
        good = self.resnet18()
        for tensor, value, said in [("layer1.0.conv1.weight", float("inf"), "holds +inf"),
                                    ("bn1.running_mean", float("nan"), "holds NaN"),
                                    ("layer3.1.bn2.running_var", -0.5, "holds a negative variance, -0.5")]:
            with self.subTest(tensor=tensor):
                state = {name: t.clone() for name, t in good.items()}
                state[tensor].view(-1)[5] = value
                weights = write_state_dict(self.path("bad.safetensors"), state)
                r = run(["train"] + TV + ["--data", self.photos(), "--init", weights, "--checkpoint", ck], self.tmp)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("pretrained weights " + weights + " hold values no model can be trained from", r.stderr)
                self.assertIn(tensor + " " + said + " (first at index 5 of", r.stderr)
                self.assertNotIn("epoch 1/", r.stdout)
                self.assertFalse(os.path.exists(ck))

    def test_a_frozen_backbone_needs_init_and_a_scaled_one_without_says_it_is_untrained(self):
        # Before: both trained a head on random features without a word.
        data = self.path("data")
        write_idx(data, 64, 8, test_count=16)
        r = run(["train"] + ONE + ["--data", data, "--freeze-backbone", "--checkpoint", self.path("f")], self.tmp)
        self.assert_refused(r, "--freeze-backbone", "without --init those layers are untrained (random)",
                            "give --init FILE.safetensors")
        self.assertFalse(os.path.exists(self.path("f")))
        r = run(["train"] + ONE + ["--data", data, "--backbone-lr-scale", "0.1", "--checkpoint", self.path("s")],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("notice: --backbone-lr-scale 0.1 without --init: the layers before the classifier start "
                      "untrained (random)", r.stderr)

    def test_a_backbone_lr_scale_that_diverges_is_named_not_lr(self):
        # Before: "try a lower --lr", for a --lr that was fine.
        data = self.path("data")
        write_idx(data, 64, 8, test_count=16)
        r = run(["train"] + ONE + ["--data", data, "--backbone-lr-scale", "1e30", "--checkpoint", self.path("c")],
                self.tmp)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("try a lower --backbone-lr-scale (the layers before the classifier learn at 1e+30 x the "
                      "learning rate) or --lr", r.stderr)

    def test_init_knows_a_file_by_its_bytes_not_its_name_and_a_training_checkpoint_asks_for_an_export(self):
        # Before: a safetensors file named .pt was refused as a pickle; a training checkpoint listed 63
        # unexpected momentum.* tensors.
        weights = write_state_dict(self.path("resnet18.pt"), self.resnet18())
        ck = self.path("ck.safetensors")
        r = run(["train"] + TV + ["--data", self.photos(), "--init", weights, "--limit", "2", "--checkpoint", ck],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("initialised from %s: 102 tensors" % weights, r.stdout)
        r = run(["train"] + TV + ["--data", self.photos(), "--init", ck, "--checkpoint", self.path("two")], self.tmp)
        self.assert_refused(r, ck + " is a lockstep training checkpoint",
                            "export it first (lockstep export " + ck + " weights.safetensors)")
        self.assertNotIn("momentum.", r.stderr)

    def test_an_export_keeps_class_names_byte_exact_one_a_line_with_its_input_and_init_keeps_its_classifier(self):
        # Before: a name that is not UTF-8 came back with U+FFFD (so --init from one's own export started
        # the classifier afresh), a name with a line break made two lines, and the normalisation was lost.
        names = [b"caf\xe9", b"two\nlines"]
        photos = self.photos(names)
        ck, out = self.path("ck.safetensors"), self.path("out.safetensors")
        r = run(["train"] + TV + ["--data", photos, "--normalize", "dataset", "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        e = run(["export", ck, out], self.tmp)
        self.assertEqual(e.returncode, 0, e.stderr)
        meta = read_metadata(out)
        self.assertEqual([bytes.fromhex(h) for h in json.loads(meta["class_names_hex"])], sorted(names))
        self.assertEqual(read(self.path("out.classes.txt")), b"caf\\xe9\ntwo\\nlines\n")
        self.assertEqual(meta["input_size"], "3x32x32")
        mean, std = json.loads(meta["input_mean"]), json.loads(meta["input_std"])
        self.assertEqual((len(mean), len(std)), (3, 3))
        self.assertNotEqual(mean, [0.485, 0.456, 0.406])  # the data's own, not ImageNet's
        # --init from the export, on the same data: the classifier is kept and the input is reported.
        r = run(["train"] + TV + ["--data", photos, "--init", out, "--checkpoint", self.path("again")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("initialised from %s: 102 tensors" % out, r.stdout)
        self.assertNotIn("re-initialised", r.stdout)
        self.assertIn("the file's model was trained on inputs 3x32x32, normalised with mean [", r.stdout)

    def test_init_from_an_export_trains_with_its_normalisation_unless_told_otherwise(self):
        # Before: the export's mean and std were shown, but the run normalised with ImageNet's (the
        # default with --init) and saved those, with a notice that they were not the model's.
        photos = self.photos()
        ck, out = self.path("ck.safetensors"), self.path("out.safetensors")
        r = run(["train"] + TV + ["--data", photos, "--normalize", "dataset", "--checkpoint", ck], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(run(["export", ck, out], self.tmp).returncode, 0)
        meta = read_metadata(out)
        mean, std = json.loads(meta["input_mean"]), json.loads(meta["input_std"])
        again = self.path("again.safetensors")
        r = run(["train"] + TV + ["--data", photos, "--init", out, "--checkpoint", again], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("normalised as --init's file says its model was trained (%s; --normalize to change)" % out,
                      r.stdout)
        self.assertNotIn("ImageNet", r.stdout)
        self.assertNotIn("notice: this run's inputs", r.stderr)
        saved = read_metadata(again)
        self.assertEqual(saved["extra.normalize"], "init")
        values = json.loads(saved["extra.normalization"])
        for got, want in ((values["mean"], mean), (values["std"], std)):
            self.assertEqual(len(got), 3)
            for g, w in zip(got, want):
                self.assertAlmostEqual(g, w, places=6)
        # An explicit other normalisation is honoured, with a notice; the saved values are its own.
        other = self.path("imagenet.safetensors")
        r = run(["train"] + TV + ["--data", photos, "--init", out, "--normalize", "imagenet", "--checkpoint", other],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("notice: this run's inputs are normalised with mean [0.485 0.456 0.406]", r.stderr)
        self.assertEqual(read_metadata(other)["extra.normalize"], "imagenet")
        # A file that says nothing of its normalisation: ImageNet's by default, and init cannot be asked.
        plain = write_state_dict(self.path("plain.safetensors"), self.resnet18())
        r = run(["train"] + TV + ["--data", photos, "--init", plain, "--checkpoint", self.path("tv.safetensors")],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("normalised with ImageNet's mean and std, which pretrained weights expect", r.stdout)
        r = run(["train"] + TV + ["--data", photos, "--init", plain, "--normalize", "init", "--checkpoint",
                                  self.path("none.safetensors")], self.tmp)
        self.assert_refused(r, "--normalize init: --init " + plain + " says nothing of its model's normalisation")

    def test_a_large_init_file_is_judged_by_its_header_before_any_data_is_read(self):
        # Before: the whole file was read before any name was compared: a sparse 2 GiB file holding one
        # unrelated tensor ended in "std::bad_alloc" under 3 GiB of address space (1 GB made 3.3 GB
        # resident without a limit); a header claiming 3 GiB did too.
        n = 512 << 20  # floats: 2 GiB of data, none of it on disk
        big = self.path("big.safetensors")
        header = json.dumps({"extra.weight": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}).encode()
        header += b" " * ((8 - len(header) % 8) % 8)
        with open(big, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
            f.truncate(8 + len(header) + 4 * n)
        huge_header = self.path("huge-header.safetensors")
        with open(huge_header, "wb") as f:
            f.write(struct.pack("<Q", 3 << 30))
            f.truncate(8 + (3 << 30))

        def limited():
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

        for weights, needles in ((big, ["do not fit model 'tv-resnet18", "unexpected tensor extra.weight [536870912]"]),
                                 (huge_header, ["a header of 3221225472 bytes, over the 100000000 bytes "
                                                "safetensors allows"])):
            with self.subTest(weights=weights):
                r = subprocess.run([BIN, "train"] + TV + ["--data", self.photos(), "--init", weights, "--checkpoint",
                                                          self.path("ck")], cwd=self.tmp, capture_output=True,
                                   text=True, timeout=300, preexec_fn=limited)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("pretrained weights " + weights, r.stderr)
                for needle in needles:
                    self.assertIn(needle, r.stderr)
                self.assertNotIn("bad_alloc", r.stderr)
                self.assertFalse(os.path.exists(self.path("ck")))


if __name__ == "__main__":
    unittest.main()
