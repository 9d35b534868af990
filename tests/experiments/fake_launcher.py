"""The fixture of the study scripts' tests: a FAKE launcher (a script the test writes) in
place of experiments/run, which logs every command line it gets (one JSON list per line, in
FAKE_RUN_LOG) and writes whatever invented run files its text says."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest


class FakeLauncherTest(unittest.TestCase):
    """Subclasses set TOOL (the study script), FAKE_RUN (the launcher's text) and PREFIX (of
    the temporary folder, removed after each test)."""

    TOOL = FAKE_RUN = PREFIX = None

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.PREFIX)
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.out = os.path.join(self.dir, "study")
        self.fake = os.path.join(self.dir, "fake-run")
        with open(self.fake, "w") as f:
            f.write(self.FAKE_RUN)
        os.chmod(self.fake, 0o755)
        self.log = os.path.join(self.dir, "fake-run.log")

    def run_study(self, *args):
        """The study over --out, with the fake launcher."""
        return subprocess.run([self.TOOL, f"--out={self.out}", f"--run-command={self.fake}",
                               *args], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, FAKE_RUN_LOG=self.log))

    def calls(self):
        """The command lines the launcher got, in order."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]
