#!/usr/bin/python3
"""The PyTorch peer's precision modes on the CPU, tiny sizes (tests/peers.cmake).

  peer_precision.py PEER_SCRIPT

Runs bench/peers/pytorch_train.py as lockstep-bench peers does and checks
what each mode sets: fp32 no TF32, tf32 PyTorch's defaults, bf16 autocast
to bfloat16 with channels_last and a finite loss, --compile either a
compiled run or, on a torch without torch.compile (Debian's 1.13), the
"unavailable" answer with exit status 3; --precision with --amp is refused.
Exit 77 (skipped) when this interpreter has no torch.
"""

import json
import math
import subprocess
import sys


def run(script, *flags):
    cmd = [sys.executable, script, "--model", "simple-cnn", "--input", "1x12x12", "--batch", "4", "--steps", "2",
           "--warmup", "1", "--threads", "1", "--device", "cpu"] + list(flags)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    doc = json.loads(lines[-1]) if lines else None
    return proc.returncode, doc, proc.stderr


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main(argv):
    try:
        import torch
    except Exception:
        print("torch is not importable here: skipped")
        return 77
    script = argv[0]
    for precision, want in [("fp32", (False, False)), ("tf32", (True, None)), ("bf16", (True, None))]:
        rc, doc, err = run(script, "--precision", precision)
        if rc != 0 or doc is None or "error" in doc:
            fail("--precision %s: exit %d, %r %s" % (precision, rc, doc, err[-400:]))
        if doc["precision"] != precision or not math.isfinite(doc["last_loss"]):
            fail("--precision %s: %r" % (precision, doc))
        if doc["cudnn_allow_tf32"] != want[0] or (want[1] is not None and doc["matmul_allow_tf32"] != want[1]):
            fail("--precision %s: TF32 flags %r, %r" % (precision, doc["cudnn_allow_tf32"], doc["matmul_allow_tf32"]))
        bf16 = precision == "bf16"
        if doc["amp"] != bf16 or doc["channels_last"] != bf16 or doc["autocast_dtype"] != ("bfloat16" if bf16 else None):
            fail("--precision %s: AMP settings %r" % (precision, doc))
        print("ok: --precision %s: loss %.4f, %.1f ms a step" % (precision, doc["last_loss"],
                                                               1e3 * doc["step_seconds_median"]))
    rc, doc, err = run(script, "--precision", "bf16", "--compile")
    if hasattr(torch, "compile"):
        if rc != 0 or not doc or not doc.get("compiled"):
            fail("--compile with torch %s: exit %d, %r %s" % (torch.__version__, rc, doc, err[-400:]))
        print("ok: --compile ran")
    else:
        if rc != 3 or not doc or not doc.get("unavailable") or "torch.compile" not in doc.get("error", ""):
            fail("--compile without torch.compile: exit %d, %r" % (rc, doc))
        print("ok: --compile on torch %s: %s" % (torch.__version__, doc["error"]))
    rc, doc, err = run(script, "--precision", "bf16", "--amp")
    if rc != 2 or "--precision replaces" not in err:
        fail("--precision with --amp: exit %d, %s" % (rc, err[-400:]))
    print("ok: --precision with --amp refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
