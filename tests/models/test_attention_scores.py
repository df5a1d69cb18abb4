"""ModelConfig.attention_scores in every family: "dot" and "shared" self-attention ("Formal
Algorithms for Transformers", "Self-Attention across the sequence") build, hook, generate, save
and load like "separate"; what cannot express them refuses them."""

import pytest
import torch

from glassformer import ModelConfig, load_model
from glassformer.generation.api import generate
from glassformer.inspect import trace
from glassformer.interop import to_torch
from glassformer.models import DecoderLM, EncoderDecoder, EncoderMLM

SMALL = dict(vocab_size=30, d_model=16, n_head=4, n_layer=2, max_len=16)
FAMILIES = {"decoder": DecoderLM, "encoder": EncoderMLM, "encoder-decoder": EncoderDecoder}
SCORES = ["separate", "shared", "dot"]


def build(family: str, scores: str, **options):
    torch.manual_seed(0)
    config = ModelConfig(family=family, attention_scores=scores, **SMALL, **options)
    return FAMILIES[family](config).eval()


def logits(model, ids):
    if isinstance(model, EncoderDecoder):
        return model(ids, decoder_input_ids=ids[:, :5]).logits
    return model(ids).logits


def _projections(attn) -> list[str]:
    return [name for name, _ in attn.named_children() if name.endswith("proj")]


IDS = torch.randint(3, 30, (2, 7), generator=torch.Generator().manual_seed(1))


def test_the_default_is_separate_and_bad_values_are_refused():
    assert ModelConfig().attention_scores == "separate"
    with pytest.raises(ValueError, match=r"attention_scores='bogus' is not known; choose one of "
                       r"\('separate', 'shared', 'dot'\)"):  # fmt: skip
        ModelConfig(attention_scores="bogus")
    with pytest.raises(ValueError, match=r"needs n_kv_head = n_head \(4\), got n_kv_head=2"):
        ModelConfig(attention_scores="dot", n_kv_head=2)
    with pytest.raises(ValueError, match="attention_scores"):
        ModelConfig.from_dict({"attention_scores": 1})


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("scores", SCORES)
def test_checkpoint_loads_and_generates(tmp_path, family, scores):
    positional = "rotary" if family == "decoder" else "learned"
    model = build(family, scores, positional=positional)
    names = {"separate": ["q_proj", "k_proj", "v_proj"], "shared": ["qk_proj", "v_proj"],
             "dot": ["v_proj"]}[scores]  # fmt: skip
    stack = model.encoder if family == "encoder-decoder" else model
    assert _projections(stack.blocks[0].attn) == [*names, "out_proj"]
    assert stack.blocks[0].attn.v_proj.weight.shape == (16, 16)
    if family == "encoder-decoder":  # the setting is self-attention's: cross keeps W^Q, W^K
        assert _projections(model.decoder.blocks[0].attn) == [*names, "out_proj"]
        cross = _projections(model.decoder.blocks[0].cross_attn)
        assert cross == ["q_proj", "k_proj", "v_proj", "out_proj"]
    model.save_pretrained(tmp_path / "m")
    loaded = load_model(tmp_path / "m").eval()
    assert loaded.config.attention_scores == scores
    assert loaded.state_dict().keys() == model.state_dict().keys()
    assert torch.equal(logits(loaded, IDS), logits(model, IDS))
    if family == "encoder":
        return
    out = generate(loaded, IDS, max_new_tokens=5, temperature=0.0).sequences
    assert torch.equal(out, generate(model, IDS, max_new_tokens=5, temperature=0.0).sequences)
    if family == "decoder":  # the KV cache gives what recomputing every position gives
        ids = IDS
        for _ in range(5):
            ids = torch.cat([ids, logits(model, ids)[:, -1:].argmax(-1)], dim=1)
        assert torch.equal(out, ids)


@pytest.mark.parametrize("scores", ["shared", "dot"])
@pytest.mark.parametrize("family", ["encoder", "decoder"])
def test_scores_are_symmetric_in_a_model(family, scores):
    model = build(family, scores, positional="rotary")
    _, cache = model.run_with_cache(IDS)
    for layer in range(2):
        attn = f"blocks.{layer}.attn"
        q, k = cache[f"{attn}.hook_rot_q"], cache[f"{attn}.hook_rot_k"]  # (B, T, H, D)
        assert torch.equal(q, k)
        s = torch.einsum("bthd,bshd->bhts", q, k)  # S before the mask
        torch.testing.assert_close(s, s.mT)
        if family == "encoder":  # no mask: the scores the model used are S / √d_k itself
            a = cache[f"{attn}.hook_attn_scores"]
            torch.testing.assert_close(a, a.mT)
            torch.testing.assert_close(a, s / 2.0)


def test_trace_names_the_scores():
    formulas = {}
    for scores in SCORES:
        steps = trace(build("decoder", scores), IDS[:1])
        formulas[scores] = next(s.formula for s in steps if s.name == "Q, K, V projections")
    assert formulas["separate"].startswith("Q = X W_Qᵀ + b_Q, K = X W_Kᵀ + b_K, V = X W_Vᵀ")
    assert formulas["shared"].startswith("Q = X W_QKᵀ + b_QK, K = X W_QKᵀ + b_QK")
    assert formulas["dot"].startswith("Q = X, K = X (no query/key parameters")


@pytest.mark.parametrize("scores", ["shared", "dot"])
def test_exports_that_cannot_express_them_refuse(scores):
    pytest.importorskip("transformers")
    from glassformer.interop.huggingface import huggingface_key_map, to_huggingface

    model = build("decoder", scores)
    words = rf"attention_scores='{scores}'.*needs attention_scores='separate'"
    with pytest.raises(ValueError, match=words):
        to_huggingface(model)
    with pytest.raises(ValueError, match=words):
        huggingface_key_map(model)
    block = build("encoder", scores).blocks[0]
    with pytest.raises(ValueError, match=words):
        to_torch(block)
