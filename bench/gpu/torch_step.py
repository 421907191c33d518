"""bench/gpu/torch_step.py: ResNet-50 training steps, as the GPU check's
parts run them (bench/gpu/parts.sh).

For each input size it times the first training step (forward, backward,
optimizer step, synchronized), where cudnn.benchmark runs its benchmarks,
and a second one. Then, at the last size, --steady steps timed with CUDA
events (the steady state). Prints:

  mark import|model|first_steps SECONDS   since the process was started
                                          ($KIT_T0, epoch seconds, set by
                                          the shell just before exec)
  step SIZE FIRST_MS SECOND_MS            one per size
  epoch N MS                              --multiscale: each epoch's steps
  steady SIZE N MEDIAN_MS P90_MS          the steady state
  peak_mem_mb MB                          torch.cuda.max_memory_allocated
  path v7|v8
  torch VERSION cudnn VERSION

usage: python torch_step.py [--batch N] [--sizes A,B,C] [--benchmark on|off]
       [--deterministic] [--bf16] [--channels-last] [--multiscale N --epochs E]
       [--steady N] [--barrier DIR]

--multiscale N: N sizes from --sizes' first to its last, a different one
every step, --epochs passes. --barrier DIR: after the model is built, wait
at the check's barrier (DIR/go, a FIFO; DIR/ready.PID says this process is
there). Uses torchvision's resnet50 when it is installed, else the same
network defined below.
"""
import argparse
import os
import time

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (self.down(x) if self.down is not None else x))


def resnet50(classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            layers.append(Bottleneck(cin, width, stride if b == 0 else 1))
            cin = width * Bottleneck.expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def since_start():
    t0 = os.environ.get("KIT_T0")
    return time.time() - float(t0) if t0 else float("nan")


def mark(name):
    print("mark %s %.3f" % (name, since_start()), flush=True)


def barrier(d):
    open(os.path.join(d, "ready.%d" % os.getpid()), "w").close()
    with open(os.path.join(d, "go")) as f:  # returns at end of file: all are there
        f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--sizes", default="160,224,288")
    ap.add_argument("--benchmark", choices=("on", "off"), default="on")
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--multiscale", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steady", type=int, default=30)
    ap.add_argument("--barrier")
    args = ap.parse_args()
    mark("import")
    torch.backends.cudnn.benchmark = args.benchmark == "on"
    torch.backends.cudnn.deterministic = args.deterministic
    torch.manual_seed(0)
    try:
        from torchvision.models import resnet50 as tv_resnet50
        model = tv_resnet50()
    except ImportError:
        model = resnet50()
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.cuda().to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    torch.cuda.synchronize()
    mark("model")
    if args.barrier:
        barrier(args.barrier)

    def run(size):
        x = torch.randn(args.batch, 3, size, size, device="cuda").to(memory_format=fmt)
        target = torch.randint(0, 1000, (args.batch,), device="cuda")
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
            loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()

    def step(size):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        run(size)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3

    sizes = [int(s) for s in args.sizes.split(",")]
    if args.multiscale:
        lo, hi, n = sizes[0], sizes[-1], args.multiscale
        sizes = [(lo + (hi - lo) * i // max(n - 1, 1)) // 8 * 8 for i in range(n)]
        for e in range(args.epochs):
            t = sum(step(size) for size in sizes)
            print("epoch %d %.1f" % (e + 1, t), flush=True)
    else:
        for size in sizes:
            first = step(size)
            second = step(size)
            print("step %d %.1f %.1f" % (size, first, second), flush=True)
    mark("first_steps")
    if args.steady:
        size = sizes[-1]
        times = []
        for _ in range(args.steady):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            run(size)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        times.sort()
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print("steady %d %d %.3f %.3f" % (size, len(times), times[len(times) // 2], p90), flush=True)
    print("peak_mem_mb %.1f" % (torch.cuda.max_memory_allocated() / 2**20))
    disabled = os.environ.get("TORCH_CUDNN_V8_API_DISABLED", "").lower() in ("1", "true", "on", "yes", "y")
    print("path %s" % ("v7" if disabled else "v8"))
    print("torch %s cudnn %s" % (torch.__version__, torch.backends.cudnn.version()), flush=True)


main()
