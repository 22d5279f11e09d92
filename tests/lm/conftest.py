"""Shared fixtures: small synthetic corpora written to tmp_path, a tiny model configuration, and
src/ on the import path."""

import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
if str(SRC) not in sys.path:  # the package may not be installed in the test environment
    sys.path.insert(0, str(SRC))

WORDS = "the cat sat on a mat and the dog ran far away".split()


def pattern_text(n_lines: int, width: int = 8, offset: int = 0) -> str:
    """Lines of a repeating word pattern: an LSTM learns it quickly, so loss must fall."""
    lines = []
    for i in range(n_lines):
        lines.append(" ".join(WORDS[(i + j + offset) % len(WORDS)] for j in range(width)))
    return "\n".join(lines) + "\n"


@pytest.fixture
def word_dir(tmp_path: Path) -> Path:
    """train/valid/test.txt of a repeating pattern (about 4.5k/700/700 tokens, 11 types + <eos>)."""
    root = tmp_path / "words"
    root.mkdir()
    (root / "train.txt").write_text(pattern_text(500))
    (root / "valid.txt").write_text(pattern_text(80, offset=3))
    (root / "test.txt").write_text(pattern_text(80, offset=5))
    return root


@pytest.fixture
def char_file(tmp_path: Path) -> Path:
    """One text file of about 12k characters for the 90/5/5 character-level split."""
    path = tmp_path / "chars" / "input.txt"
    path.parent.mkdir()
    path.write_text("To be, or not to be, that is the question.\n" * 280)
    return path


@pytest.fixture
def tiny():
    """``tiny(**changes) -> LMConfig``: a model small enough that an epoch of the synthetic corpus
    takes milliseconds (the ``small`` preset, narrower, on the CPU)."""
    from rnnbench.lm.presets import get_preset

    def make(**changes):
        base = dict(emb_size=16, hidden_size=16, batch_size=8, bptt=16, lr=1e-2, dropout=0.1,
                    device="cpu")
        return get_preset("small").override(**{**base, **changes})

    return make
