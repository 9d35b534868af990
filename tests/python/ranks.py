"""One rank of a test job, launched by conftest.launch() with torchrun's environment
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). `python ranks.py SCENARIO OUT_DIR`; each
rank writes what it saw to OUT_DIR/rank<R>.json."""

import json
import os
import sys
import time

import torch

import sparseps


def mlp(features: int = 16, classes: int = 4, hidden: int = 32) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.BatchNorm1d(hidden),
                               torch.nn.ReLU(), torch.nn.Linear(hidden, classes))


def clusters(n: int, seed: int, features: int = 16, classes: int = 4):
    """Gaussian clusters around fixed means (the same in every rank)."""
    means = torch.randn(classes, features, generator=torch.Generator().manual_seed(1234)) * 1.5
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    return means[y] + torch.randn(n, features, generator=g), y


def train_step(opt, model, x, y) -> None:
    """One step of the usual loop: zero the gradients, backward, step."""
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def serve_or_join(world, job: dict):
    """The server's initial model from seed 0: a server rank serves it (and returns what
    serve() returns, None here); a worker rank gets (model, optimizer) on it."""
    torch.manual_seed(0)
    served = mlp()
    if world.is_server:
        return None, sparseps.serve(served, **job)
    model = mlp()
    return model, sparseps.Optimizer(model.parameters(), model=model, **job)


def max_relative_diff(model, ref) -> float:
    return max((a - b).abs().max().item() / (1 + b.abs().max().item())
               for a, b in zip(model.parameters(), ref.parameters()))


def write(out_dir: str, rank: int, result: dict) -> None:
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


def sgd(world, out_dir):
    """asgd, one worker, against torch.optim.SGD step for step."""
    job = dict(method="asgd", lr=0.05, momentum=0.0, weight_decay=1e-3)
    torch.manual_seed(0)
    served = mlp()  # the server's initial model
    if world.is_server:
        return sparseps.serve(served, **job)
    torch.manual_seed(world.rank)  # a model of the worker's own, until the server's arrives
    model = mlp()
    opt = sparseps.Optimizer(model.parameters(), model=model, **job)
    started_equal = all(torch.equal(a, b) for a, b in
                        zip(model.parameters(), served.parameters()))
    ref = mlp()
    ref.load_state_dict(model.state_dict())
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, weight_decay=1e-3)
    x, y = clusters(64 * 6, seed=5)
    diffs = []
    for step in range(6):
        xb, yb = x[step * 64:(step + 1) * 64], y[step * 64:(step + 1) * 64]
        if step % 2:
            model.zero_grad(set_to_none=True)  # torch's own reset: step() must still see it
        else:
            opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
        train_step(ref_opt, ref, xb, yb)
        diffs.append(max_relative_diff(model, ref))
    lr = opt.param_groups[0]["lr"]
    opt.finish()
    return {"diffs": diffs, "started_equal": started_equal, "lr": lr}


def scheduler(world, out_dir):
    """asgd, one worker, a torch StepLR on sparseps.Optimizer against the same StepLR on
    torch.optim.SGD: the scheduler's rate is the one applied."""
    model, opt = serve_or_join(world, dict(method="asgd", lr=0.05, momentum=0.0,
                                           weight_decay=0.0))
    if model is None:
        return opt
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    ref = mlp()
    ref.load_state_dict(model.state_dict())
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    ref_sched = torch.optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.5)
    x, y = clusters(64 * 6, seed=5)
    rates, applied, diffs = [], [], []
    for step in range(6):
        xb, yb = x[step * 64:(step + 1) * 64], y[step * 64:(step + 1) * 64]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        before = [p.detach().clone() for p in model.parameters()]
        grads = [p.grad.detach().clone() for p in model.parameters()]
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        # asgd without weight decay moves w by -rate * g: the rate it applied, fitted.
        moved = sum(((b - p.detach()) * g).sum().item()
                    for b, p, g in zip(before, model.parameters(), grads))
        applied.append(moved / sum((g * g).sum().item() for g in grads))
        train_step(ref_opt, ref, xb, yb)
        diffs.append(max_relative_diff(model, ref))
        sched.step()
        ref_sched.step()
    opt.finish()
    return {"rates": rates, "applied": applied, "diffs": diffs}


