#!/usr/bin/env python3
"""Imports a CIFAR-10 mirror in the common PNG-folder layout into the binary version the
driver reads (experiments/datasets/cifar10.h).

  cifar10_from_png.py --from=DIR --to=OUT [--per-class=5000,1000]

DIR holds train/<class>/*.png and test/<class>/*.png, one folder per CIFAR-10 class name
(airplane, automobile, ..., truck). Every image must be a 32x32 PNG; each class must hold
exactly --per-class images (training, test): 5,000 and 1,000 in the full set. OUT receives
data_batch_1..5.bin (10,000 records each in the full set) and test_batch.bin, each record one
label byte and the R, G and B planes. The classes are interleaved in the files (one image of
each in turn, every class's files in name order), as the official batches mix them.
experiments/fetch-data cifar10 --from=DIR calls this and installs OUT only when it succeeds.
Needs Debian's python3-pil (Pillow).
"""

import argparse
import os
import sys

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")
SIDE = 32
TRAIN_FILES = 5


class MirrorError(Exception):
    """A mirror this cannot import; the text says what is wrong."""


def per_class(text):
    try:
        train, test = (int(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected TRAIN,TEST image counts per class, got {text!r}")
    if train < TRAIN_FILES or test < 1:
        raise argparse.ArgumentTypeError(
            f"need at least {TRAIN_FILES} training and 1 test image per class, got {text!r}")
    return train, test


def class_files(root, split, expected):
    """{class: [png paths in name order]} of root/split, every class checked."""
    top = os.path.join(root, split)
    if not os.path.isdir(top):
        raise MirrorError(f"{top} is not a folder: expected {split}/<class>/*.png under {root}")
    found = sorted(e for e in os.listdir(top) if os.path.isdir(os.path.join(top, e)))
    missing = [c for c in CLASSES if c not in found]
    extra = [e for e in found if e not in CLASSES]
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing class folder(s) " + ", ".join(missing))
        if extra:
            parts.append("unknown folder(s) " + ", ".join(extra))
        raise MirrorError(f"{top}: {'; '.join(parts)}; a CIFAR-10 mirror has exactly the "
                           f"folders {', '.join(CLASSES)}")
    files = {}
    for c in CLASSES:
        folder = os.path.join(top, c)
        names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".png"))
        if len(names) != expected:
            raise MirrorError(
                f"{folder} holds {len(names)} PNG images, expected {expected} (the full CIFAR-10 "
                f"has 5000 per class for training and 1000 for test; a subset needs "
                f"--per-class=TRAIN,TEST)")
        files[c] = [os.path.join(folder, n) for n in names]
    return files


def record(path, label):
    """One 3073-byte record: the label, then the R, G and B planes of the 32x32 image."""
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(path) as image:
            if image.format != "PNG":
                raise MirrorError(f"{path} is a {image.format} image, not a PNG")
            if image.size != (SIDE, SIDE):
                raise MirrorError(f"{path} is {image.size[0]}x{image.size[1]} pixels; CIFAR-10 "
                                   f"images are {SIDE}x{SIDE}")
            rgb = image.convert("RGB")
            rgb.load()
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise MirrorError(f"{path} cannot be decoded as an image ({e}); the mirror is damaged: "
                           "fetch that file again")
    planes = b"".join(band.tobytes() for band in rgb.split())
    return bytes([label]) + planes


def interleaved(files):
    """(path, label) with one image of each class in turn."""
    count = len(files[CLASSES[0]])
    for i in range(count):
        for label, c in enumerate(CLASSES):
            yield files[c][i], label


def write_split(files, out_paths):
    """Writes the records of `files` spread evenly over out_paths, in order."""
    items = list(interleaved(files))
    per_file = len(items) // len(out_paths)
    for n, path in enumerate(out_paths):
        end = len(items) if n == len(out_paths) - 1 else (n + 1) * per_file
        with open(path, "wb") as f:
            for item_path, label in items[n * per_file:end]:
                f.write(record(item_path, label))
    return len(items)


def main():
    p = argparse.ArgumentParser(prog="cifar10_from_png.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="source", required=True, help="the mirror's folder")
    p.add_argument("--to", required=True, help="folder for the .bin files (created)")
    p.add_argument("--per-class", type=per_class, default=(5000, 1000),
                   help="images per class: TRAIN,TEST (default 5000,1000, the full set)")
    args = p.parse_args()
    train_count, test_count = args.per_class
    try:
        train = class_files(args.source, "train", train_count)
        test = class_files(args.source, "test", test_count)
        os.makedirs(args.to, exist_ok=True)
        batches = [os.path.join(args.to, f"data_batch_{i}.bin") for i in range(1, TRAIN_FILES + 1)]
        n_train = write_split(train, batches)
        n_test = write_split(test, [os.path.join(args.to, "test_batch.bin")])
    except MirrorError as e:
        print(f"fetch-data: {e}", file=sys.stderr)
        sys.exit(1)
    except ImportError:
        print("fetch-data: --from needs Pillow to decode the PNGs: apt-get install python3-pil",
              file=sys.stderr)
        sys.exit(1)
    print(f"fetch-data: imported {n_train} training and {n_test} test images from {args.source}")


if __name__ == "__main__":
    main()
