"""Encoder parity with Hugging Face: BertModel / BertForMaskedLM / BertForSequenceClassification
<-> EncoderModel / EncoderMLM / EncoderClassifier.

Small random configs, every weight perturbed, float32, eval mode, max |difference| <= 1e-4.
Batches are right-padded and carry token-type ids. Both libraries mask padded *keys* only, so
the outputs at padded positions are computed the same way in both: they are compared too.
BERT has no final norm: ``last_hidden_state`` = ``hidden_states[-1]`` = the last post-norm
block's output, which is glassformer's ``hidden_states``.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

transformers = pytest.importorskip("transformers")

from glassformer.fast import fast_paths  # noqa: E402
from glassformer.interop.huggingface import from_huggingface, to_huggingface  # noqa: E402
from glassformer.models import EncoderClassifier, EncoderMLM, EncoderModel  # noqa: E402
from glassformer.models.config import ModelConfig  # noqa: E402

transformers.logging.set_verbosity_error()
TOL = dict(atol=1e-4, rtol=0.0)
V, T = 64, 8
CLASSES = ["BertModel", "BertForMaskedLM", "BertForSequenceClassification"]


def bert_config(**kw):
    cfg = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48)
    cfg.update(vocab_size=V, max_position_embeddings=16, type_vocab_size=3, num_labels=3)
    cfg.update(kw)
    return transformers.BertConfig(**cfg)


def bert(name="BertModel", **kw):
    return getattr(transformers, name)(bert_config(**kw))


def jitter(model):
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.fixture(params=CLASSES)
def pair(request):
    torch.manual_seed(0)
    hf = jitter(bert(request.param))
    return hf, from_huggingface(hf).eval()


def batch():
    """ids, attention_mask (right padding by 0, 3, 5), token_type_ids (two segments)."""
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(1, V, (3, T), generator=g)
    mask = torch.ones(3, T, dtype=torch.long)
    mask[1, T - 3 :] = 0
    mask[2, T - 5 :] = 0
    ids = ids * mask
    types = torch.zeros(3, T, dtype=torch.long)
    types[:, T // 2 :] = 1
    return ids, mask, types * mask


def run_both(hf, model):
    ids, mask, types = batch()
    with torch.no_grad(), fast_paths(model):  # inference as evaluation runs it: packed
        ref = hf(ids, attention_mask=mask, token_type_ids=types, output_hidden_states=True)
        out = model(ids, mask, token_type_ids=types)
    return ref, out


REAL = batch()[1].bool()  # (B, T) the real tokens


def close(ours, theirs):
    """Per-token outputs are compared at the real tokens: inference with the fast paths packs
    them (fast/packing.py) and leaves glassformer's padded positions at zero, which nothing
    reads; per-sequence
    outputs (pooled, classifier logits) in full."""
    if ours.dim() == 3:
        ours, theirs = ours[REAL], theirs[REAL]
    assert_close(ours, theirs, **TOL)


def test_outputs_match_with_padding_and_token_types(pair):
    hf, model = pair
    ref, out = run_both(hf, model)
    close(out.hidden_states, ref.hidden_states[-1])
    assert out.hidden_states[~REAL].abs().max() == 0  # packed inference: zero at padding
    if isinstance(hf, transformers.BertModel):
        close(out.hidden_states, ref.last_hidden_state)
        close(out.pooled, ref.pooler_output)  # tanh(W h_CLS + b)
    else:
        close(out.logits, ref.logits)


def test_every_position_matches_without_packing(pair):
    """With gradients on, nothing is packed: every position, padding included, is what
    Hugging Face computes."""
    hf, model = pair
    ids, mask, types = batch()
    with torch.no_grad():
        ref = hf(ids, attention_mask=mask, token_type_ids=types, output_hidden_states=True)
    out = model(ids, mask, token_type_ids=types)
    assert_close(out.hidden_states.detach(), ref.hidden_states[-1], **TOL)
    if not isinstance(hf, transformers.BertModel):
        assert_close(out.logits.detach(), ref.logits, **TOL)


def test_round_trip_gives_the_same_weights_and_outputs(pair):
    hf, model = pair
    back = to_huggingface(model).eval()
    assert type(back) is type(hf)
    want, got = hf.state_dict(), back.state_dict()
    assert want.keys() == got.keys()
    for k in want:
        assert torch.equal(got[k], want[k]), k
    ref, again = run_both(hf, model)[0], run_both(back, model)[0]
    assert torch.equal(again.hidden_states[-1], ref.hidden_states[-1])


def test_parameter_counts_agree(pair):
    hf, model = pair
    assert model.num_parameters() == hf.num_parameters()


def test_masked_lm_loss_matches():
    hf = jitter(bert("BertForMaskedLM"))
    model = from_huggingface(hf).eval()
    ids, mask, types = batch()
    labels = torch.full_like(ids, -100)
    labels[:, 1] = ids[:, 1]
    labels[0, 5] = 7
    with torch.no_grad():
        ref = hf(ids, attention_mask=mask, token_type_ids=types, labels=labels).loss
        out = model(ids, mask, labels, token_type_ids=types).loss
    assert_close(out, ref, **TOL)


def test_config_mapping_is_faithful():
    c = from_huggingface(bert("BertForSequenceClassification", hidden_act="gelu_new")).config
    assert (c.n_classes, c.pooler, c.pooling, c.activation) == (3, True, "cls", "gelu_tanh")
    assert (c.norm_first, c.embed_norm, c.final_norm, c.type_vocab_size) == (False, True, False, 3)
    assert c.norm_eps == 1e-12 and c.extra["converted_from"] == "BertForSequenceClassification"
    c = from_huggingface(bert("BertForMaskedLM")).config
    assert (c.mlm_transform, c.head_bias, c.tie_embeddings) == (True, True, True)


def test_bert_model_without_pooler():
    hf = jitter(transformers.BertModel(bert_config(hidden_act="relu"), add_pooling_layer=False))
    model = from_huggingface(hf)
    assert not model.config.pooler and model.pooler is None
    ref, out = run_both(hf, model)
    close(out.hidden_states, ref.last_hidden_state)
    assert out.pooled is None and model.num_parameters() == hf.num_parameters()
    assert to_huggingface(model).pooler is None


SMALL = dict(vocab_size=V, d_model=32, n_head=4, n_layer=2, d_ff=48, max_len=16)
BERT_LIKE = dict(norm_first=False, embed_norm=True, type_vocab_size=2, **SMALL)


@pytest.mark.parametrize(
    "cls, extra",
    [
        (EncoderModel, dict(pooler=True)),
        (EncoderMLM, dict(mlm_transform=True, head_bias=True)),
        (EncoderClassifier, dict(pooler=True, n_classes=5)),
    ],
)
def test_native_glassformer_encoder_exports(cls, extra):
    torch.manual_seed(3)
    model = cls(ModelConfig(family="encoder", **BERT_LIKE, **extra)).eval()
    hf = to_huggingface(model).eval()
    ref, out = run_both(hf, model)
    close(out.hidden_states, ref.hidden_states[-1])
    if cls is not EncoderModel:
        close(out.logits, ref.logits)
    assert hf.num_parameters() == model.num_parameters()


UNSUPPORTED = {
    "position_embedding_type": ("BertModel", dict(position_embedding_type="relative_key")),
    "is_decoder": ("BertModel", dict(is_decoder=True)),
    "hidden_act": ("BertModel", dict(hidden_act="silu")),
    "tie_word_embeddings": ("BertForMaskedLM", dict(tie_word_embeddings=False)),
}


@pytest.mark.parametrize("option", list(UNSUPPORTED))
def test_unsupported_hf_options_are_refused(option):
    name, kwargs = UNSUPPORTED[option]
    with pytest.raises(ValueError, match=f"{name}: {option}=.*not supported; supported"):
        from_huggingface(bert(name, **kwargs))


def test_masked_lm_needs_a_gelu():
    """glassformer's MLM transform applies GELU, so a ReLU BERT masked LM is refused."""
    with pytest.raises(ValueError, match="hidden_act='relu'"):
        from_huggingface(bert("BertForMaskedLM", hidden_act="relu"))


@pytest.mark.parametrize(
    "cls, changes, option",
    [
        (EncoderModel, dict(norm_first=True), "norm_first"),
        (EncoderModel, dict(embed_norm=False), "embed_norm"),
        (EncoderModel, dict(type_vocab_size=0), "type_vocab_size"),
        (EncoderModel, dict(positional="rotary"), "positional"),
        (EncoderModel, dict(pooler=True, pooling="mean"), "pooling"),
        (EncoderMLM, dict(), "mlm_transform"),
        (EncoderClassifier, dict(pooler=False), "pooler"),
        (EncoderModel, dict(attention_graph="window:4"), "attention_graph"),
    ],
)
def test_inexpressible_glassformer_options_are_refused(cls, changes, option):
    model = cls(ModelConfig(family="encoder", **BERT_LIKE).replace(**changes))
    with pytest.raises(ValueError, match=f"cannot express the glassformer option {option}="):
        to_huggingface(model)
