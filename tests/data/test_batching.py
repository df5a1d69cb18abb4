"""Chunking, padding and loaders: exact properties of every batch."""

from __future__ import annotations

import pytest
import torch

from glassformer.data import (
    IGNORE_INDEX,
    ClassificationDataset,
    LMDataset,
    Seq2SeqDataset,
    TextDataset,
    collate_lm,
    encode_dataset,
    load_dataset,
    make_loader,
    shift_right,
)
from glassformer.tokenizers.base import BOS_ID, EOS_ID, PAD_ID
from glassformer.tokenizers.char import CharTokenizer

DOCS = ["hello world", "a", "", "the quick brown fox jumps over the lazy dog", "xyz" * 7]


@pytest.fixture(scope="module")
def tok() -> CharTokenizer:
    return CharTokenizer().train("".join(DOCS) + "abcdefghijklmnopqrstuvwxyz0123456789+ ")


def _check_padding(ids: torch.Tensor, mask: torch.Tensor, lengths: list[int]) -> None:
    """mask is 1 exactly on the first len(row) positions, ids are PAD exactly elsewhere."""
    B, T = ids.shape
    assert ids.dtype == mask.dtype == torch.long and mask.shape == (B, T)
    assert max(lengths) == T  # padded to the longest in the batch, not to max_len
    expected = torch.tensor([[1] * n + [0] * (T - n) for n in lengths])
    assert torch.equal(mask, expected)
    assert torch.equal(mask, (ids != PAD_ID).long())


# ---- LM chunking --------------------------------------------------------------------------


