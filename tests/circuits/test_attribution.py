"""Direct logit attribution and the logit lens (glassformer.circuits.attribution, lens): the
terms' shares plus the constants are the model's own logit (difference) in every readout that
is linear after the final stream; per-head shares sum to their layer's; the lens's last layer
is the model's own top-k; nonlinear readouts are refused."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import circuit_cache, freeze_norm, logit_attribution, logit_lens
from glassformer.models import (
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    EncoderModel,
)
from glassformer.tokenizers import CharTokenizer

from .conftest import huggingface, perturbed

V, L, H = 29, 2, 4
TOL = dict(atol=1e-4, rtol=0.0)
MASK = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0]])
LAST = torch.tensor([4, 6, 2])  # each row's last real token (right padding)

LINEAR = {  # readouts linear after the final stream: name -> (class, config options)
    "decoder pre-norm gqa": (DecoderLM, dict(family="decoder", n_kv_head=2)),
    "decoder pre-norm rms rotary, unembedding bias": (
        DecoderLM,
        dict(
            family="decoder",
            norm="rms",
            positional="rotary",
            bias=False,
            head_bias=True,
            tie_embeddings=False,
        ),
    ),
    "decoder post-norm": (DecoderLM, dict(family="decoder", norm_first=False)),
    "mlm post-norm ln_embed, unembedding bias": (
        EncoderMLM,
        dict(family="encoder", norm_first=False, embed_norm=True, head_bias=True),
    ),
    "classifier pre-norm batchnorm, mean pooling": (
        EncoderClassifier,
        dict(family="encoder", norm="batch", pooling="mean", n_classes=3),
    ),
    "classifier post-norm, cls pooling": (
        EncoderClassifier,
        dict(family="encoder", norm_first=False, pooling="cls", n_classes=3),
    ),
    "seq2seq pre-norm rotary": (
        EncoderDecoder,
        dict(family="encoder-decoder", positional="rotary"),
    ),
    "seq2seq post-norm ln_embed": (
        EncoderDecoder,
        dict(family="encoder-decoder", norm_first=False, embed_norm=True, head_bias=True),
    ),
}


def build(cls, **options):
    return perturbed(cls, V, n_head=H, n_layer=L, **options).eval()


def run(model, ids=None):
    if ids is None:
        ids = torch.randint(5, V, (3, 7), generator=torch.Generator().manual_seed(1))
    if isinstance(model, EncoderDecoder):
        return circuit_cache(model, ids, MASK, decoder_input_ids=ids, decoder_attention_mask=MASK)
    return circuit_cache(model, ids, MASK)


@pytest.mark.parametrize("name", list(LINEAR))
def test_shares_and_constants_sum_to_the_logit(name):
    cls, options = LINEAR[name]
    model = build(cls, **options)
    out, cache = run(model)
    if cls is EncoderClassifier:
        a = logit_attribution(cache, (2, [0, 1, 0]), attention_mask=MASK, per_prompt=True)
        want = out.logits[:, 2] - out.logits[torch.arange(3), torch.tensor([0, 1, 0])]
    else:
        a = logit_attribution(cache, (7, [8, 9, 10]), position=LAST, per_prompt=True)
        at = out.logits[torch.arange(3), LAST]  # (B, V)
        want = at[:, 7] - at[:, [8, 9, 10]].diagonal()
    assert_close(a.logit, want, atol=0.0, rtol=0.0)  # the model's own logit difference
    assert_close(a.total(), want, **TOL)
    assert a.terms.values.shape == (len(a.labels), 3)
    constants = []
    if options.get("norm_first", True) and options.get("norm") != "rms":  # RMSNorm has no β
        constants.append("ln_final_bias")
    if options.get("head_bias") or cls is EncoderClassifier:
        constants.append("classifier_bias" if cls is EncoderClassifier else "unembed_bias")
    assert a.constants.labels == constants


def test_one_logit_and_one_position():
    model = build(DecoderLM, family="decoder")
    out, cache = run(model)
    a = logit_attribution(cache, 11, position=3)
    assert_close(a.total(), out.logits[:, 3, 11], **TOL)
    with pytest.raises(AssertionError):  # another position's logit is another sum
        assert_close(a.total(), out.logits[:, 2, 11], **TOL)


def test_per_head_shares_sum_to_the_layer_share():
    """Σ_h share(L1Hh) + share(b^O) = what block 1's attention output adds to the logit
    difference, read through the final norm frozen at the final stream (pre-norm GPT)."""
    model = build(DecoderLM, family="decoder", n_kv_head=2)
    _, cache = run(model)
    a = logit_attribution(cache, (7, 8), position=LAST)
    frozen = freeze_norm(model.ln_final, cache["blocks.1.hook_resid_post"])
    attn_out = frozen.linear(cache["blocks.1.hook_attn_out"])[torch.arange(3), LAST]  # (B, C)
    w = model.unembed.proj.weight
    layer_share = attn_out @ (w[7] - w[8])
    heads = a.heads()  # (L, H, B)
    assert heads.shape == (L, H, 3)
    assert_close(heads[1].sum(0) + a["L1.attn_bias"], layer_share, atol=1e-5, rtol=0.0)
    assert torch.equal(heads[0, 3], a["L0H3"])


def test_cross_attention_heads_have_shares():
    model = build(EncoderDecoder, **LINEAR["seq2seq pre-norm rotary"][1])
    _, cache = run(model)
    a = logit_attribution(cache, 7, position=LAST)
    cross = a.heads("cross")
    assert cross.shape == (L, H, 3) and cross.abs().sum() > 0
    assert torch.equal(cross[1, 2], a["L1XH2"])


def test_tokens_as_strings_with_a_tokenizer():
    tok = CharTokenizer().train("abcdefghijklmnopqrstuvwx")  # 5 specials + 24 letters = V
    model = build(DecoderLM, family="decoder")
    model.tokenizer = tok
    out, cache = run(model)
    m, j = tok.token_to_id("m"), tok.token_to_id("j")
    by_id = logit_attribution(cache, (m, j), position=LAST)
    by_text = logit_attribution(cache, ("m", "j"), position=LAST)
    assert torch.equal(by_text.terms.values, by_id.terms.values)
    per_row = logit_attribution(cache, ["m", "j", "a"], position=LAST, per_prompt=True)
    want = out.logits[torch.arange(3), LAST, torch.tensor([m, j, tok.token_to_id("a")])]
    assert_close(per_row.total(), want, **TOL)
    with pytest.raises(ValueError, match="'mj' is 2 tokens"):
        logit_attribution(cache, "mj")
    model.tokenizer = None
    with pytest.raises(ValueError, match="is a string but there is no tokenizer"):
        logit_attribution(cache, "m")
    assert torch.equal(logit_attribution(cache, "m", tokenizer=tok).logit, out.logits[:, -1, m])


def test_bad_tokens_and_positions_are_refused():
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    with pytest.raises(ValueError, match=r"token 29; allowed: an id in 0\.\.28"):
        logit_attribution(cache, 29)
    with pytest.raises(ValueError, match="a tuple is a pair"):
        logit_attribution(cache, (1, 2, 3))
    with pytest.raises(ValueError, match=r"tokens has 2 entries for 3 prompts; with per_prompt"):
        logit_attribution(cache, [1, 2], per_prompt=True)
    with pytest.raises(ValueError, match="position=7 is out of range for 7 positions"):
        logit_attribution(cache, 1, position=7)
    with pytest.raises(ValueError, match=r"position=\[1, 2\]; allowed: an int, or 3 ints"):
        logit_attribution(cache, 1, position=[1, 2])


@pytest.mark.parametrize(
    ("cls", "options", "why"),
    [
        (EncoderMLM, dict(mlm_transform=True), "MLM head's transform"),
        (EncoderClassifier, dict(pooler=True), "pooler tanh"),
        (EncoderModel, dict(), "no output layer"),
    ],
)
def test_nonlinear_readouts_are_refused(cls, options, why):
    model = build(cls, family="encoder", norm_first=False, **options)
    _, cache = run(model)
    with pytest.raises(ValueError, match=f"{why}.*allowed: a DecoderLM"):
        logit_attribution(cache, 1)


def test_missing_logits_are_named():
    model = build(DecoderLM, family="decoder")
    _, cache = model.run_with_cache(torch.tensor([[5, 6, 7]]), names=lambda n: "logits" not in n)
    with pytest.raises(ValueError, match="lacks hook_logits"):
        logit_attribution(cache, 1)


# ---- the logit lens ----


@pytest.mark.parametrize(
    ("cls", "options"),
    [
        (DecoderLM, dict(family="decoder", n_kv_head=2)),
        (DecoderLM, dict(family="decoder", norm="rms", positional="rotary")),
        (EncoderMLM, dict(family="encoder", norm_first=False, embed_norm=True, mlm_transform=True)),
        (EncoderDecoder, dict(family="encoder-decoder")),
    ],
)
@pytest.mark.parametrize("norm", ["recompute", "frozen"])
def test_the_lens_ends_at_the_models_own_top_k(cls, options, norm):
    model = build(cls, **options)
    out, cache = run(model)
    lens = logit_lens(cache, k=4, norm=norm)
    assert lens.labels == ["embed", "L0", "L1"]
    assert lens.ids.shape == lens.probs.shape == (L + 1, 3, 7, 4)
    top = out.logits.softmax(-1).topk(4, dim=-1)
    assert torch.equal(lens.ids[-1], top.indices)
    assert_close(lens.probs[-1], top.values, atol=1e-6, rtol=0.0)
    at = logit_lens(cache, k=4, position=2, norm=norm)
    assert torch.equal(at.ids, lens.ids[:, :, 2])


def test_the_lens_reads_each_layer_through_the_final_norm():
    """Layer 0's reading is softmax(W_u · LayerNorm(x^(0))), x^(0) = the embedding (the lens
    recomputes the norm's statistics for each layer's own stream)."""
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    lens = logit_lens(cache, k=3, position=-1)
    x0 = cache["blocks.0.hook_resid_pre"][:, -1]
    with torch.no_grad():
        probs = model.lm_logits(model.ln_final(x0)).softmax(-1)
    assert torch.equal(lens.ids[0], probs.topk(3).indices)


def test_the_lens_table():
    tok = CharTokenizer().train("abcdefghijklmnopqrstuvwx")
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    lens = logit_lens(cache, k=2)
    rows = lens.table(tok, batch=1, position=3)
    assert rows[0] == ["layer", "top 1", "top 2"]
    assert [r[0] for r in rows[1:]] == ["embed", "L0", "L1"]
    i, p = lens.ids[2, 1, 3, 0].item(), lens.probs[2, 1, 3, 0].item()
    assert rows[3][1] == f"{tok.decode([i])!r} {p:.3f}"
    assert logit_lens(cache, k=2, position=3).table(batch=1)[3][1] == f"{i} {p:.3f}"


def test_the_lens_refuses_what_it_cannot_read():
    model = build(EncoderClassifier, family="encoder")
    _, cache = run(model)
    with pytest.raises(ValueError, match="no unembedding"):
        logit_lens(cache)
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    with pytest.raises(ValueError, match=r"k=0; allowed: 1\.\.29"):
        logit_lens(cache, k=0)
    with pytest.raises(ValueError, match="norm=None"):
        logit_lens(cache, norm=None)
    with pytest.raises(ValueError, match="position=9"):
        logit_lens(cache, position=9)


def test_the_lens_reads_targets_and_full_logits():
    """Full logits (log-probabilities, probabilities) per layer, and the logit of one token
    or the difference of a pair, by id or by a string the model's tokenizer reads."""
    tok = CharTokenizer().train("abcdefghijklmnopqrstuvwx")
    model = build(DecoderLM, family="decoder").set_tokenizer(tok)
    out, cache = run(model)
    full = logit_lens(cache, return_type="logits")
    assert full.ids is None and full.values.shape == (L + 1, 3, 7, V)
    assert_close(full.values[-1], out.logits, **TOL)
    x0 = cache["blocks.0.hook_resid_pre"]
    with torch.no_grad():
        assert_close(full.values[0], model.lm_logits(model.ln_final(x0)), **TOL)
    logp = logit_lens(cache, return_type="log_probs", position=-1).values
    assert_close(logp, full.values[:, :, -1].log_softmax(-1), **TOL)
    probs = logit_lens(cache, return_type="probs").values
    assert_close(probs, full.values.softmax(-1), **TOL)
    m, j = tok.token_to_id("m"), tok.token_to_id("j")
    one = logit_lens(cache, targets="m")
    assert one.return_type == "logits" and one.target_ids[0].tolist() == [m] * 3
    assert_close(one.values, full.values[..., m], atol=0.0, rtol=0.0)
    pair = logit_lens(cache, targets=("m", j), position=-1)
    assert_close(pair.values, full.values[:, :, -1, m] - full.values[:, :, -1, j], **TOL)
    rows = logit_lens(cache, targets=[m, j, 5], position=2, per_prompt=True).values
    assert_close(rows, full.values[:, torch.arange(3), 2, torch.tensor([m, j, 5])], **TOL)
    assert logit_lens(cache, k=1).table()[1][1].startswith("'")  # the model's tokenizer


