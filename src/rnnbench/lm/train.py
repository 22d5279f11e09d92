"""Training loop of the language-model benchmark: truncated BPTT, synchronised words per second.

The loop is the PyTorch word_language_model example's (and Zaremba et al. 2014's): the corpus is
cut into ``batch_size`` parallel streams, read ``bptt`` tokens at a time, and the hidden state is
carried from one window to the next with its history cut (detached). What this module adds is
measurement and reliability:

- **words per second** of training and of evaluation, each read from a clock that is started and
  stopped only after ``torch.cuda.synchronize()`` (:func:`rnnbench.timing.synchronize`), with the first
  :data:`WARMUP_BATCHES` batches of every phase left out. A "word" is one predicted token: a
  window of length T over B streams counts T x B (the last, shorter window by its real length);
  at character level the same figure counts characters.
- a **result row** per epoch, appended and flushed at once (:class:`rnnbench.results.ResultsFile`),
  so an interrupted run keeps every finished epoch;
- a **checkpoint** per epoch written atomically (temporary file, then ``os.replace``), from which
  ``resume=True`` continues with the same data order and random stream as an uninterrupted run;
- a **NaN or infinite loss** stops the run with :class:`NonFiniteLossError` before anything of the
  bad epoch is saved, so the last checkpoint is the last good one.
"""

from __future__ import annotations

import datetime
import math
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UsageError
from ..precision import device_supports, matmul_mode, resolve_device
from ..results import ResultsFile
from ..timing import PHASE_WARMUP_BATCHES, PhaseClock
from .data import Corpus, batchify, get_batch, window_starts
from .model import Hidden, RNNModel, cell_name, check_lane, detach_hidden
from .presets import LMConfig

