"""A whole language-model run: set-up, resume, and the epoch loop that turns epochs into rows.

Every epoch trains over the training split (:func:`rnnbench.lm.loop.train_epoch`), evaluates on
the valid split (and on the last epoch the test split), and hands one result row and the
checkpoint to the run's :class:`rnnbench.lm.output.RunOutput`, the only writer. Speeds are
synchronised words per second (:class:`rnnbench.timing.PhaseClock`). Under torchrun (or
``--nproc``) every rank runs this with its share of the batch and rank 0 alone writes
(:mod:`rnnbench.lm.distributed`).
"""

from __future__ import annotations

import datetime
import math
import os
import time
import uuid
from dataclasses import dataclass

import torch
from torch import nn

from ..errors import UsageError
from ..paths import check_output_file
from ..precision import cpu_runs_bf16_rnn, device_supports, matmul_mode, resolve_device
from ..results import ResultsFile
from ..terminal import PLAIN_EVERY_S
from . import distributed
from .checkpoint import Start, checkpoint_state, restore, rng_state
from .data import Corpus, batchify
from .distributed import World
from .loop import (WARMUP_BATCHES, EpochStats, EvalStats, NonFiniteLossError, evaluate,
                   limit_reached, train_epoch)
from .memory import check_fits
from .model import Hidden, RNNModel, cell_name, check_lane
from .output import RunOutput
from .presets import LMConfig


def check_precision(config: LMConfig, device: torch.device) -> None:
    """Raise UsageError for an ``--amp``/``--tf32`` setting ``device`` cannot run."""
    if config.tf32 and device.type != "cuda":
        raise UsageError(f"--tf32 is a CUDA matmul mode; this run is on {device.type}")
    if config.amp == "fp16" and device.type != "cuda":
        # oneDNN's CPU RNN kernels have no float16 primitive; bf16 autocast does work there.
        raise UsageError("--amp fp16 needs CUDA; on the CPU use --amp bf16 or off")
    if config.amp == "bf16" and device.type == "cpu" and config.lane == "torch-nn" and not cpu_runs_bf16_rnn():
        raise UsageError("--amp bf16 --lane torch-nn: this CPU's oneDNN has no bfloat16 RNN primitive; "
                         "use --amp off or a per-step lane (torch-cell-loop, torch-fused-loop)")
    if config.amp != "off" and device.type == "cuda":
        reason = device_supports("cuda", config.amp)
        if reason:
            raise UsageError(f"--amp {config.amp}: {reason}")


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


@dataclass
class Setup:
    """What a run trains with: the device, the batchified splits on it, model and optimiser."""

    device: torch.device
    data: dict[str, torch.Tensor]  # "train" [S, batch_size], "valid"/"test" [S, eval_batch_size]
    model: RNNModel
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler  # a pass-through unless --amp fp16
    world: World = World()
    trainer: nn.Module | None = None  # what training calls: the model, or DDP around it


def split_data(config: LMConfig, corpus: Corpus, world: World) -> dict[str, torch.Tensor]:
    """The batchified splits, ``[S, batch]`` each, cut to this rank's columns.

    Raises:
        UsageError: a split too short, or a batch that does not divide among the ranks.
    """
    eval_batch = config.eval_batch_size or config.batch_size
    batches = {"train": (config.batch_size, "--batch-size"), "valid": (eval_batch, "--eval-batch-size"),
               "test": (eval_batch, "--eval-batch-size")}
    split = {"train": corpus.train, "valid": corpus.valid, "test": corpus.test}
    return {name: batchify(split[name], batch, name)[:, distributed.columns(batch, world, option)]
            for name, (batch, option) in batches.items()}


def prepare(config: LMConfig, corpus: Corpus, world: World = World()) -> Setup:
    """Check the device and the memory the run needs, move this rank's data there, build the
    seeded model (the same on every rank) and its optimiser.

    Raises:
        UsageError: precision or lane the device cannot run, no CUDA device, a model that cannot
            fit in the device's memory (estimated before anything is built), a split too short,
            a batch that does not divide among the ranks.
    """
    device = torch.device(resolve_device(config.device))
    check_precision(config, device)
    reason = check_lane(config.lane, cell_name(config.rnn)).unavailable(device.type)
    if reason:
        raise UsageError(f"lane {config.lane!r} {reason}")
    data = split_data(config, corpus, world)
    device = distributed.start(world, device)  # cuda:LOCAL_RANK under torchrun
    tokens = corpus.train.numel() + corpus.valid.numel() + corpus.test.numel()
    check_fits(config, len(corpus.vocab), device, tokens)
    data = {name: split.contiguous().to(device) for name, split in data.items()}
    torch.manual_seed(config.seed)  # also seeds every CUDA device
    model = build_model(config, len(corpus.vocab)).to(device)
    trainer = model
    if world.size > 1:
        from torch.nn.parallel import DistributedDataParallel

        trainer = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
        torch.manual_seed(config.seed + world.rank)  # each rank's own dropout masks from here on
    optimizer = make_optimizer(config, model)
    scaler = torch.amp.GradScaler(device.type, enabled=config.amp == "fp16")
    return Setup(device, data, model, optimizer, scaler, world, trainer)


