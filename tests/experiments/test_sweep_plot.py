#!/usr/bin/env python3
"""Tests of experiments/sweep-bandwidth and experiments/plot.

The run directories here are FIXTURES: well-formed but invented summaries, metrics and
evaluations written by the tests, never results. A fake launcher (a small script written by
the tests) stands in for experiments/run so the grid runs in milliseconds.
"""

import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(REPO, "experiments", "sweep-bandwidth")
PLOT = os.path.join(REPO, "experiments", "plot")
CROSSCHECK = os.path.join(REPO, "experiments", "crosscheck-virtual")
sys.path.insert(0, os.path.join(REPO, "experiments"))
from results import table  # noqa: E402

BPS = {"100mbit": 100e6, "1gbit": 1e9, "none": 0}


def fixture_summary(method, world_size, bandwidth, throughput, servers=1, model="resnet20",
                    dataset="synthetic", batch_size=32, samples=6400):
    workers = world_size - servers
    return {"clock": "real", "method": method, "model": model, "dataset": dataset,
            "world_size": world_size,
            "servers": servers, "workers": workers, "mode": "async", "bandwidth": bandwidth,
            "bandwidth_bps": BPS.get(bandwidth, 0), "latency_ns": 0, "batch_size": batch_size,
            "epochs": 2, "final_accuracy": 0.5 + 0.01 * workers, "best_accuracy": 0.6,
            "wall_seconds": samples / throughput + 1.0, "train_seconds": samples / throughput,
            "samples": samples, "throughput": throughput, "bytes_up": 1000 * samples,
            "bytes_down": 2000 * samples, "updates": samples // batch_size,
            "mean_staleness": float(workers - 1)}


def write_fixture_run(run_dir, summary):
    """A FIXTURE run directory in the driver's format."""
    os.makedirs(run_dir, exist_ok=True)
    config = {k: summary[k] for k in ("method", "world_size", "servers", "model", "dataset",
                                      "bandwidth", "epochs", "batch_size")}
    config["git_revision"] = "fixture"
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(run_dir, "metrics.jsonl"), "w") as f:
        for step in range(3):
            f.write(json.dumps({"time": 0.1 * step, "rank": 1, "worker": 0, "step": step,
                                "epoch": 0, "loss": 2.0 - 0.1 * step, "lr": 0.1,
                                "bytes_up": 100, "bytes_down": 200, "staleness": 0,
                                "compute_s": 0.01, "compress_s": 0.001, "comm_s": 0.002}) + "\n")
    with open(os.path.join(run_dir, "eval.jsonl"), "w") as f:
        for epoch in (1, 2):
            f.write(json.dumps({"epoch": epoch, "time": 10.0 * epoch / summary["workers"],
                                "accuracy": 0.3 * epoch, "loss": 1.0 / epoch,
                                "version": 100 * epoch}) + "\n")
        f.write('{"epoch": 3, "time": 4')  # a torn last line (killed run) is dropped
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summary, f)


FAKE_RUN = textwrap.dedent("""\
    #!/usr/bin/env python3
    # FAKE experiments/run for the tests: logs its argv, fails where told, else writes a
    # fixture summary.json into --out.
    import json, os, sys
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    with open(os.environ["FAKE_RUN_LOG"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\\n")
    os.makedirs(args["out"], exist_ok=True)
    point = f"{args['method']}-ws{args['world-size']}-{args['bandwidth']}"
    if point in os.environ.get("FAKE_RUN_FAIL", "").split(","):
        print("fake failure of", point, file=sys.stderr)
        sys.exit(3)
    ws = int(args["world-size"])
    bps = {"100mbit": 1e8, "1gbit": 1e9, "none": 0}[args["bandwidth"]]
    throughput = 100.0 * (ws - 1) * (2 if args["method"] != "msgd" else 1)
    summary = {"method": args["method"], "model": "resnet20", "dataset": "synthetic",
               "world_size": ws, "servers": 1, "workers": ws - 1, "mode": "async",
               "bandwidth": args["bandwidth"], "bandwidth_bps": bps, "latency_ns": 0,
               "batch_size": 32, "epochs": 1, "final_accuracy": 0.5, "best_accuracy": 0.5,
               "wall_seconds": 2.0, "train_seconds": 1.0, "samples": 320,
               "throughput": throughput, "bytes_up": 3200, "bytes_down": 6400,
               "updates": 10, "mean_staleness": 0.0}
    with open(os.path.join(args["out"], "summary.json"), "w") as f:
        json.dump(summary, f)
""")


