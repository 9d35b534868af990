#!/usr/bin/env python3
"""The GPU check's table: bench_cuda_topk's JSON (and torch_topk.py's, if given) as Markdown.

Each kernel's median time, elements per second (n for the read pass and the selections,
k for apply and pack) and its time over the device read pass of the same n in the same run;
torch.topk's time beside the exact top-k. Then a step's selection over ResNet-50's layout,
all segments at once against one segment at a time (time, launches or waits for the device,
and the ratio), for the exact top-k and for DGC's sampled threshold. Last, the goals for
the exact top-k at n = 25.6M: within 3x the read pass, and at least 5x faster than
torch.topk. Exits 1 when a benchmark reported an error (a failed check against the CPU
kernel, a missing device).

usage: report.py BENCH_JSON [--torch TORCH_JSON] [--device NAME] > table.md
"""
import argparse
import json
import re
import sys

KERNELS = {
    "ReadPass": "read pass (cub max)",
    "TopkRadix": "top-k exact (radix select)",
    "TopkSort": "top-k exact, sort baseline",
    "RadixPasses": "3 histogram passes over all of x",
    "TopkSampled": "top-k sampled (DGC)",
    "Threshold": "threshold filter",
    "Apply": "apply k values (scatter-add)",
    "Pack": "pack k index/value pairs",
}
# A step over ResNet-50's layout: (benchmark, its second argument or None) -> (selection, how).
STEPS = {("StepSegmented", None): ("exact top-k", "together"),
         ("StepPerSegment", None): ("exact top-k", "one by one"),
         ("StepSampled", 1): ("sampled threshold (DGC)", "together"),
         ("StepSampled", 0): ("sampled threshold (DGC)", "one by one")}
GOAL_N = 25557032
TORCH_GOAL = 5


def parse(report):
    """{(kernel, n, inverse density or None): entry}, {(selection, how, inverse density): entry},
    and the errors."""
    rows, steps, errors = {}, {}, []
    for b in report["benchmarks"]:
        m = re.match(r"BM_(\w+)/(\d+)(?:/(\d+))?/manual_time$", b["name"])
        if not m:
            continue
        if b.get("error_occurred"):
            errors.append(f"{b['name']}: {b.get('error_message', 'error')}")
        elif any(name == m.group(1) for name, _ in STEPS):  # the first argument is 1/density
            step = STEPS[(m.group(1), int(m.group(3)) if m.group(3) else None)]
            steps[step + (int(m.group(2)),)] = b
        else:
            inv = int(m.group(3)) if m.group(3) else None
            rows[(m.group(1), int(m.group(2)), inv)] = b
    return rows, steps, errors


def micros(b):
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b["time_unit"]]
    return b["real_time"] * scale


def step_table(rows, steps, selection, counter):
    """A step's selection over ResNet-50's segments: all at once against one at a time."""
    invs = sorted({inv for sel, _, inv in steps if sel == selection})
    if not invs:
        return
    read = rows.get(("ReadPass", GOAL_N, None))
    print()
    print(f"A step's {selection} over ResNet-50's layout ({GOAL_N:,} floats; its segments with "
          "dim > 1 selected):")
    print()
    print(f"| density | segments | all at once (us) | {counter} | one at a time (us) | {counter} "
          "| one at a time / all at once | all at once / read pass |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for inv in invs:
        at_once = steps.get((selection, "together", inv))
        one_by_one = steps.get((selection, "one by one", inv))
        cells = []
        for b in (at_once, one_by_one):
            cells += [f"{micros(b):.1f}", f"{b[counter]:g}"] if b else ["-", "-"]
        segments = (at_once or one_by_one)["segments"]
        ratio = f"{micros(one_by_one) / micros(at_once):.2f}" if at_once and one_by_one else "-"
        over_read = f"{micros(at_once) / micros(read):.2f}" if at_once and read else "-"
        print(f"| {1 / inv:g} | {segments:g} | {' | '.join(cells)} | {ratio} | {over_read} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_json")
    parser.add_argument("--torch", help="torch_topk.py's JSON")
    parser.add_argument("--device", default="", help="the GPU, as nvidia-smi names it")
    args = parser.parse_args()
    with open(args.bench_json) as f:
        rows, steps, errors = parse(json.load(f))
    torch_us = {}
    torch_version = ""
    if args.torch:
        with open(args.torch) as f:
            t = json.load(f)
        torch_version = t["torch"]
        torch_us = {(c["n"], c["k"]): c["torch_topk_us"] for c in t["cases"]}

    print(f"Device: {args.device or 'unnamed'}" + (f"; torch {torch_version}" if torch_version else ""))
    print()
    print("| kernel | n | density | k | time (us) | elements/s | x read pass | torch.topk (us) | torch.topk / this |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    goals = []
    for (kernel, n, inv), b in sorted(rows.items(), key=lambda r: (r[0][1], r[0][2] or 0, list(KERNELS).index(r[0][0]))):
        us = micros(b)
        read = rows.get(("ReadPass", n, None))
        ratio = f"{us / micros(read):.2f}" if read else "-"
        k = int(b["k"]) if "k" in b else None
        t = torch_us.get((n, k)) if kernel == "TopkRadix" else None
        print(f"| {KERNELS[kernel]} | {n:,} | {f'{1 / inv:g}' if inv else '-'} | {f'{k:,}' if k else '-'} "
              f"| {us:.1f} | {b['items_per_second']:.3g} | {ratio} | {f'{t:.1f}' if t else '-'} "
              f"| {f'{t / us:.1f}x' if t else '-'} |")
        if kernel == "TopkRadix" and n == GOAL_N:
            within = us / micros(read) if read else None
            goals.append((inv, within, t / us if t else None))
    step_table(rows, steps, "exact top-k", "launches")
    step_table(rows, steps, "sampled threshold (DGC)", "waits")
    print()
    for inv, within, faster in goals:
        print(f"- Goal at n = {GOAL_N:,}, density {1 / inv:g}: exact top-k "
              + (f"{within:.2f}x the read pass (goal <= 3: {'met' if within <= 3 else 'not met'})" if within else "no read pass")
              + "; "
              + (f"{faster:.1f}x faster than torch.topk (goal >= {TORCH_GOAL}: "
                 f"{'met' if faster >= TORCH_GOAL else 'not met'})"
                 if faster else "torch.topk not measured"))
    for e in errors:
        print(f"- ERROR {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
