"""Positions count over the real tokens in every family: a left-padded input gives, at its real
tokens, the outputs of the unpadded input, for every positional encoding; right padding keeps
the column index (Hugging Face's BERT and BART count that way)."""

import pytest
import torch

from glassformer.models import (
    DecoderClassifier,
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    EncoderModel,
)
from glassformer.models.inputs import positions_from_mask
from glassformer.presets import preset

V, PAD = 40, 3
POSITIONAL = ["learned", "sinusoidal", "rotary", "none"]


def build(cls, name, positional, **kw):
    torch.manual_seed(0)
    config = preset(
        name, vocab_size=V, d_model=16, n_head=2, n_layer=2, max_len=16, dropout=0.0,
        positional=positional, **kw,
    )  # fmt: skip
    return cls(config).eval()


def left_padded(x: torch.Tensor, pads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (1, T) -> (1, pads + T) with PAD first, and its attention mask."""
    ids = torch.cat([torch.full((1, pads), PAD), x], dim=1)
    mask = torch.cat([torch.zeros(1, pads), torch.ones_like(x)], dim=1).long()
    return ids, mask


X = torch.randint(5, V, (1, 7), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("positional", POSITIONAL)
@pytest.mark.parametrize("grad", [False, True], ids=["inference", "autograd"])
@pytest.mark.parametrize("cls", [EncoderModel, EncoderMLM, EncoderClassifier])
def test_encoder_left_padding_equals_unpadded(cls, grad, positional):
    """Inference packs the real tokens (glassformer.fast); with gradients on it does not:
    both give the unpadded outputs."""
    kw = {"n_classes": 3} if cls is EncoderClassifier else {}
    model = build(cls, "tiny-encoder", positional, **kw)
    ids, mask = left_padded(X, 4)
    with torch.set_grad_enabled(grad):
        alone, padded = model(X), model(ids, mask)
    if cls is EncoderClassifier:
        torch.testing.assert_close(padded.logits, alone.logits)
    else:
        torch.testing.assert_close(padded.hidden_states[:, 4:], alone.hidden_states)
    if cls is EncoderMLM:
        torch.testing.assert_close(padded.logits[:, 4:], alone.logits)


@pytest.mark.parametrize("positional", POSITIONAL)
def test_decoder_left_padding_equals_unpadded(positional):
    model = build(DecoderLM, "tiny", positional)
    ids, mask = left_padded(X, 4)
    torch.testing.assert_close(model(ids, mask).logits[:, 4:], model(X).logits)


@pytest.mark.parametrize("positional", POSITIONAL)
def test_encoder_decoder_left_padding_equals_unpadded(positional):
    """The source and the target, each left-padded: the same memory at the real source tokens,
    the same logits at the real target tokens."""
    model = build(EncoderDecoder, "tiny-seq2seq", positional)
    src, src_mask = left_padded(X, 4)
    tgt = torch.randint(5, V, (1, 5), generator=torch.Generator().manual_seed(2))
    tgt_padded, tgt_mask = left_padded(tgt, 2)
    with torch.no_grad():
        alone = model(X, decoder_input_ids=tgt)
        padded = model(src, src_mask, tgt_padded, tgt_mask)
        memory = model.encode(src, src_mask)
    torch.testing.assert_close(memory[:, 4:], alone.encoder_hidden_states)
    torch.testing.assert_close(padded.logits[:, 2:], alone.logits)


def test_positions_count_real_tokens_and_padding_continues():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 1, 1, 1, 1]])
    positions = positions_from_mask(mask, 5, 0, None, None)
    assert positions.tolist() == [
        [0, 1, 0, 1, 2],  # left padding: the real tokens from 0
        [0, 1, 2, 3, 4],  # right padding: the column index, as Hugging Face's BERT counts
        [0, 1, 1, 2, 3],  # a gap: the real tokens 0, 1, 2; the padding after the token before
        [0, 1, 2, 3, 4],
    ]
    assert positions_from_mask(mask, 2, 3, None, None).tolist() == [
        [1, 2], [3, 4], [2, 3], [3, 4]
    ]  # fmt: skip


@pytest.mark.parametrize(
    "cls, name",
    [
        (EncoderClassifier, "tiny-encoder"),
        (EncoderModel, "tiny-encoder"),
        (DecoderClassifier, "tiny"),
    ],
)
def test_first_token_pooling_reads_the_first_real_token_under_left_padding(cls, name):
    """``pooling="cls"`` pools the first real token ([CLS] / <BOS>), not the <PAD> in the
    first column: a left-padded batch gives the logits (or BERT's pooled vector) of the
    unpadded text, in a batch beside an unpadded row."""
    model = build(cls, name, "learned", pooling="cls", pooler=True, n_classes=3)
    ids, mask = left_padded(X, 4)
    other = torch.randint(5, V, (1, 11), generator=torch.Generator().manual_seed(3))
    batch = torch.cat([ids, other]), torch.cat([mask, torch.ones_like(other)])
    with torch.no_grad():
        alone, padded = model(X), model(*batch)
        other_alone = model(other)
    field = "pooled" if cls is EncoderModel else "logits"
    torch.testing.assert_close(getattr(padded, field)[:1], getattr(alone, field), atol=1e-5, rtol=0)
    torch.testing.assert_close(
        getattr(padded, field)[1:], getattr(other_alone, field), atol=1e-5, rtol=0
    )
