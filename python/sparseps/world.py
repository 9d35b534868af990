"""Where this process sits in a job, from torchrun's environment or from arguments.

Ranks 0..num_servers-1 serve (sparseps.serve), the others train (sparseps.Optimizer).
The ranks meet through the TCP store at MASTER_ADDR:MASTER_PORT: torchrun's agent runs it
(TORCHELASTIC_USE_AGENT_STORE=True, its default static rendezvous), or else rank 0 hosts
it, as torch.distributed does.
"""

import ipaddress
import os
import socket
from dataclasses import dataclass
from typing import Optional

from . import _C


@dataclass(frozen=True)
class World:
    rank: int
    world_size: int
    num_servers: int
    master_addr: str
    master_port: int
    host_store: bool  # rank 0 hosts the store (no launcher's agent does)
    run_id: str
    hostname: str  # the address this rank binds, or "" when iface is set
    iface: str
    store_dir: str
    timeout: float  # seconds to wait for the other ranks

    @property
    def is_server(self) -> bool:
        return self.rank < self.num_servers

    @property
    def num_workers(self) -> int:
        return self.world_size - self.num_servers

    @property
    def worker_index(self) -> int:
        """0..num_workers-1 on a worker (its data shard); -1 on a server."""
        return self.rank - self.num_servers if not self.is_server else -1

    def config(self) -> "_C.RankOptions":
        c = _C.RankOptions()
        c.rank, c.world_size, c.num_servers = self.rank, self.world_size, self.num_servers
        c.run_id, c.master_addr, c.master_port = self.run_id, self.master_addr, self.master_port
        c.host_store = self.host_store
        c.hostname, c.iface, c.store_dir = self.hostname, self.iface, self.store_dir
        c.connect_timeout_s = self.timeout
        # Every rank of the job presents it in the handshake (unset: no secret).
        c.run_secret = os.environ.get("SPARSEPS_RUN_SECRET", "")
        return c


_world: Optional[World] = None


def _env_int(name: str, given: Optional[int]) -> int:
    if given is not None:
        return int(given)
    value = os.environ.get(name)
    if value is None:
        raise ValueError(
            f"sparseps.init: {name} is not set; launch with torchrun "
            f"(torchrun --redirects=1 --tee=1 --nproc_per_node=5 train.py) or pass "
            f"{name.lower()}= to init()")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"sparseps.init: {name}={value!r} is not an integer") from None


def _bind_address(master_addr: str) -> str:
    """The local address other ranks can reach: loopback for a job on one machine,
    otherwise the address of the interface that routes to the master."""
    try:
        infos = socket.getaddrinfo(master_addr, None, socket.AF_INET)
    except socket.gaierror as e:
        raise ValueError(f"sparseps.init: MASTER_ADDR {master_addr!r} does not resolve: {e}")
    address = infos[0][4][0]
    if ipaddress.ip_address(address).is_loopback:
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((address, 9))  # no packet is sent: this only picks the route
        return s.getsockname()[0]


def init(num_servers: int = 1, *, rank: Optional[int] = None,
         world_size: Optional[int] = None, master_addr: Optional[str] = None,
         master_port: Optional[int] = None, run_id: Optional[str] = None,
         iface: Optional[str] = None, store_dir: Optional[str] = None,
         timeout: float = 120.0, keep_freed_memory: bool = True) -> World:
    """Reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun sets them; an argument
    overrides its variable) and returns this process's World, which serve() and
    Optimizer() use unless given another. store_dir meets through files in a directory
    instead of a TCP store (one machine only; a fresh directory per job, since the files
    stay); iface names the network interface
    to bind (default: loopback on one machine, else the one that routes to the master).
    keep_freed_memory tunes this process's malloc as the C++ driver does, so LibTorch's
    freed activations are reused instead of page-faulted in again every step (a small
    ResNet's step took 5x longer without it on a 2-core VM); it costs resident memory."""
    global _world
    rank = _env_int("RANK", rank)
    world_size = _env_int("WORLD_SIZE", world_size)
    if not 1 <= num_servers < world_size:
        raise ValueError(
            f"sparseps.init: num_servers={num_servers} must leave at least one worker in a "
            f"world of {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"sparseps.init: rank {rank} is outside the world of {world_size}")
    if store_dir is None:
        master_addr = master_addr or os.environ.get("MASTER_ADDR")
        if not master_addr:
            raise ValueError("sparseps.init: MASTER_ADDR is not set; launch with torchrun "
                             "or pass master_addr= (or store_dir= on one machine)")
        master_port = _env_int("MASTER_PORT", master_port)
    if run_id is None:
        # A restarted torchrun job meets in the same agent store: each attempt needs keys of
        # its own, or it would find the last attempt's dead addresses.
        run_id = (f"{os.environ.get('TORCHELASTIC_RUN_ID', 'sparseps')}"
                  f".{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}")
    if iface:
        hostname = ""
    elif store_dir is not None:
        hostname = "127.0.0.1"
    else:
        hostname = _bind_address(master_addr)
    if keep_freed_memory:
        _C.keep_freed_memory()
    host_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
    _world = World(rank, world_size, num_servers, master_addr or "", master_port or 0,
                   host_store, run_id, hostname, iface or "", store_dir or "", float(timeout))
    return _world


def current(world: Optional[World]) -> World:
    if world is not None:
        return world
    if _world is None:
        raise RuntimeError("sparseps: call sparseps.init() first (or pass world=)")
    return _world