def scheduler_conflict(world, out_dir):
    """A job with its own milestones and a torch scheduler as well: refused at the step."""
    model, opt = serve_or_join(world, dict(method="asgd", lr=0.05, momentum=0.0,
                                           weight_decay=0.0, lr_milestones=(2,), pushes_per_epoch=4))
    if model is None:
        return opt
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x, y = clusters(64, seed=5)
    train_step(opt, model, x, y)  # the scheduler has not changed the rate yet
    sched.step()
    try:
        train_step(opt, model, x, y)
        error = None
    except ValueError as e:
        error = str(e)
    steps = opt._worker.steps
    opt.finish()
    return {"error": error, "steps": steps}


def dgs4(world, out_dir):
    """dgs, 4 workers, each on its own shard; the servers' final model is evaluated."""
    job = dict(method="dgs", lr=0.1, momentum=0.9, weight_decay=1e-4, density=0.05,
               pushes_per_epoch=4 * 25, lr_milestones=[3], lr_gamma=0.1)
    torch.manual_seed(0)
    model = mlp()
    if world.is_server:
        return sparseps.serve(model, **job)
    opt = sparseps.Optimizer(model.parameters(), model=model, **job)
    x, y = clusters(2000, seed=100 + world.worker_index)
    bytes_up = []
    for epoch in range(4):
        for b in range(25):
            xb, yb = x[b * 80:(b + 1) * 80], y[b * 80:(b + 1) * 80]
            train_step(opt, model, xb, yb)
            bytes_up.append(opt.last_step.bytes_up)
    lr = opt.param_groups[0]["lr"]
    opt.finish()
    model.eval()
    tx, ty = clusters(2000, seed=7)
    with torch.no_grad():
        accuracy = (model(tx).argmax(1) == ty).float().mean().item()
    dense_bytes = 4 * sum(p.numel() for p in model.parameters())
    return {"accuracy": accuracy, "lr": lr, "max_bytes_up": max(bytes_up),
            "dense_bytes": dense_bytes}


def state(world, out_dir):
    """dgs, one worker: the optimizer's state dict carries the method's worker state."""
    job = dict(method="dgs", lr=0.05, density=0.1)
    model, opt = serve_or_join(world, job)
    if model is None:
        return opt
    x, y = clusters(64, seed=3)
    for _ in range(3):
        train_step(opt, model, x, y)
    opt.set_epoch(2)
    saved = opt.state_dict()
    result = {"has_state": len(saved["sparseps"]["worker_state"]) > 0,
              "epoch": saved["sparseps"]["epoch"]}
    opt.set_epoch(0)
    train_step(opt, model, x, y)  # the momentum moves on
    moved_state = opt.state_dict()
    result["moved_on"] = moved_state["sparseps"]["worker_state"] != saved["sparseps"]["worker_state"]
    opt.load_state_dict(saved)
    result["restored"] = opt.state_dict()["sparseps"]["worker_state"] == saved["sparseps"]["worker_state"]
    result["epoch_restored"] = opt.epoch
    errors = []
    two_groups = [saved["param_groups"][0], saved["param_groups"][0]]
    for bad in (dict(saved, sparseps=dict(saved["sparseps"], method="asgd")),
                dict(saved, sparseps=dict(saved["sparseps"], worker_state=b"garbage")),
                {"state": {}, "param_groups": saved["param_groups"]},
                dict(moved_state, param_groups=two_groups)):
        try:
            opt.load_state_dict(bad)
            errors.append(None)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {e}")
    result["errors"] = errors
    result["still_restored"] = opt.state_dict()["sparseps"]["worker_state"] == saved["sparseps"]["worker_state"]
    opt.finish()
    return result


def each_method(world, out_dir):
    """The method named by SPARSEPS_TEST_METHOD, 2 workers, 30 steps each: the loss on a
    fixed batch must fall."""
    job = dict(method=os.environ["SPARSEPS_TEST_METHOD"], lr=0.05, density=0.1)
    torch.manual_seed(0)
    model = mlp()
    if world.is_server:
        return sparseps.serve(model, **job)
    opt = sparseps.Optimizer(model.parameters(), model=model, **job)
    x, y = clusters(32 * 30, seed=10 + world.rank)
    probe_x, probe_y = clusters(256, seed=99)

    def probe():
        model.eval()
        with torch.no_grad():
            loss = torch.nn.functional.cross_entropy(model(probe_x), probe_y).item()
        model.train()
        return loss

    before = probe()
    for step in range(30):
        train_step(opt, model, x[step * 32:(step + 1) * 32], y[step * 32:(step + 1) * 32])
    opt.finish()
    return {"before": before, "after": probe()}