def plot_python_has_matplotlib():
    with open(PLOT) as f:
        interpreter = f.readline()[2:].strip().split()
    probe = subprocess.run(interpreter + ["-c", "import matplotlib"], capture_output=True)
    return probe.returncode == 0


class SweepTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sweep_plot_test_")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.sweep = os.path.join(self.dir, "sweep")

    def run_tool(self, tool, *args, env=None, compare=False):
        """The sweep without its comparison page unless compare (experiments/compare has a
        test of its own)."""
        own = ["--no-compare"] if tool == SWEEP and not compare else []  # before any "--"
        return subprocess.run([tool, *own, *args], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, **(env or {})))

    def fixture_grid(self):
        """FIXTURE runs: msgd alone (throughput 100), and dgs/asgd at 2 and 4 workers at
        100mbit and 1gbit, and a one-worker msgd run over 1gbit (not a baseline)."""
        runs = {"msgd-alone": fixture_summary("msgd", 2, "none", 100.0),
                "msgd-ws2-1gbit": fixture_summary("msgd", 2, "1gbit", 90.0)}
        for bw, link in (("100mbit", 1.0), ("1gbit", 2.0)):
            for method, gain in (("dgs", 1.5), ("asgd", 0.75)):
                for ws in (3, 5):
                    runs[f"{method}-ws{ws}-{bw}"] = fixture_summary(
                        method, ws, bw, 100.0 * link * gain * (ws - 1))
        for name, s in runs.items():
            write_fixture_run(os.path.join(self.sweep, name), s)
        return runs

    def fake_run(self, fail=()):
        path = os.path.join(self.dir, "fake-run")
        with open(path, "w") as f:
            f.write(FAKE_RUN)
        os.chmod(path, 0o755)
        log = os.path.join(self.dir, "fake-run.log")
        env = {"FAKE_RUN_LOG": log, "FAKE_RUN_FAIL": ",".join(fail)}
        return path, log, env

    def invocations(self, log):
        if not os.path.exists(log):
            return []
        with open(log) as f:
            return [json.loads(line) for line in f]


