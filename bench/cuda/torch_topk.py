#!/usr/bin/env python3
"""torch.topk beside bench_cuda_topk: the same magnitude top-k on the same GPU and data.

For every BM_TopkRadix case of a bench_cuda_topk JSON report (its n and k counters), loads
the input that the benchmark dumped (SPARSEPS_BENCH_DUMP=DIR: DIR/normal_<n>.f32) and
times what a PyTorch user writes for it, torch.topk(x.abs(), k, sorted=False) and the
gather of the signed values, with CUDA events: the median of --repeats timed calls after
three warm-ups. Writes one JSON object per case to OUT.

usage: torch_topk.py BENCH_JSON DUMP_DIR OUT_JSON [--repeats N]
"""
import argparse
import json
import os
import re
import statistics
import sys

import numpy as np
import torch


def radix_cases(report):
    """(n, k) of each BM_TopkRadix benchmark, in the report's order."""
    cases = []
    for b in report["benchmarks"]:
        if re.match(r"BM_TopkRadix/", b["name"]) and not b.get("error_occurred"):
            cases.append((int(b["n"]), int(b["k"])))
    return cases


def time_topk(x, k, repeats):
    def once():
        top = torch.topk(x.abs(), k, sorted=False)
        return x.gather(0, top.indices)

    for _ in range(3):
        once()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeats):
        start.record()
        once()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)  # ms -> us
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_json")
    parser.add_argument("dump_dir")
    parser.add_argument("out_json")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_topk.py: torch sees no CUDA device: nothing to compare with")
    with open(args.bench_json) as f:
        cases = radix_cases(json.load(f))
    if not cases:
        sys.exit(f"torch_topk.py: {args.bench_json} has no measured BM_TopkRadix case")
    results, loaded = [], {}
    for n, k in cases:
        if n not in loaded:
            path = os.path.join(args.dump_dir, f"normal_{n}.f32")
            host = np.fromfile(path, dtype="<f4")
            if host.size != n:
                sys.exit(f"torch_topk.py: {path} holds {host.size} floats, expected {n}")
            loaded = {n: torch.from_numpy(host).cuda()}  # one input on the device at a time
        us = time_topk(loaded[n], k, args.repeats)
        results.append({"n": n, "k": k, "torch_topk_us": us})
        print(f"torch.topk n={n} k={k}: {us:.1f} us")
    with open(args.out_json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "cases": results}, f, indent=1)


if __name__ == "__main__":
    main()
