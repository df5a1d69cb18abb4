"""Records in the token cache on several cores and in several processes
(glassformer/data/record_cache.py, tokenizers/parallel.py, data/cache_lock.py): worker processes
give the arrays of encoding in one process; ``workers`` reaches them from ``load_dataset``; of
two processes that want the same record folder, one encodes it and the other waits, then
reads it."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import replace

import numpy as np
import pytest

import glassformer.data.record_cache as rc
import glassformer.tokenizers.parallel as parallel
from glassformer.data import TextDataset, encode_dataset, load_dataset
from glassformer.tokenizers import get_tokenizer

from .racing import race
from .test_parallel_encode import gone, hf_bpe

WORDS = ["free", "prize", "call", "now", "ok", "see", "you", "later", "thanks", "caf\u00e9", "123"]


def text(i: int) -> str:
    """Texts of 1 to 12 words."""
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(1 + i * 5 % 12))


def records(task: str, n: int = 80) -> TextDataset:
    if task == "seq2seq":
        examples = [(text(i), text(i + 3)[::-1]) for i in range(n)]
        return TextDataset("pairs.tsv", "seq2seq", "train", examples)
    examples = [("spam" if i % 3 == 0 else "ham", text(i)) for i in range(n)]
    return TextDataset("sms.tsv", "classification", "train", examples, labels=("ham", "spam"))


def trained(kind: str, dataset: TextDataset):
    if kind == "hf":
        return hf_bpe()
    options = {"vocab_size": 300} if kind == "bpe" else {}
    return get_tokenizer(kind).train(list(dataset.texts()), **options)


@pytest.fixture
def small(monkeypatch):
    """Chunks of a few records, every split on the workers, 2 CPUs (on a machine of one too)."""
    monkeypatch.setattr(rc, "CACHE_CHARS", 0)
    monkeypatch.setattr(rc, "ENCODE_CHARS", 150)
    monkeypatch.setattr(rc, "PARALLEL_CHARS", 0)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)


@pytest.fixture
def pools(monkeypatch):
    """The worker pools started, with their workers' process ids."""
    started = []

    class Recorded(parallel.EncodePool):
        def __init__(self, *args):
            super().__init__(*args)
            started.append(self)

    monkeypatch.setattr(rc, "EncodePool", Recorded)
    return started


def as_lists(tokens: rc.RecordTokens) -> dict:
    found = {f: (ids.tolist(), offsets.tolist()) for f, (ids, offsets) in tokens.fields.items()}
    return {**found, "labels": None if tokens.labels is None else tokens.labels.tolist()}


@pytest.mark.parametrize("kind", ["char", "bpe", "hf"])
@pytest.mark.parametrize("task", ["seq2seq", "classification"])
def test_two_workers_give_the_arrays_of_one_process(task, kind, small, pools, tmp_path):
    dataset = records(task)
    tokenizer = trained(kind, dataset)
    one = rc.record_tokens(replace(dataset, cache=str(tmp_path / "one")), tokenizer, workers=1)
    assert pools == []
    two = rc.record_tokens(replace(dataset, cache=str(tmp_path / "two")), tokenizer, workers=2)
    assert as_lists(one) == as_lists(two)
    add_bos = task == "classification"
    columns = list(zip(*dataset.examples, strict=True))[1 if add_bos else 0 :]
    for field, texts in zip(rc.FIELDS[task], columns, strict=True):
        ids = [tokenizer.encode(t, add_bos=add_bos, add_eos=True) for t in texts]
        assert as_lists(two)[field] == (
            [i for record in ids for i in record],
            np.cumsum([0, *map(len, ids)]).tolist(),
        )
    if add_bos:
        assert as_lists(two)["labels"] == [dataset.label_id(label) for label, _ in dataset]
    if kind == "hf":  # its library's batch encoder uses the cores: no worker processes
        assert pools == []
    else:
        [pool] = pools
        assert len(pool.pids) == 2 and all(map(gone, pool.pids))


def test_a_worker_error_leaves_no_folder_and_no_worker(small, pools, tmp_path):
    dataset = records("seq2seq")
    tokenizer = trained("bpe", dataset)
    examples = [*dataset.examples[:50], ("a lone surrogate: \ud800", "x"), *dataset.examples[50:]]
    broken = TextDataset("pairs.tsv", "seq2seq", "train", examples, cache=str(tmp_path / "t"))
    with pytest.raises(ValueError, match=r"^text contains '\\ud800', a lone surrogate: "):
        rc.record_tokens(broken, tokenizer, workers=2)
    assert list((tmp_path / "t").iterdir()) == []  # no folder, temporary folder or lock file
    [pool] = pools
    assert all(map(gone, pool.pids))