@pytest.mark.parametrize(
    "tokens", [[7, 8, 9], torch.tensor([7, 8, 9]), (7, [8, 9, 10]), ([7, 8, 9], 10)]
)
def test_several_tokens_without_per_prompt_are_refused(tokens):
    """A list means one token per prompt only with per_prompt=True (TransformerLens reads a
    list of targets as tokens shared by every prompt): the bare form is refused, naming both
    ways to write it."""
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    says = (
        r"gives several tokens; write per_prompt=True for one token per prompt \(batch row\), "
        r"or one token alone for the same token in every prompt"
    )
    with pytest.raises(ValueError, match=r"logit_attribution: tokens=.* " + says):
        logit_attribution(cache, tokens, position=LAST)
    with pytest.raises(ValueError, match=r"logit_lens: targets=.* " + says):
        logit_lens(cache, targets=tokens, position=-1)


def test_the_lens_refuses_bad_targets_and_return_types():
    model = build(DecoderLM, family="decoder")
    _, cache = run(model)
    with pytest.raises(ValueError, match=r"return_type='top'; allowed: \('top_k', 'logits'"):
        logit_lens(cache, return_type="top")
    with pytest.raises(ValueError, match="return_type='top_k' reads the k most likely"):
        logit_lens(cache, targets=3, return_type="top_k")
    with pytest.raises(ValueError, match="token 'm' is a string but there is no tokenizer"):
        logit_lens(cache, targets="m")
    with pytest.raises(ValueError, match=r"token 29; allowed: an id in 0\.\.28"):
        logit_lens(cache, targets=(1, 29))
    with pytest.raises(ValueError, match=r"targets=\(1, 2, 3\); a tuple is a pair"):
        logit_lens(cache, targets=(1, 2, 3))
    with pytest.raises(ValueError, match="targets has 2 entries for 3 prompts"):
        logit_lens(cache, targets=[1, 2], per_prompt=True)
    assert logit_lens(cache, return_type="logits", k=0).values.shape == (L + 1, 3, 7, V)
    with pytest.raises(ValueError, match="LogitLens.table: the lens read 'logits'"):
        logit_lens(cache, targets=1).table()


