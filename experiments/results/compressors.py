"""The compressor table: collect finished runs of experiments/compare-compressors, write
compressors.json, print the table. `python3 -m results.compressors DIR` (from experiments/)
or `/usr/bin/python3 experiments/results/compressors.py DIR/compressors.json` redraws it."""

import json
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from results import runs as run_files  # noqa: E402
else:
    from . import runs as run_files


def collect(out, named_specs):
    rows = []
    for name, spec in named_specs:
        run_dir = os.path.join(out, name)
        if not run_files.is_finished(run_dir):
            continue
        s = run_files.read_json(run_files.summary_path(run_dir))
        rows.append({
            "compressor": spec,
            "bytes_per_push": s["bytes_up"] / max(1, s["updates"]),
            "final_accuracy": s["final_accuracy"],
            "best_accuracy": s["best_accuracy"],
            "epochs": s["epochs_trained"],
            "train_seconds": s["train_seconds"],
            "throughput": s["throughput"],
            "model": s["model"], "dataset": s["dataset"], "workers": s["workers"],
            "bandwidth": s["bandwidth"],
        })
    return rows


def write(out, rows):
    with open(os.path.join(out, "compressors.json"), "w") as f:
        json.dump(rows, f, indent=1)


def table(rows):
    if not rows:
        return "(no finished runs)"
    dense = next((r["bytes_per_push"] for r in rows if r["compressor"] == "dense"), None)
    r0 = rows[0]
    lines = [f"gd with error feedback, {r0['workers']} workers, {r0['model']} on {r0['dataset']}, "
             f"bandwidth {r0['bandwidth']}",
             "| compressor | bytes per push | vs dense | final acc | best acc | epochs | "
             "training s | samples/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{dense / r['bytes_per_push']:.1f}x" if dense else "-"
        lines.append(f"| {r['compressor']} | {r['bytes_per_push'] / 1e3:.1f} kB | {ratio} | "
                     f"{100 * r['final_accuracy']:.2f}% | {100 * r['best_accuracy']:.2f}% | "
                     f"{r['epochs']:.2f} | {r['train_seconds']:.1f} | {r['throughput']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    path = sys.argv[1]
    if os.path.isdir(path):
        path = os.path.join(path, "compressors.json")
    with open(path) as f:
        print(table(json.load(f)))
