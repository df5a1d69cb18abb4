"""``glassformer inspect --circuits`` on tiny saved checkpoints of each family: the pictures,
index.md's account of the prediction (checked against glassformer.circuits called directly),
and the errors a user can meet."""

from __future__ import annotations

import re

import pytest
import torch

from glassformer import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM
from glassformer.circuits import circuit_cache, logit_attribution
from glassformer.cli.inspect_circuits import _shuffled
from glassformer.tokenizers import get_tokenizer

from .test_cli import _png, run_cli

CIRCUIT_FILES = {
    "attribution_heads.png", "logit_lens.png", "ov_singular_values_decoder.png",
    "qk_singular_values_decoder.png", "patching_residual.png", "patching_heads.png",
}  # fmt: skip


@pytest.fixture(scope="module")
def tok():
    return get_tokenizer("char").train("the cat sat on the mat, a dog ran")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, kit, tok):
    root = tmp_path_factory.mktemp("circuit-checkpoints")
    found = {}
    for name, cls, preset, extra in (
        ("lm", DecoderLM, "tiny", {}),
        ("seq2seq", EncoderDecoder, "tiny-seq2seq", {}),
        ("mlm", EncoderMLM, "bert-base", {"type_vocab_size": 0, "pooler": False}),
        ("classifier", EncoderClassifier, "tiny-encoder", {"n_classes": 3, "pooler": False}),
    ):
        options = dict(double=False, vocab_size=tok.vocab_size, max_len=24, **extra)
        model = kit.build(cls, preset, **options)
        found[name] = (model, model.save_pretrained(root / name, tokenizer=tok))
    return found


def _inspect(checkpoint, out, *extra):
    return run_cli(
        "inspect", "--checkpoint", checkpoint, "--out", out, "--heads", "0", "--circuits", *extra
    )


def test_decoder_circuits_pictures_and_the_attributed_logit_difference(saved, tok, tmp_path):
    model, path = saved["lm"]
    code, _, err = _inspect(path, tmp_path, "--text", "the cat", "--answer", "s", "--wrong", "m")
    assert code == 0, err
    assert {p.name for p in tmp_path.iterdir()} >= CIRCUIT_FILES
    for name in CIRCUIT_FILES:
        width, height = _png(tmp_path / name)
        assert width > 100 and height > 100
    index = (tmp_path / "index.md").read_text()
    for name in CIRCUIT_FILES:
        assert f"[{name}]({name})" in index

    ids = torch.tensor([tok.encode("the cat", add_bos=True)])
    out, cache = circuit_cache(model, ids)
    s, m = tok.encode("s")[0], tok.encode("m")[0]
    dla = logit_attribution(cache, (s, m), position=-1)
    value = float(out.logits[0, -1, s] - out.logits[0, -1, m])
    assert f"Analysed: the logit of 's' minus 'm' at decoder position {ids.shape[1] - 1}" in index
    assert f"value {value:.4f}" in index
    shares = dict(re.findall(r"^\| (\S+) \| ([+-]\d+\.\d{4}) \|$", index, re.M))
    assert len(shares) == 8
    biggest = dla.terms.values[:, 0].abs().argsort(descending=True)[:8].tolist()
    assert list(shares) == [dla.labels[i] for i in biggest]
    for label, share in shares.items():
        assert float(share) == pytest.approx(float(dla[label][0]), abs=1e-4)
    assert f"the model's value {value:.4f}" in index
    assert "shuffled (seed 0)" in index


@pytest.mark.slow
def test_seq2seq_draws_cross_heads_and_every_stack(saved, tmp_path):
    _, path = saved["seq2seq"]
    code, _, err = _inspect(path, tmp_path, "--text", "a dog", "--target", "the cat")
    assert code == 0, err
    names = {p.name for p in tmp_path.iterdir()}
    expected = {"attribution_heads.png", "attribution_cross_heads.png", "logit_lens.png"}
    expected |= {
        f"{m}_singular_values_{s}.png"
        for m in ("ov", "qk")
        for s in ("encoder", "decoder", "cross")
    }
    expected |= {"patching_residual.png", "patching_heads.png"}
    assert expected <= names
    index = (tmp_path / "index.md").read_text()
    assert "cross-attention head's output" in index


def test_masked_lm_reads_the_first_mask_and_says_why_it_has_no_attribution(saved, tok, tmp_path):
    model, path = saved["mlm"]
    assert model.transform is not None  # BERT's MLM transform: not linear
    code, _, err = _inspect(path, tmp_path, "--text", "the <MASK> sat")
    assert code == 0, err
    names = {p.name for p in tmp_path.iterdir()}
    assert "attribution_heads.png" not in names
    assert {"logit_lens.png", "patching_heads.png", "ov_singular_values_encoder.png"} <= names
    index = (tmp_path / "index.md").read_text()
    assert "at encoder position 5" in index  # <BOS> t h e ' ' <MASK>
    assert "No direct attribution: " in index and "mlm_transform" in index


def test_classifier_attributes_a_class(saved, tmp_path):
    _, path = saved["classifier"]
    code, _, err = _inspect(path, tmp_path, "--text", "a dog ran", "--answer", "2")
    assert code == 0, err
    index = (tmp_path / "index.md").read_text()
    assert "Analysed: the class score of '2' at the pooled vector" in index
    names = {p.name for p in tmp_path.iterdir()}
    assert "attribution_heads.png" in names and "logit_lens.png" not in names


def test_corrupt_equal_to_the_text_gives_raw_values(saved, tmp_path):
    _, path = saved["lm"]
    code, _, err = _inspect(path, tmp_path, "--text", "the cat", "--corrupt", "the cat")
    assert code == 0, err
    index = (tmp_path / "index.md").read_text()
    assert "corrupted input = --corrupt" in index
    assert "The two runs give the same metric" in index


def test_the_default_corruption_moves_only_ordinary_tokens(tok):
    ids = torch.tensor([tok.encode("the cat sat", add_bos=True) + [tok.pad_id] * 3])
    mask = torch.tensor([[1] * 12 + [0] * 3])
    new = _shuffled(ids, mask, set(tok.special_ids))
    assert new[0, 0] == tok.bos_id and (new[0, 12:] == tok.pad_id).all()
    assert sorted(new[0, 1:12].tolist()) == sorted(ids[0, 1:12].tolist())
    assert not torch.equal(new, ids)
    assert torch.equal(new, _shuffled(ids, mask, set(tok.special_ids)))  # the same every time


@pytest.mark.parametrize(
    "extra, words",
    [
        (("--answer", "s"), ["--answer", "--circuits"]),
        (("--circuits", "--answer", "ca"), ["--answer", "'ca'", "2 tokens", "one token"]),
        (("--circuits", "--answer", "s", "--wrong", "s"), ["--wrong", "--answer"]),
        (("--circuits", "--corrupt", "a"), ["--corrupt", "2 tokens", "--text 8", "same length"]),
    ],
)
def test_user_errors(saved, tmp_path, extra, words):
    _, path = saved["lm"]
    code, _, err = run_cli(
        "inspect", "--checkpoint", path, "--out", tmp_path, "--text", "the cat", *extra
    )
    assert code == 2 and "Traceback" not in err
    for word in words:
        assert word in err, (word, err)