@pytest.mark.parametrize("max_len", [2, 3, 7, 64])
@pytest.mark.parametrize("pack", [True, False])
def test_lm_windows_reassemble_to_the_stream(tok, max_len, pack):
    ds = LMDataset(DOCS, tok, max_len, pack=pack)
    stream = [i for d in DOCS for i in [BOS_ID, *tok.encode(d), EOS_ID]]
    windows = [ds[i]["input_ids"].tolist() for i in range(len(ds))]
    assert [i for w in windows for i in w] == stream
    assert all(1 <= len(w) <= max_len for w in windows)
    if pack:  # every window is full except the last one
        assert all(len(w) == max_len for w in windows[:-1])
        assert len(ds) == -(-len(stream) // max_len)
    else:  # no window crosses a document: each starts at a <BOS> or continues its document
        per_doc = [-(-(len(tok.encode(d)) + 2) // max_len) for d in DOCS]
        assert len(ds) == sum(per_doc)
        assert sum(w[0] == BOS_ID for w in windows) == len(DOCS)
        assert all(EOS_ID not in w[:-1] for w in windows)


def test_lm_without_bos_has_eos_between_documents(tok):
    ds = LMDataset(["ab", "c"], tok, 100, add_bos=False)
    assert ds[0]["input_ids"].tolist() == [*tok.encode("ab"), EOS_ID, *tok.encode("c"), EOS_ID]


def test_collate_lm_masks_and_labels(tok):
    items = [{"input_ids": torch.tensor(tok.encode(d, add_bos=True))} for d in DOCS]
    batch = collate_lm(items, pad_id=PAD_ID)
    lengths = [len(it["input_ids"]) for it in items]
    _check_padding(batch["input_ids"], batch["attention_mask"], lengths)
    labels = batch["labels"]
    assert torch.equal(labels == IGNORE_INDEX, batch["attention_mask"] == 0)
    real = batch["attention_mask"] == 1
    assert torch.equal(labels[real], batch["input_ids"][real])  # aligned, not shifted


# ---- seq2seq ----------------------------------------------------------------------------


def test_seq2seq_batch_layout(tok):
    pairs = [("abc", "cba"), ("hello world", "x"), ("q", "the lazy dog")]
    ds = TextDataset("t", "seq2seq", "train", pairs)
    batch = next(iter(make_loader(ds, tok, batch_size=3, max_len=32, shuffle=False)))
    _check_padding(batch["input_ids"], batch["attention_mask"], [len(s) + 1 for s, _ in pairs])
    _check_padding(
        batch["decoder_input_ids"], batch["decoder_attention_mask"], [len(t) + 1 for _, t in pairs]
    )
    labels, dec = batch["labels"], batch["decoder_input_ids"]
    for b, (src, tgt) in enumerate(pairs):
        n = len(tgt) + 1
        assert batch["input_ids"][b, : len(src) + 1].tolist() == [*tok.encode(src), EOS_ID]
        assert labels[b, :n].tolist() == [*tok.encode(tgt), EOS_ID]
        assert dec[b, :n].tolist() == [BOS_ID, *tok.encode(tgt)]
        assert (labels[b, n:] == IGNORE_INDEX).all() and (dec[b, n:] == PAD_ID).all()
    # decoder inputs are the labels shifted right with <BOS> in front
    assert torch.equal(dec[:, 0], torch.full((3,), BOS_ID))
    real = batch["decoder_attention_mask"][:, 1:] == 1
    assert torch.equal(dec[:, 1:][real], labels[:, :-1][real])
    padding = batch["decoder_attention_mask"] == 0
    assert torch.equal(dec, shift_right(labels, BOS_ID, PAD_ID).masked_fill(padding, PAD_ID))


def test_seq2seq_overflow_policies(tok):
    pairs = [("abcdef", "x"), ("ab", "abcdefgh"), ("a", "b")]
    with pytest.raises(ValueError, match=r"examples\[0\]: the source has 7 tokens.*max_len=4"):
        Seq2SeqDataset(pairs, tok, 4)
    dropped = Seq2SeqDataset(pairs, tok, 4, overflow="drop")
    assert len(dropped) == 1 and dropped.num_dropped == 2
    cut = Seq2SeqDataset(pairs, tok, 4, overflow="truncate")
    assert cut[0]["input_ids"].tolist() == [*tok.encode("abc"), EOS_ID]
    assert cut[1]["labels"].tolist() == [*tok.encode("abc"), EOS_ID]
    with pytest.raises(ValueError, match="overflow is 'cut'"):
        Seq2SeqDataset(pairs, tok, 4, overflow="cut")


def test_an_over_long_example_is_named_by_its_file_and_line(tok, tmp_path):
    p = tmp_path / "sms.tsv"
    p.write_text("label\ttext\nham\tok\n\nspam\t" + "x" * 40 + "\nham\tfine\n")
    ds = load_dataset(p, task="classification")
    with pytest.raises(ValueError) as e:
        make_loader(ds, tok, max_len=16)
    assert str(e.value) == (
        f"file {str(p)!r}, line 4: the text has 42 tokens counting <BOS>/<EOS>, more than "
        "max_len=16: allowed a larger max_len, or overflow='truncate' or 'drop' "
        "(load_dataset(..., overflow='truncate'), make_loader(..., overflow='truncate'), "
        "in a run data.overflow=truncate)"
    )
    assert e.value.names == ("data.overflow", "model.max_len")  # the command line's flags
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("ab\tba\ncd\t" + "y" * 20 + "\n")
    with pytest.raises(ValueError, match=r"pairs.tsv', line 2: the target has 21 tokens"):
        encode_dataset(load_dataset(pairs, task="seq2seq"), tok, max_len=8)


def test_the_datasets_overflow_is_the_default_and_counted(tok, tmp_path):
    p = tmp_path / "sms.tsv"
    p.write_text("ham\tok\nspam\t" + "x" * 40 + "\nham\tfine\nspam\t" + "z" * 30 + "\n")

    def encoded(policy, **kwargs):
        return encode_dataset(
            load_dataset(p, task="classification", overflow=policy), tok, **kwargs
        )

    cut = encoded("truncate")  # max_len 128: nothing to cut
    assert (len(cut), cut.num_truncated, cut.num_dropped) == (4, 0, 0)
    cut = encoded("truncate", max_len=16)
    assert (len(cut), cut.num_truncated, cut.num_dropped) == (4, 2, 0)
    assert cut[1]["input_ids"].tolist() == [BOS_ID, *tok.encode("x" * 14), EOS_ID]
    dropped = encoded("drop", max_len=16)
    assert (len(dropped), dropped.num_truncated, dropped.num_dropped) == (2, 0, 2)
    with pytest.raises(ValueError, match="line 2: the text has 42 tokens"):
        encoded("drop", max_len=16, overflow="error")  # an explicit overflow wins
    pairs = [("abcdef", "x"), ("ab", "abcdefgh"), ("a", "b")]
    assert Seq2SeqDataset(pairs, tok, 4, overflow="truncate").num_truncated == 2
    with pytest.raises(ValueError, match=r"all 2 examples \(the first: examples\[0\]\)") as e:
        Seq2SeqDataset(pairs[:2], tok, 4, overflow="drop")
    assert str(e.value).endswith("(in a run model.max_len=N or data.overflow=truncate)")
    assert e.value.names == ("data.overflow", "model.max_len")  # the command line's flags


# ---- classification ---------------------------------------------------------------------


def test_classification_batch_layout(tok):
    ds = load_dataset("is_sorted", num_examples=10, seed=0)
    batch = next(iter(make_loader(ds, tok, batch_size=10, max_len=16, shuffle=False)))
    _check_padding(batch["input_ids"], batch["attention_mask"], [len(t) + 2 for _, t in ds])
    assert batch["labels"].shape == (10,) and batch["labels"].dtype == torch.long
    assert batch["labels"].tolist() == [ds.labels.index(lab) for lab, _ in ds]
    assert (batch["input_ids"][:, 0] == BOS_ID).all()  # the CLS position
    ends = batch["attention_mask"].sum(1) - 1
    assert (batch["input_ids"][torch.arange(10), ends] == EOS_ID).all()
    no_bos = ClassificationDataset(ds.examples, ds.labels, tok, 16, add_bos=False)
    assert no_bos[0]["input_ids"].tolist() == [*tok.encode(ds[0][1]), EOS_ID]


def test_classification_truncation_keeps_bos_and_eos(tok):
    ds = ClassificationDataset(
        [("a", "abcdefgh"), ("b", "x")], ["a", "b"], tok, 5, overflow="truncate"
    )
    assert ds[0]["input_ids"].tolist() == [BOS_ID, *tok.encode("abc"), EOS_ID]
    with pytest.raises(ValueError, match=r"examples\[0\] has label 'c'"):
        ClassificationDataset([("c", "x")], ["a", "b"], tok, 5)


# ---- loaders ----------------------------------------------------------------------------


def _batches(loader):
    return [{k: v.clone() for k, v in b.items()} for b in loader]


@pytest.mark.parametrize(
    ("name", "task"), [("reverse", None), ("is_sorted", None), ("shakespeare", "mlm")]
)
def test_loader_is_deterministic_given_seed_and_ignores_global_rng(tok, name, task):
    ds = (
        load_dataset(name, num_examples=64)
        if name != "shakespeare"
        else TextDataset("s", "lm", "train", [t[:2000] for t in load_dataset(name, "validation")])
    )
    t = CharTokenizer().train(ds.texts())

    def run(seed):
        return _batches(make_loader(ds, t, task, batch_size=8, max_len=32, seed=seed))

    torch.manual_seed(1)
    state = torch.get_rng_state()
    a = run(0)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG was not used
    torch.manual_seed(2)
    b, c = run(0), run(1)
    assert len(a) == len(b) == len(c) > 1
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
    assert any(not torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(a, c, strict=True))


def test_loader_epochs_differ_and_cover_the_data(tok):
    ds = load_dataset("addition", num_examples=40, seed=0)
    loader = make_loader(ds, tok, batch_size=8, max_len=16, seed=0)
    e1, e2 = _batches(loader), _batches(loader)
    assert not all(torch.equal(x["input_ids"], y["input_ids"]) for x, y in zip(e1, e2, strict=True))

    def sources(epoch):
        return sorted(
            tok.decode(r.tolist(), skip_special=True) for b in epoch for r in b["input_ids"]
        )

    assert sources(e1) == sources(e2) == sorted(s for s, _ in ds)
    in_order = _batches(make_loader(ds, tok, batch_size=40, max_len=16, shuffle=False))
    assert [tok.decode(r.tolist(), skip_special=True) for r in in_order[0]["input_ids"]] == [
        s for s, _ in ds
    ]


def test_loader_rejects_mismatched_task_and_bad_sizes(tok):
    ds = load_dataset("reverse", num_examples=4)
    with pytest.raises(ValueError, match="task is 'mlm', but dataset 'reverse' holds 'seq2seq'"):
        make_loader(ds, tok, "mlm")
    with pytest.raises(ValueError, match="batch_size is 0"):
        make_loader(ds, tok, batch_size=0)
    with pytest.raises(ValueError, match="max_len is 1"):
        make_loader(ds, tok, max_len=1)