def test_the_workers_option_reaches_the_encoding_and_is_checked(small, pools, tmp_path):
    path = tmp_path / "sms.tsv"
    path.write_text("".join(f"{label}\t{t}\n" for label, t in records("classification")))
    tokenizer = trained("char", records("classification"))
    for workers, started in ((1, 0), (2, 1)):
        cache = str(tmp_path / f"cache-{workers}")
        dataset = load_dataset(path, task="classification", cache=cache, workers=workers)
        assert dataset.workers == workers and dataset == load_dataset(path, task="classification")
        encode_dataset(dataset, tokenizer, max_len=64)
        assert len(pools) == started
    assert load_dataset("reverse", workers=1).workers == 1  # any data
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError) as err:
            load_dataset(path, task="classification", workers=bad)
        assert str(err.value) == (
            f"workers is {bad!r}: allowed an int >= 1 (the most processes that encode the "
            "data), or None (every CPU)"
        )


# A process that encodes classification records with a char tokenizer through the record
# cache, showing lines; the one that encodes waits, after its first chunk, until "go" exists.
ENCODER = textwrap.dedent(
    """
    import pathlib, sys, time, types
    import numpy as np
    import glassformer
    # the package glassformer.data without its __init__, which imports PyTorch (seconds)
    data = types.ModuleType("glassformer.data")
    data.__path__ = [str(pathlib.Path(glassformer.__file__).parent / "data")]
    sys.modules["glassformer.data"] = data
    import glassformer.data.record_cache as rc
    from glassformer.data.examples import TextDataset
    from glassformer.tokenizers import get_tokenizer

    cache, sync, name = sys.argv[1:]
    rc.SHOWN_CHARS, rc.ENCODE_CHARS = 0, 150
    examples = [("spam" if i % 3 else "ham", f"message {i} " * (1 + i % 5)) for i in range(80)]
    dataset = TextDataset(
        "sms.tsv", "classification", "train", examples, labels=("ham", "spam"), cache=cache
    )
    tokenizer = get_tokenizer("char").train(list(dataset.texts()))
    encode_batch = tokenizer.encode_batch

    def held(texts, **options):
        if not pathlib.Path(sync, "started").exists():
            pathlib.Path(sync, "started").touch()
            while not pathlib.Path(sync, "go").exists():
                time.sleep(0.01)
        return encode_batch(texts, **options)

    tokenizer.encode_batch = held
    tokens = rc.record_tokens(dataset, tokenizer, progress="lines", workers=1)
    [(ids, offsets)] = tokens.fields.values()
    np.savez(pathlib.Path(sync, name + ".npz"), ids=ids, offsets=offsets, labels=tokens.labels)
    """
)


def test_of_two_processes_one_encodes_the_records_and_the_other_waits_then_reads(tmp_path):
    cache = tmp_path / "tokens"
    args = [sys.executable, "-c", ENCODER, str(cache), str(tmp_path)]
    waiter, waiting, err, codes = race(args, tmp_path)
    assert codes == [0, 0], err
    encoder = "b" if waiter == "a" else "a"
    [folder] = cache.iterdir()  # the lock file is gone
    lock = folder.with_suffix(".lock")
    assert waiting == f"waiting for another process encoding sms.tsv (train) (lock file {lock})\n"
    examples = [("spam" if i % 3 else "ham", f"message {i} " * (1 + i % 5)) for i in range(80)]
    tokens = sum(len(t) + 2 for _, t in examples)  # <BOS> characters <EOS>
    assert err[waiter].splitlines() == [
        f"sms.tsv (train): 80 records, {tokens:,} tokens read from the token cache {folder}"
    ]
    assert "waiting" not in err[encoder] and "read from the token cache" not in err[encoder]
    assert err[encoder].splitlines()[-1].startswith("encoding sms.tsv (train): 80/80 records")
    found = [np.load(tmp_path / f"{name}.npz") for name in err]
    assert sorted(found[0].files) == ["ids", "labels", "offsets"]
    assert all(np.array_equal(found[0][f], found[1][f]) for f in found[0].files)
    tokenizer = get_tokenizer("char").train([t for _, t in examples])
    ids = [tokenizer.encode(t, add_bos=True, add_eos=True) for _, t in examples]
    assert found[0]["ids"].tolist() == [i for record in ids for i in record]
    assert found[0]["offsets"].tolist() == np.cumsum([0, *map(len, ids)]).tolist()
    assert found[0]["labels"].tolist() == [int(label == "spam") for label, _ in examples]
