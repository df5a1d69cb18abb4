"""The token cache on several cores and in several processes (glassformer/data/token_cache.py,
tokenizers/parallel.py, data/cache_lock.py): worker processes give the tokens of encoding in
one process; an error or Ctrl-C leaves no token file and no worker; of two processes that want
the same token file, one encodes it and the other waits, then reads it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

import glassformer.data.documents as documents
import glassformer.data.token_cache as tc
import glassformer.tokenizers.parallel as parallel
from glassformer.data.documents import Documents, TextPart
from glassformer.progress import Work
from glassformer.tokenizers import HFTokenizer, get_tokenizer

from .racing import race

LINE = "To be, or not to be: that is the qu\u00e9stion. Whether 'tis nobler 123,456!\n"
TEXT = LINE * 40  # 2,960 characters: 80 pieces of about 37


@dataclass(frozen=True)
class Texts(Documents):
    """Documents held in memory, one string each."""

    texts: tuple[str, ...]
    cache: str | None = None

    def identity(self) -> dict[str, Any]:
        return {"texts": list(self.texts)}

    def documents(self) -> Iterator[Iterator[str]]:
        for text in self.texts:
            yield iter([text])

    @property
    def chars(self) -> int:
        return sum(map(len, self.texts))

    @property
    def label(self) -> str:
        return f"{len(self.texts)} texts"

    @property
    def name(self) -> str:
        return "texts"


@pytest.fixture
def small(monkeypatch):
    """Small blocks and pieces, so that a short text is encoded in many pieces by 2 workers
    (on a machine of one CPU too)."""
    monkeypatch.setattr(documents, "READ_BYTES", 13)
    monkeypatch.setattr(tc, "ENCODE_CHARS", 37)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)


@pytest.fixture
def pools(monkeypatch):
    """The worker pools started, with their workers' process ids."""
    started = []

    class Recorded(parallel.EncodePool):
        def __init__(self, *args):
            super().__init__(*args)
            started.append(self)

    monkeypatch.setattr(tc, "EncodePool", Recorded)
    return started


