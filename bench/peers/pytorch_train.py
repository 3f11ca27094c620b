#!/usr/bin/python3
"""PyTorch peer of lockstep's benchmarks: times training steps of the same
models on synthetic data and prints one JSON object on stdout.

The models mirror layers/models.cpp module for module, so their parameter
names ("stem.conv.weight", "stage1.0.a.bn.running_mean", "fc.bias") and counts
equal ours; tests/torch/golden.py imports build_model from here and checks
that against our builders, so the benchmark compares the same network.

  pytorch_train.py --model resnet20 --batch 64 --steps 10 --device cpu --threads 2
  pytorch_train.py --model resnet18 --batch 256 --device cuda --channels-last --amp
  pytorch_train.py --model resnet18 --batch 512 --device cuda --precision bf16 --compile
  pytorch_train.py --model resnet18 --batch 256 --device cuda --precision tf32 --channels-last --cuda-graph

--precision names the math as lockstep-bench peers asks for it: fp32 (no
TF32 anywhere), tf32 (PyTorch's defaults: cuDNN convolutions may use TF32,
matmuls as torch.backends.cuda.matmul.allow_tf32 says), bf16 (AMP:
autocast to bfloat16, no loss scaling, channels_last). --compile runs the
model through torch.compile; a torch without it (1.13) prints
{"error": ..., "unavailable": true} and exits with 3. --cuda-graph captures
the whole step (forward, loss, backward, update) into one CUDA graph after
the warm-up steps and replays it, as PyTorch's CUDA-graph notes describe for
whole-network capture ("CUDA Graphs" in its CUDA semantics page): the images
and labels stay in the same tensors, which the graph reads.

A step is forward + cross-entropy + backward + SGD-momentum update (weight
decay on conv/linear weights only, as lockstep does), timed from before the
forward to after the update, with the device synchronised at both ends.
"""

