"""OV and QK matrices (circuits/weights.py) against what the model computes: each head's
``hook_result`` is A (x S) + (A 1) b_V W_O and its ``hook_attn_scores`` x_n Y x_mᵀ plus the bias
terms, with x what the attention read, for all three families (pre- and post-norm, grouped-query
attention, cross-attention, both stacks) and converted Hugging Face GPT-2 and Llama; float64."""

import pytest
import torch
from torch.testing import assert_close

from glassformer.circuits import head_weights, ov_bias, ov_matrix, qk_bias, qk_matrix
from glassformer.circuits.weights import stack_module
from glassformer.models import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM
from glassformer.models.config import ModelConfig

V, T = 23, 6
TOL = dict(atol=1e-10, rtol=1e-10)

CASES = {  # name: (class, config options)
    "decoder pre-norm gqa": (DecoderLM, dict(family="decoder", n_kv_head=2)),
    "decoder post-norm sinusoidal": (
        DecoderLM,
        dict(family="decoder", norm_first=False, positional="sinusoidal"),
    ),
    "decoder rotary no-bias": (
        DecoderLM,
        dict(family="decoder", positional="rotary", bias=False, norm="rms", n_kv_head=1),
    ),
    "mlm post-norm": (
        EncoderMLM,
        dict(family="encoder", norm_first=False, embed_norm=True, type_vocab_size=2),
    ),
    "classifier pre-norm gqa": (EncoderClassifier, dict(family="encoder", n_kv_head=1)),
    "seq2seq pre-norm gqa": (EncoderDecoder, dict(family="encoder-decoder", n_kv_head=2)),
    "seq2seq post-norm rms": (
        EncoderDecoder,
        dict(family="encoder-decoder", norm_first=False, norm="rms", embed_scale=True),
    ),
    # one shared W^{QK} (W_Q = W_K), and none at all (W_Q = W_K = the head's rows of I)
    "decoder shared scores": (DecoderLM, dict(family="decoder", attention_scores="shared")),
    "seq2seq dot scores post-norm": (
        EncoderDecoder,
        dict(family="encoder-decoder", attention_scores="dot", norm_first=False),
    ),
}


def randomized(model):
    """Every weight and bias drawn large enough that attention is far from uniform and no
    bias is 0; float64, eval mode."""
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model.double().eval()


def build(name):
    cls, options = CASES[name]
    config = ModelConfig(vocab_size=V, d_model=16, n_head=4, n_layer=2, max_len=16, d_ff=24)
    return randomized(cls(config.replace(**options)))


