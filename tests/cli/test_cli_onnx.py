"""End-to-end tests of `lockstep export --format onnx`, run by CTest (tests/cli.cmake): each model trained a
few steps on a small RGB image folder made here, exported, checked by ONNX's own checker (Debian's
python3-onnx) and run in OpenCV's dnn module (python3-opencv, OpenCV 4.6), whose class probabilities must
equal `lockstep predict`'s on the same images, with the normalisation in the graph
(--include-preprocessing) and without (the test then applies the metadata's). Then what export refuses:
checkpoints it cannot express or that are damaged, and outputs it must not replace.
"""
import json
import os
import struct
import unittest
import zlib

import numpy as np

from test_cli_outputs import CliTestCase, read, run

CLASSES = ["cat", "dog", "eel"]
PER_CLASS = 3
# On probabilities: FP32 sums in another order (oneDNN's against OpenCV's). Issue 47 asks for 1e-4; the
# differences measured were at most 3.5e-7 (a 2-core AMD EPYC), and at 1e-4 a batch-norm epsilon ten
# times too large only just failed (1.0e-4 and 1.3e-4: near-uniform probabilities damp a logit's error).
TOLERANCE = 1e-5


def rgb_pixels(size, seed):
    """[size, size, 3] bytes, different in every channel, so a swapped channel order shows."""
    y, x = np.mgrid[0:size, 0:size]
    return np.stack([(x * 13 + y * 7 + seed * 31 + c * 59 + (x * y * (c + 1)) % 17) % 256 for c in range(3)],
                    axis=-1).astype(np.uint8)


def write_png(path, pixels):
    """An 8-bit RGB PNG, written with zlib alone."""
    height, width, _ = pixels.shape
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def read_safetensors(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        return header, f.read()


def write_checkpoint(path, header, data):
    """A checkpoint with its CRC-32 made again over the (edited) tensor data, as lockstep computes it: the
    tensors in file order. So lockstep reads it as undamaged and only the edit itself can be refused."""
    crc = 0
    for name in sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0]):
        begin, end = header[name]["data_offsets"]
        crc = zlib.crc32(data[begin:end], crc)
    header["__metadata__"]["crc32"] = "%08x" % crc
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    return path


