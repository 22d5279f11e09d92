"""Data-parallel language-model runs: torch.distributed plumbing for ``rnnbench lm``.

A run started by torchrun (``torchrun --standalone --nproc_per_node=N -m rnnbench lm ...``) or by
``rnnbench lm --nproc N`` (which starts the same, through torch's own elastic launcher) has one
process per GPU (rank), each training a replica wrapped in ``DistributedDataParallel`` (NCCL on
CUDA, gloo on the CPU). What is shared, and how:

- **Data.** ``--batch-size`` stays the *global* batch: the corpus is cut into the same
  ``batch_size`` streams as on one GPU, and rank ``r`` of ``N`` trains on the contiguous columns
  ``[r*B/N, (r+1)*B/N)`` (:func:`columns`). Truncated BPTT carries each stream's state from one
  window to the next, so the streams cannot be shuffled among ranks as a sampler would. DDP
  averages the gradients over ranks, so each step's gradient is the one-GPU gradient of the
  global batch and the learning rate is left as it is.
- **Figures.** Losses and perplexities are summed over ranks (:func:`sum_across`): the
  perplexity is the one of the whole split, as on one GPU. Words per second counts every rank's
  words over the slowest rank's time.
- **Decisions.** A NaN loss and the ``--max-minutes`` deadline are decided jointly
  (:func:`any_across`), so no rank stops while another waits for it in a collective forever.
- **Files.** Only rank 0 writes rows, checkpoints and lines. A checkpoint holds every rank's
  state (the hidden state of all columns, each rank's random generators), and records the world
  size; resuming it needs the same world size.

NVLink multicast stays off (:data:`MULTICAST_OFF`): on shared hosts it can take GPUs out of
service. Source: PyTorch, "Getting started with DistributedDataParallel" and "torchrun (Elastic
Launch)", pytorch.org/docs.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import UsageError

# Set (unless the user set them) in every rank's environment and in the one --nproc gives its
# workers: NCCL's NVLink SHARP, torch's symmetric memory and NVSHMEM all use NVLink multicast.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}


@dataclass(frozen=True)
class World:
    """This process's place in the run: ``rank`` of ``size`` processes, ``local_rank`` on its host."""

    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def main(self) -> bool:
        """Rank 0: the one process that writes and prints."""
        return self.rank == 0


def current_world() -> World:
    """The world torchrun describes in ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` (one process
    when they are not set)."""
    env = os.environ
    return World(int(env.get("RANK", 0)), int(env.get("LOCAL_RANK", 0)), int(env.get("WORLD_SIZE", 1)))


def disable_multicast() -> None:
    for name, value in MULTICAST_OFF.items():
        os.environ.setdefault(name, value)


def start(world: World, device: torch.device) -> torch.device:
    """Join the process group (a no-op for one process) and return this rank's device:
    ``cuda:LOCAL_RANK`` on CUDA, else ``device``.

    Raises:
        UsageError: more ranks on this host than visible CUDA devices.
    """
    if world.size == 1:
        return device
    disable_multicast()
    if device.type == "cuda":
        if world.local_rank >= torch.cuda.device_count():
            raise UsageError(f"rank {world.rank} needs cuda:{world.local_rank}, but "
                             f"{torch.cuda.device_count()} CUDA device(s) are visible")
        device = torch.device("cuda", world.local_rank)
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                device_id=device if device.type == "cuda" else None)
    return device


def stop() -> None:
    """Leave the process group (after the last collective), if there is one.

    The ranks meet at a barrier first, so that none tears its connections down, or exits, while
    another still works (rank 0 writes the rows and the checkpoint after the last collective).
    Why: one CPU run of two gloo ranks in CI aborted at teardown after finishing its work
    ("terminate called without an active exception", exit -6); that abort was not reproduced in 66
    runs without the barrier, so that the barrier removes it is not shown. ``stop`` is called from
    a ``finally``: after an error on one rank the others may never arrive, so the barrier is
    skipped while an exception propagates."""
    if dist.is_available() and dist.is_initialized():
        if sys.exc_info()[0] is None:
            dist.barrier()
        dist.destroy_process_group()


