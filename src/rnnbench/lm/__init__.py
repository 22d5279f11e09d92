"""The language-model benchmark (``rnnbench lm``): words per second of a whole training loop.

A word-level (or character-level) recurrent language model is trained with truncated
backpropagation through time, as in the PyTorch word_language_model example and Zaremba et al.
(2014); the recurrent layers come from a lane (:mod:`rnnbench.lanes`), so the same loop times
cuDNN, a Python cell loop, or any other implementation. One file per concern:

- :mod:`.data`: corpora, vocabulary, ``batchify``/``get_batch``, the dataset cache.
- :mod:`.model`: embedding -> lane's recurrent layers -> dropout -> decoder.
- :mod:`.presets`: configurations as data (``small``, ``kawakami-2017``, ``zaremba-large``).
- :mod:`.loop`: one training epoch and one evaluation pass, timed by the package's synchronised
  :class:`rnnbench.timing.PhaseClock`.
- :mod:`.checkpoint`: save, load, and resume where a run stopped.
- :mod:`.output`: :class:`RunOutput`, the one writer of rows, checkpoints and progress lines.
- :mod:`.run`: :func:`train_lm`, set-up and the epoch loop.
- :mod:`.report`: a table of result rows.
- :mod:`.cli`: the ``lm`` command's options.

The names below are the package's public API (``from rnnbench.lm import train_lm``).
"""

from .checkpoint import CHECKPOINT_FORMAT, RESUME_FIELDS, Start, checkpoint_state, load_checkpoint, restore, save_checkpoint
from .data import Corpus, batchify, get_batch, load_corpus
from .loop import (LOSS_READ_EVERY, WARMUP_BATCHES, EpochStats, EvalStats, NonFiniteLossError, autocast,
                   evaluate, train_epoch, train_step)
from .model import RNNModel
from .output import RunOutput, epoch_summary
from .presets import PRESETS, LMConfig, get_preset
from .run import build_model, epoch_lr, make_optimizer, measurements, train_lm

__all__ = ["CHECKPOINT_FORMAT", "LOSS_READ_EVERY", "PRESETS", "RESUME_FIELDS", "WARMUP_BATCHES", "Corpus",
           "EpochStats", "EvalStats", "LMConfig", "NonFiniteLossError", "RNNModel", "RunOutput", "Start",
           "autocast", "batchify", "build_model", "checkpoint_state", "epoch_lr", "epoch_summary", "evaluate",
           "get_batch", "get_preset", "load_checkpoint", "load_corpus", "make_optimizer", "measurements",
           "restore", "save_checkpoint", "train_epoch", "train_lm", "train_step"]
