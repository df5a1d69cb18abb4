"""Prediction for the encoder tasks (glassformer.predict): classifier labels and probabilities,
fill-mask top-k."""

from __future__ import annotations

import pytest
import torch

from glassformer.models import EncoderClassifier, EncoderMLM
from glassformer.models.config import ModelConfig
from glassformer.predict import classify, fill_mask
from glassformer.tokenizers import CharTokenizer


@pytest.fixture(scope="module")
def char_tokenizer() -> CharTokenizer:
    text = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:!?'\n0123456789"
    return CharTokenizer().train(text)


def _encoder(cls, vocab: int, **kw):
    torch.manual_seed(0)
    cfg = ModelConfig(
        family="encoder",
        vocab_size=vocab,
        d_model=32,
        n_layer=2,
        n_head=4,
        max_len=64,
        init_std=0.2,
        tie_embeddings=False,
        **kw,
    )
    return cls(cfg).eval()


def test_classify_gives_softmax_of_the_head(char_tokenizer):
    tok = char_tokenizer
    model = _encoder(EncoderClassifier, tok.vocab_size, n_classes=3, pooling="mean")
    texts = ["a fine play", "dull", "what light through yonder window breaks"]
    results = classify(model, texts, tokenizer=tok, labels=["neg", "neu", "pos"], batch_size=2)
    rows = [tok.encode(t, add_bos=True, add_eos=True) for t in texts]
    for row, res in zip(rows, results, strict=True):
        with torch.no_grad():
            p = model(torch.tensor([row])).logits.softmax(-1)[0]  # each text alone, unpadded
        assert res.index == int(p.argmax()) and res.label == ["neg", "neu", "pos"][res.index]
        got = torch.tensor([res.probabilities[n] for n in ("neg", "neu", "pos")])
        torch.testing.assert_close(got, p, atol=1e-5, rtol=0)
        assert res.probability == max(res.probabilities.values())
    same = classify(model, rows, labels=["neg", "neu", "pos"], batch_size=2)
    assert same == results  # ids work too
    assert [r.label for r in classify(model, rows)] == [str(r.index) for r in results]


def test_classify_checks_its_arguments(char_tokenizer):
    model = _encoder(EncoderClassifier, char_tokenizer.vocab_size, n_classes=2)
    with pytest.raises(ValueError, match=r"labels has 3 names but the model has n_classes=2"):
        classify(model, [[1, 5, 2]], labels=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"has 70 tokens but the model's max_len is 64"):
        classify(model, "x" * 68, tokenizer=char_tokenizer)
    assert len(classify(model, "x" * 68, tokenizer=char_tokenizer, truncate=True)) == 1
    with pytest.raises(ValueError, match=r"classify needs an EncoderClassifier"):
        classify(_encoder(EncoderMLM, 80), [[1, 2]])


def test_fill_mask_gives_the_top_k_of_each_mask(char_tokenizer):
    tok = char_tokenizer
    model = _encoder(EncoderMLM, tok.vocab_size)
    text = "to be or <MASK>ot to b<MASK>"
    preds = fill_mask(model, tok, text, top_k=4)
    ids = tok.encode(text, add_bos=True, add_eos=True, allowed_special=True)
    positions = [i for i, t in enumerate(ids) if t == tok.mask_id]
    assert [p.position for p in preds] == positions
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    logits[:, sorted(tok.special_ids)] = float("-inf")  # specials are not candidates
    probs = logits.softmax(-1)
    for pred in preds:
        top = probs[pred.position].topk(4)
        assert [c.token_id for c in pred.candidates] == top.indices.tolist()
        torch.testing.assert_close(
            torch.tensor([c.probability for c in pred.candidates]), top.values, atol=1e-6, rtol=0
        )
        assert [c.token for c in pred.candidates] == [tok.decode([i]) for i in top.indices]
    batch = fill_mask(model, tok, [text, "<MASK> light"], top_k=4)
    assert batch[0] == preds and len(batch[1]) == 1 and batch[1][0].position == 1


def test_fill_mask_needs_a_mask(char_tokenizer):
    model = _encoder(EncoderMLM, char_tokenizer.vocab_size)
    with pytest.raises(ValueError, match=r"has no <MASK>"):
        fill_mask(model, char_tokenizer, "no mask here")
    with pytest.raises(ValueError, match=r"top_k=0 is not allowed: an int >= 1"):
        fill_mask(model, char_tokenizer, "<MASK>", top_k=0)


def test_fill_mask_never_offers_a_padding_row(char_tokenizer):
    """A model with 8 rows past the tokenizer's ids, whose logits there are the largest:
    the candidates are the tokenizer's ids, with the probabilities of those alone."""
    tok = char_tokenizer
    model = _encoder(EncoderMLM, tok.vocab_size + 8, head_bias=True)
    with torch.no_grad():
        model.unembed.proj.weight[tok.vocab_size :] = 0.0
        model.unembed.proj.bias[tok.vocab_size :] = 100.0
    text = "to be or <MASK>ot"
    (pred,) = fill_mask(model, tok, text, top_k=3)
    ids = tok.encode(text, add_bos=True, add_eos=True, allowed_special=True)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, pred.position]
    assert int(logits.argmax()) >= tok.vocab_size
    logits[sorted(tok.special_ids)] = float("-inf")
    top = logits[: tok.vocab_size].softmax(-1).topk(3)
    assert [c.token_id for c in pred.candidates] == top.indices.tolist()
    assert len(fill_mask(model, tok, text, top_k=1000)[0].candidates) == tok.vocab_size - len(
        tok.special_ids
    )
