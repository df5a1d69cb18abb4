"""The future-change check: in training mode (dropout 0), changing token n+1 leaves every output
at positions <= n unchanged, for each family whose attention is causal, each norm, pre- and
post-norm, with and without the embedding norm; or the setting is refused with one line that
says why. BatchNorm is refused there: its training statistics run over every position of the
batch, so position n would see the tokens after it. The bidirectional encoder keeps it."""

from __future__ import annotations

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, EncoderMLM, ModelConfig
from glassformer.models import DecoderClassifier
from glassformer.nn import NORM_KINDS, Decoder

V, B, T = 13, 3, 6
TINY = dict(vocab_size=V, d_model=8, n_head=2, n_layer=2, max_len=T, dropout=0.0)
FAMILIES = {
    "decoder": (DecoderLM, dict(family="decoder")),
    "decoder classifier": (DecoderClassifier, dict(family="decoder", pooling="mean")),
    "encoder-decoder (decoder side)": (EncoderDecoder, dict(family="encoder-decoder")),
}
REFUSED = (
    r"^norm='batch' cannot be used with family='(decoder|encoder-decoder)': in training, "
    r"BatchNorm's statistics run over every position of the batch, so a causal decoder's "
    r"output at position n would depend on the tokens after n; use norm='layer' or 'rms' "
    r"\(family='encoder' may use norm='batch'\)$"
)


def per_position(model: torch.nn.Module, ids: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """The model's outputs at each position (B, T, ...): logits, or the classifier's hidden
    states (its pooled logits mix every position by design)."""
    if isinstance(model, EncoderDecoder):
        return model(source, decoder_input_ids=ids).logits
    if isinstance(model, DecoderClassifier):
        return model(ids).hidden_states
    return model(ids).logits


@pytest.mark.parametrize("embed_norm", [False, True], ids=["", "embed_norm"])
@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
@pytest.mark.parametrize("norm", NORM_KINDS)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_changing_token_n_plus_1_leaves_positions_up_to_n_unchanged(
    family, norm, norm_first, embed_norm
):
    cls, options = FAMILIES[family]
    settings = dict(TINY, **options, norm=norm, norm_first=norm_first, embed_norm=embed_norm)
    if norm == "batch":  # refused, with the reason, before anything is built
        with pytest.raises(ValueError, match=REFUSED):
            ModelConfig(**settings)
        return
    torch.manual_seed(0)
    model = cls(ModelConfig(**settings)).train()
    ids = torch.randint(2, V, (B, T))
    source = torch.randint(2, V, (B, 5))
    with torch.no_grad():
        before = per_position(model, ids, source)
        for n in range(T - 1):
            changed = ids.clone()
            changed[:, n + 1] = (ids[:, n + 1] - 1) % (V - 2) + 2  # another real token
            after = per_position(model, changed, source)
            torch.testing.assert_close(after[:, : n + 1], before[:, : n + 1], rtol=0, atol=1e-6)
            assert (after[:, n + 1] - before[:, n + 1]).abs().max() > 1e-3  # the change arrives


def test_batch_norm_in_a_causal_stack_sees_the_future():
    """Why the refusal: glassformer.nn.Decoder, causal, with BatchNorm in training mode; the
    outputs at positions <= n move when the input at n+1 changes (LayerNorm's do not)."""
    torch.manual_seed(0)
    x = torch.randn(B, T, 8)
    later = x.clone()
    later[:, 3] += 1.0
    moved = {}
    for norm in ("layer", "batch"):
        stack = Decoder(2, 8, 2, 16, cross_attention=False, norm=norm, norm_first=True).train()
        with torch.no_grad():
            moved[norm] = (stack(later)[:, :3] - stack(x)[:, :3]).abs().max().item()
    assert moved["layer"] == 0.0
    assert moved["batch"] > 1e-3


def test_the_encoder_keeps_batch_norm():
    """The encoder is bidirectional: every position sees every other one anyway, and BatchNorm
    (over the real tokens of the batch) is accepted there."""
    config = ModelConfig(**TINY, family="encoder", norm="batch", embed_norm=True)
    model = EncoderMLM(config).train()
    ids = torch.randint(2, V, (B, T))
    labels = torch.where(torch.rand(B, T) < 0.5, ids, -100)
    labels[0, 0] = ids[0, 0]
    assert torch.isfinite(model(ids, labels=labels).loss)
    assert model.ln_embed.num_batches_tracked.item() == 1


@pytest.mark.parametrize(
    ("start", "field", "value"),
    [
        (dict(family="decoder"), "norm", "batch"),
        (dict(family="encoder", norm="batch"), "family", "decoder"),
    ],
    ids=["norm", "family"],
)
def test_a_made_config_cannot_be_changed_into_one_that_sees_the_future(start, field, value):
    """Assigning a field after the checks would build a BatchNorm decoder, whose position n
    depends on later tokens: the assignment is refused (naming replace), and replace checks
    the new config as a new one is checked."""
    config = ModelConfig(**TINY, **start)
    with pytest.raises(
        AttributeError,
        match=rf"^ModelConfig\.{field} cannot be changed once "
        rf"the config is made .*; use config\.replace\({field}=\.\.\.\)",
    ):
        setattr(config, field, value)
    with pytest.raises(AttributeError, match=rf"ModelConfig\.{field} cannot be changed"):
        delattr(config, field)
    assert getattr(config, field) == ModelConfig(**TINY, **start).__dict__[field]
    with pytest.raises(ValueError, match=REFUSED):
        config.replace(**{field: value})
    config.extra["note"] = "kept"  # free-form notes stay writable
    assert config.extra == {"note": "kept"}
