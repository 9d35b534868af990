#!/usr/bin/python3
"""One rank of a PyTorch DistributedDataParallel job (torch.distributed over Gloo), the
systems a researcher would run instead of a parameter server: dense allreduce, or DDP's
fp16 and PowerSGD communication hooks. It trains the MLP that sparseps_driver --model=mlp
builds (784-256-256-10, ReLU, PyTorch's default init) on Fashion-MNIST, normalized as
sparseps normalizes it, with the same batch per worker, seed and rate schedule (momentum
SGD with weight decay, steps of 0.1x at the milestones, in fractional epochs), each rank a
1/world shard of the
training set per epoch. Rank 0 evaluates the whole test set after every epoch.

  ddp_rank.py --rank=R --world-size=N --master-addr=HOST --hook=none|fp16|powersgd:R
      --out=DIR --milestones=M1,M2 [--epochs=3 --batch-size=64 --lr=0.1 --momentum=0.9
      --weight-decay=5e-4 --seed=1 --data-dir=/usr/share/datasets/fashion-mnist]

Rank 0 writes DIR/eval.jsonl (epoch, accuracy, time: training seconds since this process
started, evaluations excluded) and DIR/summary.json (steady samples/s of all ranks from the
10th step on). GLOO_SOCKET_IFNAME picks the interface (bench/peers/compare sets it).
"""

import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

MEAN, STD = 0.2860, 0.3530  # sparseps's Fashion-MNIST statistics
WARM_STEPS = 10  # steps before the steady window (and before PowerSGD compresses)


def load(data_dir, split):
    with gzip.open(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - MEAN) / STD
    return x, torch.from_numpy(labels.astype(np.int64))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256),
                         nn.ReLU(), nn.Linear(256, 10))


def attach_hook(model, hook):
    if hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook.startswith("powersgd:"):
        state = powerSGD_hook.PowerSGDState(
            process_group=None, matrix_approximation_rank=int(hook.split(":")[1]),
            start_powerSGD_iter=WARM_STEPS, use_error_feedback=True, warm_start=True)
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    elif hook != "none":
        raise SystemExit(f"--hook: none, fp16 or powersgd:RANK, got {hook}")


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
                      for i in range(0, len(x), 1000))
    model.train()
    return correct / len(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--master-addr", required=True)
    p.add_argument("--master-port", type=int, default=29500)
    p.add_argument("--hook", default="none")
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--milestones", required=True,
                   help="comma list of epochs (fractions allowed); empty: none")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    start = time.perf_counter()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)  # every rank the same model, as DDP also broadcasts it
    train_x, train_y = load(a.data_dir, "train")
    test_x, test_y = load(a.data_dir, "t10k")
    dist.init_process_group("gloo", init_method=f"tcp://{a.master_addr}:{a.master_port}",
                            rank=a.rank, world_size=a.world_size)
    model = nn.parallel.DistributedDataParallel(mlp())
    attach_hook(model, a.hook)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum,
                          weight_decay=a.weight_decay)
    milestones = [float(m) for m in a.milestones.split(",") if m]
    loss_fn = nn.CrossEntropyLoss()
    evals, step, window_start, eval_seconds = [], 0, None, 0.0
    for epoch in range(a.epochs):
        shuffle = torch.Generator().manual_seed(a.seed + epoch)
        order = torch.randperm(len(train_x), generator=shuffle)
        mine = order[a.rank::a.world_size]
        for i in range(0, len(mine), a.batch_size):
            # The rate steps down 10x at each milestone, in fractional epochs as sparseps's.
            progress = epoch + i / len(mine)
            for group in opt.param_groups:
                group["lr"] = a.lr * 0.1 ** sum(progress >= m for m in milestones)
            batch = mine[i:i + a.batch_size]
            opt.zero_grad()
            loss_fn(model(train_x[batch]), train_y[batch]).backward()
            opt.step()
            step += 1
            if step == WARM_STEPS:
                window_start, window_step = time.perf_counter() - eval_seconds, step
        if a.rank == 0:
            t = time.perf_counter()
            trained = t - start - eval_seconds
            acc = accuracy(model.module, test_x, test_y)
            eval_seconds += time.perf_counter() - t
            evals.append({"epoch": epoch + 1, "accuracy": acc, "time": trained})
            print(f"epoch {epoch + 1}: test accuracy {100 * acc:.2f}% at "
                  f"{evals[-1]['time']:.1f} s", flush=True)
    if a.rank == 0:
        end = time.perf_counter() - eval_seconds
        samples = (step - window_step) * a.batch_size * a.world_size
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "eval.jsonl"), "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in evals)
        with open(os.path.join(a.out, "summary.json"), "w") as f:
            json.dump({"system": f"ddp-{a.hook}", "world_size": a.world_size,
                       "steady_samples_per_s": samples / (end - window_start),
                       "final_accuracy": evals[-1]["accuracy"],
                       "train_seconds": evals[-1]["time"]}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
