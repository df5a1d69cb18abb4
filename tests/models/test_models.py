"""The three families: losses, padding, encode/decode, cache, positions, size and cost."""

import math

import pytest
import torch
import torch.nn.functional as F

from glassformer import data
from glassformer.models import (
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    EncoderModel,
)
from glassformer.models.config import ModelConfig
from glassformer.models.encoder_decoder import shift_right
from glassformer.presets import preset

torch.manual_seed(0)
V = 50


def small(name, **kw):
    return preset(name, vocab_size=V, d_model=32, n_head=4, n_layer=2, max_len=24, **kw)


def ids(b=3, t=7):
    return torch.randint(5, V, (b, t))


DECODERS = ["tiny", "tiny-llama"]


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_loss_is_next_token_cross_entropy_without_padding(name):
    model = DecoderLM(small(name))
    x = ids()
    mask = torch.ones_like(x)
    mask[1, 5:] = 0  # right padding
    out = model(x, mask, labels=x)
    logits = out.logits
    keep = mask[:, 1:].bool()
    manual = F.cross_entropy(logits[:, :-1][keep], x[:, 1:][keep])
    torch.testing.assert_close(out.loss, manual)
    torch.testing.assert_close(model.lm_logits(out.hidden_states), logits)  # before the head
    x2 = x.clone()
    x2[1, 5:] = 7  # what stands at padded positions changes nothing at real ones
    out2 = model(x2, mask, labels=x2)
    torch.testing.assert_close(out2.loss, out.loss)
    torch.testing.assert_close(out2.logits[1, :5], logits[1, :5])


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_left_padding_equals_unpadded(name):
    model = DecoderLM(small(name)).eval()
    x = ids(1, 5)
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), x], dim=1)
    mask = torch.cat([torch.zeros(1, 3), torch.ones(1, 5)], dim=1).long()
    torch.testing.assert_close(model(padded, mask).logits[:, 3:], model(x).logits)


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_cache_equals_full_recompute(name):
    model = DecoderLM(small(name)).eval()
    x = ids(2, 9)
    mask = torch.ones_like(x)
    mask[0, :2] = 0  # left-padded prompt
    full = model(x, mask).logits
    cache = model.new_cache()
    steps = [model(x[:, :5], mask[:, :5], cache=cache).logits]
    for t in range(5, 9):
        steps.append(model(x[:, t : t + 1], mask[:, : t + 1], cache=cache).logits)
    torch.testing.assert_close(torch.cat(steps, 1)[0, 2:], full[0, 2:], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat(steps, 1)[1], full[1], atol=1e-5, rtol=1e-5)


def test_decoder_is_causal():
    model = DecoderLM(small("tiny"))
    x = ids(1, 8)
    y = model(x).logits
    x2 = x.clone()
    x2[0, 5:] = 9
    torch.testing.assert_close(model(x2).logits[:, :5], y[:, :5])


def test_context_longer_than_max_len_is_refused():
    model = DecoderLM(small("tiny"))
    with pytest.raises(ValueError, match=r"needs 25 positions .* max_len is 24"):
        model(ids(1, 25))


def test_encoder_mlm_scores_only_labelled_positions():
    model = EncoderMLM(small("tiny-encoder", mlm_transform=True, head_bias=True))
    x = ids()
    labels = torch.full_like(x, -100)
    labels[0, 2], labels[2, 6] = 11, 12
    out = model(x, torch.ones_like(x), labels)
    manual = F.cross_entropy(out.logits[[0, 2], [2, 6]], torch.tensor([11, 12]))
    torch.testing.assert_close(out.loss, manual)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_classifier_ignores_padding_and_batches_like_one_by_one(pooling, norm):
    model = EncoderClassifier(small("tiny-encoder", pooling=pooling, norm=norm, n_classes=3))
    model.eval()
    x = ids()
    lengths = [7, 4, 2]
    mask = (torch.arange(7) < torch.tensor(lengths)[:, None]).long()
    out = model(x, mask, labels=torch.tensor([0, 2, 1]))
    assert out.logits.shape == (3, 3)
    for b, n in enumerate(lengths):
        alone = model(x[b : b + 1, :n]).logits
        torch.testing.assert_close(out.logits[b], alone[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, torch.tensor([0, 2, 1])))


def test_encoder_model_has_no_head():
    out = EncoderModel(small("tiny-encoder"))(ids())
    assert out.logits is None and out.hidden_states.shape == (3, 7, 32)
    with pytest.raises(ValueError, match="no head"):
        EncoderModel(small("tiny-encoder"))(ids(), labels=ids())


