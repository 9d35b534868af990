"""The job every rank must agree on, and the server side of it.

serve() and Optimizer() take the same job keywords, so a script writes them once:

    job = dict(method="dgs", lr=0.1, momentum=0.9, weight_decay=5e-4, density=0.01)
    if world.is_server:
        sparseps.serve(model, **job)
    else:
        optimizer = sparseps.Optimizer(model.parameters(), model=model, **job)

The update rules, defaults and the reply each method sends are in docs/methods.md.
"""

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch

from . import _C
from .world import World, current

# The method's options beyond the common five (momentum, weight_decay and density are
# arguments): the rows of the C++ option table by name, each with its help and the methods
# that read it. Not given, an option keeps its C++ default (_C.MethodOptions()), but for
# two that follow the method: server_density (= density) and downlink (sparse for dgs,
# dense for the rest).
_ARGUMENTS = ("momentum", "weight_decay", "density")
METHOD_OPTIONS = {row["name"]: row for row in _C.METHOD_OPTIONS if row["name"] not in _ARGUMENTS}

# The job's own keywords, with their defaults.
JOB_OPTIONS = {
    "mode": "async",          # "async", "sync" or "staleness"
    "staleness": 0,           # the bound in "staleness" mode
    "milestones": (),         # epochs at which the rate is multiplied by gamma
    "gamma": 0.1,
    "warmup_epochs": 0.0,     # linear rate warm-up
    "epoch_steps": None,      # all workers' steps in one epoch (the schedule's clock)
    "seed": 0,
}


def job_config(world: World, method: str, lr: float, momentum: float, weight_decay: float,
               density: float, options: Dict) -> "_C.RankOptions":
    known = list(METHOD_OPTIONS) + list(JOB_OPTIONS)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"sparseps: unknown job option {unknown[0]!r}; known: "
                        f"lr, momentum, weight_decay, density, {', '.join(known)}")
    for name in sorted(set(options) & set(METHOD_OPTIONS)):
        readers = METHOD_OPTIONS[name]["readers"]
        if readers and method not in readers:
            raise ValueError(f"sparseps: {name}: method {method!r} does not read it (read by "
                             f"{', '.join(readers)}); drop it")
    o = dict(JOB_OPTIONS, **{k: v for k, v in options.items() if k in JOB_OPTIONS})
    c = world.config()
    c.method, c.lr, c.mode, c.staleness = method, float(lr), o["mode"], int(o["staleness"])
    c.milestones = [float(m) for m in o["milestones"]]
    c.gamma, c.warmup_epochs = float(o["gamma"]), float(o["warmup_epochs"])
    c.pushes_per_epoch = float(o["epoch_steps"] or 0)
    c.seed = int(o["seed"])
    c.downlink = options.get("downlink") or ""  # "": the method's own
    m = c.method_options
    m.momentum, m.weight_decay, m.density = float(momentum), float(weight_decay), float(density)
    m.server_density = float(density)
    for name, value in options.items():
        if name in METHOD_OPTIONS and name != "downlink" and value is not None:
            setattr(m, name, value)
    c.method_options = m
    c.validate()
    return c


def named_tensors(params: Sequence[torch.Tensor], buffers: Sequence[torch.Tensor]
                  ) -> Tuple[List[Tuple[str, torch.Tensor]], List[Tuple[str, torch.Tensor]]]:
    """The layout both sides agree on: tensors in order, named by position (a worker's
    names need not match the server's; shapes and order must)."""
    return ([(f"param.{i}", p) for i, p in enumerate(params)],
            [(f"buffer.{i}", b) for i, b in enumerate(buffers)])


def float_buffers(model: Optional[torch.nn.Module]) -> List[torch.Tensor]:
    """The BN running statistics that travel (int64 counters stay local)."""
    if model is None:
        return []
    return [b for b in model.buffers() if b.dtype == torch.float32]


def serve(model: torch.nn.Module, method: str = "dgs", lr: float = 0.1,
          momentum: float = 0.9, weight_decay: float = 5e-4, density: float = 0.01, *,
          world: Optional[World] = None, verbose: bool = False, **options) -> Dict[str, int]:
    """Serves this rank's shard of the job until every worker has finished or died.
    The model's current parameters are what the workers start from. Returns the shard's
    traffic and dropped_workers, the count of workers lost on the way."""
    world = current(world)
    if not world.is_server:
        raise ValueError(f"sparseps.serve: rank {world.rank} is a worker rank "
                         f"(ranks 0..{world.num_servers - 1} serve); build a "
                         "sparseps.Optimizer there")
    config = job_config(world, method, lr, momentum, weight_decay, density, options)
    params, buffers = named_tensors(list(model.parameters()), float_buffers(model))
    return _C.serve(config, params, buffers, verbose)
