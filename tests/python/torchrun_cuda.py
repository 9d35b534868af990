"""sparseps.Optimizer on a CUDA model under torchrun, run by scripts/gpu-check on a GPU machine:
PYTHONPATH=<build>/python torchrun --nproc_per_node=3 tests/python/torchrun_cuda.py
Rank 0 serves, ranks 1 and 2 train a small CNN on synthetic images, each on a GPU (on the
CPU where torch sees none), 30 steps of dgs. Every worker prints its device and its loss;
a worker whose loss did not fall exits non-zero."""
import sys

import sparseps
import torch
from torch import nn

STEPS, BATCH = 30, 64


def small_cnn():
    torch.manual_seed(0)  # every rank the same model
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def batches(worker):  # ten classes of noisy 32x32 images around fixed centers
    centers = torch.randn(10, 3, 8, 8, generator=torch.Generator().manual_seed(7))
    rng = torch.Generator().manual_seed(worker)
    for _ in range(STEPS):
        y = torch.randint(0, 10, (BATCH,), generator=rng)
        x = centers[y].repeat_interleave(4, 2).repeat_interleave(4, 3)
        yield x + 0.5 * torch.randn(BATCH, 3, 32, 32, generator=rng), y


def main():
    world = sparseps.init()
    net = small_cnn()
    job = dict(method="dgs", lr=0.1, momentum=0.7, density=0.05,
               pushes_per_epoch=STEPS * world.num_workers)
    if world.is_server:
        sparseps.serve(net, **job)
        return 0
    device = (torch.device("cuda", world.worker_index % torch.cuda.device_count())
              if torch.cuda.is_available() else torch.device("cpu"))
    net = net.to(device)
    opt = sparseps.Optimizer(net.parameters(), model=net, **job)
    losses = []
    for x, y in batches(world.worker_index):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x.to(device)), y.to(device))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    opt.finish()
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    print(f"worker {world.worker_index} on {device}: {len(losses)} steps, loss {first:.3f} "
          f"(first 5) -> {last:.3f} (last 5)", flush=True)
    return 0 if last < first else 1


if __name__ == "__main__":
    sys.exit(main())