def columns(batch_size: int, world: World, option: str = "--batch-size") -> slice:
    """This rank's contiguous share of ``batch_size`` streams.

    Raises:
        UsageError: ``batch_size`` does not divide by the world size.
    """
    if batch_size % world.size:
        raise UsageError(f"{option} {batch_size} does not divide among {world.size} processes; "
                         f"use a multiple of {world.size}")
    share = batch_size // world.size
    return slice(world.rank * share, (world.rank + 1) * share)


def sum_across(values: list[float], world: World, device: torch.device) -> list[float]:
    """``values`` summed element-wise over all ranks (float64; unchanged for one process)."""
    if world.size == 1:
        return list(values)
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.tolist()


def min_across(value: float, world: World, device: torch.device) -> float:
    """The smallest ``value`` of all ranks (the slowest rank's speed)."""
    return _reduce_one(value, dist.ReduceOp.MIN, world, device)


def max_across(value: float, world: World, device: torch.device) -> float:
    """The largest ``value`` of all ranks (the slowest rank's time)."""
    return _reduce_one(value, dist.ReduceOp.MAX, world, device)


def _reduce_one(value: float, op, world: World, device: torch.device) -> float:
    if world.size == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=op)
    return tensor.item()


def any_across(flag: bool, world: World, device: torch.device) -> bool:
    """True on every rank when ``flag`` is true on any (a joint stop decision)."""
    if world.size == 1:
        return flag
    tensor = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.item() > 0


def gather_columns(tensor: torch.Tensor, world: World, dim: int = 1) -> torch.Tensor:
    """Every rank's equal share of ``tensor`` along ``dim``, joined in rank order (the hidden
    state ``[L, B/N, H]`` of all ``B`` streams)."""
    if world.size == 1:
        return tensor
    parts = [torch.empty_like(tensor) for _ in range(world.size)]
    dist.all_gather(parts, tensor.contiguous())
    return torch.cat(parts, dim=dim)


def gather_objects(obj, world: World) -> list:
    """``obj`` of every rank, in rank order (small picklable things: random-generator states)."""
    if world.size == 1:
        return [obj]
    out = [None] * world.size
    dist.all_gather_object(out, obj)
    return out


def launch(nproc: int, argv: list[str], device: str) -> int:
    """Run ``python -m rnnbench lm ARGV`` on ``nproc`` processes of this host, as
    ``torchrun --standalone --nproc_per_node=NPROC`` does (torch's elastic launcher, a
    rendezvous on a free local port, ``OMP_NUM_THREADS=1`` unless set), and return the exit
    code: 0, or the first failed rank's.

    Raises:
        UsageError: ``nproc`` below 1, or more processes than visible CUDA devices on CUDA.
    """
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    if device == "cuda" or (device == "auto" and torch.cuda.is_available()):
        visible = torch.cuda.device_count()
        if nproc > visible:
            raise UsageError(f"--nproc {nproc} needs {nproc} CUDA devices; {visible} visible")
    disable_multicast()  # the workers inherit this environment
    if nproc > 1:  # as torchrun does: N processes of all-core thread pools overload the CPUs
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The launcher's own failure report is a multi-line log; the failed rank has printed its one line.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=uuid.uuid4().hex[:8],
                          rdzv_backend="c10d", rdzv_endpoint="localhost:0", max_restarts=0,
                          monitor_interval=0.1)
    try:
        elastic_launch(config, entrypoint=sys.executable)("-m", "rnnbench", "lm", *argv)
    except ChildFailedError as exc:
        codes = [failure.exitcode for failure in exc.failures.values()]
        return next((c for c in codes if c not in (0, None)), 1)
    return 0
