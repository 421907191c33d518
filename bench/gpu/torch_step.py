"""bench/gpu/torch_step.py: ResNet-50 training steps with cudnn.benchmark.

make gpu-check (bench/gpu/run.sh) runs it on a GPU: with PyTorch's default
cuDNN path and no convcache, then twice under `convcache run --torch-v7`
(the v7 path, whose find calls the interposer caches) on a fresh cache file.
For each input size it times the first training step (forward, backward,
optimizer step, synchronized), which is where cudnn.benchmark runs its
benchmarks, and a second step at the same size, which runs none.

Prints one line per size, "step SIZE FIRST_MS SECOND_MS", then
"path v7|v8". Uses torchvision's resnet50 when it is installed, else the
same network defined below.

usage: python torch_step.py [--batch N] [--sizes A,B,C]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--sizes", default="160,224,288")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    try:
        from torchvision.models import resnet50 as tv_resnet50
        model = tv_resnet50()
    except ImportError:
        model = resnet50()
    model = model.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    def step(size):
        x = torch.randn(args.batch, 3, size, size, device="cuda")
        target = torch.randint(0, 1000, (args.batch,), device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), target).backward()
        opt.step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3

    for size in (int(s) for s in args.sizes.split(",")):
        first = step(size)
        second = step(size)
        print("step %d %.1f %.1f" % (size, first, second), flush=True)
    disabled = os.environ.get("TORCH_CUDNN_V8_API_DISABLED", "").lower() in ("1", "true", "on", "yes", "y")
    print("path %s" % ("v7" if disabled else "v8"))
    print("torch %s cudnn %s" % (torch.__version__, torch.backends.cudnn.version()))


main()
