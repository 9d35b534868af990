"""Running a grid of experiments/run commands: resumable, logged, several at once.

Shared by experiments/sweep-bandwidth and experiments/reproduce-dgs. A point is a run
directory <out>/<name> and the command that fills it. A point whose summary.json exists is
skipped (rerunning the same command resumes the grid); an unfinished run directory from an
earlier attempt is moved aside to <name>.incomplete-<time>; each point's output goes to
<out>/logs/<name>.log and each attempt is recorded in <out>/grid-log.jsonl.
"""

import concurrent.futures
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import time

from . import runs as run_files


def flag_value(flags, name):
    """The value of a flag (--name=value or --name value) in a list of flags, or None."""
    for i, flag in enumerate(flags):
        if flag.startswith(name + "="):
            return flag.split("=", 1)[1]
        if flag == name and i + 1 < len(flags):
            return flags[i + 1]
    return None


def without(flags, names):
    """flags minus those named (as --name=value or --name value)."""
    out, skip = [], False
    for flag in flags:
        if skip:
            skip = False
            continue
        name = flag.split("=", 1)[0]
        if name in names:
            skip = "=" not in flag
            continue
        out.append(flag)
    return out


def last_lines(path, n=20):
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace").replace("\r", "\n")
    except OSError:
        return "(no log)"
    return "\n".join(line for line in text.splitlines()[-n:])


def stop(proc):
    """SIGTERM to the launcher's process group (it stops its ranks), SIGKILL after 10 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_point(cmd, log_path, timeout):
    """Runs one point with its output in log_path. Returns (ok, reason)."""
    with open(log_path, "ab") as log_file:
        log_file.write(f"$ {shlex.join(cmd)}\n".encode())
        log_file.flush()
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout or None)
        except subprocess.TimeoutExpired:
            stop(proc)
            return False, f"stopped after --point-timeout={timeout:g} s"
        except KeyboardInterrupt:
            stop(proc)
            raise
    if code != 0:
        return False, f"signal {-code}" if code < 0 else f"exit code {code}"
    return True, ""


def logged_commands(out):
    """run name -> the command of its last attempt, from <out>/grid-log.jsonl."""
    return {r["run"]: r.get("command") for r in
            run_files.read_jsonl(os.path.join(out, "grid-log.jsonl")) if "run" in r}


def run_points(out, points, jobs=1, timeout=0, dry_run=False, say=print):
    """Runs the unfinished points [(name, command)] under out, `jobs` at a time.
    Returns [(name, reason)] of the failed ones."""
    out = os.path.abspath(out)
    previous = logged_commands(out) if os.path.isdir(out) else {}
    if dry_run:
        for name, cmd in points:
            done = run_files.is_finished(os.path.join(out, name))
            print(("# done: " if done else "") + shlex.join(cmd))
        return []

    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    todo = []
    for i, (name, cmd) in enumerate(points, 1):
        run_dir = os.path.join(out, name)
        tag = f"[{i}/{len(points)}] {name}"
        if run_files.is_finished(run_dir):
            note = ""
            if previous.get(name) not in (None, cmd):
                note = (" (it ran with other flags: " + shlex.join(previous[name]) +
                        "; delete it to rerun)")
            say(f"{tag}: summary.json exists, skipped{note}")
            continue
        if os.path.exists(run_dir):
            stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
            aside = f"{run_dir}.incomplete-{stamp}"
            os.rename(run_dir, aside)
            say(f"{tag}: unfinished run directory from an earlier attempt moved to {aside}")
        todo.append((tag, name, run_dir, cmd))

    def one(point):
        tag, name, run_dir, cmd = point
        log_path = os.path.join(out, "logs", f"{name}.log")
        say(f"{tag}: {shlex.join(cmd)}")
        t0 = time.time()
        ok, reason = run_point(cmd, log_path, timeout)
        seconds = time.time() - t0
        if ok and not run_files.is_finished(run_dir):
            ok, reason = False, f"exit code 0 but no {run_dir}/summary.json"
        with open(os.path.join(out, "grid-log.jsonl"), "a") as f:
            f.write(json.dumps({"run": name, "command": cmd, "ok": ok, "reason": reason,
                                "seconds": round(seconds, 3),
                                "finished_at": datetime.datetime.now().isoformat()}) + "\n")
        if ok:
            say(f"{tag}: done in {seconds:.1f} s")
            return None
        say(f"{tag}: FAILED ({reason}) after {seconds:.1f} s; last lines of {log_path}:")
        print(last_lines(log_path), file=sys.stderr, flush=True)
        return (name, reason)

    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        failed = [f for f in pool.map(one, todo) if f is not None]
    say(f"grid finished in {time.time() - start:.1f} s")
    return failed
