"""experiments/compare-compressors: by default every compressor the driver's registry lists
(`--list-compressors`), dense first, one point each. A fake launcher stands in for
experiments/run: it lists three names, and prints every other command it is given."""

import os
import shutil
import stat
import subprocess
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(REPO, "experiments", "compare-compressors")

FAKE_RUN = textwrap.dedent("""\
    #!/bin/sh
    if [ "$1" = "--list-compressors" ]; then printf 'qsgd\\ndense\\ntopk\\n'; exit 0; fi
    exit 1
""")


class CompareCompressorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sparseps_compare_compressors_")
        self.fake = os.path.join(self.dir, "fake-run")
        with open(self.fake, "w") as f:
            f.write(FAKE_RUN)
        os.chmod(self.fake, stat.S_IRWXU)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def dry_run(self, *flags):
        return subprocess.run([COMPARE, f"--out={self.dir}/out", f"--run-command={self.fake}",
                               "--dry-run", *flags], capture_output=True, text=True, timeout=60)

    def test_the_default_is_every_compressor_the_registry_lists_dense_first(self):
        result = self.dry_run("--epochs=1")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual([l.split()[2] for l in lines],
                         ["--compressor=dense", "--compressor=qsgd", "--compressor=topk"])
        self.assertTrue(all(l.endswith("--epochs=1") for l in lines), lines)

    def test_given_compressors_are_run_without_asking_the_registry(self):
        result = self.dry_run("--compressors=signsgd;qsgd:levels=4")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual([l.split()[2] for l in result.stdout.splitlines()],
                         ["--compressor=signsgd", "--compressor=qsgd:levels=4"])

    def test_a_flag_it_sets_per_point_is_refused(self):
        result = self.dry_run("--compressor=topk")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--compressor is set per point", result.stderr)


if __name__ == "__main__":
    unittest.main()
