#!/usr/bin/env python3
"""Tests of `experiments/fetch-data cifar10 --from=DIR` (experiments/datasets/cifar10_from_png.py)
on a tiny fake mirror: 5 training and 1 test PNG per class, each of known pixels.

Run with Debian's interpreter (python3-pil makes the PNGs).
"""

import os
import shutil
import subprocess
import tempfile
import unittest

from PIL import Image

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FETCH = os.path.join(REPO, "experiments", "fetch-data")
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")
RECORD = 1 + 3 * 32 * 32


def pixels(label, i):
    """A 32x32 RGB image whose every pixel says which class and image it is."""
    return [((label * 20 + i) % 256, (7 * x) % 256, (11 * y + label) % 256)
            for y in range(32) for x in range(32)]


class FetchCifar10FromPng(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sparseps-cifar-png-")
        self.mirror = os.path.join(self.tmp, "mirror")
        self.out = os.path.join(self.tmp, "data", "cifar10")
        for split, count in (("train", 5), ("test", 1)):
            for label, name in enumerate(CLASSES):
                folder = os.path.join(self.mirror, split, name)
                os.makedirs(folder)
                for i in range(count):
                    image = Image.new("RGB", (32, 32))
                    image.putdata(pixels(label, i))
                    image.save(os.path.join(folder, f"{i:04d}.png"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def fetch(self, *extra):
        return subprocess.run([FETCH, "cifar10", f"--from={self.mirror}", "--per-class=5,1",
                               f"--dir={self.out}", *extra],
                              capture_output=True, text=True, timeout=120)

    def records(self, name):
        with open(os.path.join(self.out, "cifar-10-batches-bin", name), "rb") as f:
            data = f.read()
        self.assertEqual(len(data) % RECORD, 0)
        return [data[i:i + RECORD] for i in range(0, len(data), RECORD)]

    def expected_record(self, label, i):
        planes = [bytes(p[c] for p in pixels(label, i)) for c in range(3)]
        return bytes([label]) + b"".join(planes)

    def test_imports_every_image_as_label_and_planes_interleaving_the_classes(self):
        result = self.fetch()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("imported 50 training and 10 test images", result.stdout)
        train = []
        for b in range(1, 6):
            batch = self.records(f"data_batch_{b}.bin")
            self.assertEqual(len(batch), 10)
            train += batch
        # One image of each class in turn: image i of class c is record 10 * i + c.
        for i in range(5):
            for label in range(10):
                self.assertEqual(train[10 * i + label], self.expected_record(label, i))
        test = self.records("test_batch.bin")
        self.assertEqual(test, [self.expected_record(label, 0) for label in range(10)])
        self.assertEqual(sorted(os.listdir(self.out)), ["cifar-10-batches-bin"])

    def assert_refused(self, result, *words):
        self.assertEqual(result.returncode, 1, result.stdout)
        for word in words:
            self.assertIn(word, result.stderr)
        self.assertIn("nothing was changed", result.stderr)
        self.assertFalse(os.path.exists(os.path.dirname(self.out)),
                         "the folders the import made must go again")

    def test_a_missing_class_is_named(self):
        shutil.rmtree(os.path.join(self.mirror, "test", "frog"))
        self.assert_refused(self.fetch(), "missing class folder(s) frog", "test")

    def test_a_wrong_count_is_named_with_the_fix(self):
        os.remove(os.path.join(self.mirror, "train", "cat", "0003.png"))
        self.assert_refused(self.fetch(), "cat holds 4 PNG images, expected 5", "--per-class")

    def test_the_full_counts_are_the_default(self):
        result = subprocess.run([FETCH, "cifar10", f"--from={self.mirror}", f"--dir={self.out}"],
                                capture_output=True, text=True, timeout=120)
        self.assert_refused(result, "holds 5 PNG images, expected 5000")

    def test_an_undecodable_image_is_named(self):
        bad = os.path.join(self.mirror, "train", "ship", "0002.png")
        with open(bad, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n not really")
        self.assert_refused(self.fetch(), bad, "cannot be decoded")

    def test_an_image_of_the_wrong_size_is_named(self):
        bad = os.path.join(self.mirror, "test", "dog", "0000.png")
        Image.new("RGB", (32, 31)).save(bad)
        self.assert_refused(self.fetch(), bad, "32x31 pixels")

    def test_a_mirror_that_is_not_a_folder_is_refused(self):
        result = subprocess.run([FETCH, "cifar10", "--from=" + os.path.join(self.tmp, "none"),
                                 f"--dir={self.out}"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("is not a folder", result.stderr)
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()
