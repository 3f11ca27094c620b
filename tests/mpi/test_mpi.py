"""Multi-process training under mpirun, run by CTest (label mpi).

Each test runs the real binary (LOCKSTEP_BIN) under Open MPI's mpirun on one
machine, on a small slice of Debian's Fashion-MNIST, and compares with one
process holding as many replicas as all processes together. `--allow-run-as-root`
and `--oversubscribe` are given here only: CI runs as root on two cores.
"""
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

BIN = os.environ.get("LOCKSTEP_BIN", "build/lockstep")
MPIRUN = os.environ.get("LOCKSTEP_MPIRUN", "mpirun")
# resnet20 has batch norm; 122 samples with a global batch of 61 -> 2 steps an epoch, and 61 divides over
# none of 2, 3, 4 or 6 replicas. Training resnet20 on slices of 10-30 samples is chaotic: in one process a
# change of the learning rate by 3e-7 (relative) moves the parameters by 4.6e-6 after 6 steps at lr 0.002
# and by 4e-3 at lr 0.05, so any difference in rounding would grow too. Gradients are summed over the
# replicas in double and rounded once (distributed/exact_sum.h), whichever process holds which replica, so
# P processes of R replicas end with the bits of one process of P x R (Compare.assert_equal_tensors). Before
# that they did not: 3 x 2 lay 3e-6 (an AMD EPYC) to 1.2e-5 (an Intel Xeon) normwise from 1 x 6 after 4 steps.
SMALL = ["--devices", "cpu", "--model", "resnet20", "--limit", "122", "--test-limit", "100", "--batch", "61",
         "--lr", "0.002", "--schedule", "constant", "--warmup-epochs", "0", "--seed", "11", "--threads", "1"]
# Normwise, parameters and statistics each as one vector: GPUs across processes (test_mpi_gpu.py), whose
# sums NCCL takes in orders of its own.
TOLERANCE = 1e-5


def env():
    e = dict(os.environ)
    # Containers often forbid cross-memory attach; the copy-in/copy-out path works everywhere.
    e.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    # The CPU compute pool cuts loops and GEMMs by its thread count, which moves
    # float rounding; one thread in every process on both sides of a comparison
    # keeps it the same (each process would otherwise take its host's cores
    # divided among the replicas and processes it holds).
    e["LOCKSTEP_CPU_THREADS"] = "1"
    return e


def mpirun(np, args, cwd, timeout=600, extra=()):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-x", "LOCKSTEP_CPU_THREADS", *extra, "-np", str(np),
           BIN] + args
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env())


def run(args, cwd, timeout=600):
    return subprocess.run([BIN] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env())


