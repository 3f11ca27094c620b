#!/usr/bin/python3
"""Smoke test of one lockstep-bench suite (tests/bench.cmake runs it for each).

  smoke_check.py LOCKSTEP_BENCH SUITE OUTDIR [--no-png] [--devices D]

Runs `lockstep-bench SUITE --devices cpu --quick` (or --devices D: the
emulated GPU build runs profile on device 0) and checks what it produces,
not how fast it is: a Markdown table on stdout, a JSON file with the machine,
the versions, the settings and the suite's rows, and a non-empty PNG (unless
--no-png: no gnuplot on this machine, which the JSON must then say).
"""

import json
import math
import os
import re
import subprocess
import sys


def fail(message, output=""):
    print("FAIL: " + message)
    if output:
        print("---- lockstep-bench output ----\n" + output)
    sys.exit(1)


def torch_importable():
    try:
        import torch  # noqa: F401
        return True
    except Exception:
        return False


def check_common(doc, suite, png):
    for key in ["suite", "kind", "title", "machine", "versions", "settings", "rows", "notes", "skipped", "png", "table"]:
        if key not in doc:
            fail("JSON lacks '%s'" % key)
    if doc["suite"] != suite:
        fail("JSON suite is %r, not %r" % (doc["suite"], suite))
    machine = doc["machine"]
    for key in ["cpu_model", "cores", "gpus"]:
        if key not in machine:
            fail("JSON machine lacks '%s'" % key)
    if not isinstance(machine["gpus"], list) or machine["cores"] < 1:
        fail("JSON machine: gpus must be a list and cores positive: %r" % machine)
    for key in ["lockstep", "git_commit", "backend"]:
        if key not in doc["versions"]:
            fail("JSON versions lack '%s'" % key)
    if not doc["settings"] or not doc["settings"].get("quick"):
        fail("JSON settings empty or not marked quick: %r" % doc["settings"])
    if not doc["rows"]:
        fail("JSON has no rows")
    if png and doc["png"] != png:
        fail("JSON png is %r, expected %r" % (doc["png"], png))


def positive(row, key):
    value = row.get(key)
    if not isinstance(value, (int, float)) or not value > 0:
        fail("row %r: %s is not a positive number" % (row.get("implementation", row), key))
    return value


def check_scaling(doc, stdout, bench):
    kinds = {r["scaling"] for r in doc["rows"]}
    if kinds != {"weak", "strong"}:
        fail("scaling rows are %r, expected weak and strong" % kinds)
    for r in doc["rows"]:
        if "error" in r:
            fail("scaling row failed: %s" % r["error"])
        positive(r, "images_per_second")
        phases = r["measurement"]["phase_seconds_mean"]
        if set(phases) != {"data", "forward", "backward", "communication", "update"}:
            fail("scaling phases are %r" % list(phases))
        if not r["measurement"]["peak_bytes"].get("cpu", 0) > 0:
            fail("scaling row lacks the CPU's peak bytes")
        if r["replicas"] > 1 and r["label"] != "replication overhead (same device), not speed-up":
            fail("a same-device row is labelled %r" % r["label"])
    if "replication overhead (same device), not speed-up" not in stdout:
        fail("the table does not say that same-device rows are replication overhead")


def check_projection(doc, stdout, bench):
    if doc["kind"] != "projection" or "PROJECTION" not in stdout:
        fail("projection output is not labelled a projection")
    for r in doc["rows"]:
        if "error" in r:
            fail("projection row failed: %s" % r["error"])
        if r["gpus"] not in (2, 4, 8):
            fail("projection row for %r GPUs" % r["gpus"])
        for key in ["efficiency_overlap", "efficiency_no_overlap"]:
            if not 0 < r[key] <= 1:
                fail("projection %s = %r outside (0, 1]" % (key, r[key]))
        if r["efficiency_overlap"] < r["efficiency_no_overlap"]:
            fail("overlap projected slower than no overlap: %r" % r)
        positive(r, "gradient_bytes")


