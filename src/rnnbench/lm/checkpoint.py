"""Checkpoints of the language-model benchmark: save, load, and resume where a run stopped.

A checkpoint holds model, optimiser, GradScaler and RNG states, the epoch, the window position
and carried hidden state inside it (for a run cut by ``--max-steps``/``--max-minutes``), and the
configuration. :func:`restore` continues from it with the same data order and random stream as an
uninterrupted run, after checking that the run resuming it is the same model on the same corpus.
A data-parallel run's checkpoint holds the hidden state of every column and each rank's random
generators, and resumes only with the same world size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..errors import UsageError
from .data import Corpus
from .distributed import World, columns
from .model import Hidden
from .presets import LMConfig

CHECKPOINT_FORMAT = "rnnbench-lm-checkpoint-1"
# Fields a checkpoint must agree on with the run that resumes it: they fix the parameters'
# shapes and names, the optimiser's state layout and the order in which data is read.
RESUME_FIELDS = ("rnn", "emb_size", "hidden_size", "num_layers", "tied", "lane", "optimizer",
                 "batch_size", "bptt", "eval_batch_size")


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written mid-run (disk full, folder removed, permissions
    changed): the paths were checked before the run, so this is the machine's doing, not a
    usage error. The command line reports it in one line and exits with code 1."""


def save_checkpoint(path: Path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically: the state goes to ``PATH.tmp``, which then
    replaces ``path`` (``os.replace``). A crash or Ctrl-C mid-write leaves the previous file
    whole, and a write that fails (or is interrupted) removes its ``.tmp`` before the error
    goes on.

    Raises:
        CheckpointWriteError: the file system refused the write (an OSError, e.g. ENOSPC).
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, tmp)
        os.replace(tmp, path)
    except BaseException as exc:  # KeyboardInterrupt too: a half-written .tmp is of no use to anyone
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # a folder that vanished, or a .tmp that is a directory: nothing of ours to remove
        if isinstance(exc, OSError):
            raise CheckpointWriteError(f"cannot write checkpoint {path} "
                                       f"({exc.strerror or type(exc).__name__})") from None
        raise


def load_checkpoint(path: Path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Raises:
        UsageError: no file, or not an rnnbench LM checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no checkpoint at {path} to resume from")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle, zip or torch errors all mean "not a checkpoint of ours"
        raise UsageError(f"{path} is not a readable checkpoint ({type(exc).__name__})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise UsageError(f"{path} is not an rnnbench language-model checkpoint")
    return state


def check_resumable(state: dict, config: LMConfig, corpus: Corpus, path: Path) -> None:
    """Raise UsageError unless ``state`` was written by the same model on the same corpus."""
    saved = state["config"]
    for name in RESUME_FIELDS:
        if saved.get(name) != getattr(config, name):
            raise UsageError(f"checkpoint {path} has {name}={saved.get(name)!r}, this run "
                             f"{getattr(config, name)!r}; they must match to resume")
    if state["vocab_size"] != len(corpus.vocab) or state["train_tokens"] != corpus.train.numel():
        raise UsageError(f"checkpoint {path} was trained on another corpus (vocabulary "
                         f"{state['vocab_size']}, this one {len(corpus.vocab)})")


def rng_state(device: torch.device) -> dict:
    """This process's random generators (CPU, and every CUDA device when on CUDA)."""
    return {"cpu": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if device.type == "cuda" else None}


def _set_rng_state(rng: dict, device: torch.device) -> None:
    torch.set_rng_state(rng["cpu"])
    if device.type == "cuda" and rng.get("cuda") is not None:
        torch.cuda.set_rng_state_all(rng["cuda"])


def _to_cpu(hidden: Hidden | None):
    if hidden is None:
        return None
    return tuple(h.cpu() for h in hidden) if isinstance(hidden, tuple) else hidden.cpu()


def _to_device(hidden, device: torch.device):
    if hidden is None:
        return None
    if isinstance(hidden, (tuple, list)):
        return tuple(h.to(device) for h in hidden)
    return hidden.to(device)


def checkpoint_state(config: LMConfig, corpus: Corpus, model: nn.Module, optimizer, scaler,
                     device: torch.device, *, epoch: int, position: int | None,
                     hidden: Hidden | None, global_step: int, run_id: str | None = None,
                     rng: list[dict] | None = None, world_size: int = 1) -> dict:
    """Everything :func:`restore` needs to continue exactly where this epoch (or part) ended.

    ``position`` is the next window's index when the epoch was cut short (None: complete), and
    ``hidden`` the state carried into it (all ``batch_size`` columns). ``run_id`` names the run
    in its result rows, so a resumed run's rows carry the same one. ``rng``: each rank's
    :func:`rng_state` in rank order (default: this process's); ``world_size``: the ranks.
    """
    return {"format": CHECKPOINT_FORMAT, "run_id": run_id, "config": config.to_dict(),
            "vocab_size": len(corpus.vocab), "train_tokens": corpus.train.numel(),
            "epoch": epoch, "position": position, "hidden": _to_cpu(hidden),
            "global_step": global_step, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict() if scaler.is_enabled() else None,
            "rng": rng if rng is not None else [rng_state(device)], "world_size": world_size}


@dataclass
class Start:
    """Where a run begins: epoch 1 from scratch, or the point a checkpoint was written."""

    epoch: int = 1
    position: int = 0  # window index inside ``epoch``
    hidden: Hidden | None = None  # carried state at ``position`` (None: zeros)
    global_step: int = 0
    last_good: int | None = None  # epoch of the checkpoint resumed from
    run_id: str | None = None  # the resumed run's id (None: a new run, or an older checkpoint)


def restore(path: Path, config: LMConfig, corpus: Corpus, model: nn.Module, optimizer, scaler,
            device: torch.device, world: World = World()) -> Start:
    """Load the checkpoint at ``path`` into model, optimiser, scaler and RNGs (this rank's);
    where to go on, with this rank's columns of the carried hidden state.

    Raises:
        UsageError: unreadable or mismatched checkpoint, one written by another number of
            processes, or nothing left to train.
    """
    state = load_checkpoint(path)
    check_resumable(state, config, corpus, path)
    saved_world = state.get("world_size", 1)
    if saved_world != world.size:
        raise UsageError(f"checkpoint {path} was written by a run on {saved_world} process(es); "
                         f"resume it with --nproc {saved_world} (this run has {world.size})")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scaler.is_enabled() and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    rng = state["rng"]  # a list in rank order; one dict in checkpoints written before that
    _set_rng_state(rng[world.rank] if isinstance(rng, list) else rng, device)
    start = Start(global_step=state["global_step"], last_good=state["epoch"], run_id=state.get("run_id"))
    if state["position"] is None:
        start.epoch = state["epoch"] + 1
    else:  # the checkpoint was cut inside an epoch: continue that epoch from its next window
        start.epoch, start.position = state["epoch"], state["position"]
        mine = columns(config.batch_size, world)
        hidden = state["hidden"]
        hidden = (tuple(h[:, mine].contiguous() for h in hidden) if isinstance(hidden, (tuple, list))
                  else hidden[:, mine].contiguous())
        start.hidden = _to_device(hidden, device)
    if start.epoch > config.epochs or (config.max_steps and start.global_step >= config.max_steps):
        raise UsageError(f"nothing to resume: {path} is at epoch {state['epoch']}, step "
                         f"{start.global_step}; raise --epochs or --max-steps to train further")
    return start