def write_idx_dataset(folder, train=24, test=20, side=12, classes=10, seed=5):
    """A small IDX data set (train-* and t10k-* files) of side x side images: `lockstep eval` reads a whole
    test set, which Fashion-MNIST's 10,000 images would make slow. Each class is a bright square at its own
    place over noise, so a model can tell them apart."""
    import random
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for prefix, count in (("train", train), ("t10k", test)):
        labels = [i % classes for i in range(count)]
        rng.shuffle(labels)
        pixels = bytearray()
        for label in labels:
            image = [rng.randrange(0, 96) for _ in range(side * side)]
            row, col = divmod(label * 7 % (side * side // 16), side // 4)
            for y in range(row * 4 % side, row * 4 % side + 3):
                for x in range(col * 4, col * 4 + 3):
                    image[(y % side) * side + x % side] = 255
            pixels += bytes(image)
        with open(os.path.join(folder, prefix + "-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, count, side, side) + bytes(pixels))
        with open(os.path.join(folder, prefix + "-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, count) + bytes(labels))
    return folder


def read_tensors(path):
    """{name: list of floats} of a safetensors file of F32 tensors."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    header.pop("__metadata__", None)
    data = blob[8 + size:]
    out = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        out[name] = struct.unpack("<%df" % ((end - begin) // 4), data[begin:end])
    return out


def step_losses(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return {d["step"]: d["loss"] for d in lines if d["type"] == "step"}


def test_line(stdout):
    """(loss, accuracy) of the last epoch's test evaluation."""
    found = re.findall(r"test loss ([0-9.]+) acc ([0-9.]+)%", stdout)
    return tuple(float(x) for x in found[-1]) if found else None


def assert_same_evaluation(test, multi_out, single_out, samples):
    """`lockstep eval` under mpirun printed once (the first process) what one process prints."""
    line = r"loss ([0-9.]+) accuracy ([0-9.]+)% \((\d+) samples\)"
    got, want = re.findall(line, multi_out), re.findall(line, single_out)
    test.assertEqual(len(got), 1, multi_out)
    test.assertEqual(len(want), 1, single_out)
    test.assertEqual(int(got[0][2]), samples)
    test.assertAlmostEqual(float(got[0][0]), float(want[0][0]), delta=2e-4)
    test.assertEqual(got[0][1:], want[0][1:])
    # The per-class table too, once.
    test.assertEqual(multi_out.count("class"), single_out.count("class"), multi_out)


class Compare:
    def assert_same_tensors(self, got_path, want_path):
        """Parameters, and batch-norm running statistics, each as one vector, agree to TOLERANCE normwise.

        Per tensor would not do: a batch-norm bias starts at zero and moves little in 8 steps, so its own
        norm is tiny, and in this chaotic regime (a one-ulp change of the momentum moves such a tensor by
        percents of its size in one process alone) rounding in another summation order does too."""
        got, want = read_tensors(got_path), read_tensors(want_path)
        self.assertEqual(sorted(got), sorted(want))
        groups = {"parameters": [n for n in want if not n.startswith("momentum.") and "running" not in n],
                  "batch-norm statistics": [n for n in want if "running" in n]}
        self.assertTrue(groups["batch-norm statistics"], sorted(want))
        for group, names in groups.items():
            diff = math.sqrt(sum((x - y) ** 2 for n in names for x, y in zip(got[n], want[n])))
            norm = math.sqrt(sum(y * y for n in names for y in want[n]))
            worst = max(names, key=lambda n: sum((x - y) ** 2 for x, y in zip(got[n], want[n])))
            self.assertLessEqual(diff, TOLERANCE * norm, "%s: |a-b| %g, |b| %g (most in %s)" % (group, diff, norm, worst))

    def assert_equal_tensors(self, got_path, want_path):
        """Every tensor (parameters, momentum, running statistics) bit for bit: CPU replicas in any number of
        processes. (A process whose gradients were left out of the sum lies about 1e-3 away.)"""
        got, want = read_tensors(got_path), read_tensors(want_path)
        self.assertEqual(sorted(got), sorted(want))
        self.assertTrue([n for n in want if "running" in n], sorted(want))
        differ = [n for n in sorted(want) if got[n] != want[n]]
        if differ:
            n = differ[0]
            diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(got[n], want[n])))
            norm = math.sqrt(sum(y * y for y in want[n]))
            self.fail("%d of %d tensors differ, first %s: |a-b| %g, |b| %g" % (len(differ), len(want), n, diff, norm))


class Mpi(Compare, unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-mpi-")
        self.tmp = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def processes_match_one_process(self, processes, replicas):
        multi, single = self.path("multi.safetensors"), self.path("single.safetensors")
        r = mpirun(processes, ["train"] + SMALL + ["--replicas", str(replicas), "--epochs", "2", "--checkpoint", multi],
                   self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        world = "on %d processes x %d replica%s (%d in all) on 1 host over MPI" % (
            processes, replicas, "" if replicas == 1 else "s", processes * replicas)
        self.assertIn(world, r.stdout)
        # The first process alone prints: one start line, one line per epoch.
        self.assertEqual(r.stdout.count("training resnet20"), 1, r.stdout)
        self.assertEqual(len(re.findall(r"^epoch 2/2:", r.stdout, re.M)), 1, r.stdout)
        s = run(["train"] + SMALL + ["--replicas", str(processes * replicas), "--epochs", "2", "--checkpoint", single],
                self.tmp)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        self.assert_equal_tensors(multi, single)
        # The evaluation is global: every test sample counted once, as in one process.
        got, want = test_line(r.stdout), test_line(s.stdout)
        self.assertIsNotNone(got, r.stdout)
        self.assertAlmostEqual(got[0], want[0], delta=2e-4)
        self.assertAlmostEqual(got[1], want[1], delta=1.0 + 1e-9)  # at most one sample of 100 at a tie
        self.assertIn("over 100 samples)", r.stdout)

    def test_2_processes_of_1_replica(self):
        self.processes_match_one_process(2, 1)

    def test_2_processes_of_2_replicas(self):
        self.processes_match_one_process(2, 2)

    def test_3_processes_of_1_replica(self):
        self.processes_match_one_process(3, 1)

    def test_3_processes_of_2_replicas(self):
        self.processes_match_one_process(3, 2)

    def test_checkpoint_of_3_processes_resumes_in_1(self):
        whole, part = self.path("whole.safetensors"), self.path("part.safetensors")
        r = mpirun(3, ["train"] + SMALL + ["--epochs", "3", "--checkpoint", whole, "--metrics", self.path("whole.jsonl")],
                   self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = mpirun(3, ["train"] + SMALL + ["--epochs", "1", "--checkpoint", part], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # One process with the 3 processes' replicas: batch norm normalises over each replica's slice, so the
        # split (not the process count) decides the losses.
        r = run(["train", "--resume", part, "--epochs", "3", "--replicas", "3", "--metrics", self.path("part.jsonl")],
                self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("on 3 replicas [cpu]", r.stdout)
        whole_losses, resumed = step_losses(self.path("whole.jsonl")), step_losses(self.path("part.jsonl"))
        self.assertEqual(sorted(resumed), list(range(3, 7)))  # epochs 2 and 3: 2 steps each
        for step, loss in resumed.items():
            self.assertAlmostEqual(loss, whole_losses[step], delta=1e-5 * max(1.0, abs(loss)), msg="step %d" % step)

    def find_rank(self, tag, rank):
        """The pid of the process of MPI rank `rank` launched with LOCKSTEP_TEST_TAG=tag."""
        want = [b"LOCKSTEP_TEST_TAG=" + tag.encode(), b"OMPI_COMM_WORLD_RANK=%d" % rank]
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    environ = f.read().split(b"\0")
                with open("/proc/%s/comm" % pid) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if comm == "lockstep" and all(w in environ for w in want):
                return int(pid)
        return None

    def kill_rank_mid_epoch(self, extra):
        """Trains on 3 processes, kills rank 1 in the second epoch; returns (rc, output, seconds after the kill)."""
        ck = self.path("ck.safetensors")
        e = env()
        e["LOCKSTEP_TEST_TAG"] = self.tmp
        e["LOCKSTEP_COLLECTIVE_TIMEOUT"] = "10"
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", *extra, "-np", "3", BIN, "train"] + SMALL + [
            "--epochs", "50", "--checkpoint", ck]
        p = subprocess.Popen(cmd, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e)
        try:
            deadline = time.time() + 300
            while not os.path.exists(ck) and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(ck), "no checkpoint after the first epoch")
            time.sleep(0.3)  # into the second epoch
            victim = self.find_rank(self.tmp, 1)
            self.assertIsNotNone(victim, "rank 1 not found")
            os.kill(victim, signal.SIGKILL)
            killed = time.time()
            out, _ = p.communicate(timeout=120)
            return p.returncode, out, time.time() - killed
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def assert_checkpoint_resumes(self):
        ck = self.path("ck.safetensors")
        epoch = int(json.loads(open(ck, "rb").read()[8:8 + struct.unpack("<Q", open(ck, "rb").read()[:8])[0]])
                    ["__metadata__"]["epoch"])
        self.assertGreaterEqual(epoch, 1)
        r = run(["train", "--resume", ck, "--epochs", str(epoch + 1), "--replicas", "1"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("epoch %d/%d" % (epoch + 1, epoch + 1), r.stdout)

    def test_a_killed_rank_stops_the_others(self):
        # mpirun notices the lost rank, names it, and ends the others.
        rc, out, seconds = self.kill_rank_mid_epoch([])
        self.assertNotEqual(rc, 0, out)
        self.assertLess(seconds, 10 + 10, out)
        self.assertRegex(out, r"rank 1\b.*(exited|signal|killed|Killed)", out)
        self.assert_checkpoint_resumes()

    def test_a_lost_rank_is_named_by_the_others_within_the_timeout(self):
        # With --enable-recovery mpirun leaves the survivors running: lockstep's own collective
        # timeout (10 s here) must stop them, each naming the lost rank.
        # Open MPI 4.1's mpirun exits 0 in this mode even after MPI_Abort, so the proof is the
        # survivors' own error lines and the job's end within the bound (the first of them to
        # print ends the job through MPI_Abort). Not mpirun's "MPI_ABORT was invoked" banner:
        # when both survivors abort at once its show_help can fail to unpack ("Data unpack would
        # read past end of buffer") and print nothing, as it did in one CI run.
        rc, out, seconds = self.kill_rank_mid_epoch(["--enable-recovery"])
        self.assertLess(seconds, 10 + 15, out)
        self.assertRegex(out, r"lockstep: error: process [02] of 3 on .*did not complete within 10000 ms: "
                              r"lost rank 1 \(pid \d+ on [^)]*\) is gone", out)
        self.assert_checkpoint_resumes()

    def test_only_the_first_process_writes(self):
        r = mpirun(2, ["train"] + SMALL + ["--epochs", "1", "--checkpoint", self.path("ck.safetensors"),
                                           "--metrics", self.path("m.jsonl")], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["ck.png", "ck.safetensors", "m.jsonl"])
        self.assertEqual(len(step_losses(self.path("m.jsonl"))), 2)

    def test_eval_on_2_processes_matches_1_process(self):
        data = write_idx_dataset(self.path("data"))
        ck = self.path("ck.safetensors")
        t = run(["train", "--data", data, "--devices", "cpu", "--model", "resnet20", "--batch", "12", "--epochs", "1",
                 "--seed", "11", "--threads", "1", "--checkpoint", ck], self.tmp)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        args = ["eval", "--checkpoint", ck, "--devices", "cpu", "--batch", "7"]
        r, s = mpirun(2, args, self.tmp), run(args, self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        assert_same_evaluation(self, r.stdout, s.stdout, 20)

    def test_lockstep_info_says_the_world(self):
        r = mpirun(2, ["info"], self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("world: 2 processes on 1 host"), 1, r.stdout)
        self.assertIn("transport: MPI (Open MPI", r.stdout)

    def test_unequal_replica_counts_are_refused(self):
        # rank 0 with 1 replica, the others with 2: an MPMD launch, which the global split cannot serve.
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", BIN, "train"] + SMALL + [
            "--replicas", "1", "--checkpoint", self.path("ck.safetensors"), ":", "-np", "1", BIN, "train"] + SMALL + [
            "--replicas", "2", "--checkpoint", self.path("ck.safetensors")]
        r = subprocess.run(cmd, cwd=self.tmp, capture_output=True, text=True, timeout=300, env=env())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("every process needs the same number", r.stderr)

    def two_different(self, first, second, timeout=300):
        """One job of two processes started with different arguments (an MPMD launch)."""
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-x", "LOCKSTEP_CPU_THREADS",
               "-np", "1", BIN] + first + [":", "-np", "1", BIN] + second
        return subprocess.run(cmd, cwd=self.tmp, capture_output=True, text=True, timeout=timeout, env=env())

    def test_processes_started_with_different_settings_are_refused_naming_each(self):
        # Before this check such runs crashed (heap corruption, SIGSEGV, raw MPI errors: --batch,
        # --limit, --data, --model), hung (--epochs) or trained to figures no single set of settings
        # gives (--lr, --seed, --precision). Now the first process names what differs and where;
        # the second says nothing; nothing is written.
        ck = self.path("ck.safetensors")

        def with_value(flag, value):
            args = ["train"] + SMALL + ["--epochs", "1", "--checkpoint", ck]
            if flag in args:
                args[args.index(flag) + 1] = value
            else:
                args += [flag, value]
            return args

        base = with_value("--seed", "11")
        same_counts = write_idx_dataset(self.path("same-counts"), train=122, side=28, seed=5)
        other_pixels = write_idx_dataset(self.path("other-pixels"), train=122, side=28, seed=6)
        cases = [
            ("--batch", "30", r"--batch \(the global batch\): 61 on process 0; 30 on process 1"),
            ("--epochs", "2", r"--epochs: 1 on process 0; 2 on process 1"),
            ("--lr", "0.003", r"--lr \(as scaled\): \S+ on process 0; \S+ on process 1"),
            ("--seed", "12", r"--seed: 11 on process 0; 12 on process 1"),
            ("--precision", "bf16", r"--precision: tf32 on process 0; bf16 on process 1"),
            ("--limit", "100", r"the training samples: 122 on process 0; 100 on process 1"),
            ("--model", "small-cnn", r"the model: resnet20 1x28x28 10 on process 0; small-cnn 1x28x28 10 on process 1"),
        ]
        for flag, value, expected in cases:
            with self.subTest(flag=flag):
                r = self.two_different(base, with_value(flag, value))
                self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertRegex(r.stderr, expected)
                self.assertIn("lockstep: error: process 0 of 2", r.stderr)
                self.assertNotIn("process 1 of 2", r.stderr)
                self.assertEqual(r.stderr.count("were started with different settings"), 1, r.stderr)
                self.assertFalse(os.path.exists(ck), r.stdout + r.stderr)
        # The same counts of the same classes, other pixels: only the data's fingerprint tells them apart.
        data = lambda folder: ["train", "--data", folder, "--devices", "cpu", "--model", "resnet20", "--batch", "61",
                               "--epochs", "1", "--threads", "1", "--checkpoint", ck]
        r = self.two_different(data(same_counts), data(other_pixels))
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"the training data's fingerprint \([^)]*\): [0-9a-f]{8} on process 0; "
                                   r"[0-9a-f]{8} on process 1")
        self.assertNotIn("the training samples:", r.stderr)
        self.assertFalse(os.path.exists(ck))
        # The same data at another path (as on another host) is the same data: the run trains.
        copy = shutil.copytree(same_counts, self.path("copy"))
        r = self.two_different(data(same_counts), data(copy))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(ck))


AGENT = """#!/bin/sh
# mpirun's rsh agent: "ssh HOST COMMAND" becomes COMMAND inside HOST's network namespace, under HOST's name.
host=$1; shift
case "$host" in
%s
  *) echo "no namespace for host $host" >&2; exit 1;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns && $*"
"""


class TwoHosts(Compare, unittest.TestCase):
    """Two hosts on one machine: two network namespaces joined by a veth pair, each with a host name of its
    own (a UTS namespace). mpirun runs in the first and starts the second's daemon through an rsh agent that
    enters its namespace, and the ranks talk over TCP on the veth link only."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="lockstep-hosts-")
        self.tmp = self.dir.name
        tag = os.getpid() % 200 + 20
        self.ns = ["lsh%da" % os.getpid(), "lsh%db" % os.getpid()]
        self.ips = ["10.231.%d.1" % tag, "10.231.%d.2" % tag]
        self.subnet = "10.231.%d.0/24" % tag
        veth = ["lsv%da" % os.getpid(), "lsv%db" % os.getpid()]
        steps = [["ip", "netns", "add", self.ns[0]], ["ip", "netns", "add", self.ns[1]],
                 ["ip", "link", "add", veth[0], "type", "veth", "peer", "name", veth[1]]]
        for i in range(2):
            steps += [["ip", "link", "set", veth[i], "netns", self.ns[i]],
                      ["ip", "netns", "exec", self.ns[i], "ip", "addr", "add", self.ips[i] + "/24", "dev", veth[i]],
                      ["ip", "netns", "exec", self.ns[i], "ip", "link", "set", "lo", "up"],
                      ["ip", "netns", "exec", self.ns[i], "ip", "link", "set", veth[i], "up"]]
        for step in steps:
            r = subprocess.run(step, capture_output=True, text=True)
            if r.returncode != 0:
                self.tearDown()
                self.skipTest("network namespaces need root with CAP_NET_ADMIN: '%s' failed: %s"
                              % (" ".join(step), r.stderr.strip()))
        self.agent = os.path.join(self.tmp, "netns-rsh")
        cases = "\n".join("  %s) ns=%s;;" % (ip, ns) for ip, ns in zip(self.ips, self.ns))
        with open(self.agent, "w") as f:
            f.write(AGENT % cases)
        os.chmod(self.agent, 0o755)

    def tearDown(self):
        for ns in getattr(self, "ns", []):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.dir.cleanup()

    def test_two_hosts_over_tcp_match_one_process(self):
        multi, single = os.path.join(self.tmp, "multi.safetensors"), os.path.join(self.tmp, "single.safetensors")
        mpirun_cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-x", "LOCKSTEP_CPU_THREADS",
                      "--mca", "plm_rsh_agent", self.agent,
                      "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", self.subnet,
                      "--mca", "oob_tcp_if_include", self.subnet, "--host", "%s:1,%s:1" % tuple(self.ips), "-np", "2",
                      BIN, "train"] + SMALL + ["--epochs", "2", "--checkpoint", multi]
        inner = "hostname %s && exec %s" % (self.ns[0], " ".join("'%s'" % a for a in mpirun_cmd))
        r = subprocess.run(["ip", "netns", "exec", self.ns[0], "unshare", "--uts", "sh", "-c", inner], cwd=self.tmp,
                           capture_output=True, text=True, timeout=600, env=env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("on 2 processes x 1 replica (2 in all) on 2 hosts over MPI", r.stdout)
        s = run(["train"] + SMALL + ["--replicas", "2", "--epochs", "2", "--checkpoint", single], self.tmp)
        self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
        self.assert_equal_tensors(multi, single)


if __name__ == "__main__":
    unittest.main()