# Batches at the start of every phase (an epoch's training, one evaluation pass) left out of the
# words/s figure (rnnbench.timing.PhaseClock's default). With fewer batches than this in a phase,
# all but the last one are skipped.
WARMUP_BATCHES = PHASE_WARMUP_BATCHES
# The running loss is read (one device synchronisation) every this many training batches, to
# show progress and to catch a NaN early without stalling the GPU's queue after every batch.
LOSS_READ_EVERY = 20
CHECKPOINT_FORMAT = "rnnbench-lm-checkpoint-1"
# Fields a checkpoint must agree on with the run that resumes it: they fix the parameters'
# shapes and names, the optimiser's state layout and the order in which data is read.
RESUME_FIELDS = ("rnn", "emb_size", "hidden_size", "num_layers", "tied", "lane", "optimizer",
                 "batch_size", "bptt", "eval_batch_size")


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite. The command line reports it in one line and
    exits with code 1; the last checkpoint written (if any) is from the last good epoch."""


# --------------------------------------------------------------------------------------------
# Device and precision


def _check_precision(config: LMConfig, device: torch.device) -> None:
    if config.tf32 and device.type != "cuda":
        raise UsageError(f"--tf32 is a CUDA matmul mode; this run is on {device.type}")
    if config.amp == "fp16" and device.type != "cuda":
        # oneDNN's CPU RNN kernels have no float16 primitive; bf16 autocast does work there.
        raise UsageError("--amp fp16 needs CUDA; on the CPU use --amp bf16 or off")
    if config.amp != "off" and device.type == "cuda":
        reason = device_supports("cuda", config.amp)
        if reason:
            raise UsageError(f"--amp {config.amp}: {reason}")


def autocast(device: torch.device, amp: str):
    """``torch.autocast`` for ``amp`` = bf16 or fp16, a no-op context for ``off``."""
    if amp == "off":
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if amp == "bf16" else torch.float16)


# --------------------------------------------------------------------------------------------
# Progress display


class ProgressView:
    """A rich progress bar (live words/s and loss) on a terminal; one plain line per epoch else."""

    def __init__(self, enabled: bool | None = None):
        from rich.console import Console

        self.console = Console()
        self.live = self.console.is_terminal if enabled is None else enabled
        self.progress = None
        self.task = None

    def __enter__(self) -> "ProgressView":
        if self.live:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                                     TimeElapsedColumn(), console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task("", total=1, info="")
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def phase(self, description: str, total: int) -> None:
        if self.progress is not None:
            self.progress.reset(self.task, total=total, description=description, info="")

    def advance(self, info: str | None = None) -> None:
        if self.progress is not None:
            fields = {} if info is None else {"info": info}
            self.progress.update(self.task, advance=1, **fields)

    def line(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text, highlight=False)
        else:
            print(text, flush=True)


def epoch_summary(row: dict) -> str:
    """One line per epoch: ``epoch 2/10 steps 13 train 512,345 words/s ...``."""
    def num(value, fmt):
        return "-" if value is None else format(value, fmt)

    text = (f"epoch {row['epoch']}/{row['epochs']}  steps {row['steps']}  "
            f"train {num(row['train_wps'], ',.0f')} words/s  eval {num(row['eval_wps'], ',.0f')} words/s  "
            f"{num(row['ms_per_batch'], '.2f')} ms/batch  loss {num(row['train_loss'], '.3f')}  "
            f"valid ppl {num(row['valid_ppl'], '.2f')}")
    if row.get("test_ppl") is not None:
        text += f"  test ppl {row['test_ppl']:.2f}"
    if row.get("stopped"):
        text += f"  (stopped: {row['stopped']})"
    return text


# --------------------------------------------------------------------------------------------
# One epoch of training, one evaluation pass


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


def _check_finite(loss_sum: torch.Tensor, tokens: int, epoch: int, step: int) -> float:
    """The mean loss so far; raises NonFiniteLossError when it is NaN or infinite."""
    mean = loss_sum.item() / max(tokens, 1)  # .item() synchronises
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


def train_epoch(model: RNNModel, optimizer: torch.optim.Optimizer, scaler, data: torch.Tensor,
                config: LMConfig, device: torch.device, *, epoch: int, global_step: int,
                position: int = 0, hidden: Hidden | None = None, deadline: float | None = None,
                view: ProgressView | None = None) -> EpochStats:
    """Train over the windows of ``data [S, B]`` from window index ``position`` on.

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
    hidden = model.init_hidden(data.size(1)) if hidden is None else hidden
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    tokens = steps = 0
    stopped = None
    t0 = time.perf_counter()
    if view:
        view.phase(f"epoch {epoch} train", planned)
    for index in range(position, len(starts)):
        x, y = get_batch(data, starts[index], config.bptt)
        loss, hidden = train_step(model, optimizer, scaler, x, y, hidden, config, device)
        loss_sum += loss.double() * y.numel()
        tokens += y.numel()
        steps += 1
        clock.batch_done(y.numel())
        info = None
        if steps % LOSS_READ_EVERY == 0:
            mean = _check_finite(loss_sum, tokens, epoch, global_step + steps)
            info = f"{tokens / (time.perf_counter() - t0):,.0f} words/s  loss {mean:.3f}"
        if view:
            view.advance(info)
        if index + 1 < len(starts):
            if config.max_steps is not None and global_step + steps >= config.max_steps:
                stopped = "max_steps"
            elif deadline is not None and time.perf_counter() > deadline:
                stopped = "max_minutes"
            if stopped:
                break
    wps, ms = clock.stop()
    mean = _check_finite(loss_sum, tokens, epoch, global_step + steps) if steps else None
    return EpochStats(steps, mean, wps, ms, clock.batches, time.perf_counter() - t0, stopped,
                      index + 1 if stopped else None, detach_hidden(hidden) if stopped else None)


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
        """Perplexity = exp(mean NLL per token); inf when the loss overflows exp."""
        return math.exp(self.loss) if self.loss < 700 else math.inf


