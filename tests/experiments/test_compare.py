#!/usr/bin/python3
"""Tests of experiments/compare: the page and PNGs for FIXTURE run directories (invented
records in the driver's format, never results), and the page loaded in a real browser
(headless Chromium): no script error, every plot drawn, a screenshot with content.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(REPO, "experiments", "compare")
CURVES = ("accuracy-epoch", "accuracy-time", "loss", "bytes", "staleness")


def write_run(run_dir, method, lr, accuracies, diverged=None):
    """A FIXTURE run: 2 workers, 10 steps of 32 samples per epoch each."""
    os.makedirs(run_dir)
    epochs = len(accuracies)
    config = {"method": method, "lr": lr, "model": "resnet20", "dataset": "cifar10",
              "clock": "real", "out": run_dir, "run_id": f"{method}-id",
              "time_model": {"step_time": "measured"}}
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(run_dir, "metrics.jsonl"), "w") as f:
        for step in range(10 * epochs):
            for worker in (0, 1):
                f.write(json.dumps({"time": 0.5 * step + 0.01 * worker, "worker": worker,
                                    "step": step + 1, "epoch": step // 10, "samples": 32,
                                    "loss": 2.3 / (1 + 0.1 * step), "bytes_up": 1000,
                                    "bytes_down": 4000, "staleness": worker}) + "\n")
    with open(os.path.join(run_dir, "eval.jsonl"), "w") as f:
        for e, acc in enumerate(accuracies, 1):
            f.write(json.dumps({"epoch": e, "time": 5.0 * e, "accuracy": acc, "loss": 1.0,
                                "version": 20 * e, "final": False}) + "\n")
        f.write(json.dumps({"epoch": epochs, "final": True, "same_as_epoch": epochs}) + "\n")
    summary = {"method": method, "model": "resnet20", "dataset": "cifar10", "workers": 2,
               "clock": "real", "bandwidth": "1gbit", "final_accuracy": accuracies[-1],
               "best_accuracy": max(accuracies), "epochs_trained": float(epochs),
               "samples": 640 * epochs, "train_seconds": 5.0 * epochs, "throughput": 128.0,
               "bytes_up": 20000 * epochs, "bytes_down": 80000 * epochs,
               "mean_staleness": 0.5, "diverged_at_step": diverged,
               "diverged_worker": None if diverged is None else 1}
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summary, f)


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="compare_test_")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.runs = [os.path.join(self.dir, "dgs-a"), os.path.join(self.dir, "asgd-b")]
        write_run(self.runs[0], "dgs", 0.1, [0.40, 0.55, 0.61])
        write_run(self.runs[1], "asgd", 0.05, [0.30, 0.35, 0.20], diverged=17)
        self.out = os.path.join(self.dir, "page")

    def compare(self, *args):
        return subprocess.run([COMPARE, *args], capture_output=True, text=True, timeout=120)

    def test_page_and_pngs_show_the_runs_and_what_differs(self):
        result = self.compare(*self.runs, f"--out={self.out}", "--title=Two runs")
        self.assertEqual(result.returncode, 0, result.stderr)
        for stem in CURVES:
            path = os.path.join(self.out, f"{stem}.png")
            self.assertTrue(os.path.getsize(path) > 5000, path)
        with open(os.path.join(self.out, "compare.html")) as f:
            page = f.read()
        # assertTrue, not assertIn: a failure must not print the 9 MB page.
        has = lambda text, where=page: self.assertTrue(text in where, f"{text!r} missing")
        lacks = lambda text, where: self.assertFalse(text in where, f"{text!r} present")
        has("<title>Two runs</title>")
        self.assertEqual(page.count('class="plotly-graph-div"'), len(CURVES))
        self.assertNotRegex(page[:5000], r"<script[^>]* src=")  # inlined: no network needed
        lacks("<script src=", page)
        # The summary table: final accuracy of each run, and the divergence named.
        has("<td>61.00</td>")
        has("<td>worker 1 step 17</td>")
        # The settings that differ, and only those (out and run_id name the run).
        settings = page[page.index("Settings that differ"):]
        has("<td>method</td>", settings)
        has("<td>lr</td>", settings)
        for same in ("<td>model</td>", "<td>out</td>", "<td>time_model.step_time</td>"):
            lacks(same, settings)
        # The final row that names its twin adds no point: 3 evaluations per run.
        acc = re.search(r'"name":"dgs-a","x":\[([^\]]*)\]', page)
        self.assertIsNotNone(acc)
        self.assertEqual(len(acc.group(1).split(",")), 3)

    def test_a_resumed_runs_untimed_rows_are_on_the_epoch_plot_only_in_epoch_order(self):
        resumed = os.path.join(self.dir, "resumed")
        write_run(resumed, "dgs", 0.1, [0.3, 0.4, 0.5])
        rows = [{"epoch": 3, "accuracy": 0.5, "loss": 1.0, "version": 60, "final": False},
                {"epoch": 1, "time": 5.0, "accuracy": 0.3, "loss": 1.0, "version": 20,
                 "final": False},
                {"epoch": 2, "time": 10.0, "accuracy": 0.4, "loss": 1.0, "version": 40,
                 "final": False}]
        with open(os.path.join(resumed, "eval.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        result = self.compare(resumed, f"--out={self.out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.out, "compare.html")) as f:
            page = f.read()
        xs = re.findall(r'"name":"resumed","x":\[([^\]]*)\]', page)
        self.assertGreaterEqual(len(xs), 2)
        self.assertEqual([float(x) for x in xs[0].split(",")], [1, 2, 3])  # accuracy-epoch
        self.assertEqual([float(x) for x in xs[1].split(",")], [5, 10])  # accuracy-time

    def test_a_directory_that_is_not_a_run_is_named(self):
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        result = self.compare(self.runs[0], empty, f"--out={self.out}")
        self.assertEqual(result.returncode, 2)
        self.assertIn(empty, result.stderr)
        self.assertIn("not a run", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.out, "compare.html")))

    @unittest.skipUnless(chromium(), "no chromium (scripts/install-deps installs it)")
    def test_the_page_loads_in_a_browser_without_errors_and_draws_every_plot(self):
        result = self.compare(*self.runs, f"--out={self.out}")
        self.assertEqual(result.returncode, 0, result.stderr)
        url = "file://" + os.path.join(self.out, "compare.html")
        browser = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                   f"--user-data-dir={os.path.join(self.dir, 'profile')}",
                   "--virtual-time-budget=15000", "--window-size=1300,2200"]
        dom = subprocess.run(browser + ["--dump-dom", url], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        # The page's own hook shows every script error and console.error in #errors.
        errors = re.search(r'<div id="errors"[^>]*>(.*?)</div>', dom.stdout, re.S)
        self.assertIsNotNone(errors, dom.stdout[:2000])
        self.assertEqual(errors.group(1).strip(), "")
        # Plotly drew each figure: an SVG root per plot, with the traces in it.
        self.assertGreaterEqual(dom.stdout.count('class="main-svg"'), len(CURVES))
        self.assertGreaterEqual(dom.stdout.count('class="trace scatter'), 2 * len(CURVES))
        shot = os.path.join(self.dir, "shot.png")
        taken = subprocess.run(browser + [f"--screenshot={shot}", url], capture_output=True,
                               text=True, timeout=120)
        self.assertEqual(taken.returncode, 0, taken.stderr[-2000:])
        from PIL import Image
        with Image.open(shot) as image:
            self.assertEqual(image.size, (1300, 2200))
            colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        # A blank or error page has a handful of colours; drawn plots have hundreds.
        self.assertTrue(colours is None or len(colours) > 200, len(colours or []))


if __name__ == "__main__":
    unittest.main()
