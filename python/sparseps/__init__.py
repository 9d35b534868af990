"""sparseps: gradient compression in parameter-server training, from PyTorch.

    world = sparseps.init()                    # RANK, WORLD_SIZE, MASTER_* from torchrun
    if world.is_server:
        sparseps.serve(model, method="dgs", lr=0.1)
    else:
        optimizer = sparseps.Optimizer(model.parameters(), method="dgs", lr=0.1, model=model)

sparseps.load_methods(path) adds the methods of a shared library (a C++ method of one's own:
optim/method_library.h) to this process; every rank loads the same one.

sparseps.WorkerRule runs one method's worker rule on flat tensors without a server (what a
worker would push for a gradient), with sparseps.MethodOptions.

Errors from the C++ core arrive as exceptions with its messages: ValueError for a bad
argument, sparseps.PeerError (a RuntimeError) for a rank that died, hung or sent garbage.
"""

import torch  # loads LibTorch before the extension that links it

from . import compress
from ._C import MethodOptions, PeerError, WorkerRule, load_methods
from .job import serve
from .optimizer import Optimizer
from .world import World, init

__all__ = ["init", "World", "serve", "Optimizer", "PeerError", "compress", "WorkerRule",
           "MethodOptions", "load_methods"]