@torch.no_grad()
def evaluate(model: RNNModel, data: torch.Tensor, bptt: int, device: torch.device, amp: str = "off",
             view: ProgressView | None = None, label: str = "eval") -> EvalStats:
    """Forward-only pass over ``data [S, B]`` in windows of ``bptt``, the state carried along.

    Perplexity follows the PyTorch example: the summed NLL of every predicted token divided by
    their number, then exponentiated. Dropout is off (``model.eval()``).
    """
    model.eval()
    starts = window_starts(data, bptt)
    clock = PhaseClock(device, len(starts), WARMUP_BATCHES)
    hidden = model.init_hidden(data.size(1))
    nll_sum = torch.zeros((), device=device, dtype=torch.float64)
    tokens = 0
    if view:
        view.phase(label, len(starts))
    for i in starts:
        x, y = get_batch(data, i, bptt)
        with autocast(device, amp):
            logits, hidden = model(x, hidden)
        nll_sum += F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="sum").double()
        tokens += y.numel()
        clock.batch_done(y.numel())
        if view:
            view.advance()
    wps, ms = clock.stop()
    return EvalStats(nll_sum.item() / tokens, wps, ms, clock.batches, tokens)


# --------------------------------------------------------------------------------------------
# Checkpoints


def save_checkpoint(path: Path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically: a crash mid-write leaves the previous file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Raises:
        UsageError: no file, or not an rnnbench LM checkpoint.
    """
    if not path.is_file():
        raise UsageError(f"no checkpoint at {path} to resume from")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle, zip or torch errors all mean "not a checkpoint of ours"
        raise UsageError(f"{path} is not a readable checkpoint ({type(exc).__name__})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise UsageError(f"{path} is not an rnnbench language-model checkpoint")
    return state


def _check_resumable(state: dict, config: LMConfig, corpus: Corpus, path: Path) -> None:
    saved = state["config"]
    for name in RESUME_FIELDS:
        if saved.get(name) != getattr(config, name):
            raise UsageError(f"checkpoint {path} has {name}={saved.get(name)!r}, this run "
                             f"{getattr(config, name)!r}; they must match to resume")
    if state["vocab_size"] != len(corpus.vocab) or state["train_tokens"] != corpus.train.numel():
        raise UsageError(f"checkpoint {path} was trained on another corpus (vocabulary "
                         f"{state['vocab_size']}, this one {len(corpus.vocab)})")


def _rng_state(device: torch.device) -> dict:
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
                     device: torch.device, epoch: int, stats: EpochStats, global_step: int) -> dict:
    """Everything :func:`restore` needs to continue exactly where this epoch (or part) ended."""
    return {"format": CHECKPOINT_FORMAT, "config": config.to_dict(),
            "vocab_size": len(corpus.vocab), "train_tokens": corpus.train.numel(),
            "epoch": epoch, "position": stats.position, "hidden": _to_cpu(stats.hidden),
            "global_step": global_step, "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict() if scaler.is_enabled() else None,
            "rng": _rng_state(device)}


@dataclass
class Start:
    """Where a run begins: epoch 1 from scratch, or the point a checkpoint was written."""

    epoch: int = 1
    position: int = 0  # window index inside ``epoch``
    hidden: Hidden | None = None  # carried state at ``position`` (None: zeros)
    global_step: int = 0
    last_good: int | None = None  # epoch of the checkpoint resumed from


def restore(path: Path, config: LMConfig, corpus: Corpus, model: nn.Module, optimizer, scaler,
            device: torch.device) -> Start:
    """Load the checkpoint at ``path`` into model, optimiser, scaler and RNGs; where to go on.

    Raises:
        UsageError: unreadable or mismatched checkpoint, or nothing left to train.
    """
    state = load_checkpoint(path)
    _check_resumable(state, config, corpus, path)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scaler.is_enabled() and state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    _set_rng_state(state["rng"], device)
    start = Start(global_step=state["global_step"], last_good=state["epoch"])
    if state["position"] is None:
        start.epoch = state["epoch"] + 1
    else:  # the checkpoint was cut inside an epoch: continue that epoch from its next window
        start.epoch, start.position = state["epoch"], state["position"]
        start.hidden = _to_device(state["hidden"], device)
    if start.epoch > config.epochs or (config.max_steps and start.global_step >= config.max_steps):
        raise UsageError(f"nothing to resume: {path} is at epoch {state['epoch']}, step "
                         f"{start.global_step}; raise --epochs or --max-steps to train further")
    return start


def measurements(stats: EpochStats, valid: EvalStats, test: EvalStats | None,
                 device: torch.device) -> dict:
    """The measured fields of a result row (speeds in words/s, times in ms or s, losses in nats)."""
    return {
        "steps": stats.steps, "train_wps": stats.wps, "eval_wps": valid.wps,
        "test_wps": test.wps if test else None,
        "ms_per_batch": stats.ms_per_batch, "eval_ms_per_batch": valid.ms_per_batch,
        "timed_batches": stats.timed_batches, "eval_timed_batches": valid.timed_batches,
        "train_seconds": stats.seconds, "train_loss": stats.loss,
        "valid_loss": valid.loss, "valid_ppl": valid.ppl,
        "test_loss": test.loss if test else None, "test_ppl": test.ppl if test else None,
        "peak_mem_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


# --------------------------------------------------------------------------------------------
# The whole run


def epoch_lr(config: LMConfig, epoch: int) -> float:
    """Learning rate of ``epoch`` (1-based): ``lr * lr_decay ** max(epoch - lr_decay_after, 0)``,
    the schedule of Zaremba et al. 2014 (constant for 14 epochs, then / 1.15 per epoch)."""
    return config.lr * config.lr_decay ** max(epoch - config.lr_decay_after, 0)


def make_optimizer(config: LMConfig, model: nn.Module) -> torch.optim.Optimizer:
    """Plain SGD (Zaremba et al. 2014) or Adam (seed 002) over the model's parameters."""
    if config.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=config.lr)
    return torch.optim.Adam(model.parameters(), lr=config.lr)


