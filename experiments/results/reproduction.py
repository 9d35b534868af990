"""The DGS paper reproduction table: collected from run directories, redrawn from its JSON.

  /usr/bin/python3 experiments/results/reproduction.py experiments/results/dgs-paper/reproduction.json

prints the Markdown table of experiments/RESULTS.md: final top-1 accuracy per method and worker
count (mean over seeds, with the seeds' range), the runs' mean staleness, and the paper's
figure beside each (CIFAR-10, ResNet-18, 50 epochs, from the reference implementation's
notebooks).
"""

import csv
import json
import os
import statistics
import sys

try:
    from . import runs as run_files
except ImportError:  # run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from results import runs as run_files

# Top-1 %, CIFAR-10, ResNet-18, 50 epochs, as the DGS paper's reference runs report them.
PAPER = {
    16: {"dgs": 92.98, "dgc": 92.32, "gd": 91.51, "asgd": 90.53},
    32: {"dgs": 93.74, "dgc": 92.58, "gd": 91.0, "asgd": 88.36},
}
METHOD_ORDER = ("msgd", "dgs", "dgc", "gd", "asgd")
FIELDS = ("run", "method", "workers", "seed", "model", "dataset", "clock", "epochs",
          "final_epoch", "batch_size", "momentum", "downlink", "final_accuracy",
          "best_accuracy", "mean_staleness", "simulated_seconds", "real_seconds")


def row_of(run_dir, summary, config):
    return {
        "run": os.path.basename(run_dir),
        "method": summary.get("method"),
        "workers": summary.get("workers"),
        "seed": config.get("seed"),
        "model": summary.get("model"),
        "dataset": summary.get("dataset"),
        "clock": summary.get("clock"),
        "epochs": summary.get("epochs"),
        "final_epoch": summary.get("final_epoch"),
        "batch_size": summary.get("batch_size"),
        "momentum": config.get("momentum"),
        "downlink": config.get("downlink"),
        "final_accuracy": summary.get("final_accuracy"),
        "best_accuracy": summary.get("best_accuracy"),
        "mean_staleness": summary.get("mean_staleness"),
        "simulated_seconds": summary.get("simulated_seconds"),
        "real_seconds": summary.get("real_seconds", summary.get("wall_seconds")),
    }


def collect(out, say):
    """Rows of every finished run under out, sorted by workers, method, seed."""
    if not os.path.isdir(out):
        say(f"no study directory {out}")
        return []
    loaded, broken = run_files.load_summaries(out)
    for run_dir, reason in broken:
        say(f"unreadable {run_dir}/summary.json, left out: {reason}")
    rows = []
    for run_dir, summary in loaded:
        try:
            config = run_files.read_json(os.path.join(run_dir, "config.json"))
        except (OSError, json.JSONDecodeError) as e:
            say(f"unreadable {run_dir}/config.json, left out: {e}")
            continue
        rows.append(row_of(run_dir, summary, config))
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    rows.sort(key=lambda r: (r["workers"] or 0, rank.get(r["method"], 99), r["seed"] or 0))
    return rows


def write(rows, out):
    with open(os.path.join(out, "reproduction.json"), "w") as f:
        json.dump({"paper": {str(k): v for k, v in PAPER.items()}, "runs": rows}, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "reproduction.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def format_table(rows):
    """Markdown: one line per (workers, method), seeds pooled."""
    groups = {}
    for r in rows:
        if r["final_accuracy"] is None:
            continue
        groups.setdefault((r["workers"], r["method"]), []).append(r)
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    lines = ["| workers | method | final top-1 % (mean) | seeds: range | best top-1 % | "
             "mean staleness | paper % |",
             "|---|---|---|---|---|---|---|"]
    for (workers, method) in sorted(groups, key=lambda k: (k[0], rank.get(k[1], 99))):
        runs = groups[(workers, method)]
        finals = [100 * r["final_accuracy"] for r in runs]
        best = statistics.mean(100 * r["best_accuracy"] for r in runs)
        spread = (f"{len(runs)}: {min(finals):.2f}-{max(finals):.2f}" if len(runs) > 1
                  else "1")
        stale = statistics.mean(r["mean_staleness"] or 0.0 for r in runs)
        paper = PAPER.get(workers, {}).get(method)
        lines.append(f"| {workers} | {method} | {statistics.mean(finals):.2f} | {spread} | "
                     f"{best:.2f} | {stale:.1f} | {'' if paper is None else f'{paper:.2f}'} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rows = json.load(f)["runs"]
    print(format_table(rows))


if __name__ == "__main__":
    main()