class CollectTest(SweepTestCase):
    def test_speedup_is_over_msgd_alone(self):
        runs = self.fixture_grid()
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.sweep, "sweep.csv")) as f:
            rows = {r["run"]: r for r in csv.DictReader(f)}
        self.assertEqual(set(rows), set(runs))
        for name, s in runs.items():
            self.assertAlmostEqual(float(rows[name]["speedup"]), s["throughput"] / 100.0,
                                   msg=name)
            self.assertEqual(rows[name]["baseline_run"], "msgd-alone")
            self.assertAlmostEqual(float(rows[name]["bytes_up_per_sample"]), 1000.0)
            self.assertAlmostEqual(float(rows[name]["bytes_down_per_sample"]), 2000.0)
        self.assertAlmostEqual(float(rows["dgs-ws5-1gbit"]["speedup"]), 12.0)
        # A one-worker msgd run over a shaped link is a run like any other, not the baseline.
        self.assertAlmostEqual(float(rows["msgd-ws2-1gbit"]["speedup"]), 0.9)
        self.assertEqual(rows["asgd-ws3-100mbit"]["workers"], "2")

        with open(os.path.join(self.sweep, "sweep.json")) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["rows"]), len(runs))
        self.assertEqual(doc["missing_baselines"], [])
        self.assertIn("msgd alone", doc["speedup"])
        self.assertIn("dgs", result.stdout)
        self.assertIn("12.00", result.stdout)

    @unittest.skipUnless(plot_python_has_matplotlib(), "Debian's python3 lacks matplotlib")
    def test_a_summary_from_before_server_threads_reads_as_one_thread(self):
        runs = self.fixture_grid()
        threaded = dict(runs["dgs-ws5-1gbit"], server_threads=4)
        write_fixture_run(os.path.join(self.sweep, "dgs-threads4-ws5-1gbit"), threaded)
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.sweep, "sweep.csv")) as f:
            rows = {r["run"]: r for r in csv.DictReader(f)}
        self.assertEqual(rows["dgs-ws5-1gbit"]["server_threads"], "1")  # fixture: no such key
        self.assertEqual(rows["dgs-threads4-ws5-1gbit"]["server_threads"], "4")

    def test_the_sweep_writes_a_comparison_page_of_its_runs(self):
        runs = self.fixture_grid()
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only", compare=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        page = os.path.join(self.sweep, "compare", "compare.html")
        self.assertTrue(os.path.isfile(page), result.stdout + result.stderr)
        with open(page) as f:
            text = f.read()
        for name in runs:
            self.assertIn(name, text)

    def test_diverged_runs_are_marked(self):
        runs = self.fixture_grid()
        diverged = dict(runs["asgd-ws5-1gbit"], diverged_at_step=27, diverged_worker=3)
        write_fixture_run(os.path.join(self.sweep, "asgd-ws5-1gbit"), diverged)
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.sweep, "sweep.csv")) as f:
            rows = {r["run"]: r for r in csv.DictReader(f)}
        self.assertEqual(rows["asgd-ws5-1gbit"]["diverged_at_step"], "27")
        self.assertEqual(rows["dgs-ws5-1gbit"]["diverged_at_step"], "")
        marked = [line for line in result.stdout.splitlines() if "worker 3 step 27" in line]
        self.assertEqual(len(marked), 1, result.stdout)
        self.assertTrue(marked[0].startswith("asgd"), marked[0])

    def test_steady_state_and_closed_form(self):
        # msgd alone: one worker, a step of 64 samples every 0.125 s: 512 samples/s.
        base = fixture_summary("msgd", 2, "none", 600.0, batch_size=64)
        write_fixture_run(os.path.join(self.sweep, "msgd-alone"), base)
        with open(os.path.join(self.sweep, "msgd-alone", "metrics.jsonl"), "w") as f:
            for step in range(1, 21):
                f.write(json.dumps({"time": 0.125 * step, "worker": 0, "samples": 64}) + "\n")
        # Two workers over 100 Mbit/s; worker 1 starts late (its initial model came second).
        run = fixture_summary("asgd", 3, "100mbit", 500.0, batch_size=64, samples=64 * 30)
        run.update({"updates": 30, "bytes_up": 30 * 250000, "bytes_down": 30 * 250000,
                    "mean_compute_s": 0.1, "mean_compress_s": 0.01, "latency_ns": 5000000})
        run_dir = os.path.join(self.sweep, "asgd-ws3-100mbit")
        write_fixture_run(run_dir, run)
        with open(os.path.join(run_dir, "metrics.jsonl"), "w") as f:
            for step in range(1, 21):
                f.write(json.dumps({"time": 0.25 * step, "worker": 0, "samples": 64}) + "\n")
            for step in range(1, 11):
                f.write(json.dumps({"time": 1.0 + 0.25 * step, "worker": 1, "samples": 64}) + "\n")
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = {r["run"]: r for r in
                table.read_json_table(os.path.join(self.sweep, "sweep.json"))["rows"]}
        # Baseline window (0.125, 2.5]: 19 steps of 64 in 2.375 s.
        self.assertAlmostEqual(rows["msgd-alone"]["steady_throughput"], 512.0)
        # Window from worker 1's first step (1.25 s) to worker 1's last (3.5 s): worker 0's
        # steps 6..14 and worker 1's steps 2..10, 18 steps of 64 in 2.25 s.
        r = rows["asgd-ws3-100mbit"]
        self.assertAlmostEqual(r["steady_throughput"], 512.0)
        self.assertAlmostEqual(r["speedup"], 1.0)
        # Closed form: 0.1 + 0.01 + 500 kB * 8 / 100 Mbit/s + 2 * 5 ms = 0.16 s per step,
        # two workers: 2 * 64 / 0.16 = 800 samples/s, 1.5625 x msgd alone.
        self.assertAlmostEqual(r["speedup_closed_form"], 1.5625)

    def test_a_baseline_serves_runs_of_its_clock_and_step_time_only(self):
        base = fixture_summary("msgd", 2, "none", 100.0)
        base.update({"clock": "virtual", "time_model": {
            "step": "fixed", "step_seconds": 0.01, "codec": "fixed", "codec_seconds_per_push": 0}})
        write_fixture_run(os.path.join(self.sweep, "msgd-alone"), base)
        for name, step in (("dgs-ws3-1gbit", 0.01), ("dgs-ws5-1gbit", 0.03)):
            s = fixture_summary("dgs", 3, "1gbit", 150.0)
            s.update({"clock": "virtual", "time_model": {"step": "fixed", "step_seconds": step,
                                                         "codec": "measured"}})
            write_fixture_run(os.path.join(self.sweep, name), s)
        write_fixture_run(os.path.join(self.sweep, "asgd-ws3-1gbit"),
                          fixture_summary("asgd", 3, "1gbit", 150.0))  # real clock
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = {r["run"]: r for r in
                table.read_json_table(os.path.join(self.sweep, "sweep.json"))["rows"]}
        self.assertAlmostEqual(rows["dgs-ws3-1gbit"]["speedup"], 1.5)
        self.assertIsNone(rows["dgs-ws5-1gbit"]["speedup"])
        self.assertIsNone(rows["asgd-ws3-1gbit"]["speedup"])
        self.assertIn("step time 30ms", result.stderr)
        self.assertIn("real-clock runs", result.stderr)

    def test_missing_baseline_leaves_speedup_empty_with_message(self):
        self.fixture_grid()
        shutil.rmtree(os.path.join(self.sweep, "msgd-alone"))
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no baseline", result.stderr)
        self.assertIn("msgd-alone run", result.stderr)
        with open(os.path.join(self.sweep, "sweep.csv")) as f:
            rows = {r["run"]: r for r in csv.DictReader(f)}
        self.assertEqual(rows["dgs-ws3-100mbit"]["speedup"], "")
        doc = table.read_json_table(os.path.join(self.sweep, "sweep.json"))
        self.assertEqual(len(doc["missing_baselines"]), 1)

    def test_planned_and_trained_epochs(self):
        self.fixture_grid()
        # A step-capped run: 1000 epochs planned, a quarter of one trained.
        capped = fixture_summary("dgs", 3, "1gbit", 150.0)
        capped.update({"epochs": 1000, "max_steps": 30, "epochs_trained": 0.25})
        write_fixture_run(os.path.join(self.sweep, "dgs-ws3-1gbit"), capped)
        # A run to the end of its epochs, without a cap.
        full = fixture_summary("asgd", 3, "1gbit", 150.0)
        full.update({"max_steps": 0, "epochs_trained": 2.0})
        write_fixture_run(os.path.join(self.sweep, "asgd-ws3-1gbit"), full)
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.sweep, "sweep.csv")) as f:
            rows = {r["run"]: r for r in csv.DictReader(f)}
        self.assertEqual((rows["dgs-ws3-1gbit"]["epochs"], rows["dgs-ws3-1gbit"]["max_steps"],
                          rows["dgs-ws3-1gbit"]["epochs_trained"]), ("1000", "30", "0.25"))
        self.assertEqual((rows["asgd-ws3-1gbit"]["epochs"], rows["asgd-ws3-1gbit"]["max_steps"],
                          rows["asgd-ws3-1gbit"]["epochs_trained"]), ("2", "0", "2.0"))
        # A summary from before these fields: the planned epochs only, nothing made up.
        self.assertEqual((rows["dgs-ws5-1gbit"]["epochs"], rows["dgs-ws5-1gbit"]["max_steps"],
                          rows["dgs-ws5-1gbit"]["epochs_trained"]), ("2", "", ""))
        doc = table.read_json_table(os.path.join(self.sweep, "sweep.json"))
        self.assertIn("epochs_trained", doc["columns"])
        json_rows = {r["run"]: r for r in doc["rows"]}
        self.assertEqual(json_rows["dgs-ws3-1gbit"]["epochs_trained"], 0.25)
        self.assertIsNone(json_rows["dgs-ws5-1gbit"]["epochs_trained"])

    def test_empty_or_missing_dir_is_a_clear_error(self):
        os.makedirs(self.sweep)
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no finished run", result.stderr)
        result = self.run_tool(SWEEP, f"--out={self.sweep}/nope", "--collect-only")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no sweep directory", result.stderr)