def f16_bytes(world, out_dir):
    """gd at density 0.5, one worker, 5 steps, with f16 as SPARSEPS_TEST_F16 says: the bytes
    of its pushes."""
    job = dict(method="gd", lr=0.05, density=0.5, f16=os.environ["SPARSEPS_TEST_F16"] == "1")
    model, opt = serve_or_join(world, job)
    if model is None:  # the server rank
        return {}
    x, y = clusters(32 * 5, seed=10)
    bytes_up = []
    for step in range(5):
        train_step(opt, model, x[step * 32:(step + 1) * 32], y[step * 32:(step + 1) * 32])
        bytes_up.append(opt.last_step.bytes_up)
    opt.finish()
    return {"bytes_up": bytes_up}


def dead_worker(world, out_dir):
    """Two workers; the second dies abruptly after 3 steps; the first trains on."""
    job = dict(method="dgs", lr=0.05, density=0.1)
    model, opt = serve_or_join(world, job)
    if model is None:
        return opt
    x, y = clusters(40 * 20, seed=world.rank)
    for step in range(20):
        if world.worker_index == 1 and step == 3:
            os._exit(17)
        train_step(opt, model, x[step * 40:(step + 1) * 40], y[step * 40:(step + 1) * 40])
        time.sleep(0.02)
    opt.finish()
    return {"steps": 20}


def dead_server(world, out_dir):
    """The test kills the server once ready appears; the worker's next step must raise."""
    job = dict(method="asgd", lr=0.01)
    model = mlp()
    if world.is_server:
        return sparseps.serve(model, **job)
    opt = sparseps.Optimizer(model.parameters(), model=model, **job)
    x, y = clusters(32, seed=1)
    deadline = time.monotonic() + 60
    steps = 0
    try:
        while time.monotonic() < deadline:
            train_step(opt, model, x, y)
            steps += 1
            if steps == 3:
                open(os.path.join(out_dir, "ready"), "w").close()
            time.sleep(0.01)
    except Exception as e:  # noqa: BLE001 — the test inspects what arrived
        return {"steps": steps, "error": type(e).__name__, "message": str(e),
                "is_runtime_error": isinstance(e, RuntimeError)}
    return {"steps": steps, "error": None}


def mismatch(world, out_dir):
    """The server's model has one more output than the worker's."""
    model = torch.nn.Linear(8, 3 if world.is_server else 2)
    try:
        if world.is_server:
            sparseps.serve(model, method="asgd")
        else:
            sparseps.Optimizer(model.parameters(), method="asgd")
    except Exception as e:  # noqa: BLE001
        return {"error": type(e).__name__, "message": str(e)}
    return {"error": None}


def own_method(world, out_dir):
    """A C++ method of one's own (tests/signum_method.h: u = m*u + g, push lr * sign(u))
    loaded from a shared library on every rank, one worker: the model after each step
    against the update written out here."""
    sparseps.load_methods(os.environ["SPARSEPS_TEST_METHOD_LIBRARY"])
    job = dict(method="signum", lr=0.01, momentum=0.9, weight_decay=0.0)
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1, bias=False)
    if world.is_server:
        return sparseps.serve(model, **job)
    opt = sparseps.Optimizer(model.parameters(), **job)
    w = w0 = model.weight.detach().clone()
    u = torch.zeros_like(w)
    x, y = torch.randn(6, 32, 8, generator=torch.Generator().manual_seed(3)), torch.ones(32, 1)
    diffs = []
    for step in range(6):
        opt.zero_grad()
        ((model(x[step]) - y) ** 2).mean().backward()
        opt.step()
        w_ref = w.clone().requires_grad_()
        ((x[step] @ w_ref.t() - y) ** 2).mean().backward()
        u = 0.9 * u + w_ref.grad
        w = w - 0.01 * torch.sign(u)
        diffs.append((model.weight.detach() - w).abs().max().item())
    opt.finish()
    return {"diffs": diffs, "moved": (model.weight.detach() - w0).abs().max().item()}


def main():
    scenario, out_dir = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    world = sparseps.init(timeout=30)
    result = globals()[scenario](world, out_dir)
    write(out_dir, world.rank, result)


if __name__ == "__main__":
    main()