# ---- converted Hugging Face models (random weights from small configs, offline) ----


@pytest.mark.parametrize(
    "name", ["GPT2LMHeadModel", "LlamaForCausalLM", "BartForConditionalGeneration"]
)
def test_converted_huggingface_models_attribute(name):
    from glassformer.interop.huggingface import from_huggingface

    model = from_huggingface(huggingface(name, V))
    out, cache = run(model)
    a = logit_attribution(cache, (7, 8), position=LAST)
    at = out.logits[torch.arange(3), LAST]
    assert_close(a.total(), at[:, 7] - at[:, 8], **TOL)
    assert torch.equal(logit_lens(cache, k=3).ids[-1], out.logits.topk(3, dim=-1).indices)
    constants = {  # Llama's RMSNorm has no β; BART is post-norm, with final_logits_bias
        "GPT2LMHeadModel": ["ln_final_bias"],
        "LlamaForCausalLM": [],
        "BartForConditionalGeneration": ["unembed_bias"],
    }
    assert a.constants.labels == constants[name]


@pytest.mark.parametrize(
    ("name", "why"),
    [("BertForMaskedLM", "MLM head's transform"), ("BertForSequenceClassification", "pooler")],
)
def test_converted_bert_heads_are_refused(name, why):
    from glassformer.interop.huggingface import from_huggingface

    _, cache = run(from_huggingface(huggingface(name, V)))
    with pytest.raises(ValueError, match=why):
        logit_attribution(cache, 1)
