#!/usr/bin/python3
"""torchvision's models against lockstep's tv-* models, both ways.

  pretrained_oracle.py write DIR   torchvision's resnet18, resnet50 and vgg16
      with seeded random weights and random batch-norm statistics, saved as
      safetensors state dicts (torchvision's names with num_batches_tracked as
      torch writes them, timm's names, F16 and BF16), with images and
      torchvision's eval-mode logits (computed in float64) beside them. The C++
      test "[torch][pretrained]" loads them with load_pretrained, compares its
      logits and writes lockstep checkpoints of the loaded models.
  pretrained_oracle.py check DIR   exports those checkpoints with
      `lockstep export` (LOCKSTEP_BIN) in both namings, loads them into
      torchvision's models with a strict load_state_dict and compares the logits.

Debian's torch ships without the safetensors package: the files are written
and read here by hand (8-byte little-endian header length, JSON header, data).
"""

import json
import os
import struct
import subprocess
import sys

import torch
import torchvision

# name, torchvision builder, lockstep model, input [N, C, H, W], seed
CASES = [
    ("resnet18", torchvision.models.resnet18, "tv-resnet18", (2, 3, 64, 64), 11),
    ("resnet50", torchvision.models.resnet50, "tv-resnet50", (2, 3, 64, 64), 12),
    ("vgg16", torchvision.models.vgg16, "tv-vgg16", (2, 3, 32, 32), 13),
]
CLASSES = 1000
TOLERANCE = 1e-4  # normwise relative

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}
BY_NAME = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2), "I64": (torch.int64, 8)}


def write_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        # bytes of any dtype through a uint8 view (numpy has no bfloat16)
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        dtype, _ = BY_NAME[e["dtype"]]
        begin, end = e["data_offsets"]
        raw = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.uint8) if end > begin else torch.empty(0, dtype=torch.uint8)
        out[name] = raw.view(dtype).reshape(e["shape"]).clone()
    return meta, out


def to_timm(state, vgg):
    """timm's names: the same for ResNets; VGG's classifier as pre_logits convolutions and head.fc."""
    if not vgg:
        return dict(state)
    out = {}
    for k, v in state.items():
        if k.startswith("classifier.0."):
            out["pre_logits.fc1." + k[13:]] = v.reshape(4096, 512, 7, 7) if k.endswith("weight") else v
        elif k.startswith("classifier.3."):
            out["pre_logits.fc2." + k[13:]] = v.reshape(4096, 4096, 1, 1) if k.endswith("weight") else v
        elif k.startswith("classifier.6."):
            out["head.fc." + k[13:]] = v
        else:
            out[k] = v
    return out


def from_timm(state, vgg):
    if not vgg:
        return dict(state)
    out = {}
    for k, v in state.items():
        if k.startswith("pre_logits.fc1."):
            out["classifier.0." + k[15:]] = v.reshape(4096, -1) if k.endswith("weight") else v
        elif k.startswith("pre_logits.fc2."):
            out["classifier.3." + k[15:]] = v.reshape(4096, 4096) if k.endswith("weight") else v
        elif k.startswith("head.fc."):
            out["classifier.6." + k[8:]] = v
        else:
            out[k] = v
    return out


def seeded_model(build, seed):
    torch.manual_seed(seed)
    model = build(num_classes=CLASSES)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.num_batches_tracked.fill_(1234)
    return model.eval()


def logits64(model, images):
    with torch.no_grad():
        return model.double()(images.double())


def relative(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def write(out):
    os.makedirs(out, exist_ok=True)
    for name, build, _, shape, seed in CASES:
        model = seeded_model(build, seed)
        torch.manual_seed(seed + 100)
        images = torch.randn(*shape)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        vgg = name.startswith("vgg")
        write_safetensors(os.path.join(out, name + ".safetensors"), state)
        write_safetensors(os.path.join(out, name + "_timm.safetensors"),
                          {k: v for k, v in to_timm(state, vgg).items() if not k.endswith("num_batches_tracked")})
        io = {"images": images, "logits": logits64(model, images).float()}
        if name == "resnet18":
            # Half-precision files: the reference runs on the rounded weights.
            for dtype, tag in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
                rounded = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in state.items()}
                write_safetensors(os.path.join(out, "%s_%s.safetensors" % (name, tag)), rounded)
                twin = build(num_classes=CLASSES).eval()
                twin.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in rounded.items()})
                io["logits_" + tag] = logits64(twin, images).float()
        write_safetensors(os.path.join(out, name + ".io.safetensors"), io)
    print("wrote torchvision's models, images and logits to", out)
    return 0


def check(out):
    binary = os.environ.get("LOCKSTEP_BIN", "build/lockstep")
    worst = {}
    for name, build, _, _, _ in CASES:
        vgg = name.startswith("vgg")
        checkpoint = os.path.join(out, name + ".checkpoint.safetensors")
        _, io = read_safetensors(os.path.join(out, name + ".io.safetensors"))
        for fmt in ["torchvision", "timm"]:
            exported = os.path.join(out, "%s.export-%s.safetensors" % (name, fmt))
            run = subprocess.run([binary, "export", "--format", fmt, checkpoint, exported], capture_output=True,
                                 text=True)
            assert run.returncode == 0, run.stderr
            meta, state = read_safetensors(exported)
            classes = json.loads(meta["class_names"])
            assert classes == ["class%d" % i for i in range(CLASSES)], classes[:3]
            with open(exported[:-len(".safetensors")] + ".classes.txt") as f:
                assert f.read().splitlines() == classes
            if fmt == "timm":
                # The names and shapes timm's model has (the timm-named file of `write`).
                _, timm_like = read_safetensors(os.path.join(out, name + "_timm.safetensors"))
                assert {k: list(v.shape) for k, v in state.items()} == {k: list(v.shape) for k, v in timm_like.items()}
                state = from_timm(state, vgg)
            model = build(num_classes=CLASSES).eval()
            result = model.load_state_dict(state, strict=True)
            assert not result.missing_keys and not result.unexpected_keys, result
            difference = relative(logits64(model, io["images"]), io["logits"])
            print("%s exported with %s names, strict load_state_dict: normwise relative logit difference %.3g"
                  % (name, fmt, difference))
            assert difference <= TOLERANCE, (name, fmt, difference)
            worst[name] = max(worst.get(name, 0.0), difference)
            os.remove(exported)
    print("exports load strictly into torchvision; worst differences:", worst)
    return 0


def main(argv):
    if len(argv) != 2 or argv[0] not in ("write", "check"):
        print("usage: pretrained_oracle.py write|check DIR", file=sys.stderr)
        return 2
    return write(argv[1]) if argv[0] == "write" else check(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
