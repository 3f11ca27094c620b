"""GPUs across processes under mpirun, on the emulated GPU build (CTest labels mpi and mpi-gpu).

Each process is its own emulated machine with LOCKSTEP_EMU_DEVICES=1; NCCL's stand-in carries the collectives
of the one communicator over every process's GPU over MPI (emu/nccl/span.h). The reference is one process
with two emulated devices, whose NCCL communicator is local. These runs prove the multi-process GPU path's
logic (the NCCL bootstrap through MPI, the global split, the gradient and batch-norm sums across processes,
global evaluation), never a real GPU's or NCCL's behaviour or speed.
"""
import os
import unittest

import subprocess
import tempfile

from test_mpi import BIN, MPIRUN, Compare, assert_same_evaluation, env, test_line, write_idx_dataset

# resnet20 has batch norm; a data set of 24 12x12 training images (20 test) at a global batch of 10 -> 3 steps
# an epoch, the last of 4 (on 2 replicas 5 + 5, then 2 + 2). Small, as every kernel runs on the emulator.
SMALL = ["--model", "resnet20", "--batch", "10", "--lr", "0.01", "--schedule", "constant", "--warmup-epochs", "0",
         "--seed", "11", "--threads", "1", "--epochs", "2"]


def emu_env(devices):
    e = env()
    e["LOCKSTEP_EMU_DEVICES"] = str(devices)
    return e


def mpirun(np, args, cwd, timeout=600):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-x", "LOCKSTEP_CPU_THREADS", "-x", "LOCKSTEP_EMU_DEVICES",
           "-np", str(np), BIN] + args
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=emu_env(1))


def run(args, cwd, devices, timeout=600):
    return subprocess.run([BIN] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=emu_env(devices))


class MpiGpu(Compare, unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-mpi-gpu-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def processes_match_one_process(self, processes):
        data = write_idx_dataset(self.path("data"))
        multi, single = self.path("multi.safetensors"), self.path("single.safetensors")
        r = mpirun(processes, ["train", "--data", data, "--devices", "0"] + SMALL + ["--checkpoint", multi], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("on %d processes x 1 replica (%d in all) on 1 host over MPI" % (processes, processes), r.stdout)
        self.assertIn("[cuda:0]", r.stdout)  # the emulated GPU, not the CPU
        self.assertEqual(r.stdout.count("training resnet20"), 1, r.stdout)
        devices = ",".join(str(d) for d in range(processes))
        s = run(["train", "--data", data, "--devices", devices] + SMALL + ["--checkpoint", single], self.tmp, processes)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        self.assertIn("on %d replicas [cuda:0]" % processes, s.stdout)
        self.assert_same_tensors(multi, single)
        # The end-of-epoch evaluation is global: every test sample once, as in one process.
        got, want = test_line(r.stdout), test_line(s.stdout)
        self.assertIsNotNone(got, r.stdout)
        self.assertAlmostEqual(got[0], want[0], delta=2e-4)
        self.assertAlmostEqual(got[1], want[1], delta=100.0 / 20 + 1e-9)  # at most one sample of 20 at a tie

    def test_2_processes_of_1_gpu_match_1_process_of_2_gpus(self):
        self.processes_match_one_process(2)

    def test_3_processes_of_1_gpu_match_1_process_of_3_gpus(self):
        # Three ranks over three processes, and a batch that does not divide: 10 samples split 4 + 3 + 3.
        self.processes_match_one_process(3)

    def test_eval_on_2_processes_of_1_gpu_matches_1_process(self):
        data = write_idx_dataset(self.path("data"))
        ck = self.path("ck.safetensors")
        t = run(["train", "--data", data, "--devices", "0"] + SMALL + ["--checkpoint", ck], self.tmp, 1)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        args = ["eval", "--checkpoint", ck, "--devices", "0", "--batch", "7"]
        r = mpirun(2, args, self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        s = run(args, self.tmp, 1)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        assert_same_evaluation(self, r.stdout, s.stdout, 20)


if __name__ == "__main__":
    unittest.main()