def hf_bpe() -> HFTokenizer:
    """A byte-level BPE tokenizer.json, trained here by the tokenizers library."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    t.train_from_iterator([LINE], trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet))
    return HFTokenizer.from_str(t.to_str())


def trained(kind: str):
    if kind == "hf":
        return hf_bpe()
    options = {"vocab_size": 300} if kind == "bpe" else {}
    return get_tokenizer(kind).train([TEXT], **options)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("kind", ["char", "word", "bpe", "hf"])
def test_two_workers_give_the_tokens_of_one_process(kind, small, pools, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    tokenizer = trained(kind)
    batches = []
    if kind == "hf":  # the library's batch encoder, several pieces a call
        encode_batch = tokenizer.encode_batch
        monkeypatch.setattr(
            tokenizer, "encode_batch", lambda t: batches.append(t) or encode_batch(t)
        )
    one = tc.token_file(
        TextPart(str(corpus), 0, len(TEXT), str(tmp_path / "one")), tokenizer, workers=1
    )
    assert pools == []
    batches.clear()
    two = tc.token_file(
        TextPart(str(corpus), 0, len(TEXT), str(tmp_path / "two")), tokenizer, workers=2
    )
    assert one.tolist() == two.tolist() == tokenizer.encode(TEXT, add_bos=True, add_eos=True)
    if kind == "hf":
        assert pools == [] and len(batches) > 40 and all(len(b) >= 2 for b in batches[:-1])
    else:
        [pool] = pools
        assert len(pool.pids) == 2 and all(map(gone, pool.pids))

    # many documents, short and long, batched together across their <BOS> ... <EOS>
    texts = (*(TEXT[: 7 * k] for k in range(30)), TEXT)
    source = Texts(texts, str(tmp_path / "texts"))
    expected = [i for t in texts for i in tokenizer.encode(t, add_bos=True, add_eos=True)]
    assert tc.token_file(source, tokenizer, workers=2).tolist() == expected


def test_a_worker_error_leaves_no_token_file_and_no_worker(small, pools, tmp_path):
    tokenizer = trained("bpe")
    source = Texts((TEXT, TEXT + " a lone surrogate: \ud800 " + TEXT), str(tmp_path / "tokens"))
    with pytest.raises(ValueError, match=r"^text contains '\\ud800', a lone surrogate: "):
        tc.token_file(source, tokenizer, workers=2)
    assert list((tmp_path / "tokens").iterdir()) == []  # no token file, temporary or lock file
    [pool] = pools
    assert all(map(gone, pool.pids))


def test_ctrl_c_while_workers_encode_leaves_no_token_file_and_no_worker(
    small, pools, tmp_path, monkeypatch
):
    class Interrupted(Work):
        def update(self, n):
            super().update(n)
            if self.done > 500:
                raise KeyboardInterrupt

    monkeypatch.setattr(tc, "Work", Interrupted)
    source = Texts((TEXT,), str(tmp_path / "tokens"))
    with pytest.raises(KeyboardInterrupt):
        tc.token_file(source, trained("char"), workers=2)
    assert list((tmp_path / "tokens").iterdir()) == []
    [pool] = pools
    assert all(map(gone, pool.pids))


def test_the_workers_setting_is_checked(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 4)
    assert tc.encode_workers(2) == 2 and tc.encode_workers(9) == 4 and tc.encode_workers() == 4
    monkeypatch.setenv(tc.WORKERS_ENV, "3")
    assert tc.encode_workers() == 3 and tc.encode_workers(1) == 1
    monkeypatch.setenv(tc.WORKERS_ENV, "many")
    with pytest.raises(ValueError, match=r"^GLASSFORMER_WORKERS is 'many': allowed an int >= 1"):
        tc.encode_workers()
    with pytest.raises(ValueError, match=r"^workers is 0: allowed an int >= 1"):
        tc.encode_workers(0)


# A process that encodes TEXT with a char tokenizer through the token cache, showing lines;
# the one that encodes waits, after its first piece, until the file "go" exists.
ENCODER = textwrap.dedent(
    """
    import pathlib, sys, time, types
    import numpy as np
    import glassformer
    # the package glassformer.data without its __init__, which imports PyTorch (seconds)
    data = types.ModuleType("glassformer.data")
    data.__path__ = [str(pathlib.Path(glassformer.__file__).parent / "data")]
    sys.modules["glassformer.data"] = data
    import glassformer.data.token_cache as tc
    from glassformer.data.documents import TextPart
    from glassformer.tokenizers import get_tokenizer

    corpus, cache, sync, name = sys.argv[1:]
    tc.SHOWN_CHARS, tc.ENCODE_CHARS = 0, 37
    text = pathlib.Path(corpus).read_text(encoding="utf-8")
    tokenizer = get_tokenizer("char").train([text])
    encode = tokenizer.encode

    def held(piece, **options):
        if not pathlib.Path(sync, "started").exists():
            pathlib.Path(sync, "started").touch()
            while not pathlib.Path(sync, "go").exists():
                time.sleep(0.01)
        return encode(piece, **options)

    tokenizer.encode = held
    tokens = tc.token_file(TextPart(corpus, 0, len(text), cache), tokenizer, progress="lines")
    np.save(pathlib.Path(sync, name + ".npy"), np.asarray(tokens))
    """
)


def test_of_two_processes_one_encodes_and_the_other_waits_then_reads(tmp_path):
    corpus, cache = tmp_path / "corpus.txt", tmp_path / "tokens"
    corpus.write_text(TEXT, encoding="utf-8")
    args = [sys.executable, "-c", ENCODER, str(corpus), str(cache), str(tmp_path)]
    waiter, waiting, err, codes = race(args, tmp_path)
    assert codes == [0, 0], err
    encoder = "b" if waiter == "a" else "a"
    lock = cache / f"{tc._key(TextPart(str(corpus), 0, len(TEXT)), trained('char'), True)}.lock"
    label = f"corpus.txt, characters 0..{len(TEXT):,}"
    assert waiting == f"waiting for another process encoding {label} (lock file {lock})\n"
    [token_file] = cache.iterdir()  # the lock file is gone
    assert err[waiter].splitlines() == [
        f"{label}: {len(TEXT) + 2:,} tokens read from the token cache {token_file}"
    ]
    assert "waiting" not in err[encoder] and "read from the token cache" not in err[encoder]
    assert err[encoder].splitlines()[-1].startswith(f"encoding corpus.txt: {len(TEXT):,}/")
    tokens = [np.load(tmp_path / f"{name}.npy").tolist() for name in err]
    assert tokens[0] == tokens[1] == trained("char").encode(TEXT, add_bos=True, add_eos=True)


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    part, tokenizer = TextPart(str(corpus), 0, len(TEXT), str(tmp_path / "tokens")), trained("char")
    lock = tmp_path / "tokens" / f"{tc._key(part, tokenizer, True)}.lock"
    lock.parent.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline() == "locked\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert lock.exists()  # left behind, unlocked
    tokens = tc.token_file(part, tokenizer, workers=1)
    assert tokens.tolist() == tokenizer.encode(TEXT, add_bos=True, add_eos=True)
    assert not lock.exists()
