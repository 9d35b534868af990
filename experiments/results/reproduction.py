"""The DGS paper reproduction table: collected from run directories, redrawn from its JSON.

  /usr/bin/python3 experiments/results/reproduction.py STUDY/reproduction.json [--plot PNG]

prints the Markdown table of experiments/RESULTS.md: final top-1 accuracy per method and worker
count (mean over seeds, with the seeds' range), the runs' mean staleness, and the paper's
figure beside each (CIFAR-10, ResNet-18, 50 epochs, from the reference implementation's
notebooks). The JSON also keeps every run's test accuracy after each epoch ("curve");
--plot draws them: one panel per worker count, one line per run, msgd alone in every panel.
"""

import argparse
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
          "best_accuracy", "mean_staleness", "diverged_at_step", "simulated_seconds",
          "real_seconds")


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
        "diverged_at_step": summary.get("diverged_at_step"),
        "simulated_seconds": summary.get("simulated_seconds"),
        "real_seconds": summary.get("real_seconds", summary.get("wall_seconds")),
        "preset": config.get("preset"),
        "lr_milestones": config.get("lr_milestones"),
        # Test accuracy after each whole epoch: [[epoch, accuracy], ...].
        "curve": [[e, a] for e, _, a in run_files.eval_curve(run_dir)
                  if e is not None and float(e).is_integer()],
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
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
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
             "mean staleness | diverged | paper % |",
             "|---|---|---|---|---|---|---|---|"]
    for (workers, method) in sorted(groups, key=lambda k: (k[0], rank.get(k[1], 99))):
        runs = groups[(workers, method)]
        finals = [100 * r["final_accuracy"] for r in runs]
        best = statistics.mean(100 * r["best_accuracy"] for r in runs)
        spread = (f"{len(runs)}: {min(finals):.2f}-{max(finals):.2f}" if len(runs) > 1
                  else "1")
        stale = statistics.mean(r["mean_staleness"] or 0.0 for r in runs)
        paper = PAPER.get(workers, {}).get(method)
        diverged = sum(r.get("diverged_at_step") is not None for r in runs)
        diverged = f"{diverged} of {len(runs)}" if diverged else "no"
        lines.append(f"| {workers} | {method} | {statistics.mean(finals):.2f} | {spread} | "
                     f"{best:.2f} | {stale:.1f} | {diverged} | "
                     f"{'' if paper is None else f'{paper:.2f}'} |")
    return "\n".join(lines)


def plot(rows, path):
    """Test accuracy per epoch, one panel per worker count; msgd alone in each panel."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    alone = [r for r in rows if r["method"] == "msgd" and r["curve"]]
    counts = sorted({r["workers"] for r in rows if r["method"] != "msgd" and r["curve"]})
    if not counts:
        raise ValueError("no run with a per-epoch curve to draw")
    fig, axes = plt.subplots(1, len(counts), figsize=(max(7.5, 5.5 * len(counts)), 4.6),
                             squeeze=False, sharey=True)
    colors = {"dgs": "tab:red", "dgc": "tab:blue", "gd": "tab:green", "asgd": "tab:purple",
              "msgd": "black"}
    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    for ax, workers in zip(axes[0], counts):
        panel = [r for r in rows if r["workers"] == workers and r["curve"]] + alone
        panel.sort(key=lambda r: (rank.get(r["method"], 99), r["seed"] or 0))
        for r in panel:
            epochs = [e for e, _ in r["curve"]]
            acc = [100 * a for _, a in r["curve"]]
            paper = PAPER.get(workers, {}).get(r["method"])
            label = "msgd alone (1 worker)" if r["method"] == "msgd" else r["method"]
            if r["seed"] and len({x["seed"] for x in panel}) > 1:
                label += f" seed {r['seed']}"
            if paper is not None:
                label += f" (paper: {paper:.2f} after 50 epochs)"
            ax.plot(epochs, acc, marker="o", markersize=3, label=label,
                    color=colors.get(r["method"]), linestyle="--" if r["method"] == "msgd" else "-")
        for i, epoch in enumerate(sorted({m for r in panel for m in r.get("lr_milestones") or []})):
            ax.axvline(epoch, color="gray", linestyle=":", linewidth=1,
                       label="rate x0.1" if i == 0 else None)
        ax.set_title(f"{workers} workers")
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    axes[0][0].set_ylabel("test top-1 accuracy (%)")
    first = rows[0]
    fig.suptitle(f"{first['model']} on {first['dataset']}, {first['clock']} time, "
                 f"preset {first.get('preset') or 'none'}\ntest accuracy of the server's "
                 "model after each epoch", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", help="a study's reproduction.json (experiments/reproduce-dgs)")
    parser.add_argument("--plot", metavar="PNG", help="draw the runs' curves into PNG")
    args = parser.parse_args()
    try:
        with open(args.study) as f:
            rows = json.load(f)["runs"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"reproduction.py: cannot read the runs of {args.study} ({e!r}); give the "
                 "reproduction.json that experiments/reproduce-dgs wrote into its --out")
    print(format_table(rows))
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
