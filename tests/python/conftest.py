"""Launches test jobs as torchrun would: one process per rank with RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT set, on loopback."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    def __init__(self, scenario: str, world_size: int, out_dir: Path, nodes: int = 0,
                 env: dict = None):
        """nodes = 0: one process per rank with torchrun's variables set here; nodes > 0:
        that many real torchrun agents (--nnodes), world_size / nodes ranks each."""
        self.out_dir = out_dir
        port = free_port()
        self.procs = []
        if nodes:
            for node in range(nodes):
                self.procs.append(subprocess.Popen(
                    ["torchrun", f"--nnodes={nodes}", f"--node_rank={node}",
                     f"--nproc_per_node={world_size // nodes}", "--master_addr=127.0.0.1",
                     f"--master_port={port}", "--redirects=1", "--tee=1",
                     f"--log_dir={out_dir}/torchrun{node}",
                     str(HERE / "ranks.py"), scenario, str(out_dir)],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            return
        for rank in range(world_size):
            rank_env = dict(os.environ, **(env or {}), RANK=str(rank),
                            WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1",
                            MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            self.procs.append(subprocess.Popen(
                [sys.executable, str(HERE / "ranks.py"), scenario, str(out_dir)], env=rank_env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))

    def wait(self, timeout: float = 120) -> list:
        """Exit codes; a rank still running at the timeout is killed and fails the test."""
        deadline = time.monotonic() + timeout
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                self.kill()
                pytest.fail(f"rank {self.procs.index(p)} still running after {timeout} s:\n"
                            + self.logs())
        return codes

    def kill(self, rank: int = None) -> None:
        for p in (self.procs if rank is None else [self.procs[rank]]):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()

    def logs(self) -> str:
        out = []
        for r, p in enumerate(self.procs):
            if p.poll() is not None and p.stdout is not None:
                out.append(f"--- rank {r} ---\n{p.stdout.read()}")
        return "\n".join(out)

    def result(self, rank: int) -> dict:
        path = self.out_dir / f"rank{rank}.json"
        if not path.exists():
            pytest.fail(f"rank {rank} wrote no result:\n{self.logs()}")
        return json.loads(path.read_text())


@pytest.fixture
def launch():
    """start(scenario, world_size) -> Job; every rank is killed and its files removed after
    the test (pytest's own tmp_path would keep them)."""
    jobs = []
    with tempfile.TemporaryDirectory(prefix="sparseps_python_") as tmp:
        def start(scenario: str, world_size: int, nodes: int = 0, env: dict = None) -> Job:
            out_dir = Path(tmp) / str(len(jobs))
            out_dir.mkdir()
            jobs.append(Job(scenario, world_size, out_dir, nodes, env))
            return jobs[-1]

        yield start
        for job in jobs:
            job.kill()
