"""Corpus loading, batching and the dataset cache."""

import urllib.error
from pathlib import Path

import pytest
import torch

from rnnbench.errors import UsageError
from rnnbench.lm import data
from rnnbench.lm.data import EOS, batchify, fetch_dataset, get_batch, load_corpus


def test_word_corpus_appends_eos_and_shares_one_vocabulary(tmp_path):
    (tmp_path / "train.txt").write_text("a b\n\nc\n")
    (tmp_path / "valid.txt").write_text("b d\n")
    (tmp_path / "test.txt").write_text("a")  # no final newline: still one line with <eos>
    corpus = load_corpus(tmp_path, "word")
    itos = corpus.vocab.itos
    assert itos == ["a", "b", EOS, "c", "d"]  # first-appearance order over train, valid, test
    assert [itos[i] for i in corpus.train.tolist()] == ["a", "b", EOS, EOS, "c", EOS]
    assert [itos[i] for i in corpus.valid.tolist()] == ["b", "d", EOS]
    assert [itos[i] for i in corpus.test.tolist()] == ["a", EOS]
    assert corpus.train.dtype == torch.int64


def test_wikitext_token_layout_is_found(tmp_path):
    for split in ("train", "valid", "test"):
        (tmp_path / f"wiki.{split}.tokens").write_text(f" = {split} = \n")
    corpus = load_corpus(tmp_path, "word")
    assert corpus.files["valid"].name == "wiki.valid.tokens"
    assert len(corpus.train) == 4  # "=", "train", "=", "<eos>"


def test_char_level_splits_one_file_90_5_5(char_file):
    corpus = load_corpus(char_file.parent, "char")  # the directory holding input.txt
    text = char_file.read_text()
    n = len(text)
    assert (len(corpus.train), len(corpus.valid)) == (int(n * 0.9), int(n * 0.05))
    assert len(corpus.train) + len(corpus.valid) + len(corpus.test) == n
    assert corpus.vocab.itos == sorted(set(text))
    decoded = "".join(corpus.vocab.itos[i] for i in corpus.test.tolist())
    assert text.endswith(decoded)
    assert load_corpus(char_file, "char").vocab.itos == corpus.vocab.itos  # the file itself works


def test_batchify_makes_contiguous_columns_and_get_batch_shifts_by_one():
    ids = torch.arange(23)
    source = batchify(ids, 4)
    assert source.shape == (5, 4)  # 23 // 4 rows, the last 3 tokens dropped
    assert source[:, 1].tolist() == [5, 6, 7, 8, 9]  # column b continues one stretch of text
    x, y = get_batch(source, 0, 3)
    assert x.shape == y.shape == (3, 4)
    assert torch.equal(y, source[1:4])
    x, y = get_batch(source, 3, 3)  # last window: only S - 1 - i = 1 step left
    assert x.shape == (1, 4) and torch.equal(y[0], source[4])


def test_batchify_rejects_a_split_too_short():
    with pytest.raises(UsageError, match="valid split has 5 tokens"):
        batchify(torch.arange(5), 4, "valid")


# --- every kind of bad input names the file ---------------------------------------------------

def _three(tmp_path: Path) -> Path:
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("a b c\n")
    return tmp_path


def test_missing_directory(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(UsageError, match=str(missing)):
        load_corpus(missing)


def test_missing_file(tmp_path):
    (_three(tmp_path) / "valid.txt").unlink()
    with pytest.raises(UsageError, match=r"missing file .*valid\.txt") as info:
        load_corpus(tmp_path)
    assert "\n" not in str(info.value)


def test_directory_without_any_layout(tmp_path):
    with pytest.raises(UsageError, match=r"missing file .*train\.txt.*--level char"):
        load_corpus(tmp_path)


def test_empty_file(tmp_path):
    (_three(tmp_path) / "test.txt").write_text("  \n\n")
    with pytest.raises(UsageError, match=r"test\.txt is empty"):
        load_corpus(tmp_path)


def test_non_utf8_file(tmp_path):
    (_three(tmp_path) / "train.txt").write_bytes("caf\u00e9 ok\n".encode("latin-1"))
    with pytest.raises(UsageError, match=r"train\.txt is not UTF-8 text \(bad byte at offset 3\)"):
        load_corpus(tmp_path)


def test_binary_file(tmp_path):
    (_three(tmp_path) / "valid.txt").write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(UsageError, match=r"valid\.txt holds NUL bytes"):
        load_corpus(tmp_path)


def test_char_level_missing_input(tmp_path):
    with pytest.raises(UsageError, match=r"missing file .*input\.txt"):
        load_corpus(tmp_path, "char")


def test_unknown_level(tmp_path):
    with pytest.raises(UsageError, match="unknown level"):
        load_corpus(_three(tmp_path), "byte")


# --- named datasets ----------------------------------------------------------------------------

def test_offline_download_says_which_files_to_put_where(tmp_path, monkeypatch):
    monkeypatch.setenv("RNNBENCH_CACHE", str(tmp_path / "cache"))

    def offline(url, dest, timeout=None):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(data, "download", offline)
    with pytest.raises(UsageError) as info:
        fetch_dataset("wikitext-2")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("offline")
    assert f"put train.txt, valid.txt and test.txt of wikitext-2 in {tmp_path / 'cache' / 'wikitext-2'}" in message
    assert "--data-dir" in message
    with pytest.raises(UsageError, match=r"put input\.txt of tinyshakespeare in"):
        fetch_dataset("tinyshakespeare")


def test_download_happens_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RNNBENCH_CACHE", str(tmp_path))
    calls = []

    def fake(url, dest, timeout=None):
        calls.append(url)
        dest.write_text("a b\n")

    monkeypatch.setattr(data, "download", fake)
    first = fetch_dataset("ptb")
    assert first == tmp_path / "ptb" and len(calls) == 3
    assert all(url.startswith("https://") for url in calls)
    assert fetch_dataset("ptb") == first and len(calls) == 3  # cached: no second download
    assert len(load_corpus(first).vocab) == 3


def test_unknown_dataset():
    with pytest.raises(UsageError, match="unknown dataset 'imagenet'"):
        fetch_dataset("imagenet")
