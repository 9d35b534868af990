"""The Python API's own checks: bad arguments fail at once, before any network."""

import tempfile

import pytest
import torch

import sparseps


@pytest.fixture
def worker_world():
    with tempfile.TemporaryDirectory(prefix="sparseps_python_") as store:
        yield sparseps.init(rank=1, world_size=2, store_dir=store, timeout=1)


def test_init_without_torchrun_says_what_to_do(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="RANK is not set; launch with torchrun"):
        sparseps.init()
    with pytest.raises(ValueError, match="MASTER_ADDR is not set"):
        sparseps.init(rank=0, world_size=2)


def test_init_reads_torchrun_environment(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "5")
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    monkeypatch.setenv("MASTER_PORT", "29611")
    world = sparseps.init()
    assert (world.rank, world.world_size, world.master_port) == (3, 5, 29611)
    assert not world.is_server and world.num_workers == 4 and world.worker_index == 2
    assert world.hostname == "127.0.0.1"
    with pytest.raises(ValueError, match="must leave at least one worker"):
        sparseps.init(num_servers=5)
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ValueError, match="RANK='x' is not an integer"):
        sparseps.init()


def test_a_bad_method_is_a_value_error_naming_it(worker_world):
    model = torch.nn.Linear(4, 2)
    before = model.weight.data_ptr()
    with pytest.raises(ValueError, match="nope"):
        sparseps.Optimizer(model.parameters(), method="nope")
    assert model.weight.data_ptr() == before  # nothing was re-pointed


@pytest.mark.parametrize("kwargs,error,text", [
    (dict(density=0.0), ValueError, "density"),
    (dict(momentum=-1.0), ValueError, "momentum"),
    (dict(mode="eventually"), ValueError, "mode"),
    (dict(downlink="both"), ValueError, "downlink"),
    (dict(selection="best"), ValueError, "selection"),
    (dict(method="gd", compressor="qsgd:levels=0"), ValueError, "GdOptions.compressor"),
    (dict(method="dgc", dgc_warmup=True, dgc_warmup_densities=[2.0]), ValueError,
     r"DgcOptions.warmup_densities\[0\]"),
    (dict(compressor="qsgd"), ValueError,
     r"compressor: method 'dgs' does not read it \(read by gd\)"),
    (dict(method="asgd", nesterov=True), ValueError, r"nesterov: .* \(read by dgc\)"),
    (dict(densty=0.1), TypeError, "unknown job option 'densty'"),
    (dict(lr_milestones=[2]), ValueError, "give pushes_per_epoch"),
])
def test_bad_job_options_name_the_option(worker_world, kwargs, error, text):
    kwargs = dict(dict(method="dgs"), **kwargs)
    with pytest.raises(error, match=text):
        sparseps.Optimizer(torch.nn.Linear(4, 2).parameters(), **kwargs)


def test_every_method_option_of_the_core_is_a_keyword_and_reaches_it(worker_world):
    from sparseps import _C, job
    names = {row["name"] for row in _C.METHOD_OPTIONS}
    assert set(job.METHOD_OPTIONS) == names - {"momentum", "weight_decay", "density"}
    c = job.job_config(worker_world, "dgc", 0.1, 0.5, 1e-3, 0.02, dict(
        nesterov=True, clip_norm=2, dgc_warmup=True, dgc_warmup_densities=[0.5, 0.25],
        selection="sampled", server_density=0.3, resync_every=9, f16=True))
    m = c.job.method_options
    assert (m.momentum, m.weight_decay, m.density) == (0.5, 1e-3, 0.02)
    assert m.nesterov and m.dgc_warmup and m.f16
    assert (m.clip_norm, m.dgc_warmup_densities) == (2.0, [0.5, 0.25])
    assert (m.selection, m.server_density, m.resync_every) == ("sampled", 0.3, 9)
    c = job.job_config(worker_world, "gd", 0.1, 0.9, 5e-4, 0.05,
                       dict(compressor="signsgd", error_feedback=False))
    m = c.job.method_options
    assert (m.compressor, m.error_feedback) == ("signsgd", False)
    # The reply's density is its own option, 0.01 unless given, as in the driver; and the
    # downlink is the method's own unless given.
    assert (m.server_density, m.downlink) == (0.01, "auto")


def test_every_job_option_of_the_core_is_a_keyword_and_reaches_it(worker_world):
    from sparseps import _C, job
    names = {row["name"] for row in _C.JOB_OPTIONS}
    assert set(job.JOB_OPTIONS) == names - {"method", "lr"}
    c = job.job_config(worker_world, "dgs", 0.05, 0.9, 5e-4, 0.01, dict(
        mode="staleness", staleness=2, lr_milestones=[2, 4], lr_gamma=0.5, warmup_epochs=1,
        pushes_per_epoch=40, seed=3, peer_timeout=12))
    j = c.job
    assert (j.method, j.lr, j.mode, j.staleness) == ("dgs", 0.05, "staleness", 2)
    assert (j.lr_milestones, j.lr_gamma, j.warmup_epochs) == ([2.0, 4.0], 0.5, 1.0)
    assert (j.pushes_per_epoch, j.seed, j.peer_timeout) == (40.0, 3, 12.0)


def test_roles_are_checked(worker_world):
    with pytest.raises(ValueError, match="is a worker rank"):
        sparseps.serve(torch.nn.Linear(4, 2))
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match="one parameter group"):
        sparseps.Optimizer([{"params": model.parameters()}])
    with pytest.raises(ValueError, match="must be model.parameters"):
        sparseps.Optimizer([model.weight], model=model)


def test_non_float_parameters_are_refused(worker_world):
    model = torch.nn.Linear(4, 2).double()
    with pytest.raises(ValueError, match="only float32 parameters"):
        sparseps.Optimizer(model.parameters(), method="asgd")


def test_an_absent_peer_is_a_peer_error_after_the_timeout():
    from conftest import free_port
    world = sparseps.init(rank=1, world_size=2, master_addr="127.0.0.1",
                          master_port=free_port(), timeout=1)
    with pytest.raises(sparseps.PeerError, match="rank 1"):
        sparseps.Optimizer(torch.nn.Linear(4, 2).parameters(), method="asgd", world=world)
