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

# The keywords, made from the C++ option tables (the experiment driver's flags are the
# same names with dashes): the job's options (JOB_OPTIONS: lr_milestones, lr_gamma,
# warmup_epochs, pushes_per_epoch, mode, staleness, seed, peer_timeout, ...) and the
# method's (METHOD_OPTIONS; _C.option_readers says which methods read each). Not given, an option
# keeps the C++ default, the same as the driver's.
_ARGUMENTS = ("method", "lr", "momentum", "weight_decay", "density")
JOB_OPTIONS = {row["name"]: row for row in _C.JOB_OPTIONS if row["name"] not in _ARGUMENTS}
METHOD_OPTIONS = {row["name"]: row for row in _C.METHOD_OPTIONS if row["name"] not in _ARGUMENTS}


def job_config(world: World, method: str, lr: float, momentum: float, weight_decay: float,
               density: float, options: Dict) -> "_C.RankOptions":
    known = list(JOB_OPTIONS) + list(METHOD_OPTIONS)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise TypeError(f"sparseps: unknown job option {unknown[0]!r}; known: "
                        f"lr, momentum, weight_decay, density, {', '.join(known)}")
    for name in sorted(set(options) & set(METHOD_OPTIONS)):
        readers = _C.option_readers(name)
        if readers and method not in readers:
            raise ValueError(f"sparseps: {name}: method {method!r} does not read it (read by "
                             f"{', '.join(readers)}); drop it")
    c = world.config()
    job = c.job
    job.method, job.lr = method, float(lr)
    m = job.method_options
    m.momentum, m.weight_decay, m.density = float(momentum), float(weight_decay), float(density)
    for name, value in options.items():
        if value is None:
            continue
        if name in JOB_OPTIONS:
            setattr(job, name, [float(v) for v in value] if name == "lr_milestones" else value)
        else:
            setattr(m, name, value)
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
