"""sparseps.Optimizer: the parameter server as a torch.optim.Optimizer.

The parameters become views into one flat buffer (so are their gradients), step() hands
that buffer to the C++ worker, which pushes the method's message, waits for the server's
reply and writes the new parameters in place, with the GIL released.

The learning rate: by default the server's schedule (lr_milestones/lr_gamma/warmup_epochs/
pushes_per_epoch of the job) sets it, and param_groups[0]["lr"] shows it after each step. Once
param_groups[0]["lr"] is changed (a torch LR scheduler, or by hand), that rate is the one
each push is made with from then on, as in any torch optimizer, and the server's rate no
longer overwrites it. A job that has a schedule of its own and a rate changed here as well
is refused with a ValueError at that step: two schedules would fight.
"""

from typing import Callable, Dict, Iterable, Optional

import torch

from . import _C
from .job import float_buffers, job_config, named_tensors
from .world import World, current


def _hint_layout(error: Exception) -> Exception:
    if "layout fingerprint" in str(error):
        return type(error)(f"{error} (the ranks' models differ: parameter shapes or order, "
                           "or BN buffers; pass model= to sparseps.Optimizer when the model "
                           "has BN buffers)")
    return error


class Optimizer(torch.optim.Optimizer):
    def __init__(self, params: Iterable[torch.Tensor], method: str = "dgs", lr: float = 0.1,
                 momentum: float = 0.9, weight_decay: float = 5e-4, density: float = 0.01,
                 *, model: Optional[torch.nn.Module] = None, world: Optional[World] = None,
                 **options):
        """Connects to the servers and loads their initial model into the parameters.
        model= brings the module's BN running statistics along (averaged on the servers
        at finish()); its parameters must be the ones given, in the same order."""
        params = list(params)
        if params and isinstance(params[0], dict):
            raise ValueError("sparseps.Optimizer: one parameter group only; the server "
                             "holds one rate and one set of method options for the model")
        if model is not None and [id(p) for p in model.parameters()] != [id(p) for p in params]:
            raise ValueError("sparseps.Optimizer: params must be model.parameters(), "
                             "in order, when model= is given")
        world = current(world)
        if world.is_server:
            raise ValueError(f"sparseps.Optimizer: rank {world.rank} is a server rank; "
                             "call sparseps.serve(model, ...) there")
        config = job_config(world, method, lr, momentum, weight_decay, density, options)
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, density=density)
        super().__init__(params, defaults)
        self.method = method
        self.epoch = 0
        self.world = world
        # The job's own schedule, if any (a changed param_groups rate then conflicts).
        self._job_schedule = [f"{k}={options[k]!r}" for k in ("lr_milestones", "warmup_epochs")
                              if options.get(k)]
        self._own_lr = False  # param_groups[0]["lr"] was changed: it sets the rate
        self._buffers = float_buffers(model)
        named_params, named_buffers = named_tensors(params, self._buffers)
        try:
            self._worker = _C.Worker(config, named_params, named_buffers)
        except (RuntimeError, ValueError) as e:
            raise _hint_layout(e) from None
        self._show_server_lr()

    def _show_server_lr(self) -> None:
        self._shown_lr = self.param_groups[0]["lr"] = self._worker.lr

    def _push_lr(self) -> Optional[float]:
        """The rate this step's push is made with: None for the server's, or the one in
        param_groups once it was changed there."""
        lr = self.param_groups[0]["lr"]
        if not self._own_lr and lr != self._shown_lr:
            if self._job_schedule:
                raise ValueError(
                    f"sparseps.Optimizer: param_groups[0]['lr'] was changed to {lr} (a torch "
                    f"LR scheduler?), but the job has a schedule of its own "
                    f"({', '.join(self._job_schedule)}); use one of them: drop "
                    f"lr_milestones/warmup_epochs from the job, or the scheduler")
            self._own_lr = True
        return float(lr) if self._own_lr else None

    def add_param_group(self, param_group: Dict) -> None:
        if getattr(self, "_worker", None) is not None:
            raise ValueError("sparseps.Optimizer: the model's layout is fixed once connected")
        super().add_param_group(param_group)

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zeroes the flat gradient buffer (set_to_none is accepted and ignored: the
        gradients stay views of the buffer)."""
        self._worker.zero_grad()

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], torch.Tensor]] = None):
        """Pushes the gradients, waits for the reply and applies it. A gradient that
        backward() made anew (after zero_grad(set_to_none=True) elsewhere) is picked up."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        lr = self._push_lr()
        self._worker.step(self.epoch, lr)
        if lr is None:
            self._show_server_lr()
        return loss

    def set_epoch(self, epoch: int) -> None:
        """The worker's epoch, for methods whose worker side follows it (DGC's warm-up)."""
        self.epoch = int(epoch)

    @property
    def last_step(self) -> "_C.StepStats":
        """Bytes up and down, staleness and times of the last step."""
        return self._worker.last_step

    def sync_buffers(self) -> None:
        """Sends the BN running statistics to the servers, which average every worker's."""
        self._worker.sync_buffers()

    def server_state_dict(self) -> Dict[str, torch.Tensor]:
        """The servers' current model (and averaged BN statistics) as new tensors, keyed by
        position like the optimizer's params; the local model is left alone."""
        flat_params, flat_buffers = self._worker.server_model()
        out, offset = {}, 0
        for i, p in enumerate(self.param_groups[0]["params"]):
            out[f"param.{i}"] = flat_params[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        offset = 0
        for i, b in enumerate(self._buffers):
            out[f"buffer.{i}"] = flat_buffers[offset:offset + b.numel()].view_as(b).clone()
            offset += b.numel()
        return out

    def finish(self) -> None:
        """Ends this worker's part: sends its BN statistics, loads the servers' final model
        (and averaged statistics) into the local model, and leaves the job."""
        self._worker.finish()

    def state_dict(self) -> Dict:
        state = super().state_dict()
        state["sparseps"] = {"method": self.method, "epoch": self.epoch,
                             "worker_state": self._worker.save_state(),
                             "own_lr": self._own_lr}
        return state

    def load_state_dict(self, state_dict: Dict) -> None:
        """Restores the method's worker state (momentum, residuals); the model itself comes
        from the servers' checkpoint."""
        extra = state_dict.get("sparseps")
        if extra is None:
            raise ValueError("sparseps.Optimizer.load_state_dict: not a sparseps state dict")
        if extra["method"] != self.method:
            raise ValueError(f"sparseps.Optimizer.load_state_dict: the state is of method "
                             f"{extra['method']!r}, this optimizer runs {self.method!r}")
        before = self._worker.save_state()
        try:  # all or nothing: a refused part leaves the optimizer as it was
            self._worker.load_state(extra["worker_state"])
            super().load_state_dict({k: v for k, v in state_dict.items() if k != "sparseps"})
        except Exception:
            self._worker.load_state(before)
            raise
        self.epoch = int(extra["epoch"])
        self._own_lr = bool(extra.get("own_lr", False))
        if self._own_lr:  # the saved rate stands
            self._shown_lr = self.param_groups[0]["lr"]
        else:
            self._show_server_lr()
