"""End-to-end tests of `lockstep` in the emulated GPU build (-DLOCKSTEP_GPU=emulated).

The CUDA path of every layer runs on emulated devices (the CPU underneath);
these tests compare it with the CPU backend on the same data and seed. They
prove the CUDA code's logic and ordering, never its speed or cuDNN's numerics.
"""
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_cli import read_safetensors, run  # noqa: E402

# 20 steps: 640 Fashion-MNIST samples at batch 32, simple-cnn (every layer
# kind: conv, pooling, relu, dropout, linear, loss), no test set beyond 64;
# the settings the CPU and GPU defaults differ in (augmentation, warmup) given.
# The CPU runs the im2col reference convolution, the arithmetic the emulated
# cuDNN runs too (as the gpu tests do: tests/gpu_main.cpp); the oneDNN
# convolution's own rounding tipped a ReLU within 20 steps here (6.7e-4
# normwise, against 1.5e-7 between 2 CPU replicas and 1).
os.environ.setdefault("LOCKSTEP_CPU_CONV", "im2col")

# --precision fp32: the GPU default, tf32, rounds the emulated cuDNN's and
# cuBLAS's operands to TF32, while the CPU computes in FP32.
RUN = ["--model", "simple-cnn", "--limit", "640", "--test-limit", "64", "--batch", "32", "--epochs", "1",
       "--lr", "0.05", "--schedule", "constant", "--augment", "none", "--warmup-epochs", "0", "--seed", "11",
       "--threads", "1", "--precision", "fp32"]


# Normwise bound on the parameters of a bf16 run on the emulated GPU against
# the CPU's bf16 run after RUN's 20 steps. bf16 rounding turns any change in
# the order of an FP32 sum into a flipped ulp now and then, and 20 steps grow
# those: two CPU bf16 runs that differ only in their convolution back-end
# (LOCKSTEP_CPU_CONV=onednn and im2col) ended 1.4e-2 apart on an Intel Xeon
# (2026-11-29), the noise floor any other summation lies in. The emulated
# cuDNN sums in its own order (emu/cudnn/direct_math.cpp): it ended 1.2e-3
# from the CPU; the fp32 run lies 8.2e-2 away. The bound is about twice the
# floor; the separation from fp32 is checked beside it.
BF16_TOLERANCE = 3e-2


