"""End-to-end tests of weights in and out of `lockstep train` and `lockstep export`, run by CTest
(tests/cli.cmake): what --init accepts and refuses (values, kinds of file, flags that need it), what an
export carries (class names of any bytes, the input its model was trained on) and which files export
may replace. Each test makes its own small data (and torchvision's resnet18 state dict, with torch,
where a state dict of the right names is needed).
"""
import json
import os
import struct
import unittest

from test_cli_outputs import CliTestCase, ONE, read, run, write_idx, write_image_folder

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
        # --init from the export, on the same data: the classifier is kept, the input is reported, and
        # ImageNet's normalisation (the default with --init) is named as another than the model's.
        r = run(["train"] + TV + ["--data", photos, "--init", out, "--checkpoint", self.path("again")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("initialised from %s: 102 tensors" % out, r.stdout)
        self.assertNotIn("re-initialised", r.stdout)
        self.assertIn("the file's model was trained on inputs 3x32x32, normalised with mean [", r.stdout)
        self.assertIn("notice: this run's inputs are normalised with mean [0.485 0.456 0.406]", r.stderr)

    def test_export_replaces_its_own_files_only_never_a_checkpoint_a_hand_written_list_or_a_link(self):
        # Before: export replaced another run's training checkpoint, truncated a hand-written
        # OUT.classes.txt and wrote through OUT.classes.txt when it was a link.
        data = self.path("data")
        write_idx(data, 64, 8, test_count=16)
        ck, other = self.path("ck.safetensors"), self.path("other.safetensors")
        for path in (ck, other):
            r = run(["train"] + ONE + ["--data", data, "--checkpoint", path], self.tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
        kept = read(other)
        r = run(["export", ck, other], self.tmp)
        self.assert_refused(r, "export's output " + other + " exists and is not a lockstep export", "--force")
        self.assertEqual(read(other), kept)
        notes = self.path("mine.classes.txt")
        with open(notes, "w") as f:
            f.write("my own notes\n")
        r = run(["export", ck, self.path("mine.safetensors")], self.tmp)
        self.assert_refused(r, "export's class names " + notes + " exists and is not the class names of the "
                               "export " + self.path("mine.safetensors"), "--force")
        self.assertEqual(read(notes), b"my own notes\n")
        target = self.path("elsewhere.txt")
        with open(target, "w") as f:
            f.write("someone's file\n")
        os.symlink(target, self.path("linked.classes.txt"))
        for force in ([], ["--force"]):
            r = run(["export"] + force + [ck, self.path("linked.safetensors")], self.tmp)
            self.assert_refused(r, self.path("linked.classes.txt") + " is a symbolic link")
        self.assertEqual(read(target), b"someone's file\n")
        self.assertFalse(os.path.exists(self.path("mine.safetensors")))


if __name__ == "__main__":
    unittest.main()
