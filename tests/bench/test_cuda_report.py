#!/usr/bin/env python3
"""Tests of bench/cuda/report.py, the GPU check's table.

The benchmark reports here are FIXTURES: invented times in Google Benchmark's JSON layout,
written by the tests, never results.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(REPO, "bench", "cuda", "report.py")
N = 25557032


def entry(name, time, unit="us", **counters):
    return dict(name=f"{name}/manual_time", real_time=time, time_unit=unit,
                items_per_second=1e9, **counters)


class ReportTest(unittest.TestCase):
    def run_report(self, benchmarks, torch_cases=None):
        with tempfile.TemporaryDirectory() as tmp:
            bench = os.path.join(tmp, "bench.json")
            with open(bench, "w") as f:
                json.dump({"benchmarks": benchmarks}, f)
            args = [sys.executable, REPORT, bench, "--device", "a test GPU"]
            if torch_cases is not None:
                torch_json = os.path.join(tmp, "torch.json")
                with open(torch_json, "w") as f:
                    json.dump({"device": "a test GPU", "torch": "9.9", "cases": torch_cases}, f)
                args += ["--torch", torch_json]
            done = subprocess.run(args, capture_output=True, text=True)
            return done.returncode, done.stdout

    def test_ratios_to_the_read_pass_and_torch_and_the_goals(self):
        rc, out = self.run_report(
            [entry(f"BM_ReadPass/{N}", 0.1, unit="ms", n=N),  # 100 us, given in ms
             entry(f"BM_TopkRadix/{N}/100", 300.0, n=N, k=255570),
             entry(f"BM_TopkRadix/{N}/1000", 400.0, n=N, k=25557),
             entry(f"BM_Pack/{N}/100", 50000.0, unit="ns", n=N, k=255570)],
            torch_cases=[{"n": N, "k": 255570, "torch_topk_us": 3000.0},
                         {"n": N, "k": 25557, "torch_topk_us": 2000.0}])
        self.assertEqual(rc, 0, out)
        self.assertIn("Device: a test GPU; torch 9.9", out)
        self.assertIn("| top-k exact (radix select) | 25,557,032 | 0.01 | 255,570 | 300.0 | 1e+09 "
                      "| 3.00 | 3000.0 | 10.0x |", out)
        self.assertIn("| pack k index/value pairs | 25,557,032 | 0.01 | 255,570 | 50.0 | 1e+09 "
                      "| 0.50 | - | - |", out)
        self.assertIn("density 0.01: exact top-k 3.00x the read pass (goal <= 3: met); "
                      "10.0x faster than torch.topk (goal >= 5: met)", out)
        self.assertIn("density 0.001: exact top-k 4.00x the read pass (goal <= 3: not met); "
                      "5.0x faster than torch.topk (goal >= 5: met)", out)

    def test_a_step_all_at_once_against_one_segment_at_a_time(self):
        rc, out = self.run_report(
            [entry(f"BM_ReadPass/{N}", 100.0, n=N),
             entry("BM_StepSegmented/100", 400.0, n=N, k=255000, segments=54, launches=6),
             entry("BM_StepPerSegment/100", 2000.0, n=N, k=255000, segments=54, launches=324),
             entry("BM_StepSegmented/1000", 300.0, n=N, k=25500, segments=54, launches=6)])
        self.assertEqual(rc, 0, out)
        self.assertIn("| 0.01 | 54 | 400.0 | 6 | 2000.0 | 324 | 5.00 | 4.00 |", out)
        self.assertIn("| 0.001 | 54 | 300.0 | 6 | - | - | - | 3.00 |", out)
        # The step benchmarks' argument is a density, not an n: no row of the kernel table.
        self.assertNotIn("| 100 |", out)
        self.assertNotIn("sampled threshold over", out)

    def test_the_sampled_threshold_step_has_its_own_table_of_waits(self):
        rc, out = self.run_report(
            [entry(f"BM_ReadPass/{N}", 100.0, n=N),
             entry("BM_StepSegmented/100", 400.0, n=N, k=255000, segments=54, launches=6),
             entry("BM_StepSampled/100/1", 500.0, n=N, k=255000, segments=54, waits=2),
             entry("BM_StepSampled/100/0", 6000.0, n=N, k=255000, segments=54, waits=108)])
        self.assertEqual(rc, 0, out)
        exact = out.index("A step's exact top-k over")
        sampled = out.index("A step's sampled threshold (DGC) over")
        self.assertLess(exact, sampled)
        self.assertIn("| 0.01 | 54 | 400.0 | 6 | - | - | - | 4.00 |", out[exact:sampled])
        self.assertIn("| density | segments | all at once (us) | waits |", out[sampled:])
        self.assertIn("| 0.01 | 54 | 500.0 | 2 | 6000.0 | 108 | 12.00 | 5.00 |", out[sampled:])

    def test_a_benchmark_error_fails_the_report(self):
        failed = entry(f"BM_TopkSort/{N}/100", 0.0, n=N)
        failed.update(error_occurred=True, error_message="device top-k differs from topkExact")
        rc, out = self.run_report([entry(f"BM_ReadPass/{N}", 100.0, n=N), failed])
        self.assertEqual(rc, 1)
        self.assertIn(f"- ERROR BM_TopkSort/{N}/100/manual_time: device top-k differs", out)


if __name__ == "__main__":
    unittest.main()