import argparse
import contextlib
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBN(nn.Module):
    """conv (no bias) -> bn (-> relu): the unit of resnet and vgg11-bn.

    ReLUs are modules (no state) so tests can hook their inputs."""

    def __init__(self, cin, cout, kernel, stride, padding, relu):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU() if relu else None
        # He et al.: N(0, 2/fan_out), as lockstep's Init::fan_out_normal.
        nn.init.kaiming_normal_(self.conv.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.bn(self.conv(x))
        return self.relu(x) if self.relu is not None else x


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = ConvBN(cin, cout, 3, stride, 1, True)
        self.b = ConvBN(cout, cout, 3, 1, 1, False)
        # Option B shortcut: 1x1 conv + bn wherever the shape changes.
        self.down = ConvBN(cin, cout, 1, stride, 0, False) if stride != 1 or cin != cout else None
        self.relu = nn.ReLU()

    def forward(self, x):
        shortcut = self.down(x) if self.down is not None else x
        return self.relu(self.b(self.a(x)) + shortcut)


class ResNet(nn.Module):
    def __init__(self, in_channels, stem, widths, blocks_per_stage, classes):
        super().__init__()
        self.stem = ConvBN(in_channels, stem, 3, 1, 1, True)
        cin = stem
        self.stages = []
        for s, width in enumerate(widths):
            blocks = []
            for b in range(blocks_per_stage):
                blocks.append(BasicBlock(cin, width, 2 if s > 0 and b == 0 else 1))
                cin = width
            stage = nn.Sequential(*blocks)
            setattr(self, "stage%d" % (s + 1), stage)
            self.stages.append(stage)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class VGG11BN(nn.Module):
    def __init__(self, in_shape, classes):
        super().__init__()
        cfg = [64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0]  # 0 = 2x2 max pool
        size = min(in_shape[1], in_shape[2])
        cin, n = in_shape[0], 0
        self.plan = []
        for c in cfg:
            if c == 0:
                if size < 2:  # small inputs (28x28) run out of pixels before the fifth pool
                    continue
                self.plan.append(None)
                size //= 2
            else:
                n += 1
                setattr(self, "conv%d" % n, ConvBN(cin, c, 3, 1, 1, True))
                self.plan.append(getattr(self, "conv%d" % n))
                cin = c
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        for unit in self.plan:
            x = F.max_pool2d(x, 2, 2) if unit is None else unit(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SimpleCNN(nn.Module):
    """conv64 - relu - pool - conv128 - relu - pool - dropout(0.5) - dense."""

    def __init__(self, in_shape, classes, dropout):
        super().__init__()
        c, h, w = in_shape
        self.conv1 = nn.Conv2d(c, 64, 3)
        self.conv2 = nn.Conv2d(64, 128, 3)
        h, w = (h - 2) // 2, (w - 2) // 2
        h, w = (h - 2) // 2, (w - 2) // 2
        self.dropout = dropout
        self.fc = nn.Linear(128 * h * w, classes)
        self.relu1, self.relu2 = nn.ReLU(), nn.ReLU()

    def forward(self, x):
        x = F.max_pool2d(self.relu1(self.conv1(x)), 2, 2)
        x = F.max_pool2d(self.relu2(self.conv2(x)), 2, 2)
        x = torch.flatten(x, 1)
        if self.dropout:
            x = F.dropout(x, 0.5, self.training)
        return self.fc(x)


class SmallCNN(nn.Module):
    """(conv32 - pool - bn - relu) - (conv64 - pool - bn - relu) - dropout(0.25) - dense,
    3x3 'same' convolutions without bias: lockstep's CPU default."""

    def __init__(self, in_shape, classes, dropout):
        super().__init__()
        c, h, w = in_shape
        self.conv1 = nn.Conv2d(c, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        for conv in (self.conv1, self.conv2):
            nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
        self.dropout = dropout
        self.fc = nn.Linear(64 * (h // 2 // 2) * (w // 2 // 2), classes)
        self.relu1, self.relu2 = nn.ReLU(), nn.ReLU()

    def forward(self, x):
        x = self.relu1(self.bn1(F.max_pool2d(self.conv1(x), 2, 2)))
        x = self.relu2(self.bn2(F.max_pool2d(self.conv2(x), 2, 2)))
        x = torch.flatten(x, 1)
        if self.dropout:
            x = F.dropout(x, 0.25, self.training)
        return self.fc(x)


class MLP(nn.Module):
    def __init__(self, in_shape, classes, dropout):
        super().__init__()
        features = in_shape[0] * in_shape[1] * in_shape[2]
        self.fc1 = nn.Linear(features, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, classes)
        self.dropout = dropout
        self.relu1, self.relu2 = nn.ReLU(), nn.ReLU()

    def forward(self, x):
        x = self.relu1(self.fc1(torch.flatten(x, 1)))
        if self.dropout:
            x = F.dropout(x, 0.2, self.training)
        return self.fc3(self.relu2(self.fc2(x)))


MODEL_NAMES = ["mlp", "simple-cnn", "small-cnn", "resnet18", "resnet20", "vgg11-bn"]


def build_model(name, in_shape, classes, dropout=True):
    """in_shape: (C, H, W). The same network as lockstep's build_model."""
    if name == "mlp":
        return MLP(in_shape, classes, dropout)
    if name == "simple-cnn":
        return SimpleCNN(in_shape, classes, dropout)
    if name == "small-cnn":
        return SmallCNN(in_shape, classes, dropout)
    if name == "resnet18":
        return ResNet(in_shape[0], 64, [64, 128, 256, 512], 2, classes)
    if name == "resnet20":
        return ResNet(in_shape[0], 16, [16, 32, 64], 3, classes)
    if name == "vgg11-bn":
        return VGG11BN(in_shape, classes)
    raise ValueError("unknown model %r: expected one of %s" % (name, ", ".join(MODEL_NAMES)))


def make_optimizer(model, lr, momentum, weight_decay):
    """SGD with weight decay on conv/linear weights only (lockstep's default)."""
    decay = [p for n, p in model.named_parameters() if n.endswith("weight") and p.dim() > 1]
    rest = [p for n, p in model.named_parameters() if not (n.endswith("weight") and p.dim() > 1)]
    return torch.optim.SGD([{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}],
                           lr=lr, momentum=momentum)


def parse_shape(text):
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) != 3 or min(parts) <= 0:
        raise argparse.ArgumentTypeError("expected CxHxW, got %r" % text)
    return tuple(parts)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet20", choices=MODEL_NAMES)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--input", type=parse_shape, default=(3, 32, 32), help="one sample, CxHxW")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave PyTorch's default)")
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format for model and data")
    p.add_argument("--amp", action="store_true", help="autocast: float16 with loss scaling on cuda, bfloat16 on cpu")
    p.add_argument("--tf32", default="default", choices=["default", "on", "off"],
                   help="TF32 math in cuDNN and cuBLAS on cuda (default: PyTorch's own defaults)")
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16"],
                   help="fp32, tf32 (PyTorch's defaults) or bf16 (AMP bfloat16 + channels_last); "
                        "instead of --tf32/--amp")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (torch 2.0 and later)")
    p.add_argument("--cuda-graph", action="store_true", help="replay the whole step from one CUDA graph (cuda only)")
    p.add_argument("--no-dropout", action="store_true")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    amp_dtype = None  # autocast's type, None: no autocast
    if args.precision is not None:
        if args.amp or args.tf32 != "default":
            p.error("--precision replaces --amp and --tf32: give one or the other")
        args.tf32 = {"fp32": "off", "tf32": "default", "bf16": "default"}[args.precision]
        if args.precision == "bf16":
            amp_dtype = torch.bfloat16
            args.channels_last = True
    elif args.amp:
        amp_dtype = torch.float16 if args.device == "cuda" else torch.bfloat16
    if args.compile and not hasattr(torch, "compile"):
        print(json.dumps({"error": "torch.compile is not in torch %s (it came with 2.0)" % torch.__version__,
                          "unavailable": True}))
        return 3

    if args.cuda_graph and args.device != "cuda":
        print(json.dumps({"error": "--cuda-graph needs --device cuda", "unavailable": True}))
        return 3

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    if args.tf32 != "default":
        torch.backends.cudnn.allow_tf32 = args.tf32 == "on"
        torch.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
    model = build_model(args.model, args.input, args.classes, dropout=not args.no_dropout).to(device)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    model.train()
    opt = make_optimizer(model, args.lr, 0.9, 5e-4)
    # The optimizer holds the parameters themselves; the compiled module shares them.
    run_model = torch.compile(model) if args.compile else model

    # Synthetic data: a fixed random batch, already on the device (the step alone is timed).
    images = torch.randn(args.batch, *args.input, device=device).to(memory_format=memory_format)
    labels = torch.randint(0, args.classes, (args.batch,), device=device)
    # Loss scaling only for float16: bfloat16 has float32's exponent range.
    scaler = torch.cuda.amp.GradScaler(enabled=amp_dtype == torch.float16 and device.type == "cuda")

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def step():
        # No autocast context at all without AMP: CPU autocast refuses any dtype but bfloat16, even disabled.
        # Autocast's cast cache would hold casts made during a graph's capture: off when capturing.
        autocast = (torch.autocast(device_type=device.type, dtype=amp_dtype, cache_enabled=not args.cuda_graph)
                    if amp_dtype is not None else contextlib.nullcontext())
        with autocast:
            loss = F.cross_entropy(run_model(images), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    if args.cuda_graph:
        # Warm-up on a side stream (cuDNN's searches, the allocator's growth,
        # the optimizer's momentum buffers), then one capture; every timed
        # step replays it. The loss tensor the capture made is what each
        # replay overwrites.
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(max(args.warmup, 1)):
                step()
        torch.cuda.current_stream(device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            captured_loss = step()

        def replay():
            graph.replay()
            return captured_loss
        run_step = replay
    else:
        for _ in range(args.warmup):
            step()
        run_step = step
    sync()
    times = []
    loss = None
    for _ in range(args.steps):
        sync()
        start = time.perf_counter()
        loss = run_step()
        sync()
        times.append(time.perf_counter() - start)
    median = statistics.median(times) if times else float("nan")
    result = {
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "input": "x".join(str(d) for d in args.input),
        "classes": args.classes,
        "batch": args.batch,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "channels_last": args.channels_last,
        "amp": amp_dtype is not None,
        "autocast_dtype": str(amp_dtype).replace("torch.", "") if amp_dtype is not None else None,
        "precision": args.precision,
        "tf32": args.tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "compiled": args.compile,
        "cuda_graph": args.cuda_graph,
        "parameters": sum(p.numel() for p in model.parameters()),
        "warmup": args.warmup,
        "steps": args.steps,
        "step_seconds": times,
        "step_seconds_median": median,
        "images_per_second": args.batch / median if times else float("nan"),
        "last_loss": float(loss) if loss is not None else None,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
