"""Whole jobs of Python ranks (ranks.py), launched as torchrun launches them."""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import HERE, free_port


def test_asgd_with_one_worker_moves_the_model_exactly_as_torch_sgd(launch):
    job = launch("sgd", 2)
    assert job.wait() == [0, 0], job.logs()
    worker = job.result(1)
    assert worker["started_equal"]
    assert len(worker["diffs"]) == 6
    assert max(worker["diffs"]) < 1e-6, worker["diffs"]
    assert abs(worker["lr"] - 0.05) < 1e-7  # the server's rate (float32)


def test_a_torch_scheduler_sets_the_rate_that_is_applied(launch):
    job = launch("scheduler", 2)
    assert job.wait() == [0, 0], job.logs()
    worker = job.result(1)
    expected = [0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125]  # StepLR(step_size=2, gamma=0.5)
    assert worker["rates"] == pytest.approx(expected, rel=1e-6)
    # The update applied follows the rate: it halves where StepLR halves it.
    assert worker["applied"] == pytest.approx(expected, rel=1e-4), worker["applied"]
    assert max(worker["diffs"]) < 1e-6, worker["diffs"]  # step for step as torch.optim.SGD


def test_a_scheduler_on_a_job_with_its_own_schedule_is_refused(launch):
    job = launch("scheduler_conflict", 2)
    assert job.wait() == [0, 0], job.logs()
    worker = job.result(1)
    assert worker["steps"] == 1  # the refused step pushed nothing
    assert "lr_milestones=(2,)" in worker["error"] and "scheduler" in worker["error"], worker


def test_torchrun_with_two_nodes_meets_through_its_agents_store(launch):
    # Two real torchrun agents on loopback, as across machines: rank 0's agent hosts the
    # store at --master_port and every rank, rank 0 included, joins it as a client.
    job = launch("sgd", 2, nodes=2)
    assert job.wait() == [0, 0], job.logs()
    assert max(job.result(1)["diffs"]) < 1e-6


def test_dgs_with_four_workers_trains_a_small_model(launch):
    job = launch("dgs4", 5)
    assert job.wait(timeout=180) == [0] * 5, job.logs()
    server = job.result(0)
    assert server["dropped_workers"] == 0
    assert server["messages_in"] >= 4 * 100
    for rank in range(1, 5):
        worker = job.result(rank)
        # Each worker ends with the servers' model as it was when it finished (an untrained
        # model scores about 0.25 on the four clusters).
        assert worker["accuracy"] >= 0.9, worker
        assert abs(worker["lr"] - 0.01) < 1e-7  # the server's schedule: 0.1, x0.1 at epoch 3
        assert worker["max_bytes_up"] < worker["dense_bytes"] / 2  # the pushes are sparse


@pytest.mark.parametrize("method", ["msgd", "asgd", "gd", "dgc", "dgs"])
def test_every_method_trains_from_python(launch, method):
    job = launch("each_method", 3, env={"SPARSEPS_TEST_METHOD": method})
    assert job.wait() == [0, 0, 0], job.logs()
    for rank in (1, 2):
        r = job.result(rank)
        assert r["after"] < 0.3 * r["before"], r  # measured: 0.005-0.18 of it


def test_a_method_of_ones_own_from_a_shared_library_trains_as_written(launch):
    job = launch("own_method", 2)
    assert job.wait() == [0, 0], job.logs()
    worker = job.result(1)
    assert len(worker["diffs"]) == 6
    assert max(worker["diffs"]) < 1e-6, worker["diffs"]
    assert worker["moved"] > 0.01, worker  # 6 steps of lr * sign(u): up to 0.06 a weight


def test_f16_halves_the_bytes_of_the_values_a_push_sends(launch):
    sent = {}
    for f16 in ("0", "1"):
        job = launch("f16_bytes", 2, env={"SPARSEPS_TEST_F16": f16})
        assert job.wait() == [0, 0], job.logs()
        sent[f16] = job.result(1)["bytes_up"]
    # The pushes carry about 320 sparse values (4 bytes each, or 2 in f16), 100 dense ones
    # and the indices: f16 must save well over a tenth of every push.
    for full, half in zip(sent["0"], sent["1"]):
        assert half < 0.9 * full, sent


def test_a_dead_worker_is_dropped_and_the_job_goes_on(launch):
    job = launch("dead_worker", 3)
    codes = job.wait()
    assert codes == [0, 0, 17], job.logs()
    assert job.result(0)["dropped_workers"] == 1
    assert job.result(1)["steps"] == 20


def test_a_dead_server_raises_peer_error_in_the_worker(launch):
    job = launch("dead_server", 2)
    ready = job.out_dir / "ready"
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), job.logs()
    job.kill(0)
    job.procs[1].wait(60)
    worker = job.result(1)
    assert worker["error"] == "PeerError", worker
    assert worker["is_runtime_error"]
    assert re.search(r"ranks? \{?0", worker["message"]), worker  # names the dead rank


def test_a_layout_mismatch_between_ranks_names_it_on_both_sides(launch):
    job = launch("mismatch", 2)
    assert job.wait() == [0, 0], job.logs()
    for rank in (0, 1):
        result = job.result(rank)
        assert result["error"] is not None, result
        assert "layout fingerprint" in result["message"], result
    assert "pass model=" in job.result(1)["message"]


def test_the_state_dict_carries_the_methods_worker_state(launch):
    job = launch("state", 2)
    assert job.wait() == [0, 0], job.logs()
    r = job.result(1)
    assert r["has_state"] and r["epoch"] == 2
    assert r["moved_on"] and r["restored"] and r["epoch_restored"] == 2
    wrong_method, garbage, not_ours, bad_groups = r["errors"]
    assert wrong_method.startswith("ValueError") and "'asgd'" in wrong_method
    assert garbage is not None and garbage.startswith("ValueError: method state"), garbage
    assert not_ours.startswith("ValueError") and "not a sparseps state dict" in not_ours
    # A state whose worker part loads but whose groups do not: refused as a whole.
    assert bad_groups is not None and bad_groups.startswith("ValueError"), bad_groups
    assert r["still_restored"]  # a refused state changes nothing


def listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_ctrl_c_ends_a_rank_waiting_on_its_peers():
    # A server alone: it waits in the rendezvous for a worker that never comes (30 s timeout).
    with tempfile.TemporaryDirectory(prefix="sparseps_python_") as out:
        port = free_port()
        env = dict(os.environ, RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        proc = subprocess.Popen([sys.executable, str(HERE / "ranks.py"), "sgd", out], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Rank 0 hosts the rendezvous store: once its port listens, the rank waits there (a
        # fixed sleep could still find it importing torch on a loaded machine).
        deadline = time.monotonic() + 60
        while not listening(port):
            assert proc.poll() is None
            assert time.monotonic() < deadline, "rank 0 never opened its store"
            time.sleep(0.1)
        time.sleep(0.5)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(10)
        finally:
            proc.kill()
        assert code == -signal.SIGINT
        assert time.monotonic() - start < 5
        assert not (Path(out) / "rank0.json").exists()
