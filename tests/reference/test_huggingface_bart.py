"""Encoder-decoder parity with Hugging Face: BartForConditionalGeneration <-> EncoderDecoder.

Small random configs, every weight perturbed (and final_logits_bias, a buffer), float32, eval
mode, max |difference| <= 1e-4. Source and target are both right-padded
(attention_mask, decoder_attention_mask). BART has no final norm: ``encoder_last_hidden_state``
and ``decoder_hidden_states[-1]`` are the last post-norm blocks' outputs. Target positions
that are padding are not meaningful (glassformer zeroes a query row with nothing to attend to)
and are compared at real positions only; encoder outputs are compared at real source positions.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

transformers = pytest.importorskip("transformers")

from glassformer.interop.huggingface import from_huggingface, to_huggingface  # noqa: E402
from glassformer.models import EncoderDecoder  # noqa: E402
from glassformer.models.config import ModelConfig  # noqa: E402

transformers.logging.set_verbosity_error()
TOL = dict(atol=1e-4, rtol=0.0)
V, S, T = 64, 9, 7


def bart(**kw):
    cfg = dict(encoder_layers=2, decoder_layers=3, d_model=32, vocab_size=V)
    cfg.update(encoder_attention_heads=4, decoder_attention_heads=4, max_position_embeddings=24)
    cfg.update(encoder_ffn_dim=48, decoder_ffn_dim=48)
    cfg.update(kw)
    return transformers.BartForConditionalGeneration(transformers.BartConfig(**cfg))


def jitter(model):
    torch.manual_seed(1)
    with torch.no_grad():
        for p in [*model.parameters(), model.final_logits_bias]:
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.fixture(params=["plain", "scaled-relu"])
def pair(request):
    torch.manual_seed(0)
    kw = {} if request.param == "plain" else dict(scale_embedding=True, activation_function="relu")
    hf = jitter(bart(**kw))
    return hf, from_huggingface(hf).eval()


def padded(n: int, length: int, pads: tuple[int, ...], seed: int):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (n, length), generator=g)
    mask = torch.ones(n, length, dtype=torch.long)
    for row, k in enumerate(pads):
        if k:
            mask[row, length - k :] = 0
    return ids.masked_fill(mask == 0, 1), mask  # BART's <pad> is 1


def batch():
    src, src_mask = padded(3, S, (0, 3, 5), seed=2)
    tgt, tgt_mask = padded(3, T, (2, 0, 4), seed=3)
    return src, src_mask, tgt, tgt_mask


def run_both(hf, model):
    src, src_mask, tgt, tgt_mask = batch()
    with torch.no_grad():
        ref = hf(
            input_ids=src,
            attention_mask=src_mask,
            decoder_input_ids=tgt,
            decoder_attention_mask=tgt_mask,
            output_hidden_states=True,
        )
        out = model(src, src_mask, tgt, tgt_mask)
    return ref, out, src_mask.bool(), tgt_mask.bool()


def test_outputs_match_with_padded_source_and_target(pair):
    hf, model = pair
    ref, out, src_real, tgt_real = run_both(hf, model)
    assert_close(out.logits[tgt_real], ref.logits[tgt_real], **TOL)
    assert_close(out.hidden_states[tgt_real], ref.decoder_hidden_states[-1][tgt_real], **TOL)
    assert_close(
        out.encoder_hidden_states[src_real], ref.encoder_last_hidden_state[src_real], **TOL
    )


def test_loss_from_labels_matches(pair):
    """Both shift labels right behind decoder_start_token_id (glassformer: decoder_start_id)."""
    hf, model = pair
    src, src_mask, tgt, _ = batch()
    labels = tgt.clone()
    labels[0, -2:] = -100
    with torch.no_grad():
        ref = hf(input_ids=src, attention_mask=src_mask, labels=labels).loss
        out = model(src, src_mask, labels=labels).loss
    assert_close(out, ref, **TOL)


def test_round_trip_gives_the_same_weights_and_outputs(pair):
    hf, model = pair
    back = to_huggingface(model).eval()
    want, got = hf.state_dict(), back.state_dict()
    assert want.keys() == got.keys()
    for k in want:
        assert torch.equal(got[k], want[k]), k
    assert back.config.decoder_start_token_id == hf.config.decoder_start_token_id
    ref, again = run_both(hf, model)[0], run_both(back, model)[0]
    assert torch.equal(again.logits, ref.logits)


def test_parameter_counts_agree_up_to_final_logits_bias(pair):
    """HF keeps final_logits_bias as a buffer, glassformer's head bias is a parameter."""
    hf, model = pair
    assert model.num_parameters() == hf.num_parameters() + hf.final_logits_bias.numel()


def test_config_mapping_is_faithful():
    c = from_huggingface(bart(scale_embedding=True)).config
    assert (c.position_offset, c.embed_scale, c.embed_norm, c.norm_first) == (2, True, True, False)
    assert (c.n_layer, c.resolved_n_decoder_layer, c.pad_id, c.decoder_start_id) == (2, 3, 1, 2)
    assert (c.share_embeddings, c.tie_embeddings, c.head_bias) == (True, True, True)


def test_native_glassformer_model_exports():
    config = ModelConfig(
        family="encoder-decoder",
        vocab_size=V,
        d_model=32,
        n_head=4,
        n_layer=2,
        d_ff=48,
        max_len=24,
        norm_first=False,
        embed_norm=True,
        position_offset=2,
        head_bias=True,
        activation="gelu",
    )
    torch.manual_seed(3)
    model = EncoderDecoder(config).eval()
    ref, out, _, tgt_real = run_both(to_huggingface(model).eval(), model)
    assert_close(out.logits[tgt_real], ref.logits[tgt_real], **TOL)


UNSUPPORTED = {
    "decoder_attention_heads": dict(decoder_attention_heads=2),
    "decoder_ffn_dim": dict(decoder_ffn_dim=40),
    "activation_function": dict(activation_function="silu"),
    "tie_word_embeddings": dict(tie_word_embeddings=False),
}


@pytest.mark.parametrize("option", list(UNSUPPORTED))
def test_unsupported_hf_options_are_refused(option):
    with pytest.raises(ValueError, match=f"{option}=.*not supported; supported"):
        from_huggingface(bart(**UNSUPPORTED[option]))


@pytest.mark.parametrize(
    "changes, option",
    [
        (dict(positional="sinusoidal"), "positional"),
        (dict(position_offset=0), "position_offset"),
        (dict(norm_first=True), "norm_first"),
        (dict(share_embeddings=False, tgt_vocab_size=V + 1), "share_embeddings"),
        (dict(head_bias=False), "head_bias"),
        (dict(cross_attention_graph="window:2"), "cross_attention_graph"),
    ],
)
def test_inexpressible_glassformer_options_are_refused(changes, option):
    config = ModelConfig(
        family="encoder-decoder",
        vocab_size=V,
        d_model=32,
        n_head=4,
        n_layer=1,
        norm_first=False,
        embed_norm=True,
        position_offset=2,
        head_bias=True,
    ).replace(**changes)
    with pytest.raises(ValueError, match=f"BartForConditionalGeneration.*{option}="):
        to_huggingface(EncoderDecoder(config))
