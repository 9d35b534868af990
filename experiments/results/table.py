"""The sweep table: one row per finished run, with its speedup over msgd alone.

Speedup, as the literature defines it:

    speedup(run) = throughput(run) / throughput(msgd alone)

throughput: samples per second (simulated seconds in a virtual-time run) of all workers in
the run's steady state: from the moment every worker has finished a step to the moment the
first worker is done (metrics.jsonl), so that sending N initial models through one link, or
the last workers' tail, does not count; runs whose records have no such window fall back to
the summary's throughput over the whole run.

msgd alone: single-node momentum SGD on one worker with no communication and no parameter
server cost: the sweep's baseline run, method msgd, one worker, unlimited links, and in
virtual time free method and wire coding (--codec-time=0), with the same model, data set,
batch size and step-time model (--step-time, --step-jitter) as the runs it is compared
with. A real run cannot drop the loopback round trip to its server, so a real baseline
still pays it.

closed form: the analytic model of the DGS paper's speedup figure, from the same run's
per-step averages and no queueing: a worker's iteration takes
t_iter = compute + coding + (bytes up + bytes down) * 8 / bandwidth + 2 * latency, so
speedup_closed = workers * batch / t_iter / throughput(msgd alone). It ignores that all
uploads share the server's NIC (and all replies its other direction), the server's service
time and staleness; where the event-driven simulation parts from it, those are why.

epochs is the planned --epochs; a run capped by --max-steps (max_steps, 0 = no cap) can stop
long before: epochs_trained is the epochs of data the servers really applied. Both come from
summary.json, and runs whose summary predates them leave them empty.

Repetitions: runs of the same model, data set, bandwidth, method and worker count (other
seeds, reruns) are one point of a figure; over_repetitions gives their mean, min and max.
"""

import csv
import json
import os

from results import runs as run_files

BASELINE_METHOD = "msgd"

COLUMNS = [
    "run", "clock", "method", "model", "dataset", "mode", "bandwidth", "bandwidth_bps",
    "latency_ns", "step_time", "world_size", "servers", "server_threads", "workers",
    "batch_size", "epochs", "max_steps", "epochs_trained", "samples", "updates",
    "throughput", "steady_throughput", "baseline_run", "baseline_throughput", "speedup",
    "speedup_closed_form", "final_accuracy", "best_accuracy", "wall_seconds",
    "train_seconds", "bytes_up", "bytes_down", "bytes_up_per_sample",
    "bytes_down_per_sample", "mean_staleness", "diverged_at_step", "diverged_worker",
]


def norm_bandwidth(text):
    return str(text).strip().lower()


def step_model(summary):
    """What the step time of a run was: "measured" or its fixed time and jitter."""
    tm = summary.get("time_model") or {}
    if summary.get("clock") != "virtual" or tm.get("step") != "fixed":
        return "measured"
    jitter = tm.get("step_jitter_cv") or 0
    return f"{tm['step_seconds'] * 1e3:g}ms" + (f" jitter {jitter:g}" if jitter else "")


def is_baseline(summary):
    """msgd alone: one msgd worker, unlimited links, and in virtual time free coding."""
    if summary.get("method") != BASELINE_METHOD or summary.get("workers") != 1:
        return False
    if (summary.get("bandwidth_bps") or 0) > 0 or (summary.get("latency_ns") or 0) > 0:
        return False
    if summary.get("clock") == "virtual":
        tm = summary.get("time_model") or {}
        return tm.get("codec") == "fixed" and (tm.get("codec_seconds_per_push") or 0) == 0
    return True


def _baseline_key(summary):
    return (summary.get("clock", "real"), summary.get("model"), summary.get("dataset"),
            summary.get("batch_size"), step_model(summary))


def steady_throughput(run_dir):
    """Samples per second of all workers from the moment every worker finished a step to the
    moment the first one is done; None when the records have no such window."""
    records = [r for r in run_files.read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
               if "time" in r and "samples" in r and "worker" in r]
    if not records:
        return None
    first, last = {}, {}
    for r in records:
        w = r["worker"]
        first[w] = min(first.get(w, r["time"]), r["time"])
        last[w] = max(last.get(w, r["time"]), r["time"])
    start, end = max(first.values()), min(last.values())
    inside = [r for r in records if start < r["time"] <= end]
    # At least two steps of every worker, or the window says little.
    if end <= start or len(inside) < 2 * len(first):
        return None
    return sum(r["samples"] for r in inside) / (end - start)


def closed_form_throughput(summary):
    """workers * batch / (compute + coding + bytes / bandwidth + 2 latency) per step."""
    steps = summary.get("updates") or 0
    if not steps or "mean_compute_s" not in summary:
        return None
    bits = 8.0 * ((summary.get("bytes_up") or 0) + (summary.get("bytes_down") or 0)) / steps
    bps = summary.get("bandwidth_bps") or 0
    t_iter = (summary["mean_compute_s"] + summary.get("mean_compress_s", 0.0) +
              (bits / bps if bps > 0 else 0.0) + 2e-9 * (summary.get("latency_ns") or 0))
    if t_iter <= 0:
        return None
    return summary.get("workers", 0) * summary.get("batch_size", 0) / t_iter


def _per_sample(total, samples):
    return total / samples if samples else None


def server_threads(record):
    """A run's server threads per shard, from its summary or its row (runs from before the
    option: 1)."""
    return record.get("server_threads") or 1


def _sort_key(row):
    bps = row.get("bandwidth_bps") or 0
    return (str(row.get("clock")), str(row.get("model")), str(row.get("dataset")),
            bps if bps > 0 else float("inf"), row.get("method") != BASELINE_METHOD,
            str(row.get("method")), server_threads(row), row.get("workers") or 0,
            row["run"])


