"""The sweep table: one row per finished run, with its speedup over the msgd baseline.

Speedup (issue 7) is throughput relative to the single-worker msgd run of the same model:

    speedup(run) = throughput(run) / throughput(baseline)

where throughput is the summary's samples per second of training over all workers, and the
baseline is the run with method msgd and exactly one worker (world size = servers + 1) on the
same model, data set and per-worker batch size, over the SAME simulated bandwidth by default
(a single worker also pulls and pushes its whole model through the shaped link, so each
bandwidth gets its own baseline and the speedup shows what extra workers and compression buy
on that link). baseline_bandwidth="none" (or any other bandwidth) compares every run against
the one baseline run at that bandwidth instead.
"""

import csv
import json
import os

BASELINE_METHOD = "msgd"

COLUMNS = [
    "run", "method", "model", "dataset", "mode", "bandwidth", "bandwidth_bps", "latency_ns",
    "world_size", "servers", "workers", "batch_size", "epochs", "samples", "updates",
    "throughput", "baseline_run", "baseline_throughput", "speedup",
    "final_accuracy", "best_accuracy", "wall_seconds", "train_seconds",
    "bytes_up", "bytes_down", "bytes_up_per_sample", "bytes_down_per_sample", "mean_staleness",
]


def norm_bandwidth(text):
    return str(text).strip().lower()


def is_baseline(summary):
    return summary.get("method") == BASELINE_METHOD and summary.get("workers") == 1


def _baseline_key(summary, bandwidth):
    return (summary.get("model"), summary.get("dataset"), summary.get("batch_size"),
            norm_bandwidth(bandwidth))


def _per_sample(total, samples):
    return total / samples if samples else None


def _sort_key(row):
    bps = row.get("bandwidth_bps") or 0
    return (str(row.get("model")), str(row.get("dataset")),
            bps if bps > 0 else float("inf"), row.get("method") != BASELINE_METHOD,
            str(row.get("method")), row.get("workers") or 0, row["run"])


def build_rows(runs, baseline_bandwidth=None):
    """Rows for [(run_dir, summary)], sorted by model, bandwidth, method, workers.

    baseline_bandwidth None: each run's baseline is the msgd single-worker run at the run's own
    bandwidth; otherwise the one at that bandwidth. Returns (rows, problems): problems are
    readable sentences, one per group of runs whose baseline is missing (their speedup is None).
    """
    baselines = {}
    for run_dir, s in runs:
        if not is_baseline(s):
            continue
        key = _baseline_key(s, s.get("bandwidth"))
        best = baselines.get(key)
        # Two candidates (e.g. reruns): the one that trained on more samples measures better.
        if best is None or (s.get("samples") or 0) > (best[1].get("samples") or 0):
            baselines[key] = (run_dir, s)

    rows, missing = [], {}
    for run_dir, s in runs:
        wanted = s.get("bandwidth") if baseline_bandwidth is None else baseline_bandwidth
        key = _baseline_key(s, wanted)
        base = baselines.get(key)
        samples = s.get("samples") or 0
        row = {c: s.get(c) for c in COLUMNS}
        row["run"] = os.path.basename(os.path.normpath(run_dir))
        row["bytes_up_per_sample"] = _per_sample(s.get("bytes_up") or 0, samples)
        row["bytes_down_per_sample"] = _per_sample(s.get("bytes_down") or 0, samples)
        if base is not None and base[1].get("throughput"):
            row["baseline_run"] = os.path.basename(os.path.normpath(base[0]))
            row["baseline_throughput"] = base[1]["throughput"]
            row["speedup"] = (s.get("throughput") or 0.0) / base[1]["throughput"]
        else:
            row["baseline_run"] = row["baseline_throughput"] = row["speedup"] = None
            missing.setdefault(key, []).append(row["run"])
        rows.append(row)
    rows.sort(key=_sort_key)

    problems = []
    for (model, dataset, batch, bandwidth), names in sorted(missing.items(), key=str):
        problems.append(
            f"no baseline for model {model}, dataset {dataset}, batch size {batch}, bandwidth "
            f"{bandwidth}: speedup needs a finished {BASELINE_METHOD} run with one worker "
            f"(world size = servers + 1) there; speedup left empty for {len(names)} run(s): "
            f"{', '.join(sorted(names))}")
    return rows, problems


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in rows:
            w.writerow({c: ("" if row.get(c) is None else row.get(c)) for c in COLUMNS})


def write_json(rows, path, speedup_definition, problems=(), failed=()):
    doc = {"speedup": speedup_definition, "columns": COLUMNS, "rows": rows,
           "missing_baselines": list(problems), "failed": list(failed)}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json_table(path):
    with open(path) as f:
        return json.load(f)


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def format_table(rows):
    """A fixed-width text table of the main columns."""
    head = ["method", "bandwidth", "ws", "workers", "samples/s", "speedup", "final acc",
            "best acc", "wall s", "up B/sample", "down B/sample", "staleness"]
    body = []
    for r in rows:
        acc = lambda v: "-" if v is None else f"{100 * v:.2f}%"
        body.append([str(r["method"]), str(r["bandwidth"]), str(r["world_size"]),
                     str(r["workers"]), _fmt(r["throughput"], ".1f"), _fmt(r["speedup"], ".2f"),
                     acc(r["final_accuracy"]), acc(r["best_accuracy"]),
                     _fmt(r["wall_seconds"], ".1f"), _fmt(r["bytes_up_per_sample"], ".0f"),
                     _fmt(r["bytes_down_per_sample"], ".0f"), _fmt(r["mean_staleness"], ".2f")])
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) if i >= 2 else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])
