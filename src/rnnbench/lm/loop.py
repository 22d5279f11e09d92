"""One epoch of training and one evaluation pass: truncated BPTT, synchronised words per second.

The loop is the PyTorch word_language_model example's (and Zaremba et al. 2014's): the corpus is
cut into ``batch_size`` parallel streams, read ``bptt`` tokens at a time, and the hidden state is
carried from one window to the next with its history cut (detached).

Every phase (an epoch's training, one evaluation pass) is timed by
:class:`rnnbench.timing.PhaseClock`: started and stopped only after a device synchronisation,
with the first :data:`WARMUP_BATCHES` batches left out. A "word" is one predicted token: a window
of length T over B streams counts T x B (the last, shorter window by its real length); at
character level the same figure counts characters.

Nothing here writes a file or prints: progress goes to a :class:`Progress` (the run's
:class:`rnnbench.lm.output.RunOutput`), so a data-parallel run can keep every rank but one quiet.
In such a run (``world``, see :mod:`rnnbench.lm.distributed`) each rank passes its own columns;
losses, token counts and speeds come back summed over ranks, and the NaN and deadline stops are
decided jointly at the same steps on every rank.
"""

from __future__ import annotations

import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from ..timing import PHASE_WARMUP_BATCHES, PhaseClock
from .data import get_batch, window_starts
from .distributed import World, any_across, max_across, min_across, sum_across
from .model import Hidden, RNNModel, detach_hidden
from .presets import LMConfig

# Batches at the start of every phase left out of the words/s figure (PhaseClock's default: cuDNN
# plan search, allocator growth, lazy initialisation). With fewer batches than this in a phase,
# all but the last one are skipped.
WARMUP_BATCHES = PHASE_WARMUP_BATCHES
# The running loss is read (one device synchronisation) every this many training batches, to
# show progress and to catch a NaN early without stalling the GPU's queue after every batch.
LOSS_READ_EVERY = 20


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite. The command line reports it in one line and
    exits with code 1; the last checkpoint written (if any) is from the last good epoch."""


class Progress(Protocol):
    """Where the loops report progress (:class:`rnnbench.terminal.ProgressView` has this shape)."""

    def phase(self, description: str, total: int) -> None: ...

    def advance(self, info: str | None = None) -> None: ...


def autocast(device: torch.device, amp: str):
    """``torch.autocast`` for ``amp`` = bf16 or fp16, a no-op context for ``off``."""
    if amp == "off":
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if amp == "bf16" else torch.float16)


@dataclass
class EpochStats:
    """What one (possibly partial) pass over the training split measured."""

    steps: int
    loss: float | None  # mean NLL per token (nats) over this pass's batches
    wps: float | None  # synchronised, warm-up excluded
    ms_per_batch: float | None
    timed_batches: int  # batches behind wps (the pass's batches less the warm-up)
    seconds: float  # wall time of the whole pass, warm-up included
    stopped: str | None  # "max_steps" or "max_minutes" when a limit cut the pass short
    position: int | None  # index of the next window when cut short, None when complete
    hidden: Hidden | None  # the carried state when cut short (resumed from there)


@dataclass
class EvalStats:
    """One forward-only pass over a split."""

    loss: float  # mean NLL per token (nats)
    wps: float | None  # synchronised, warm-up excluded
    ms_per_batch: float | None
    timed_batches: int
    tokens: int

    @property
    def ppl(self) -> float:
        """Perplexity = exp(mean NLL per token); inf when the loss overflows exp (or is NaN)."""
        return math.exp(self.loss) if self.loss < 700 else math.inf


def _check_finite(loss_sum: torch.Tensor, tokens: int, epoch: int, step: int,
                  world: World = World()) -> float:
    """The mean loss so far over every rank; raises NonFiniteLossError when it is NaN or
    infinite (on every rank at once: the sums are the same everywhere)."""
    loss_total, tokens = sum_across([loss_sum.item(), tokens], world, loss_sum.device)  # .item() synchronises
    mean = loss_total / max(tokens, 1)
    if not math.isfinite(mean):
        raise NonFiniteLossError(f"training loss became {mean} in epoch {epoch} by step {step}")
    return mean


def train_step(model: RNNModel, optimizer: torch.optim.Optimizer, scaler, x: torch.Tensor,
               y: torch.Tensor, hidden: Hidden, config: LMConfig,
               device: torch.device) -> tuple[torch.Tensor, Hidden]:
    """One optimiser step on the window ``x [T, B] -> y [T, B]``.

    Returns the mean cross-entropy of the window (a detached 0-d tensor, not read: reading it
    would synchronise) and the new hidden state.
    """
    hidden = detach_hidden(hidden)  # truncated BPTT: no gradient flows into the previous window
    with autocast(device, config.amp):
        logits, hidden = model(x, hidden)
        # The softmax over the vocabulary in float32 whatever the autocast dtype.
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()  # the scaler is a pass-through unless --amp fp16
    if config.clip > 0:
        scaler.unscale_(optimizer)  # clip the true gradients, not the fp16-scaled ones
        nn.utils.clip_grad_norm_(model.parameters(), config.clip)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach(), hidden


def limit_reached(config: LMConfig, steps_so_far: int, deadline: float | None) -> str | None:
    """``"max_steps"`` or ``"max_minutes"`` when that limit stops training now, else None."""
    if config.max_steps is not None and steps_so_far >= config.max_steps:
        return "max_steps"
    if deadline is not None and time.perf_counter() > deadline:
        return "max_minutes"
    return None


def joint_limit(config: LMConfig, steps_so_far: int, steps: int, deadline: float | None,
                world: World, device: torch.device) -> str | None:
    """:func:`limit_reached` for all ranks at once. ``max_steps`` is the same count everywhere;
    the deadline is each rank's own clock, so several ranks agree on it (one collective) every
    :data:`LOSS_READ_EVERY` steps, where the loss is read anyway: a stop every step would add a
    synchronisation to every step, and a rank stopping alone would leave the others waiting."""
    if world.size == 1:
        return limit_reached(config, steps_so_far, deadline)
    stopped = limit_reached(config, steps_so_far, None)
    if stopped is None and deadline is not None and steps % LOSS_READ_EVERY == 0:
        if any_across(time.perf_counter() > deadline, world, device):
            stopped = "max_minutes"
    return stopped


def slowest(wps: float | None, ms: float | None, world: World,
            device: torch.device) -> tuple[float | None, float | None]:
    """Words per second of all ranks together (every rank's words over the slowest rank's time;
    ranks hold equal shares) and the slowest rank's ms per batch."""
    if world.size == 1 or wps is None:
        return wps, ms
    return world.size * min_across(wps, world, device), max_across(ms, world, device)