def check_batch_sweep(doc, stdout, bench):
    seen = {(r["batch"], r["replicas"]) for r in doc["rows"]}
    for b in [16, 32, 64, 96, 128, 256]:
        for n in [1, 2]:
            if (b, n) not in seen:
                fail("batch-sweep lacks batch %d with %d replica(s)" % (b, n))
    for r in doc["rows"]:
        if "error" in r:
            fail("batch-sweep row failed: %s" % r["error"])
        positive(r, "epoch_seconds_mean")
        if not 0 <= r["test_accuracy"] <= 1:
            fail("test accuracy %r" % r["test_accuracy"])


def check_envs(doc, stdout, bench):
    rows = {r["environment"]: r for r in doc["rows"]}
    if rows.get("CPU", {}).get("status") != "measured":
        fail("envs: the CPU row was not measured: %r" % rows.get("CPU"))
    positive(rows["CPU"], "epoch_seconds_mean")
    if not doc["machine"]["gpus"]:
        for name in ["1 GPU", "all GPUs"]:
            if not rows.get(name, {}).get("status", "").startswith("not present"):
                fail("envs: row %r should say not present: %r" % (name, rows.get(name)))
        if "not present" not in stdout:
            fail("envs: the table does not say 'not present'")


def check_allreduce(doc, stdout, bench):
    sizes = sorted({r["bytes"] for r in doc["rows"]})
    if sizes[0] != 4096 or sizes[-1] != 16 << 20:
        fail("allreduce sizes run from %d to %d, expected 4 KB to 16 MB in quick mode" % (sizes[0], sizes[-1]))
    for r in doc["rows"]:
        if not r["correct"]:
            fail("allreduce gave a wrong sum at %d bytes" % r["bytes"])
        algbw = positive(r, "algbw_GBps")
        n = r["ranks"]
        if abs(r["busbw_GBps"] - algbw * 2 * (n - 1) / n) > 1e-9 * max(1.0, algbw):
            fail("busbw is not algbw x 2(n-1)/n: %r" % r)
    if not any("Nccl" in s for s in doc["skipped"]):
        fail("allreduce does not say why there are no NCCL rows")


def check_kernels(doc, stdout, bench):
    names = {r["implementation"] for r in doc["rows"] if r["device"] == "cpu"}
    if names != {"memcpy", "fused sgd_step", "unfused, 4 passes"}:
        fail("kernels rows on the CPU are %r" % names)
    for r in doc["rows"]:
        positive(r, "GBps")
        positive(r, "fraction_of_memcpy")
        if r["parameters"] < 11_000_000:
            fail("kernels: %d parameters, expected resnet18's 11M" % r["parameters"])


def check_peers(doc, stdout, bench):
    ours = [r for r in doc["rows"] if r["engine"] == "lockstep"]
    if not ours or "error" in ours[0]:
        fail("peers: no lockstep row: %r" % doc["rows"])
    if torch_importable():
        theirs = [r for r in doc["rows"] if r["engine"] == "pytorch"]
        if not theirs or "error" in theirs[0]:
            fail("peers: PyTorch is importable but its row is missing or failed: %r" % theirs)
        if not theirs[0]["same_parameter_count"]:
            fail("peers: the parameter counts differ")
        positive(theirs[0], "lockstep_over_pytorch")
        if "threads" not in " ".join(doc["notes"]):
            fail("peers: the notes do not say which thread counts were used")


def check_roofline(doc, stdout, bench):
    """A bound, labelled as one, whose total is the sum over layers of
    max(FLOPs / peak, bytes / bandwidth) with the peaks it states."""
    if doc["kind"] != "bound" or "not measured" not in doc["title"] or "BOUND, not a measurement" not in stdout:
        fail("roofline: not labelled as a bound: %r" % doc["title"], stdout)
    s = doc["settings"]
    if s["gpu"] != "h100" or s["precision"] != "tf32" or s["model"] != "resnet18":
        fail("roofline: defaults are not resnet18, tf32, h100: %r" % s)
    total = 0.0
    for r in doc["rows"]:
        flops = r["forward_flops"] + r["backward_data_flops"] + r["backward_weight_flops"]
        peak = (s["matrix_tflops"] if r["matrix"] else s["fp32_tflops"]) * 1e12
        compute = flops / peak
        memory = (r["forward_bytes"] + r["backward_bytes"]) / (s["bandwidth_gbs"] * 1e9)
        if abs(r["bound_seconds"] - max(compute, memory)) > 1e-12 + 1e-9 * max(compute, memory):
            fail("roofline: row %s: bound %r is not max(%r, %r)" % (r["layer"], r["bound_seconds"], compute, memory))
        total += r["bound_seconds"]
    if abs(total - s["bound_seconds"]) > 1e-9 * total or not total > 0:
        fail("roofline: the total %r is not the sum of the rows %r" % (s["bound_seconds"], total))
    if not any(r["matrix"] for r in doc["rows"]) or doc["rows"][-1]["type"] != "sgd":
        fail("roofline: no convolution rows, or the update is not the last row")
    planned, own = s["activation_bytes_planned"], s["activation_bytes_one_per_node"]
    if not 0 < planned < own or "activation memory of the training step" not in stdout:
        fail("roofline: the planned activation memory %r is not below one buffer per node %r, or not printed"
             % (planned, own), stdout)