@pytest.mark.parametrize("share", [True, False])
def test_encoder_decoder_forward_equals_encode_then_decode(share):
    cfg = small("tiny-seq2seq", share_embeddings=share, tgt_vocab_size=None if share else 40)
    model = EncoderDecoder(cfg).eval()
    assert (model.decoder.embed is model.encoder.embed) == share
    src, tgt = ids(3, 6), torch.randint(5, 40, (3, 5))
    src_mask = torch.ones_like(src)
    src_mask[0, 3:] = 0
    tgt_mask = torch.ones_like(tgt)
    tgt_mask[2, 2:] = 0
    labels = tgt.masked_fill(tgt_mask == 0, -100)
    out = model(src, src_mask, decoder_attention_mask=tgt_mask, labels=labels)
    memory = model.encode(src, src_mask)
    dec_in = shift_right(labels, cfg.decoder_start_id, cfg.pad_id)
    assert dec_in[:, 0].eq(cfg.decoder_start_id).all() and dec_in[2, 3:].eq(cfg.pad_id).all()
    again = model.decode(dec_in, memory, src_mask, tgt_mask)
    torch.testing.assert_close(out.logits, again.logits)
    keep = labels != -100
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits[keep], labels[keep]))
    # padded source tokens never change the output
    src2 = src.clone()
    src2[0, 3:] = 8
    torch.testing.assert_close(model(src2, src_mask, dec_in, tgt_mask).logits, out.logits)


def test_shift_right_feeds_each_label_to_the_next_position():
    """One rule for the model and the collator: input t = label t - 1, <PAD> for a -100 (a
    label not scored anywhere, at the end or in the middle, is never fed as an id)."""
    labels = torch.tensor([[5, -100, 7, 8], [9, 6, -100, -100]])
    assert shift_right(labels, 1, 0).tolist() == [[1, 5, 0, 7], [1, 9, 6, 0]]
    assert data.shift_right is shift_right


def test_encoder_decoder_labels_alone_score_as_the_collated_batch():
    """Given only labels, the model shifts them itself; the collator's decoder inputs (<PAD>
    over the target's padding, masked) give the same logits at scored positions and loss."""
    cfg = small("tiny-seq2seq")
    model = EncoderDecoder(cfg).eval()
    items = [
        {"input_ids": ids(1, n)[0], "labels": ids(1, m)[0]} for n, m in [(6, 3), (4, 5), (2, 1)]
    ]
    batch = data.collate_seq2seq(items, pad_id=cfg.pad_id, bos_id=cfg.decoder_start_id)
    full = model(**batch)
    alone = model(batch["input_ids"], batch["attention_mask"], labels=batch["labels"])
    scored = batch["labels"] != -100
    torch.testing.assert_close(alone.logits[scored], full.logits[scored])
    torch.testing.assert_close(alone.loss, full.loss)


def test_encoder_decoder_cache_equals_full():
    model = EncoderDecoder(small("tiny-seq2seq")).eval()
    src, tgt = ids(2, 6), ids(2, 5)
    memory = model.encode(src)
    full = model.decode(tgt, memory).logits
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, cache=cache).logits for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


def test_parameter_count_matches_the_shape_formula():
    cfg = small("tiny")  # learned positions, layer norm with bias, tied head
    c, f, layers = 32, 128, 2
    block = (3 * c * c + 3 * c) + (c * c + c) + (c * f + f) + (f * c + c) + 2 * 2 * c
    expected = V * c + 24 * c + layers * block + 2 * c  # + final norm
    assert DecoderLM(cfg).num_parameters() == expected
    assert DecoderLM(cfg).num_parameters(exclude_embeddings=True) == expected - V * c - 24 * c
    untied = DecoderLM(cfg.replace(tie_embeddings=False)).num_parameters()
    assert untied == expected + V * c


def test_flops_per_token_follows_6n_plus_attention():
    cfg = small("tiny")
    model = DecoderLM(cfg)
    n_matmul = 2 * (4 * 32 * 32 + 2 * 32 * 128) + 32 * V  # blocks + unembedding
    assert model.flops_per_token(16) == 6 * n_matmul + 12 * 2 * 16 * 32


def test_init_scales_residual_projections():
    model = DecoderLM(preset("tiny", vocab_size=V, n_layer=8))
    std = model.blocks[0].mlp.fc2.weight.std().item()
    assert std == pytest.approx(0.02 / math.sqrt(16), rel=0.1)
    assert model.blocks[0].mlp.fc1.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert model.blocks[0].mlp.fc1.bias.abs().max().item() == 0