class RepetitionTest(unittest.TestCase):
    @staticmethod
    def row(method, workers, bandwidth, speedup, model="resnet20", server_threads=1):
        return {"method": method, "workers": workers, "bandwidth": bandwidth, "model": model,
                "dataset": "synthetic", "server_threads": server_threads, "speedup": speedup}

    def test_runs_with_other_server_threads_are_other_points(self):
        rows = [self.row("dgs", 64, "1gbit", 40.0), self.row("dgs", 64, "1gbit", 42.0),
                self.row("dgs", 64, "1gbit", 60.0, server_threads=4)]
        points = {p["server_threads"]: p for p in table.over_repetitions(rows, "speedup")}
        self.assertEqual(points[1]["runs"], 2)
        self.assertAlmostEqual(points[1]["mean"], 41.0)
        self.assertEqual((points[4]["runs"], points[4]["mean"]), (1, 60.0))


    def test_mean_min_max_of_repeated_runs(self):
        rows = [self.row("dgs", 4, "1gbit", 3.0), self.row("dgs", 4, "1gbit", 3.6),
                self.row("dgs", 4, "1gbit", 2.1),
                self.row("dgs", 4, "1gbit", None),  # no baseline: not a repetition
                self.row("dgs", 2, "1gbit", 1.8),
                self.row("dgs", 4, "10gbit", 3.9),  # another bandwidth: another point
                self.row("dgs", 4, "1gbit", 7.0, model="resnet50"),  # another model
                self.row("asgd", 4, "1gbit", 1.2), self.row("asgd", 4, "1gbit", 1.4)]
        points = {(p["method"], p["workers"], p["bandwidth"], p["model"]): p
                  for p in table.over_repetitions(rows, "speedup")}
        self.assertEqual(len(points), 5)
        dgs = points[("dgs", 4, "1gbit", "resnet20")]
        self.assertEqual(dgs["runs"], 3)
        self.assertAlmostEqual(dgs["mean"], (3.0 + 3.6 + 2.1) / 3)  # 2.9
        self.assertEqual((dgs["min"], dgs["max"]), (2.1, 3.6))
        asgd = points[("asgd", 4, "1gbit", "resnet20")]
        self.assertEqual(asgd["runs"], 2)
        self.assertAlmostEqual(asgd["mean"], 1.3)
        self.assertEqual((asgd["min"], asgd["max"]), (1.2, 1.4))
        # A single run is its own mean, min and max.
        for key, value in ((("dgs", 2, "1gbit", "resnet20"), 1.8),
                           (("dgs", 4, "10gbit", "resnet20"), 3.9),
                           (("dgs", 4, "1gbit", "resnet50"), 7.0)):
            self.assertEqual(points[key]["runs"], 1)
            self.assertEqual((points[key]["mean"], points[key]["min"], points[key]["max"]),
                             (value, value, value))
        self.assertEqual([p["workers"] for p in table.over_repetitions(rows, "speedup")],
                         [2, 4, 4, 4, 4])
        self.assertEqual(table.over_repetitions([self.row("dgs", 2, "1gbit", None)], "speedup"),
                         [])