def check_profile(doc, stdout, bench):
    """Every node of the model once, as the roofline suite lists the graph's
    nodes; each timed part positive and finite; the rows summing to the
    marked step within a factor of two, and the tool's own verdict against
    its tolerance (at most 25%) honest; a bound on every layer. The figures themselves are not checked: on the emulated
    GPU they mean nothing, and on a shared CPU they are noise."""
    s = doc["settings"]
    ref = bench(["roofline", "--model", s["model"], "--input", s["input"], "--batch", str(s["batch"]),
                 "--precision", s["precision"], "--classes", str(s["classes"])])
    nodes = [r["layer"] for r in ref["rows"] if r["type"] not in ("softmax_cross_entropy", "sgd")]
    layers = [r for r in doc["rows"] if r["kind"] == "layer"]
    if [r["layer"] for r in layers] != nodes or s["nodes"] != len(nodes):
        fail("profile: the layer rows %r are not the graph's nodes %r, each once, in order"
             % ([r["layer"] for r in layers], nodes))

    def timed(row, key, may_be_zero=False):
        v = row.get(key)
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (v == 0 and not may_be_zero):
            fail("profile: %s of %s is %r, not a positive finite time" % (key, row["layer"], v))
        return v

    for r in layers:
        # flatten of NCHW is an alias: no work, so its marks may meet.
        idle = r["type"] == "flatten"
        total = timed(r, "forward_seconds", idle) + timed(r, "backward_seconds", idle)
        if abs(total - r["seconds"]) > 1e-12 + 1e-9 * total:
            fail("profile: %s: seconds %r is not forward + backward %r" % (r["layer"], r["seconds"], total))
        if r["type"] in ("conv2d", "linear"):
            timed(r, "weight_gradient_seconds")
            if r["split"] == "apart" and r["data_gradient_seconds"] is not None:
                timed(r, "data_gradient_seconds")
            if r["split"] == "weight gradient only" and r["weight_gradient_seconds"] != r["backward_seconds"]:
                fail("profile: %s reads the images, yet its weight gradient is not its backward" % r["layer"])
        bound = r.get("bound", {})
        if not isinstance(bound.get("seconds"), (int, float)) or not math.isfinite(bound["seconds"]) or \
                bound["seconds"] < 0 or bound.get("limited_by") not in ("compute", "memory", "-"):
            fail("profile: %s has no bound: %r" % (r["layer"], bound))
        if r["type"] == "conv2d" and not bound["seconds"] > 0:
            fail("profile: convolution %s has a zero bound" % r["layer"])
    phases = {r["layer"]: r for r in doc["rows"] if r["kind"] == "phase"}
    if set(phases) != {"input (conversion)", "loss", "batch-norm statistics", "sgd update"}:
        fail("profile: the phase rows are %r" % list(phases))
    timed(phases["input (conversion)"], "seconds", True)
    for name in ("loss", "batch-norm statistics", "sgd update"):
        timed(phases[name], "seconds")
    for name in ("loss", "sgd update"):
        if not phases[name].get("bound", {}).get("seconds", 0) > 0:
            fail("profile: the %s row has no bound" % name)

    step = s["step"]
    parts = sum(r["seconds"] for r in doc["rows"])
    if abs(parts - step["parts_seconds"]) > 1e-9 * parts:
        fail("profile: the rows sum to %r, the JSON says %r" % (parts, step["parts_seconds"]))
    for key in ("marked_seconds", "unmarked_seconds", "host_enqueue_seconds", "host_step_seconds", "bound_seconds"):
        timed(dict(step, layer="step"), key)
    if not 0 < step["tolerance"] <= 0.25:
        fail("profile: a tolerance of %r" % step["tolerance"])
    # The tool's verdict on its own sum must be honest both ways. The test
    # itself asks only for the sum within a factor of two of the marked step:
    # a row counted twice or a phase left out lands outside that, while a
    # busy shared CPU (a CI run stretched one step by 35% at batch 8) does not.
    within = abs(step["marked_seconds"] - parts) <= step["tolerance"] * step["marked_seconds"]
    if within != step["consistent"] or ("OUTSIDE the" in stdout) == within:
        fail("profile: the rows sum to %r s, the marked step took %r s, yet the tool calls that %s" %
             (parts, step["marked_seconds"], "consistent" if step["consistent"] else "inconsistent"), stdout)
    if not 0.5 * step["marked_seconds"] <= parts <= 2.0 * step["marked_seconds"]:
        fail("profile: the rows sum to %r s, the marked step took %r s: not within a factor of two" %
             (parts, step["marked_seconds"]), stdout)
    if not math.isfinite(step["last_loss"]):
        fail("profile: the last step's loss is %r" % step["last_loss"])
    if s["emulated"] and "EMULATED GPU" not in doc["title"]:
        fail("profile: an emulated run not labelled so: %r" % doc["title"])
    if "sum of the rows" not in stdout or "host enqueue" not in stdout:
        fail("profile: the table lacks the step's rows", stdout)