def build_rows(runs):
    """Rows for [(run_dir, summary)], sorted by clock, model, bandwidth, method, workers.

    Returns (rows, problems): problems are readable sentences, one per group of runs whose
    baseline (msgd alone) is missing (their speedup is None)."""
    baselines = {}
    for run_dir, s in runs:
        if not is_baseline(s):
            continue
        key = _baseline_key(s)
        best = baselines.get(key)
        # Two candidates (e.g. reruns): the one that trained on more samples measures better.
        if best is None or (s.get("samples") or 0) > (best[1].get("samples") or 0):
            baselines[key] = (run_dir, s)

    rows, missing = [], {}
    for run_dir, s in runs:
        key = _baseline_key(s)
        base = baselines.get(key)
        samples = s.get("samples") or 0
        row = {c: s.get(c) for c in COLUMNS}
        row["clock"] = s.get("clock", "real")
        row["step_time"] = step_model(s)
        row["server_threads"] = server_threads(s)
        row["run"] = os.path.basename(os.path.normpath(run_dir))
        row["steady_throughput"] = steady_throughput(run_dir)
        rate = row["steady_throughput"] or s.get("throughput") or 0.0
        row["bytes_up_per_sample"] = _per_sample(s.get("bytes_up") or 0, samples)
        row["bytes_down_per_sample"] = _per_sample(s.get("bytes_down") or 0, samples)
        base_rate = None
        if base is not None:
            base_rate = steady_throughput(base[0]) or base[1].get("throughput")
        if base_rate:
            row["baseline_run"] = os.path.basename(os.path.normpath(base[0]))
            row["baseline_throughput"] = base_rate
            row["speedup"] = rate / base_rate
            closed = closed_form_throughput(s)
            row["speedup_closed_form"] = closed / base_rate if closed else None
        else:
            row["baseline_run"] = row["baseline_throughput"] = row["speedup"] = None
            row["speedup_closed_form"] = None
            missing.setdefault(key, []).append(row["run"])
        rows.append(row)
    rows.sort(key=_sort_key)

    problems = []
    for (clock, model, dataset, batch, step), names in sorted(missing.items(), key=str):
        problems.append(
            f"no baseline for the {clock}-clock runs of model {model}, dataset {dataset}, batch "
            f"size {batch}, step time {step}: speedup needs a finished msgd-alone run there "
            f"({BASELINE_METHOD}, one worker, --bandwidth=none"
            f"{', --codec-time=0' if clock == 'virtual' else ''}); speedup left empty for "
            f"{len(names)} run(s): {', '.join(sorted(names))}")
    return rows, problems


REPETITION_KEY = ("model", "dataset", "bandwidth", "method", "server_threads", "workers")


def over_repetitions(rows, column):
    """The repetitions of each point merged: one dict per REPETITION_KEY value among the rows
    that have `column`, with that key, "runs" (how many rows) and the "mean", "min" and "max"
    of `column`; sorted by worker count."""
    groups = {}
    for r in rows:
        if r.get(column) is not None:
            groups.setdefault(tuple(r.get(k) for k in REPETITION_KEY), []).append(r[column])
    points = []
    for key, values in groups.items():
        point = dict(zip(REPETITION_KEY, key))
        point.update(runs=len(values), mean=sum(values) / len(values), min=min(values),
                     max=max(values))
        points.append(point)
    return sorted(points, key=lambda p: (p["workers"] or 0, str(p["method"])))


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for row in rows:
            w.writerow({c: ("" if row.get(c) is None else row.get(c)) for c in COLUMNS})


SPEEDUP_DEFINITION = (
    "samples/s of the run's steady state (every worker under way) / samples/s of msgd "
    "alone (one worker, no communication, no server cost) on the same model, data set, "
    "batch size and step-time model")


def write_json(rows, path, problems=(), failed=()):
    doc = {"speedup": SPEEDUP_DEFINITION, "columns": COLUMNS, "rows": rows,
           "missing_baselines": list(problems), "failed": list(failed)}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_json_table(path):
    with open(path) as f:
        return json.load(f)


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def diverged(row):
    """'-', or where the run's loss diverged: 'worker 1 step 27'."""
    if row.get("diverged_at_step") is None:
        return "-"
    return f"worker {row.get('diverged_worker')} step {row['diverged_at_step']}"


def format_table(rows):
    """A fixed-width text table of the main columns (the server threads where any run had
    more than one)."""
    threads = any(server_threads(r) > 1 for r in rows)
    head = ["method", "bandwidth", "ws", "workers", "samples/s", "speedup", "closed form",
            "final acc", "best acc", "up B/sample", "down B/sample", "staleness", "diverged"]
    body = []
    for r in rows:
        acc = lambda v: "-" if v is None else f"{100 * v:.2f}%"
        rate = r.get("steady_throughput") or r.get("throughput")
        body.append([str(r["method"]), str(r["bandwidth"]), str(r["world_size"]),
                     str(r["workers"]), _fmt(rate, ".1f"), _fmt(r["speedup"], ".2f"),
                     _fmt(r.get("speedup_closed_form"), ".2f"),
                     acc(r["final_accuracy"]), acc(r["best_accuracy"]),
                     _fmt(r["bytes_up_per_sample"], ".0f"),
                     _fmt(r["bytes_down_per_sample"], ".0f"), _fmt(r["mean_staleness"], ".2f"),
                     diverged(r)])
        if threads:
            body[-1].insert(4, str(server_threads(r)))
    if threads:
        head.insert(4, "server threads")
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) if i >= 2 else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])