def train_epoch(model: RNNModel, optimizer: torch.optim.Optimizer, scaler, data: torch.Tensor,
                config: LMConfig, device: torch.device, *, epoch: int, global_step: int,
                position: int = 0, hidden: Hidden | None = None, deadline: float | None = None,
                progress: Progress | None = None, world: World = World()) -> EpochStats:
    """Train over the windows of ``data [S, B]`` from window index ``position`` on (``model`` may
    be wrapped in DistributedDataParallel; ``data`` is then this rank's columns).

    Stops early (``stopped`` set, ``position``/``hidden`` returned for a checkpoint) when
    ``config.max_steps`` optimiser steps have been taken in total or ``deadline``
    (``time.perf_counter()`` value) has passed.

    Raises:
        NonFiniteLossError: the loss became NaN or infinite.
    """
    model.train()
    starts = window_starts(data, config.bptt)
    planned = len(starts) - position  # batches this pass will run, so warm-up fits inside it
    if config.max_steps is not None:
        planned = min(planned, config.max_steps - global_step)
    clock = PhaseClock(device, planned, WARMUP_BATCHES)
    core = getattr(model, "module", model)  # the RNNModel inside a DistributedDataParallel
    hidden = core.init_hidden(data.size(1)) if hidden is None else hidden
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    tokens = steps = 0
    stopped = None
    t0 = time.perf_counter()
    if progress:
        progress.phase(f"epoch {epoch} train", planned)
    for index in range(position, len(starts)):
        x, y = get_batch(data, starts[index], config.bptt)
        loss, hidden = train_step(model, optimizer, scaler, x, y, hidden, config, device)
        loss_sum += loss.double() * y.numel()
        tokens += y.numel()
        steps += 1
        clock.batch_done(y.numel())
        info = None
        if steps % LOSS_READ_EVERY == 0:
            mean = _check_finite(loss_sum, tokens, epoch, global_step + steps, world)
            info = f"{world.size * tokens / (time.perf_counter() - t0):,.0f} words/s  loss {mean:.3f}"
        if progress:
            progress.advance(info)
        if index + 1 < len(starts):  # a limit met on the epoch's last window is not a cut
            stopped = joint_limit(config, global_step + steps, steps, deadline, world, device)
            if stopped:
                break
    wps, ms = slowest(*clock.stop(), world, device)
    mean = _check_finite(loss_sum, tokens, epoch, global_step + steps, world) if steps else None
    return EpochStats(steps, mean, wps, ms, clock.batches, time.perf_counter() - t0, stopped,
                      index + 1 if stopped else None, detach_hidden(hidden) if stopped else None)


@torch.no_grad()
def evaluate(model: RNNModel, data: torch.Tensor, bptt: int, device: torch.device, amp: str = "off",
             progress: Progress | None = None, label: str = "eval", world: World = World()) -> EvalStats:
    """Forward-only pass over ``data [S, B]`` in windows of ``bptt``, the state carried along.

    Perplexity follows the PyTorch example: the summed NLL of every predicted token divided by
    their number, then exponentiated. Dropout is off (``model.eval()``). In a data-parallel run
    ``data`` is this rank's columns and the sums are over every rank's, so the perplexity is the
    whole split's.
    """
    model.eval()
    starts = window_starts(data, bptt)
    clock = PhaseClock(device, len(starts), WARMUP_BATCHES)
    hidden = model.init_hidden(data.size(1))
    nll_sum = torch.zeros((), device=device, dtype=torch.float64)
    tokens = 0
    if progress:
        progress.phase(label, len(starts))
    for i in starts:
        x, y = get_batch(data, i, bptt)
        with autocast(device, amp):
            logits, hidden = model(x, hidden)
        nll_sum += F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="sum").double()
        tokens += y.numel()
        clock.batch_done(y.numel())
        if progress:
            progress.advance()
    wps, ms = slowest(*clock.stop(), world, device)
    nll, tokens = sum_across([nll_sum.item(), tokens], world, device)
    return EvalStats(nll / tokens, wps, ms, clock.batches, int(tokens))