def test_model_refuses_config_of_another_family():
    with pytest.raises(ValueError, match="needs family='decoder'"):
        DecoderLM(ModelConfig(family="encoder"))


def test_missing_token_types_are_type_zero():
    cfg = ModelConfig(
        family="encoder", vocab_size=30, max_len=8, d_model=16, n_layer=1, n_head=4,
        type_vocab_size=2, embed_norm=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model = EncoderModel(cfg)
    ids = torch.randint(0, 30, (2, 6))
    a = model(ids).hidden_states
    b = model(ids, token_type_ids=torch.zeros_like(ids)).hidden_states
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    w = model.token_type_embed.weight
    (ga,) = torch.autograd.grad(a.square().sum(), w)
    (gb,) = torch.autograd.grad(b.square().sum(), w)
    torch.testing.assert_close(ga, gb, rtol=0, atol=1e-5)
    assert ga[1].abs().max() == 0 and ga[0].abs().max() > 0


def test_dropout_acts_in_training_only():
    """Every dropout (embedding output, each residual branch, inside the MLP; attention
    weights off here) draws a fresh mask per call in train mode and is the identity in eval
    mode: the output then equals the same weights built with dropout 0."""
    cfg = dict(family="encoder", vocab_size=V, max_len=8, d_model=16, n_layer=2, n_head=4)
    torch.manual_seed(0)
    model = EncoderModel(ModelConfig(**cfg, dropout=0.5, attn_dropout=0.0))
    plain = EncoderModel(ModelConfig(**cfg, dropout=0.0))
    plain.load_state_dict(model.state_dict())
    x = ids(2, 8)
    model.train()
    plain.train()
    a, b = model(x).hidden_states, model(x).hidden_states
    assert not torch.allclose(a, b)
    assert not torch.allclose(a, plain(x).hidden_states)
    model.eval()
    plain.eval()
    torch.testing.assert_close(model(x).hidden_states, plain(x).hidden_states, rtol=0, atol=0)


def test_token_ids_of_the_wrong_rank_or_range_are_refused_with_what_is_allowed():
    decoder, encoder = DecoderLM(small("tiny")), EncoderMLM(small("tiny-encoder"))
    seq2seq = EncoderDecoder(small("tiny-seq2seq"))
    one = torch.tensor([5, 6, 7])
    shape = r"input_ids must be token ids of shape \(B, T\); got shape \(3,\) \(one sequence: "
    for model in (decoder, encoder, seq2seq):
        with pytest.raises(ValueError, match=shape + r"ids\[None\] adds the batch\)"):
            model(one, decoder_input_ids=ids(1, 2)) if model is seq2seq else model(one)
    with pytest.raises(ValueError, match=r"decoder_input_ids must be token ids of shape \(B, T\)"):
        seq2seq(ids(1, 3), decoder_input_ids=one)
    too_big = torch.tensor([[5, V + 3, 7]])
    words = f"token id {V + 3} is out of range for the vocabulary of {V} tokens: allowed ids 0..49"
    with pytest.raises(ValueError, match=words):
        decoder(too_big)
    with pytest.raises(ValueError, match=words):
        encoder(too_big)


def test_attention_masks_of_the_wrong_width_are_refused_with_the_shape_expected():
    decoder, encoder = DecoderLM(small("tiny")).eval(), EncoderMLM(small("tiny-encoder"))
    seq2seq = EncoderDecoder(small("tiny-seq2seq"))
    x = ids(2, 5)
    words = r"attention_mask must be \(B, S\) = \(2, 5\) with 1 = real token, 0 = padding; got "
    with pytest.raises(ValueError, match=words + r"shape \(2, 3\)"):
        decoder(x, torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=words + r"shape \(1, 5\)"):
        encoder(x, torch.ones(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=words + r"shape \(2, 6\)"):
        seq2seq(x, torch.ones(2, 6, dtype=torch.long), decoder_input_ids=ids(2, 3))
    with pytest.raises(ValueError, match=r"decoder_attention_mask must be \(B, S\) = \(2, 3\)"):
        seq2seq(x, decoder_input_ids=ids(2, 3), decoder_attention_mask=torch.ones(2, 5))
    cache = decoder.new_cache()
    decoder(x, cache=cache)
    covers = r"\(B, S\) = \(2, 6\) \(S = 5 cached \+ 1 new positions\)"
    with pytest.raises(ValueError, match=covers):  # the mask covers the cached positions too
        decoder(ids(2, 1), torch.ones(2, 1, dtype=torch.long), cache=cache)
