#!/usr/bin/env python3
"""Tests of experiments/ablate-reference: which points it runs with which flags, and what it
collects. A FAKE launcher (written by the tests) stands in for experiments/run: its final
accuracy and losses are made up from the flags it gets, never results.
"""

import json
import os
import textwrap
import unittest

from fake_launcher import FakeLauncherTest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ABLATE = os.path.join(REPO, "experiments", "ablate-reference")

# Accuracy 0.10 + 0.01 * seed, + 0.20 with --init=torch-0.4; losses 2, 2, 9, 1 with
# --selection=strict (a peak of (2 + 9) / 2 over a window of 2 workers), else 2, 2, 2, 1.
FAKE_RUN = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    with open(os.environ["FAKE_RUN_LOG"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\\n")
    os.makedirs(args["out"], exist_ok=True)
    acc = 0.10 + 0.01 * int(args["seed"]) + (0.20 if args.get("init") == "torch-0.4" else 0)
    with open(os.path.join(args["out"], "summary.json"), "w") as f:
        json.dump({"final_accuracy": acc, "workers": 2}, f)
    losses = [2, 2, 9, 1] if args.get("selection") == "strict" else [2, 2, 2, 1]
    with open(os.path.join(args["out"], "metrics.jsonl"), "w") as f:
        for loss in losses:
            f.write(json.dumps({"loss": loss}) + "\\n")
""")


class AblateReferenceTest(FakeLauncherTest):
    TOOL, FAKE_RUN, PREFIX = ABLATE, FAKE_RUN, "ablate_test_"

    def test_each_setting_is_switched_alone_then_all_and_only_where_read(self):
        result = self.run_study("--methods=dgs,gd", "--settings=init,selection", "--seeds=1,2",
                               "--epochs=1")
        self.assertEqual(result.returncode, 0, result.stderr)
        by_out = {}
        for call in self.calls():
            out = next(a for a in call if a.startswith("--out="))
            by_out[os.path.basename(out)] = call
        # dgs does not read --selection: no point switches it, no flag is given.
        self.assertEqual(sorted(by_out), sorted(
            [f"dgs-{v}-s{s}" for v in ("own", "init", "reference") for s in (1, 2)] +
            [f"gd-{v}-s{s}" for v in ("own", "init", "selection", "reference")
             for s in (1, 2)]))
        self.assertNotIn("--selection=exact", by_out["dgs-own-s1"])
        for name, flags in (("gd-own-s2", ("--init=kaiming-fan-out", "--selection=exact")),
                            ("gd-init-s2", ("--init=torch-0.4", "--selection=exact")),
                            ("gd-selection-s2", ("--init=kaiming-fan-out", "--selection=strict")),
                            ("gd-reference-s2", ("--init=torch-0.4", "--selection=strict"))):
            call = by_out[name]
            for flag in flags + ("--preset=dgs-paper", "--clock=virtual", "--seed=2",
                                 "--epochs=1"):
                self.assertIn(flag, call, name)
        with open(os.path.join(self.out, "ablation.json")) as f:
            rows = {(r["method"], r["switched"]): r for r in json.load(f)}
        own, init = rows[("gd", "own")], rows[("gd", "init")]
        self.assertAlmostEqual(own["final_accuracy"][0], 0.115)  # the mean of 0.11 and 0.12
        self.assertAlmostEqual(own["final_accuracy"][1], 0.11)
        self.assertAlmostEqual(own["final_accuracy"][2], 0.12)
        self.assertAlmostEqual(init["final_accuracy"][0], 0.315)
        self.assertAlmostEqual(own["peak_loss"][0], 2.0)
        self.assertAlmostEqual(rows[("gd", "selection")]["peak_loss"][0], 5.5)
        self.assertIn("| gd | selection | 2 | 5.50 | 11.50% (11.00-12.00) |", result.stdout)

    def test_finished_points_are_kept_and_unknown_settings_refused(self):
        self.assertEqual(self.run_study("--methods=asgd", "--settings=init").returncode, 0)
        first = len(self.calls())
        self.assertEqual(first, 3)  # own, init, reference
        self.assertEqual(self.run_study("--methods=asgd", "--settings=init").returncode, 0)
        self.assertEqual(len(self.calls()), first)  # resumed: nothing ran again
        bad = self.run_study("--settings=init,colour")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("unknown --settings colour", bad.stderr)


if __name__ == "__main__":
    unittest.main()