def new_run_id() -> str:
    """A fresh run's id: 12 hex digits, kept in the checkpoint so a resumed run keeps it."""
    return uuid.uuid4().hex[:12]


def fixed_fields(config: LMConfig, corpus: Corpus, device: torch.device, env: dict,
                 labels: dict | None, run_id: str, world: World = World()) -> dict:
    """The fields every row of the run shares: run_id, configuration, labels, corpus sizes, env_id,
    and the data-parallel layout (``batch_size`` is the global batch, ``world_size`` processes
    of ``batch_size_per_rank`` streams each; the learning rate is not scaled: DDP averages the
    gradients over the global batch, as one process would)."""
    return {"record": "lm", "run_id": run_id, **config.to_dict(), **(labels or {}), "device": device.type,
            "precision": config.precision, "eval_batch_size": config.eval_batch_size or config.batch_size,
            "vocab_size": len(corpus.vocab), "train_tokens": corpus.train.numel(),
            "warmup_batches": WARMUP_BATCHES, "env_id": env["env_id"],
            "world_size": world.size, "batch_size_per_rank": config.batch_size // world.size,
            "lr_rule": "unscaled: gradients averaged over the global batch" if world.size > 1 else None}


def measurements(stats: EpochStats, valid: EvalStats, test: EvalStats | None,
                 device: torch.device, world: World = World()) -> dict:
    """The measured fields of a result row (speeds in words/s over all ranks, and per rank; times
    in ms or s; losses in nats)."""
    per_rank = None if stats.wps is None else stats.wps / world.size
    return {
        "steps": stats.steps, "train_wps": stats.wps, "train_wps_per_rank": per_rank,
        "eval_wps": valid.wps,
        "test_wps": test.wps if test else None,
        "ms_per_batch": stats.ms_per_batch, "eval_ms_per_batch": valid.ms_per_batch,
        "timed_batches": stats.timed_batches, "eval_timed_batches": valid.timed_batches,
        "train_seconds": stats.seconds, "train_loss": stats.loss,
        "valid_loss": valid.loss, "valid_ppl": valid.ppl,
        "test_loss": test.loss if test else None, "test_ppl": test.ppl if test else None,
        "peak_mem_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def row_status(valid: EvalStats, test: EvalStats | None) -> tuple[str, str | None]:
    """``("ok", None)``, or ``("diverged", why)`` when a perplexity is infinite or NaN.

    Such a perplexity is written as null (standard JSON, see :func:`rnnbench.results.finite`);
    the status and message keep the reason in the row. A NaN *training* loss never gets here:
    it stops the run (:class:`NonFiniteLossError`).
    """
    bad = [f"{name} perplexity is {stats.ppl} (mean loss {stats.loss:.4g} nats per token)"
           for name, stats in (("valid", valid), ("test", test))
           if stats is not None and not math.isfinite(stats.ppl)]
    return ("diverged", "; ".join(bad)) if bad else ("ok", None)


def run_epoch(setup: Setup, config: LMConfig, fixed: dict, output: RunOutput, *, epoch: int,
              global_step: int, position: int, hidden: Hidden | None,
              deadline: float | None) -> tuple[dict, EpochStats]:
    """Train ``epoch`` from window ``position`` on, evaluate, and return its row and stats.

    Raises:
        NonFiniteLossError: the training loss became NaN or infinite (the message says which
            checkpoint is left to resume from).
    """
    lr = epoch_lr(config, epoch)
    for group in setup.optimizer.param_groups:
        group["lr"] = lr
    try:
        stats = train_epoch(setup.trainer or setup.model, setup.optimizer, setup.scaler,
                            setup.data["train"], config, setup.device, epoch=epoch,
                            global_step=global_step, position=position, hidden=hidden,
                            deadline=deadline, progress=output, world=setup.world)
    except NonFiniteLossError as exc:
        raise NonFiniteLossError(f"{exc}; stopped, {output.kept()}; try a lower --lr or --clip") from None
    global_step += stats.steps
    stopped = stats.stopped or limit_reached(config, global_step, deadline)
    final = stopped is not None or epoch == config.epochs
    valid = evaluate(setup.model, setup.data["valid"], config.bptt, setup.device, config.amp, output,
                     f"epoch {epoch} valid", setup.world)
    test = (evaluate(setup.model, setup.data["test"], config.bptt, setup.device, config.amp, output, "test",
                     setup.world) if final else None)
    # start_step: where this row's training began. A resumed run that trains a segment again
    # (its checkpoint was not written) gives the same (run_id, epoch, start_step) as before.
    row = {**fixed, "epoch": epoch, "epoch_lr": lr, "start_step": global_step - stats.steps,
           "global_step": global_step,
           "partial": position > 0 or stats.position is not None, "stopped": stopped,
           "final": final, **measurements(stats, valid, test, setup.device, setup.world)}
    row["status"], row["message"] = row_status(valid, test)
    return row, stats


def train_lm(config: LMConfig, corpus: Corpus, *, results: ResultsFile | None = None,
             checkpoint: str | os.PathLike | None = None, resume: bool = False,
             labels: dict | None = None, env: dict | None = None,
             progress: bool | None = None, every_s: float = PLAIN_EVERY_S) -> list[dict]:
    """Train a language model on ``corpus`` as ``config`` says and measure it, epoch by epoch.

    Every epoch: train over the whole training split (or until ``max_steps``/``max_minutes``),
    evaluate on the valid split, and on the last epoch also on the test split; then append one
    ``{"record": "lm", ...}`` row to ``results`` and, once it is on disk, write the checkpoint
    (if ``checkpoint``). Both go through the run's :class:`RunOutput`, its only writer.

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
        every_s: without a bar, the longest silence between two progress lines (seconds).

    Returns:
        The rows written, one per epoch. Speeds are in words (predicted tokens) per second,
        synchronised, with the first :data:`WARMUP_BATCHES` batches of each phase left out.
        Under torchrun every rank returns the same rows; only rank 0 writes them.

    Raises:
        UsageError: bad configuration, lane unavailable on the device, split too short,
            a checkpoint path that cannot be written, unusable or mismatched checkpoint,
            nothing left to resume.
        CheckpointWriteError: the checkpoint could not be written mid-run (no ``.tmp`` is left).
        NonFiniteLossError: the training loss became NaN or infinite (nothing of that epoch is
            saved; the message names the last good checkpoint).
    """
    from ..env import environment

    if checkpoint is not None:  # before any work, not after an epoch (the CLI checked it too)
        checkpoint = check_output_file(checkpoint, "--checkpoint")
    world = distributed.current_world()
    try:
        return _train(config, corpus, world, results, checkpoint, resume, labels,
                      env or environment(), progress, every_s)
    finally:
        distributed.stop()


def _train(config: LMConfig, corpus: Corpus, world: World, results: ResultsFile | None,
           checkpoint, resume: bool, labels: dict | None, env: dict, progress: bool | None,
           every_s: float) -> list[dict]:
    """:func:`train_lm`'s run on this rank, once the checkpoint path is checked."""
    setup = prepare(config, corpus, world)
    start = Start()
    if resume:
        if checkpoint is None:
            raise UsageError("--resume needs --checkpoint PATH")
        start = restore(checkpoint, config, corpus, setup.model, setup.optimizer, setup.scaler,
                        setup.device, world)
    run_id = start.run_id or new_run_id()
    if world.size > 1:  # rank 0's id names the run everywhere (rows are written by rank 0 alone)
        run_id = distributed.gather_objects(run_id, world)[0]
    fixed = fixed_fields(config, corpus, setup.device, env, labels, run_id, world)
    if setup.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(setup.device)
    deadline = None if config.max_minutes is None else time.perf_counter() + 60 * config.max_minutes
    position, hidden, global_step = start.position, start.hidden, start.global_step
    rows: list[dict] = []
    writer = (RunOutput(results, checkpoint, live=progress, every_s=every_s) if world.main
              else RunOutput(quiet=True))
    with matmul_mode("tf32" if config.tf32 else "fp32"), writer as output:
        output.begin(env, start.last_good)
        for epoch in range(start.epoch, config.epochs + 1):
            row, stats = run_epoch(setup, config, fixed, output, epoch=epoch, global_step=global_step,
                                   position=position, hidden=hidden, deadline=deadline)
            global_step = row["global_step"]
            output.epoch_done(row, _state_of_all_ranks(setup, config, corpus, checkpoint, epoch, stats,
                                                       global_step, run_id))
            rows.append(row)
            if row["final"]:
                break
            position, hidden = 0, None
    return rows


def _state_of_all_ranks(setup: Setup, config: LMConfig, corpus: Corpus, checkpoint, epoch: int,
                        stats, global_step: int, run_id: str):
    """The checkpoint's builder for rank 0, or None when the run keeps no checkpoint. Every rank
    takes part in gathering what it holds alone (its columns of the carried hidden state, its
    random generators) now, whether or not it writes, since a gather is a collective."""
    world = setup.world
    if checkpoint is None:
        return None
    hidden = stats.hidden
    if hidden is not None:
        hidden = (tuple(distributed.gather_columns(h, world) for h in hidden) if isinstance(hidden, tuple)
                  else distributed.gather_columns(hidden, world))
    rngs = distributed.gather_objects(rng_state(setup.device), world)
    return lambda: checkpoint_state(
        config, corpus, setup.model, setup.optimizer, setup.scaler, setup.device, epoch=epoch,
        position=stats.position, hidden=hidden, global_step=global_step, run_id=run_id,
        rng=rngs, world_size=world.size)