def build_model(config: LMConfig, vocab_size: int) -> RNNModel:
    """The :class:`RNNModel` of ``config`` on the CPU (UsageError for bad combinations)."""
    return RNNModel(vocab_size, config.rnn, config.emb_size, config.hidden_size, config.num_layers,
                    config.dropout, config.tied, config.lane, config.init_range, config.init_rnn)


def train_lm(config: LMConfig, corpus: Corpus, *, results: ResultsFile | None = None,
             checkpoint: str | os.PathLike | None = None, resume: bool = False,
             labels: dict | None = None, env: dict | None = None,
             progress: bool | None = None) -> list[dict]:
    """Train a language model on ``corpus`` as ``config`` says and measure it, epoch by epoch.

    Every epoch: train over the whole training split (or until ``max_steps``/``max_minutes``),
    evaluate on the valid split, and on the last epoch also on the test split; then write the
    checkpoint (if ``checkpoint``) and append one ``{"record": "lm", ...}`` row to ``results``.

    Args:
        config: the run's settings (a preset with overrides).
        corpus: token streams from :func:`rnnbench.lm.data.load_corpus`.
        results: where rows go; its env record is written first. None: rows only returned.
        checkpoint: file for the per-epoch checkpoint (None: no checkpoint).
        resume: continue from ``checkpoint`` (same data order and random stream as a run that
            was never stopped; ``epochs``/``max_steps``/``lr`` may be raised).
        labels: extra fields for every row (``dataset``, ``dataset_note``, ``level``, ``data_dir``).
        env: the environment record (default: :func:`rnnbench.env.environment`).
        progress: True/False forces the rich progress bar on/off; None: on for a terminal.

    Returns:
        The rows written, one per epoch. Speeds are in words (predicted tokens) per second,
        synchronised, with the first :data:`WARMUP_BATCHES` batches of each phase left out.

    Raises:
        UsageError: bad configuration, lane unavailable on the device, split too short,
            unusable or mismatched checkpoint, nothing left to resume.
        NonFiniteLossError: the training loss became NaN or infinite (nothing of that epoch is
            saved; the message names the last good checkpoint).
    """
    from ..env import environment

    device = torch.device(resolve_device(config.device))
    _check_precision(config, device)
    reason = check_lane(config.lane, cell_name(config.rnn)).unavailable(device.type)
    if reason:
        raise UsageError(f"lane {config.lane!r} {reason}")
    eval_batch = config.eval_batch_size or config.batch_size
    data = {"train": batchify(corpus.train, config.batch_size, "train").to(device),
            "valid": batchify(corpus.valid, eval_batch, "valid").to(device),
            "test": batchify(corpus.test, eval_batch, "test").to(device)}

    torch.manual_seed(config.seed)  # also seeds every CUDA device
    model = build_model(config, len(corpus.vocab)).to(device)
    optimizer = make_optimizer(config, model)
    scaler = torch.amp.GradScaler(device.type, enabled=config.amp == "fp16")

    checkpoint = Path(checkpoint) if checkpoint is not None else None
    start = Start()
    if resume:
        if checkpoint is None:
            raise UsageError("--resume needs --checkpoint PATH")
        start = restore(checkpoint, config, corpus, model, optimizer, scaler, device)
    position, hidden, global_step, last_good = start.position, start.hidden, start.global_step, start.last_good

    env = env or environment()
    if results is not None:
        results.write_env(env)
    fixed = {"record": "lm", **config.to_dict(), **(labels or {}), "device": device.type,
             "precision": config.precision, "eval_batch_size": eval_batch,
             "vocab_size": len(corpus.vocab), "train_tokens": corpus.train.numel(),
             "warmup_batches": WARMUP_BATCHES, "env_id": env["env_id"]}
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    deadline = None if config.max_minutes is None else time.perf_counter() + 60 * config.max_minutes
    rows: list[dict] = []

    with matmul_mode("tf32" if config.tf32 else "fp32"), ProgressView(progress) as view:
        for epoch in range(start.epoch, config.epochs + 1):
            lr = epoch_lr(config, epoch)
            for group in optimizer.param_groups:
                group["lr"] = lr
            try:
                stats = train_epoch(model, optimizer, scaler, data["train"], config, device,
                                    epoch=epoch, global_step=global_step, position=position,
                                    hidden=hidden, deadline=deadline, view=view)
            except NonFiniteLossError as exc:
                kept = (f"last good checkpoint {checkpoint} (epoch {last_good})"
                        if checkpoint is not None and last_good is not None else "no checkpoint kept")
                raise NonFiniteLossError(f"{exc}; stopped, {kept}; try a lower --lr or --clip") from None
            global_step += stats.steps
            stopped = stats.stopped
            if stopped is None and config.max_steps is not None and global_step >= config.max_steps:
                stopped = "max_steps"
            if stopped is None and deadline is not None and time.perf_counter() > deadline:
                stopped = "max_minutes"
            final = stopped is not None or epoch == config.epochs

            valid = evaluate(model, data["valid"], config.bptt, device, config.amp, view, f"epoch {epoch} valid")
            test = evaluate(model, data["test"], config.bptt, device, config.amp, view, "test") if final else None
            row = {**fixed, "epoch": epoch, "epoch_lr": lr, "global_step": global_step,
                   "partial": position > 0 or stats.position is not None, "stopped": stopped,
                   "final": final, **measurements(stats, valid, test, device)}
            if checkpoint is not None:
                save_checkpoint(checkpoint, checkpoint_state(config, corpus, model, optimizer, scaler,
                                                             device, epoch, stats, global_step))
                last_good = epoch
            if results is not None:
                results.append(row)
            rows.append(row)
            view.line(epoch_summary(row))
            if final:
                break
            position, hidden = 0, None
    return rows
