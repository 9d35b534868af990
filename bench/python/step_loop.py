"""One rank of bench/python-step-time's Python job: the example's model and loop
(examples/fashion_mnist.py), timed step by step; the worker writes the time at the end of
every step to --out as JSON, as the C++ driver's metrics.jsonl does."""
import argparse
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from fashion_mnist import load, small_resnet  # noqa: E402

import sparseps  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    world = sparseps.init()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    model, (x, y) = small_resnet(), load("train")
    job = dict(method="dgs", lr=0.1, momentum=0.9, weight_decay=5e-4, density=0.01)
    if world.is_server:
        sparseps.serve(model, **job)
        return
    opt = sparseps.Optimizer(model.parameters(), model=model, **job)
    order = torch.randperm(len(x))
    times = []
    for step in range(args.steps):
        idx = order[step * args.batch:(step + 1) * args.batch]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter())
    opt.finish()
    with open(args.out, "w") as f:
        json.dump({"times": times}, f)


if __name__ == "__main__":
    main()