CHECKS = {
    "scaling": check_scaling,
    "projection": check_projection,
    "batch-sweep": check_batch_sweep,
    "envs": check_envs,
    "allreduce": check_allreduce,
    "kernels": check_kernels,
    "peers": check_peers,
    "roofline": check_roofline,
    "profile": check_profile,
}


def main(argv):
    if len(argv) < 3 or argv[1] not in CHECKS:
        print(__doc__)
        return 2
    binary, suite, outdir = argv[0], argv[1], argv[2]
    want_png = "--no-png" not in argv[3:]
    devices = argv[argv.index("--devices") + 1] if "--devices" in argv[3:-1] else "cpu"
    os.makedirs(outdir, exist_ok=True)
    json_path = os.path.join(outdir, suite + ".json")
    png_path = os.path.join(outdir, suite + ".png")
    for path in (json_path, png_path):
        if os.path.exists(path):
            os.remove(path)
    cmd = [binary, suite, "--devices", devices, "--quick", "--json", json_path, "--png", png_path]
    proc = subprocess.run(cmd, cwd=outdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=170)
    out = proc.stdout
    if proc.returncode != 0:
        fail("%s exited with %d" % (" ".join(cmd), proc.returncode), out)
    table = [line for line in out.splitlines() if line.startswith("|")]
    if len(table) < 3 or not re.match(r"^\|\s*:?-+", table[1]):
        fail("no Markdown table on stdout", out)
    try:
        with open(json_path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail("cannot read the JSON %s: %s" % (json_path, e), out)
    check_common(doc, suite, png_path if want_png else None)

    def bench(args):
        """Another run of lockstep-bench (a suite to check against): its JSON."""
        path = os.path.join(outdir, suite + "-reference.json")
        ran = subprocess.run([binary] + args + ["--json", path, "--png", os.path.join(outdir, suite + "-reference.png")],
                             cwd=outdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=170)
        if ran.returncode != 0:
            fail("%s exited with %d" % (" ".join(args), ran.returncode), ran.stdout)
        with open(path) as f:
            return json.load(f)

    CHECKS[suite](doc, out, bench)
    if want_png:
        if not os.path.exists(png_path) or os.path.getsize(png_path) == 0:
            fail("no PNG at %s" % png_path, out)
        with open(png_path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fail("%s is not a PNG" % png_path)
    elif not any("gnuplot" in n for n in doc["notes"]):
        fail("no PNG and the notes do not say why")
    print("ok: %s: table of %d lines, %d JSON rows%s" % (suite, len(table), len(doc["rows"]),
                                                        ", PNG %d bytes" % os.path.getsize(png_path) if want_png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