def run(model):
    """(cache, args): a padded batch of two through every hook point."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, V, (2, T), generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, :2] = 0  # padding (left)
    args = dict(input_ids=ids, attention_mask=mask)
    if isinstance(model, EncoderDecoder):
        args.update(decoder_input_ids=torch.randint(1, V, (2, T - 1), generator=g))
    out, cache = model.run_with_cache(**args)
    if isinstance(model, EncoderDecoder):
        cache["memory"] = out.encoder_hidden_states
    return cache


def heads(model):
    """Every (stack, kind, layer) with attention, and the cache prefix of its block."""
    stacks = ["encoder", "decoder"] if isinstance(model, EncoderDecoder) else [None]
    for stack in stacks:
        prefix = f"{stack}.blocks" if stack else "blocks"
        n_layer = len(stack_module(model, stack).blocks)
        kinds = ["self", "cross"] if stack == "decoder" else ["self"]
        for layer in range(n_layer):
            for kind in kinds:
                yield stack, kind, layer, f"{prefix}.{layer}"


def inputs(model, cache, kind, block):
    """(x of the queries, x of the keys and values): what this attention read."""
    if model.config.norm_first:
        x = cache[f"{block}.{'ln1' if kind == 'self' else 'ln2'}.hook_normalized"]
    else:  # post-norm: the stream itself
        x = cache[f"{block}.{'hook_resid_pre' if kind == 'self' else 'hook_resid_mid'}"]
    return x, (x if kind == "self" else cache["memory"])


def check_result(model, cache):
    n = 0
    for stack, kind, layer, block in heads(model):
        attn = f"{block}.{'attn' if kind == 'self' else 'cross_attn'}"
        _, x_kv = inputs(model, cache, kind, block)
        s = ov_matrix(model, layer, kind=kind, stack=stack)  # (H, E, E)
        bias = ov_bias(model, layer, kind=kind, stack=stack)  # (H, E)
        written = x_kv[:, None] @ s.full() + bias[:, None]  # (B, H, S, E): x S + b_V W_O
        want = cache[f"{attn}.hook_pattern"] @ written  # (B, H, T, E): A (x S + 1 b_V W_O)
        assert_close(cache[f"{attn}.hook_result"], want.transpose(1, 2), **TOL)
        for h in range(model.config.n_head):  # one head at a time, as (E, E)
            one = ov_matrix(model, layer, h, kind=kind, stack=stack)
            assert one.shape == (16, 16) and torch.equal(one.full(), s[h].full())
        n += 1
    return n


def check_scores(model, cache):
    for stack, kind, layer, block in heads(model):
        attn = f"{block}.{'attn' if kind == 'self' else 'cross_attn'}"
        x_q, x_kv = inputs(model, cache, kind, block)
        y = qk_matrix(model, layer, kind=kind, stack=stack)
        b = qk_bias(model, layer, kind=kind, stack=stack)  # query, key (H, E), const (H,)
        want = (
            x_q[:, None] @ y.full() @ x_kv[:, None].mT  # (B, H, T, S)
            + (x_q @ b.query.T).transpose(1, 2)[..., None]
            + (x_kv @ b.key.T).transpose(1, 2)[..., None, :]
            + b.const[:, None, None]
        )
        got = cache[f"{attn}.hook_attn_scores"]
        seen = got.isfinite()  # the mask's -inf aside
        assert seen.any() and (~seen).any()  # padding and the causal mask are there
        assert_close(got[seen], want[seen], **TOL)


@pytest.mark.parametrize("name", list(CASES))
def test_head_result_is_pattern_times_x_s_plus_value_bias(name):
    model = build(name)
    assert check_result(model, run(model)) == (6 if "seq2seq" in name else 2)


@pytest.mark.parametrize("name", [n for n in CASES if "rotary" not in n])
def test_scores_are_x_y_xt_plus_bias_terms(name):
    model = build(name)
    check_scores(model, run(model))


def test_rotary_scores_differ_from_y_off_the_diagonal():
    """With rotary positions Y is the form with no rotation: the scores it gives are the real
    ones where query and key share a position (n = m), not elsewhere."""
    model = build("decoder rotary no-bias")
    cache = run(model)
    x = cache["blocks.0.ln1.hook_normalized"][:1]  # the unpadded row
    want = x[:, None] @ qk_matrix(model, 0).full() @ x[:, None].mT  # (1, H, T, T)
    got = cache["blocks.0.attn.hook_attn_scores"][:1]
    diag = torch.eye(T, dtype=torch.bool)
    assert_close(got[..., diag], want[..., diag], atol=1e-6, rtol=1e-6)  # float32 angles
    assert (got[..., torch.tril(~diag)] - want[..., torch.tril(~diag)]).abs().max() > 1e-3


def test_no_bias_means_zero_bias_terms():
    model = build("decoder rotary no-bias")
    assert not ov_bias(model, 1).any()
    assert not any(t.any() for t in qk_bias(model, 1, 2))


def test_grouped_query_heads_share_their_key_value_head():
    """n_head 4, n_kv_head 2: query heads 0, 1 read key/value head 0; 2, 3 read head 1."""
    model = build("decoder pre-norm gqa")
    w = head_weights(model, 0)
    wk = model.blocks[0].attn.projection_weights()[1][0]  # (H_kv D, E)
    for h, kv in enumerate([0, 0, 1, 1]):
        assert torch.equal(w.W_K[h], wk[kv * 4 : (kv + 1) * 4].T)
    assert torch.equal(w.W_V[0], w.W_V[1]) and not torch.equal(w.W_V[1], w.W_V[2])


def test_ranks_at_most_head_size():
    for name in ("decoder pre-norm gqa", "seq2seq post-norm rms"):
        model = build(name)
        for stack, kind, layer, _ in heads(model):
            for m in (ov_matrix, qk_matrix):
                fm = m(model, layer, kind=kind, stack=stack)
                assert fm.shape == (4, 16, 16) and fm.inner_dim == 4
                assert torch.equal(fm.rank, torch.linalg.matrix_rank(fm.full()))
                assert (fm.rank <= 4).all() and (fm.rank == 4).all()  # random weights: full


def test_every_layer_at_once():
    model = build("seq2seq pre-norm gqa")
    for m in (ov_matrix, qk_matrix):
        for kind in ("self", "cross"):
            every = m(model, None, kind=kind)  # (L, H, E, E)
            assert every.shape == (2, 4, 16, 16)
            for layer in (0, 1):
                one = m(model, layer, kind=kind)
                assert torch.equal(every.A[layer], one.A) and torch.equal(every.B[layer], one.B)
    assert_close(ov_bias(model, None)[1], ov_bias(model, 1))
    assert_close(qk_bias(model, None, 2).key[0], qk_bias(model, 0, 2).key)


def test_detached_and_default_stack():
    model = build("seq2seq pre-norm gqa")
    assert not ov_matrix(model, 0).A.requires_grad
    dec = model.decoder.blocks[1].attn.out_proj.weight
    assert torch.equal(ov_matrix(model, 1, 3).B, dec[:, 12:16].T)  # default: the decoder
    enc = model.encoder.blocks[1].attn.out_proj.weight
    assert torch.equal(ov_matrix(model, 1, 3, stack="encoder").B, enc[:, 12:16].T)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(layer=2), r"layer must be an int in 0\.\.1 \(or None"),
        (dict(layer=-1), "layer must be an int in 0..1"),
        (dict(layer="0"), "layer must be an int in 0..1"),
        (dict(head=4), "head must be None or an int in 0..3"),
        (dict(kind="encoder"), "kind must be one of"),
        (dict(kind="cross"), "no cross-attention"),
        (dict(stack="encoder"), "has no encoder"),
        (dict(stack="middle"), "stack must be one of"),
    ],
)
def test_bad_arguments_are_refused(kwargs, words):
    model = build("decoder pre-norm gqa")
    args = dict(layer=0, head=None) | kwargs
    with pytest.raises(ValueError, match=words):
        ov_matrix(model, args.pop("layer"), args.pop("head"), **args)


def test_fold_ln_reads_the_normalised_stream():
    """With the gain folded in, the weights read x̂ (the stream normalised without gain and
    bias: (x − μ)/s for LayerNorm, x/s for RMSNorm) as the plain ones read Norm(x) − β; a
    LayerNorm's folded rows are centred, an RMSNorm's are not."""
    for name, center in (("decoder pre-norm gqa", True), ("decoder rotary no-bias", False)):
        model = build(name)
        ln = model.blocks[1].ln1
        with torch.no_grad():
            normed = ln(torch.randn(5, 16, dtype=torch.float64))
        beta = ln.bias.detach() if center else 0
        scaled = (normed - beta) / ln.weight.detach()  # x̂
        for matrix in (ov_matrix, qk_matrix):
            plain, folded = matrix(model, 1, 2), matrix(model, 1, 2, fold_ln=True)
            assert_close(scaled @ folded.A, (normed - beta) @ plain.A, **TOL)
            if matrix is qk_matrix:
                assert_close(scaled @ folded.B.mT, (normed - beta) @ plain.B.mT, **TOL)
            sums = folded.A.sum(0).abs().amax()
            assert (sums < 1e-12) if center else (sums > 1e-3)
        every = ov_matrix(model, None, fold_ln=True).A
        assert_close(every[1, 2], ov_matrix(model, 1, 2, fold_ln=True).A, atol=0.0, rtol=0.0)


@pytest.mark.parametrize(
    ("name", "kwargs", "words"),
    [
        ("decoder post-norm sinusoidal", {}, "block 0's self-attention has no norm of its own"),
        ("seq2seq pre-norm gqa", dict(kind="cross"), "block 0's cross-attention has no norm"),
    ],
)
def test_fold_ln_is_refused_where_no_norm_comes_before_the_attention(name, kwargs, words):
    with pytest.raises(ValueError, match=f"fold_ln=True: {words}"):
        ov_matrix(build(name), 0, fold_ln=True, **kwargs)


# Hugging Face models converted to glassformer (random weights from small configs, offline)


def test_converted_gpt2_and_llama():
    transformers = pytest.importorskip("transformers")
    from glassformer.interop.huggingface import from_huggingface

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=2, n_embd=16, n_head=4, vocab_size=V, n_positions=16)
    )
    llama = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(
            num_hidden_layers=2,
            hidden_size=16,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=24,
            vocab_size=V,
            max_position_embeddings=16,
        )
    )
    for hf, rotary in ((gpt2, False), (llama, True)):
        model = from_huggingface(randomized(hf).float()).double().eval()
        cache = run(model)
        assert check_result(model, cache) == 2
        if not rotary:
            check_scores(model, cache)