class GridTest(SweepTestCase):
    def test_crosscheck_runs_the_kinds_asked_for_and_refuses_others(self):
        result = self.run_tool(CROSSCHECK, f"--out={self.sweep}", "--kinds=bogus")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--kinds: unknown bogus; known: link-bound, server-bound", result.stderr)
        result = self.run_tool(CROSSCHECK, f"--out={self.sweep}", "--dry-run",
                               "--kinds=server-bound", "--run-command=launch")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [shlex.split(line) for line in result.stdout.strip().splitlines()]
        # A real and a virtual run at 4 and at 8 workers, ten times --steps each.
        self.assertEqual(len(lines), 4)
        for line in lines:
            self.assertEqual(line[0], "launch")
            self.assertIn("--model=mlp", line)
            self.assertIn("--max-steps=300", line)
        clocks = sorted(next(f for f in line if f.startswith("--clock=")) for line in lines)
        self.assertEqual(clocks, ["--clock=real"] * 2 + ["--clock=virtual"] * 2)

    def test_crosscheck_netns_adds_the_third_clock_and_its_ratios(self):
        result = self.run_tool(CROSSCHECK, f"--out={self.sweep}", "--dry-run", "--netns",
                               "--kinds=link-bound", "--run-command=launch")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [shlex.split(line) for line in result.stdout.strip().splitlines()]
        netns = [line for line in lines if "--net=netns" in line]
        # 5 cases at 2 and 4 workers, each on netns hosts, on loopback and in virtual time.
        self.assertEqual((len(lines), len(netns)), (30, 10))
        self.assertTrue(all("--clock=real" in line for line in netns))
        # A finished case in its three clocks: 4 workers' steps 0.1 s apart on netns hosts,
        # 0.08 s on loopback, 0.125 s in virtual time.
        name = "asgd-w4-10mbit"
        for clock, gap in (("netns", 0.1), ("real", 0.08), ("virtual", 0.125)):
            run = os.path.join(self.sweep, f"{name}-{clock}")
            write_fixture_run(run, fixture_summary("asgd", 5, "10mbit", 100.0))
            with open(os.path.join(run, "metrics.jsonl"), "w") as f:
                for step in range(1, 6):
                    for worker in range(4):
                        f.write(json.dumps({"time": gap * step, "worker": worker, "step": step,
                                            "samples": 32}) + "\n")
        result = self.run_tool(CROSSCHECK, f"--out={self.sweep}", "--collect-only", "--netns",
                               "--kinds=link-bound")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.sweep, "crosscheck.json")) as f:
            (case,) = json.load(f)["cases"]
        self.assertAlmostEqual(case["netns_samples_per_s"], 4 * 32 / 0.1)
        self.assertAlmostEqual(case["real_to_netns"], 0.1 / 0.08)
        self.assertAlmostEqual(case["virtual_to_netns"], 0.1 / 0.125)
        self.assertIn("| link-bound | asgd | 4 | 10mbit | 1280.0 | 1.250 | 0.800 |", result.stdout)

    def test_dry_run_prints_grid_with_baselines(self):
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--dry-run",
                               "--methods=dgs,asgd", "--bandwidths=100mbit,1gbit",
                               "--world-sizes=2,3", "--run-command=launch --x",
                               "--epochs=3", "--latency=1ms", "--", "--max-steps=7")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.strip().splitlines()
        # msgd alone first: unlimited links, no latency, the rest of the flags as the grid's.
        self.assertEqual(shlex.split(lines[0]), [
            "launch", "--x", "--method=msgd", "--world-size=2", "--bandwidth=none",
            "--latency=0", f"--out={os.path.join(self.sweep, 'msgd-alone')}", "--epochs=3",
            "--max-steps=7", "--ignore-unread-options"])
        expected = [(m, ws, bw) for bw in ("100mbit", "1gbit") for m in ("dgs", "asgd")
                    for ws in (2, 3)]
        self.assertEqual(len(lines), 1 + len(expected))
        for line, (m, ws, bw) in zip(lines[1:], expected):
            self.assertEqual(shlex.split(line), [
                "launch", "--x", f"--method={m}", f"--world-size={ws}", f"--bandwidth={bw}",
                f"--out={os.path.join(self.sweep, f'{m}-ws{ws}-{bw}')}",
                "--epochs=3", "--latency=1ms", "--max-steps=7", "--ignore-unread-options"])
        self.assertFalse(os.path.exists(self.sweep), "--dry-run created the sweep directory")

    def test_virtual_baseline_codes_for_free_and_has_no_stragglers(self):
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--dry-run", "--methods=dgs",
                               "--bandwidths=1gbit", "--world-sizes=3", "--clock=virtual",
                               "--step-time=10ms", "--stragglers=1x2", "--codec-scale=0.5")
        self.assertEqual(result.returncode, 0, result.stderr)
        base, point = [shlex.split(l) for l in result.stdout.strip().splitlines()]
        self.assertIn("--codec-time=0", base)
        self.assertIn("--step-time=10ms", base)
        self.assertNotIn("--stragglers=1x2", base)
        self.assertNotIn("--codec-scale=0.5", base)
        self.assertIn("--stragglers=1x2", point)

    def test_baseline_world_size_follows_servers_and_is_not_duplicated(self):
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--dry-run", "--methods=msgd",
                               "--bandwidths=1gbit", "--world-sizes=3,4", "--servers=2")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = [shlex.split(l) for l in result.stdout.strip().splitlines()]
        self.assertEqual([[a for a in l if a.startswith("--out=")][0].rsplit("/", 1)[1]
                          for l in lines], ["msgd-alone", "msgd-ws3-1gbit", "msgd-ws4-1gbit"])
        self.assertIn("--world-size=3", lines[0])

    def test_flags_set_per_point_are_refused(self):
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--dry-run", "--", "--method=x")
        self.assertEqual(result.returncode, 2)
        self.assertIn("is set per point", result.stderr)
        result = self.run_tool(SWEEP, f"--out={self.sweep}", "--dry-run", "--world-sizes=1")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no worker", result.stderr)

    def test_runs_grid_reports_failure_goes_on_and_resumes(self):
        fake, log, env = self.fake_run(fail=["dgs-ws3-1gbit"])
        args = [f"--out={self.sweep}", f"--run-command={fake}", "--methods=dgs,asgd",
                "--bandwidths=100mbit,1gbit", "--world-sizes=2,3", "--epochs=1", "--jobs=3"]
        result = self.run_tool(SWEEP, *args, env=env)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("dgs-ws3-1gbit: FAILED (exit code 3)", result.stderr)
        self.assertIn("fake failure of dgs-ws3-1gbit", result.stderr)
        calls = self.invocations(log)
        self.assertEqual(len(calls), 9)  # msgd alone + 2 methods x 2 bandwidths x 2 sizes
        self.assertTrue(all("--epochs=1" in c for c in calls))

        doc = table.read_json_table(os.path.join(self.sweep, "sweep.json"))
        rows = {r["run"]: r for r in doc["rows"]}
        self.assertEqual(len(rows), 8)
        self.assertNotIn("dgs-ws3-1gbit", rows)
        self.assertEqual(doc["failed"], [{"run": "dgs-ws3-1gbit", "reason": "exit code 3"}])
        # fake throughput: 100 * workers * (2 unless msgd); msgd alone 100 -> 2 * workers
        self.assertAlmostEqual(rows["asgd-ws3-100mbit"]["speedup"], 4.0)
        self.assertAlmostEqual(rows["msgd-alone"]["speedup"], 1.0)

        # Resume: only the failed point runs again; its leftover directory is moved aside.
        os.remove(log)
        env["FAKE_RUN_FAIL"] = ""
        result = self.run_tool(SWEEP, *args, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        calls = self.invocations(log)
        self.assertEqual(len(calls), 1)
        self.assertIn("--method=dgs", calls[0])
        self.assertIn("--world-size=3", calls[0])
        self.assertIn("--bandwidth=1gbit", calls[0])
        self.assertEqual(result.stderr.count("summary.json exists, skipped"), 8)
        self.assertTrue(any(n.startswith("dgs-ws3-1gbit.incomplete-")
                            for n in os.listdir(self.sweep)))
        doc = table.read_json_table(os.path.join(self.sweep, "sweep.json"))
        self.assertEqual(len(doc["rows"]), 9)
        self.assertEqual(doc["failed"], [])

    def test_existing_summary_skipped(self):
        self.fixture_grid()  # has dgs-ws3-1gbit, msgd-alone, ...
        fake, log, env = self.fake_run()
        result = self.run_tool(SWEEP, f"--out={self.sweep}", f"--run-command={fake}",
                               "--methods=dgs", "--bandwidths=1gbit", "--world-sizes=2,3",
                               env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        calls = self.invocations(log)
        self.assertEqual([c[:3] for c in calls],
                         [["--method=dgs", "--world-size=2", "--bandwidth=1gbit"]])

    def test_timeout_counts_as_failure(self):
        slow = os.path.join(self.dir, "slow-run")
        with open(slow, "w") as f:
            f.write("#!/bin/sh\nsleep 30\n")
        os.chmod(slow, 0o755)
        result = self.run_tool(SWEEP, f"--out={self.sweep}", f"--run-command={slow}",
                               "--methods=dgs", "--bandwidths=1gbit", "--world-sizes=2",
                               "--point-timeout=0.5")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.count("FAILED (stopped after --point-timeout=0.5 s)"), 2)


@unittest.skipUnless(plot_python_has_matplotlib(),
                     "the interpreter of experiments/plot has no matplotlib "
                     "(apt-get install python3-matplotlib)")
class PlotTest(SweepTestCase):
    def assert_png(self, path):
        self.assertTrue(os.path.isfile(path), path)
        with open(path, "rb") as f:
            head = f.read(8)
        self.assertEqual(head, b"\x89PNG\r\n\x1a\n", path)
        self.assertGreater(os.path.getsize(path), 1000, path)

    def test_writes_speedup_and_accuracy_pngs(self):
        self.fixture_grid()
        out = os.path.join(self.dir, "figures")
        result = self.run_tool(PLOT, self.sweep, f"--out={out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        paths = result.stdout.split()
        self.assertEqual(sorted(os.path.basename(p) for p in paths),
                         ["accuracy.png", "speedup.png"])
        for path in paths:
            self.assert_png(path)

        # From the collected table, into the sweep directory by default.
        self.assertEqual(self.run_tool(SWEEP, f"--out={self.sweep}", "--collect-only")
                         .returncode, 0)
        result = self.run_tool(PLOT, self.sweep)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_png(os.path.join(self.sweep, "speedup.png"))

    def test_repeated_runs_and_accuracy_without_evaluations(self):
        runs = self.fixture_grid()
        # A second seed of a grid point, and a run whose evaluations never came.
        seed2 = dict(runs["dgs-ws3-1gbit"], throughput=runs["dgs-ws3-1gbit"]["throughput"] / 2)
        write_fixture_run(os.path.join(self.sweep, "dgs-ws3-1gbit-seed2"), seed2)
        os.remove(os.path.join(self.sweep, "asgd-ws5-1gbit", "eval.jsonl"))
        out = os.path.join(self.dir, "figures")
        result = self.run_tool(PLOT, self.sweep, f"--out={out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in ("speedup.png", "accuracy.png"):
            self.assert_png(os.path.join(out, name))

    def test_empty_and_missing_dir_errors(self):
        os.makedirs(self.sweep)
        result = self.run_tool(PLOT, self.sweep)
        self.assertEqual(result.returncode, 2)
        self.assertIn("nothing to plot", result.stderr)
        result = self.run_tool(PLOT, os.path.join(self.dir, "nope"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("no such directory", result.stderr)


if __name__ == "__main__":
    unittest.main()
