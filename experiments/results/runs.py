"""One run directory: its summary and its evaluation curve."""

import json
import os
import subprocess

# experiments/compare: its own interpreter (Debian's, which has python3-plotly).
COMPARE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compare")


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_jsonl(path):
    """The records of a JSON-lines file; a torn last line (a run that was killed) is dropped."""
    records = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    except FileNotFoundError:
        pass
    return records


def summary_path(run_dir):
    return os.path.join(run_dir, "summary.json")


def is_finished(run_dir):
    return os.path.isfile(summary_path(run_dir))


def find_runs(sweep_dir):
    """The finished run directories directly under sweep_dir (those with a summary.json)."""
    runs = []
    for name in sorted(os.listdir(sweep_dir)):
        path = os.path.join(sweep_dir, name)
        if os.path.isdir(path) and is_finished(path):
            runs.append(path)
    return runs


def load_summaries(sweep_dir):
    """[(run_dir, summary)] for every finished run under sweep_dir; unreadable ones are reported
    in the second list as (run_dir, reason)."""
    loaded, broken = [], []
    for run_dir in find_runs(sweep_dir):
        try:
            loaded.append((run_dir, read_json(summary_path(run_dir))))
        except (OSError, json.JSONDecodeError) as e:
            broken.append((run_dir, str(e)))
    return loaded, broken


def eval_curve(run_dir):
    """The run's evaluations [(epoch, time, accuracy)], in epoch order (time is None for a
    snapshot an earlier process of a resumed run left unscored)."""
    points = []
    for r in read_jsonl(os.path.join(run_dir, "eval.jsonl")):
        if "accuracy" in r:
            points.append((r.get("epoch"), r.get("time"), r["accuracy"]))
    points.sort(key=lambda p: p[0])
    return points


def write_compare_page(run_dirs, out_dir, title, say):
    """experiments/compare for run_dirs into out_dir. A failure is said, not raised: a
    study's table stands without its page."""
    if not run_dirs:
        return
    result = subprocess.run([COMPARE, *run_dirs, f"--out={out_dir}", f"--title={title}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        say(f"no comparison page: {result.stderr.strip()}")
    else:
        say(f"comparison page: {os.path.join(out_dir, 'compare.html')}")