def floats(raw):
    return struct.unpack("<%df" % (len(raw) // 4), raw)


def normwise_relative(a, b):
    diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    ref = math.sqrt(sum(y * y for y in b))
    return diff / max(ref, 1e-30)


class Emulated(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-emu-cli-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def train(self, name, devices, precision="fp32", extra=(), augment="none", limit=None):
        ck = os.path.join(self.tmp, name)
        args = RUN[:-1] + [precision]
        args[args.index("--augment") + 1] = augment
        if limit is not None:
            args[args.index("--limit") + 1] = str(limit)
        r = run(["train"] + args + devices + list(extra) + ["--checkpoint", ck], self.tmp, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.last_stdout = r.stdout
        return read_safetensors(ck)[1]

    def memory_format(self, name):
        return read_safetensors(os.path.join(self.tmp, name))[0]["extra.memory_format"]

    def resume(self, name, devices):
        # One more epoch from the checkpoint, told nothing but where to run.
        r = run(["train", "--resume", os.path.join(self.tmp, name), "--epochs", "2"] + devices, self.tmp, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("epoch 2/2", r.stdout)

    def test_two_emulated_devices_augment_the_bytes_they_are_sent_as_the_loader_augments_floats(self):
        # With crop and flip: by default the GPUs augment the bytes they are
        # sent; with --augment-on cpu the loader's threads send the floats
        # they augmented. Both run kernels/augment_math.h's arithmetic on
        # the same draws, and everything after is the same GPU code, so the
        # runs end with the same bits.
        # (Held against 2 CPU replicas instead, the two paths part by ~1e-7
        # after the first step, with or without augmentation: the GPU's
        # kernels and the CPU's OpenBLAS GEMMs sum the gradients in other
        # orders. Over 20 steps at lr 0.05 such a difference now and then tips
        # a ReLU and grows: with OPENBLAS_CORETYPE=Prescott, 6.9e-3 normwise
        # for this seed, 1.3e-7 to 1.8e-7 for seeds 1-3 and 2.7e-8 to 8e-8
        # for 5 and 10 steps on every seed of 1-12. The label-smoothing and
        # NHWC tests below hold the GPU against the CPU; this one holds where
        # augmentation runs to equal bits.)
        device = self.train("device.safetensors", ["--devices", "0,1"], augment="crop-flip")
        self.assertIn("training batches cross to the GPUs as bytes", self.last_stdout)
        loader = self.train("loader.safetensors", ["--devices", "0,1", "--augment-on", "cpu"], augment="crop-flip")
        self.assertIn("augmented by the loader's threads and cross to the GPUs as floats", self.last_stdout)
        self.assertEqual(sorted(device), sorted(loader))
        self.assertGreater(sum(len(v[1]) for v in loader.values()), 4000)
        differ = [n for n in sorted(loader) if device[n][1] != loader[n][1]]
        self.assertEqual(differ, [], "%d tensors differ, the first by %g normwise" % (
            len(differ), normwise_relative(floats(device[differ[0]][1]), floats(loader[differ[0]][1]))
            if differ else 0.0))
        # And augmentation changed what was trained: without it the run ends elsewhere.
        plain = self.train("plain.safetensors", ["--devices", "0,1"], augment="none")
        self.assertNotEqual(device["conv1.weight"][1], plain["conv1.weight"][1])

    def test_trivial_augment_on_two_emulated_devices_equals_the_loaders(self):
        # --augment trivial: TrivialAugmentWide on the GPUs' bytes (one block
        # per channel of a sample) and on the loader's threads run
        # kernels/trivial_augment_math.h on the same draws: the same bits.
        device = self.train("device.safetensors", ["--devices", "0,1"], augment="trivial", limit=256)
        self.assertIn("training batches cross to the GPUs as bytes", self.last_stdout)
        loader = self.train("loader.safetensors", ["--devices", "0,1", "--augment-on", "cpu"], augment="trivial",
                            limit=256)
        self.assertEqual(sorted(device), sorted(loader))
        differ = [n for n in sorted(loader) if device[n][1] != loader[n][1]]
        self.assertEqual(differ, [])
        plain = self.train("plain.safetensors", ["--devices", "0,1"], augment="crop-flip", limit=256)
        self.assertNotEqual(device["conv1.weight"][1], plain["conv1.weight"][1])

    def test_label_smoothing_trains_on_two_emulated_devices_as_on_the_cpu(self):
        # The smoothed loss's kernel (the mean logit summed across a warp) in the training step.
        smooth = ["--label-smoothing", "0.2"]
        gpu = self.train("gpu.safetensors", ["--devices", "0,1"], extra=smooth)
        cpu = self.train("cpu.safetensors", ["--devices", "cpu", "--replicas", "2"], extra=smooth)
        plain = self.train("plain.safetensors", ["--devices", "cpu", "--replicas", "2"])
        params = sorted(k for k in cpu if not k.startswith("momentum"))
        a, b, c = ([x for k in params for x in floats(t[k][1])] for t in (gpu, cpu, plain))
        self.assertGreater(len(b), 1000)
        self.assertLess(normwise_relative(a, b), 1e-4)
        self.assertGreater(normwise_relative(c, b), 1e-3)  # the smoothing moved the weights

    def test_two_emulated_devices_replay_steps_from_a_cuda_graph_by_default_as_eager_steps(self):
        # The default (--cuda-graphs auto) captures the second step at a
        # batch size and replays it; every tensor ends as with eager steps,
        # bit for bit (dropout's draws read the step from the device).
        two = ["--devices", "0,1"]
        graphed = self.train("graphed.safetensors", two, precision="tf32")
        self.assertIn("steps replayed from a CUDA graph", self.last_stdout)
        eager = self.train("eager.safetensors", two, precision="tf32", extra=["--cuda-graphs", "off"])
        self.assertIn("steps queued eagerly", self.last_stdout)
        self.assertEqual(sorted(graphed), sorted(eager))
        for k in graphed:
            self.assertEqual(graphed[k], eager[k], k)

    def test_cuda_graphs_on_replicas_sharing_a_device_run_eagerly_and_say_so(self):
        # Their local communicator waits for the device on the host inside
        # every gradient sum, which no capture holds: a real H200 failed such
        # a run with cudaErrorStreamCaptureUnsupported before steps fell back.
        shared = ["--devices", "0", "--replicas", "2"]
        ck = os.path.join(self.tmp, "graphs.safetensors")
        r = run(["train"] + RUN + shared + ["--cuda-graphs", "on", "--checkpoint", ck], self.tmp, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("notice: --cuda-graphs on: steps run eagerly, since replicas sharing a GPU", r.stderr)
        eager = self.train("eager.safetensors", shared)
        graphs = read_safetensors(ck)[1]
        for k in eager:
            self.assertEqual(graphs[k][1], eager[k][1], k)

    def test_two_emulated_devices_train_in_nhwc_as_the_cpu_in_nchw(self):
        # NHWC activations, KRSC filter copies and flatten's transpose on the
        # emulated GPUs; the checkpoint's weights are those of NCHW on the CPU.
        gpu = self.train("gpu.safetensors", ["--devices", "0,1", "--memory-format", "nhwc"])
        cpu = self.train("cpu.safetensors", ["--devices", "cpu", "--replicas", "2"])
        params = [k for k in cpu if not k.startswith("momentum")]
        a = [x for k in sorted(params) for x in floats(gpu[k][1])]
        b = [x for k in sorted(params) for x in floats(cpu[k][1])]
        self.assertGreater(len(b), 1000)
        self.assertLess(normwise_relative(a, b), 1e-4)

    def test_bf16_trains_on_an_emulated_gpu_as_on_the_cpu(self):
        # bf16 activations stored as bf16 on the emulated GPU, channels-last
        # (the default for bf16 on a GPU: no --memory-format given); the CPU
        # rounds the same values in FP32 storage, in NCHW (its default in
        # every precision). Their sums run in other orders, so they part
        # within bf16's noise floor (BF16_TOLERANCE); an fp32 run from the
        # same seed lies farther from both.
        gpu = self.train("gpu.safetensors", ["--devices", "0"], "bf16")
        cpu = self.train("cpu.safetensors", ["--devices", "cpu"], "bf16")
        fp32 = self.train("fp32.safetensors", ["--devices", "cpu"], "fp32")
        self.assertEqual(self.memory_format("gpu.safetensors"), "nhwc")
        self.assertEqual(self.memory_format("cpu.safetensors"), "nchw")
        self.assertEqual(self.memory_format("fp32.safetensors"), "nchw")
        params = [k for k in cpu if not k.startswith("momentum")]
        a = [x for k in sorted(params) for x in floats(gpu[k][1])]
        b = [x for k in sorted(params) for x in floats(cpu[k][1])]
        c = [x for k in sorted(params) for x in floats(fp32[k][1])]
        self.assertGreater(len(b), 1000)
        self.assertTrue(all(math.isfinite(x) for x in a))
        gpu_cpu, fp32_cpu = normwise_relative(a, b), normwise_relative(c, b)
        self.assertLess(gpu_cpu, BF16_TOLERANCE, (gpu_cpu, fp32_cpu))
        self.assertLess(gpu_cpu, fp32_cpu / 4, (gpu_cpu, fp32_cpu))
        # Resumed on the CPU, whose own default is nchw, it goes on in the checkpoint's nhwc.
        self.resume("gpu.safetensors", ["--devices", "cpu"])
        self.assertEqual(self.memory_format("gpu.safetensors"), "nhwc")

    def test_bf16_on_an_emulated_gpu_keeps_a_given_nchw_and_resumes_in_it(self):
        # --memory-format nchw wins over the bf16 default, and a resume on
        # the GPU without the flag keeps the checkpoint's nchw.
        self.train("gpu.safetensors", ["--devices", "0", "--memory-format", "nchw"], "bf16")
        self.assertEqual(self.memory_format("gpu.safetensors"), "nchw")
        self.resume("gpu.safetensors", ["--devices", "0"])
        self.assertEqual(self.memory_format("gpu.safetensors"), "nchw")

    def test_bf16_with_sync_bn_on_emulated_gpus_trains_in_nhwc(self):
        # Synchronised batch norm takes channels-last: the bf16 default holds with it.
        self.train("gpu.safetensors", ["--devices", "0,1", "--sync-bn"], "bf16")
        self.assertEqual(self.memory_format("gpu.safetensors"), "nhwc")
        r = run(["eval", "--checkpoint", os.path.join(self.tmp, "gpu.safetensors"), "--devices", "0"], self.tmp,
                timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_info_says_the_devices_are_emulated(self):
        r = subprocess.run([os.environ.get("LOCKSTEP_BIN", "build/lockstep"), "info"], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, LOCKSTEP_EMU_DEVICES="2"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("emulated", r.stdout.lower())
        self.assertNotIn("NVIDIA", r.stdout)


if __name__ == "__main__":
    unittest.main()