class CliOnnx(CliTestCase):
    def setUp(self):
        super().setUp()
        import cv2
        import onnx
        self.cv2, self.onnx = cv2, onnx

    def images(self, size):
        """The folder, and every image's path and pixels (exactly the input's size: no resize to match)."""
        folder, images = self.path("photos"), {}
        for c, name in enumerate(CLASSES):
            os.makedirs(os.path.join(folder, name))
            for i in range(PER_CLASS):
                path = os.path.join(folder, name, "%d.png" % i)
                images[path] = rgb_pixels(size, c * 10 + i)
                write_png(path, images[path])
        return folder, images

    def train(self, model, size, *extra):
        folder, images = self.images(size)
        ck = self.path("ck.safetensors")
        r = run(["train", "--devices", "cpu", "--model", model, "--data", folder, "--input", "3x%dx%d" % (size, size),
                 "--batch", "4", "--epochs", "1", "--lr", "0.00001", "--augment", "none", "--normalize", "dataset",
                 "--test-fraction", "0.34", "--checkpoint", ck] + list(extra), self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return ck, images

    def vary_batch_norms(self, ck):
        """Every batch norm's scale and shift moved off 1 and 0 (in the checkpoint, its checksum made again).
        Two steps leave them where they started, where a scale and shift that the export dropped or swapped
        would go unseen; a higher learning rate instead saturates the deep models' probabilities at 0 and 1
        (their running statistics still mostly the initial ones), where every mistake would go unseen too."""
        header, data = read_safetensors(ck)
        data = bytearray(data)
        for name in header:
            if not name.endswith(".running_mean"):
                continue
            node = name[:-len(".running_mean")]
            for tensor in ("weight", "bias"):
                begin, end = header[node + "." + tensor]["data_offsets"]
                values = np.frombuffer(bytes(data[begin:end]), "<f4")
                i = np.arange(values.size)
                moved = values * (1 + 0.3 * np.sin(i)) if tensor == "weight" else values + 0.2 * np.cos(i)
                data[begin:end] = moved.astype("<f4").tobytes()
        write_checkpoint(ck, header, bytes(data))

    def export(self, ck, out, *flags):
        r = run(["export", "--format", "onnx"] + list(flags) + [ck, out], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r

    def predicted(self, ck, paths):
        """lockstep predict's probabilities of every class, per image."""
        r = run(["predict", "--checkpoint", ck, "--json", "--top", str(len(CLASSES))] + paths, self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        probabilities = []
        for line in r.stdout.splitlines():
            p = [0.0] * len(CLASSES)
            for entry in json.loads(line)["top"]:
                p[entry["index"]] = entry["probability"]
            probabilities.append(p)
        return np.array(probabilities)

    def opencv(self, path, images, normalise):
        """OpenCV's probabilities for the images as one batch: RGB pixels in [0, 1], NCHW."""
        batch = np.stack([pixels.transpose(2, 0, 1) for pixels in images]).astype(np.float32) / np.float32(255)
        if normalise is not None:
            mean, std = (np.array(v, np.float32).reshape(1, -1, 1, 1) for v in normalise)
            batch = (batch - mean) / std
        net = self.cv2.dnn.readNetFromONNX(path)
        net.setInput(batch)
        return net.forward()

    def metadata(self, path):
        model = self.onnx.load(path)
        self.onnx.checker.check_model(model)
        self.assertEqual(model.opset_import[0].version, 13)
        # The batch dimension is free: any number of images in one call.
        self.assertEqual(model.graph.input[0].type.tensor_type.shape.dim[0].dim_param, "batch")
        return {p.key: p.value for p in model.metadata_props}

    def check_model(self, model, size, *train_flags):
        ck, images = self.train(model, size, *train_flags)
        self.vary_batch_norms(ck)
        paths = sorted(images)
        expected = self.predicted(ck, paths)
        pixels = [images[p] for p in paths]
        results = {}
        for folded in (False, True):
            out = self.path("folded.onnx" if folded else "plain.onnx")
            r = self.export(ck, out, *(["--include-preprocessing"] if folded else []))
            meta = self.metadata(out)
            self.assertEqual(json.loads(meta["class_names"]), CLASSES)
            self.assertEqual(meta["input_size"], "3x%dx%d" % (size, size))
            self.assertEqual(meta["lockstep_model"].split()[0], model)
            if folded:
                self.assertTrue(meta["input_normalization"].startswith("in the graph"), meta)
                self.assertNotIn("input_mean", meta)
                normalise = None
            else:
                self.assertTrue(meta["input_normalization"].startswith("not in the graph"), meta)
                normalise = (json.loads(meta["input_mean"]), json.loads(meta["input_std"]))
            got = self.opencv(out, pixels, normalise)
            diff = float(np.abs(got - expected).max())
            results[out] = diff
            print("%s %s: max |OpenCV - predict| = %.3g" % (model, "folded" if folded else "metadata", diff))
            self.assertEqual(got.shape, expected.shape)
            self.assertLess(diff, TOLERANCE, "%s:\nOpenCV %s\npredict %s" % (out, got, expected))
            # Not a trivial agreement: no probability saturated at 0 or 1.
            self.assertTrue(((expected > 1e-3) & (expected < 1 - 1e-3)).all(), expected)
        return r

    def test_onnx_simple_cnn_in_opencv_equals_predict_and_a_bf16_run_exports_fp32_with_a_note(self):
        r = self.check_model("simple-cnn", 16, "--precision", "bf16")
        self.assertIn("trained in bf16; the ONNX model is FP32", r.stderr)

    def test_onnx_resnet20_in_opencv_equals_predict(self):
        self.check_model("resnet20", 16)

    def test_onnx_resnet18_in_opencv_equals_predict(self):
        self.check_model("resnet18", 16)

    def test_onnx_vgg16_bn_in_opencv_equals_predict(self):
        self.check_model("vgg16-bn", 16)

    def test_onnx_tv_resnet18_in_opencv_equals_predict(self):
        self.check_model("tv-resnet18", 32)

    def test_onnx_export_refuses_a_checkpoint_it_cannot_express_or_that_is_damaged_naming_what_is_wrong(self):
        ck, _ = self.train("simple-cnn", 16)
        header, data = read_safetensors(ck)
        out = self.path("out.onnx")

        def refused(name, edit, *needles):
            with self.subTest(name):
                h = json.loads(json.dumps(header))
                d = bytearray(data)
                edit(h, d)
                bad = write_checkpoint(self.path(name + ".safetensors"), h, bytes(d))
                r = run(["export", "--format", "onnx", bad, out], self.tmp)
                self.assert_refused(r, bad, *needles)
                self.assertFalse(os.path.exists(out))

        def spec(text):
            return lambda h, d: h["__metadata__"].__setitem__("model", text)

        def value(tensor, v):
            def edit(h, d):
                begin = h[tensor]["data_offsets"][0]
                d[begin + 8:begin + 12] = struct.pack("<f", v)
            return edit

        self.assertEqual(header["__metadata__"]["model"], "simple-cnn 3x16x16 3")
        refused("unknown", spec("lenet5 3x16x16 3"), "unknown model 'lenet5'")
        refused("shape", spec("simple-cnn 3x20x20 3"), "tensor fc.weight has shape [3, 512], the model's is [3, 1152]")
        refused("classes", lambda h, d: h["__metadata__"].__setitem__("class_names", '["cat","dog"]'),
                "2 class names for its model's 3 classes")
        refused("nan", value("conv2.weight", float("nan")),
                "holds values no model can run with: conv2.weight holds NaN (first at index 2 of")
        refused("missing", lambda h, d: h.__setitem__("conv1.b", h.pop("conv1.bias")),
                "no tensor conv1.bias, which the model needs")
        # Not a checkpoint at all: an ONNX model handed back in.
        good = self.path("good.onnx")
        self.export(ck, good)
        r = run(["export", "--format", "onnx", good, out], self.tmp)
        self.assert_refused(r, "checkpoint " + good)
        self.assertFalse(os.path.exists(out))

    def test_onnx_export_keeps_an_existing_output_without_force_and_never_the_checkpoint_or_through_a_link(self):
        ck, _ = self.train("simple-cnn", 16)
        out = self.path("model.onnx")
        with open(out, "wb") as f:
            f.write(b"someone's own model\n")
        r = run(["export", "--format", "onnx", ck, out], self.tmp)
        self.assert_refused(r, "export's output " + out + " exists and is not an ONNX model lockstep exported",
                            "--force")
        self.assertEqual(read(out), b"someone's own model\n")
        self.export(ck, out, "--force")
        # Its own export is replaced without --force (a second export of the same run).
        self.export(ck, out, "--include-preprocessing")
        self.assertTrue(self.metadata(out)["input_normalization"].startswith("in the graph"))
        kept = read(ck)
        for force in ([], ["--force"]):
            r = run(["export", "--format", "onnx"] + force + [ck, ck], self.tmp)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(ck, r.stderr)
            self.assertEqual(read(ck), kept)
        target = self.path("elsewhere.onnx")
        self.export(ck, target)
        os.symlink(target, self.path("linked.onnx"))
        before = read(target)
        r = run(["export", "--format", "onnx", "--force", ck, self.path("linked.onnx")], self.tmp)
        self.assert_refused(r, self.path("linked.onnx") + " is a symbolic link")
        self.assertEqual(read(target), before)


if __name__ == "__main__":
    unittest.main()
