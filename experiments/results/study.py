"""The command-line skeleton every study script shares (experiments/sweep-bandwidth,
reproduce-dgs, crosscheck-virtual, compare-compressors): the study directory and how its
points run (--out, --jobs, --run-command, --point-timeout, --dry-run, --collect-only),
comma lists, the driver flags passed through to every point (the flags the script does not
know, and everything after `--`), and running the points (grid.run_points) with the same
words on an interrupt or a failure."""

import argparse
import os
import shlex
import sys

from .grid import run_points

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def csv_list(text):
    """A comma list of words: "a,b" -> ["a", "b"]; an empty list is refused."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("empty list")
    return items


def int_list(text):
    """A comma list of positive integers."""
    try:
        items = [int(t) for t in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text}")
    if min(items) < 1:
        raise argparse.ArgumentTypeError(f"need positive integers: {text}")
    return items


class Study:
    """One study script's parser and runner. set_per_point: the driver flags the script
    sets itself at each point (refused as pass-through, naming `instead`)."""

    def __init__(self, name, doc, set_per_point=(), instead=""):
        self.name = name
        self.set_per_point = tuple(set_per_point) + ("--out", "--resume")
        self.instead = instead
        self.parser = argparse.ArgumentParser(
            prog=f"experiments/{name}", allow_abbrev=False, description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        p = self.parser
        p.add_argument("--out", required=True, help="study directory (one run directory per point)")
        p.add_argument("--jobs", type=int, default=1,
                       help="points run at once (default 1; for --clock=virtual studies, whose "
                            "points are one process each)")
        p.add_argument("--run-command", default=os.path.join(REPO, "experiments", "run"),
                       help="the launcher, split like a shell line (default experiments/run)")
        p.add_argument("--point-timeout", type=float, default=0,
                       help="seconds before a point is stopped and counted as failed; 0 = none")
        p.add_argument("--dry-run", action="store_true",
                       help="print the commands (finished points marked), run nothing")
        p.add_argument("--collect-only", action="store_true",
                       help="only collect what the finished points under --out hold")

    def say(self, text):
        print(f"{self.name}: {text}", file=sys.stderr, flush=True)

    def parse(self, argv):
        """The script's flags; args.extra holds the driver flags for every point and
        args.run_cmd the launcher's words."""
        after = []
        if "--" in argv:
            cut = argv.index("--")
            argv, after = argv[:cut], argv[cut + 1:]
        args, extra = self.parser.parse_known_args(argv)
        args.extra = extra + after
        for flag in args.extra:
            name = flag.split("=", 1)[0]
            if name in self.set_per_point:
                self.parser.error(f"{name} is set per point; use {self.instead or '--out'}")
        if args.jobs < 1:
            self.parser.error("--jobs: must be at least 1")
        args.run_cmd = shlex.split(args.run_command)
        return args

    def run(self, args, points, jobs=None):
        """Runs the unfinished points [(name, command)], --jobs at a time unless `jobs` says
        (none with --collect-only; with --dry-run only prints them). Returns [(name,
        reason)] of the failed ones."""
        if args.collect_only:
            return []
        try:
            failed = run_points(args.out, points, jobs=jobs or args.jobs,
                                timeout=args.point_timeout, dry_run=args.dry_run, say=self.say)
        except KeyboardInterrupt:
            self.say("interrupted; finished points are kept, rerun the same command to resume")
            sys.exit(130)
        return failed

    def report(self, failed):
        """Says which points failed; the exit status: 1 if any did."""
        if failed:
            self.say(f"{len(failed)} point(s) failed: " +
                     ", ".join(f"{n} ({r})" for n, r in failed))
        return 1 if failed else 0
