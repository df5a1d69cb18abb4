"""Hook points (nn/hooks.py, models/hooked.py): what each point holds is what the notes' formula
gives from the points before it, in all three families, on padded batches, with and without
the KV cache; hooks that return their input change nothing, hooks that replace a tensor
change exactly what it feeds."""

import math

import pytest
import torch

from glassformer.models import (
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
    EncoderModel,
)
from glassformer.models.config import ModelConfig

V = 29
LEFT = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1]])
RIGHT = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0, 0]])
TARGET = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])

CASES = {  # name: (class, config options); each family pre- and post-norm, GQA in each
    "decoder pre-norm learned gqa": (
        DecoderLM,
        dict(family="decoder", n_kv_head=2, activation="gelu_tanh"),
    ),
    "decoder post-norm rotary": (
        DecoderLM,
        dict(family="decoder", norm_first=False, positional="rotary", activation="relu"),
    ),
    "mlm post-norm sinusoidal": (
        EncoderMLM,
        dict(
            family="encoder",
            norm_first=False,
            positional="sinusoidal",
            embed_norm=True,
            type_vocab_size=2,
            mlm_transform=True,
        ),
    ),
    "classifier pre-norm rotary gqa": (
        EncoderClassifier,
        dict(family="encoder", positional="rotary", n_kv_head=1, pooling="mean", pooler=True),
    ),
    "seq2seq pre-norm rotary gqa swiglu": (
        EncoderDecoder,
        dict(family="encoder-decoder", positional="rotary", n_kv_head=2, activation="swiglu"),
    ),
    "seq2seq post-norm learned rms": (
        EncoderDecoder,
        dict(family="encoder-decoder", norm_first=False, norm="rms", embed_scale=True),
    ),
}
DECODING = [name for name in CASES if "mlm" not in name and "classifier" not in name]
PATH_CHANGING = ("hook_mask", "hook_attn_scores", "hook_pattern", "hook_result")


def scored(name: str, args: dict, logits: torch.Tensor, packed: bool) -> torch.Tensor:
    """The logits a loss or a prediction reads. An encoder's outputs at padded positions are
    not specified: packing (glassformer.fast, inference without gradients and without hooks)
    leaves zeros there, the ordinary path whatever was computed from the padding. So where
    packing can run, an MLM's logits are compared at the real tokens."""
    if "mlm" in name and packed:
        return logits[args["attention_mask"].bool()]  # (N, V)
    return logits


def build(name: str, dtype=torch.float32):
    cls, options = CASES[name]
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=V, d_model=16, n_head=4, n_layer=2, max_len=16, d_ff=24)
    return cls(config.replace(**options)).to(dtype).eval()


def inputs(name: str, seed: int = 1) -> dict:
    """The forward pass's arguments: random ids, padded (left for the decoder-only model)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (3, 7), generator=g)
    family = CASES[name][1]["family"]
    if family == "decoder":
        return dict(input_ids=ids, attention_mask=LEFT)
    if family == "encoder":
        types = torch.randint(0, 2, (3, 7), generator=g) if "mlm" in name else None
        return dict(input_ids=ids, attention_mask=RIGHT, token_type_ids=types)
    target = torch.randint(3, V, (3, 5), generator=g)
    return dict(
        input_ids=ids,
        attention_mask=RIGHT,
        decoder_input_ids=target,
        decoder_attention_mask=TARGET,
    )


def stacks(model) -> list[tuple[str, torch.nn.Module]]:
    """(name prefix, stack) of each block stack, in the order of the pass: the module that
    holds the embedding, ``blocks`` and ``ln_final`` (a decoder-only or encoder-only model
    itself)."""
    if isinstance(model, EncoderDecoder):
        return [("encoder.", model.encoder), ("decoder.", model.decoder)]
    return [("", model)]


def attentions(model, args: dict) -> list[tuple[str, torch.nn.Module, torch.Tensor, bool]]:
    """(hook name prefix, module, key padding mask (B, S), causal) of every attention layer."""
    found = []
    for prefix, stack in stacks(model):
        causal = prefix == "decoder." or isinstance(model, DecoderLM)
        keys = args["decoder_attention_mask" if prefix == "decoder." else "attention_mask"]
        for i, block in enumerate(stack.blocks):
            found.append((f"{prefix}blocks.{i}.attn", block.attn, keys, causal))
            if block.cross_attn is not None:
                memory = args["attention_mask"]
                found.append((f"{prefix}blocks.{i}.cross_attn", block.cross_attn, memory, False))
    return found


def close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-12)


# The residual stream ------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_residual_stream_is_continuous_and_ends_in_the_hidden_states(name):
    model = build(name, torch.float64)
    args = inputs(name)
    out, cache = model.run_with_cache(**args)
    hidden = {"": out.hidden_states, "decoder.": out.hidden_states}
    hidden["encoder."] = getattr(out, "encoder_hidden_states", None)
    for prefix, stack in stacks(model):
        n = len(stack.blocks)
        for i, block in enumerate(stack.blocks):
            at = f"{prefix}blocks.{i}."
            pre, mid, post = (cache[at + f"hook_resid_{s}"] for s in ("pre", "mid", "post"))
            after_attn = cache[at + "hook_resid_mid_cross"] if block.cross_attn else mid
            if i + 1 < n:
                assert torch.equal(post, cache[f"{prefix}blocks.{i + 1}.hook_resid_pre"])
            if model.config.norm_first:  # X + F(Norm(X)), exactly the sums of the stream
                assert torch.equal(mid, pre + cache[at + "hook_attn_out"])
                assert torch.equal(post, after_attn + cache[at + "hook_mlp_out"])
                assert torch.equal(cache[at + "ln1.hook_normalized"], block.ln1(pre))
                if block.cross_attn is not None:
                    cross = cache[at + "hook_cross_attn_out"]
                    assert torch.equal(after_attn, mid + cross)
            else:  # Norm(X + F(X)): the stream is each norm's output
                assert torch.equal(mid, cache[at + "ln1.hook_normalized"])
                assert torch.equal(mid, block.ln1(pre + cache[at + "hook_attn_out"]))
                last_norm = "ln3" if block.cross_attn is not None else "ln2"
                assert torch.equal(post, cache[at + f"{last_norm}.hook_normalized"])
        last = cache[f"{prefix}blocks.{n - 1}.hook_resid_post"]
        if stack.ln_final is not None:  # pre-norm: hidden states = ln_final(last resid_post)
            assert torch.equal(cache[prefix + "ln_final.hook_normalized"], hidden[prefix])
            assert torch.equal(stack.ln_final(last), hidden[prefix])
        else:
            assert torch.equal(last, hidden[prefix])
    assert torch.equal(cache["hook_logits"], out.logits)


@pytest.mark.parametrize("name", CASES)
def test_embeddings_sum_to_the_first_residual_stream(name):
    """x^(0) = W_e[:, x[n]] + r_n (+ W_s[:, segment[n]]), then BERT's norm if there is one."""
    model = build(name, torch.float64)
    _, cache = model.run_with_cache(**inputs(name))
    for prefix, stack in stacks(model):
        x = cache[prefix + "hook_embed"]
        if model.config.positional == "rotary":
            assert prefix + "hook_pos_embed" not in cache  # positions rotate q and k instead
        else:
            x = x + cache[prefix + "hook_pos_embed"]
        if model.config.type_vocab_size:
            x = x + cache[prefix + "hook_token_type_embed"]
        if model.config.embed_norm:
            assert torch.equal(cache[prefix + "ln_embed.hook_normalized"], stack.ln_embed(x))
            x = cache[prefix + "ln_embed.hook_normalized"]
        assert torch.equal(x, cache[prefix + "blocks.0.hook_resid_pre"])


def test_the_heads_points_hold_the_pooled_vector_and_the_logits():
    """Classifier: v = tanh(W mean_real(h) + b), logits = W_c v + b_c; EncoderModel's pooled."""
    name = "classifier pre-norm rotary gqa"
    model, args = build(name, torch.float64), inputs(name)
    out, cache = model.run_with_cache(**args)
    real = RIGHT[..., None].double()
    mean = (out.hidden_states * real).sum(1) / real.sum(1)  # (B, C) over the real tokens
    close(cache["hook_pooled"], model.pooler(mean).tanh())
    assert torch.equal(cache["hook_logits"], model.classifier(cache["hook_pooled"]))
    body = EncoderModel(model.config).double().eval()
    out, cache = body.run_with_cache(**args)
    assert out.logits is None and torch.equal(cache["hook_pooled"], out.pooled)
    assert torch.equal(cache["ln_final.hook_normalized"], out.hidden_states)


# Attention -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_pattern_is_the_softmax_of_the_masked_scores_and_z_is_a_v(name):
    """â = q·k/√D + b (Eq. 2), A = softmax(â) over the allowed keys (Eq. 3), zero rows where
    none is allowed, z_n = Σ_m A_nm v_m (Eq. 1); with GQA kv head j serves query heads
    jG..jG+G-1."""
    model = build(name, torch.float64)
    args = inputs(name)
    _, cache = model.run_with_cache(**args)
    dead_rows = 0
    for at, attn, keys, causal in attentions(model, args):
        q = cache.get(f"{at}.hook_rot_q", cache[f"{at}.hook_q"])  # (B, T, H, D)
        k = cache.get(f"{at}.hook_rot_k", cache[f"{at}.hook_k"])  # (B, S, H_kv, D)
        v = cache[f"{at}.hook_v"]
        b, t, h, d = q.shape
        s = k.shape[1]
        serves = torch.arange(h) // (h // attn.n_kv_head)  # the kv head of each query head
        k, v = k[:, :, serves], v[:, :, serves]  # (B, S, H, D)
        allowed = keys.bool()[:, None, None, :].expand(b, h, t, s)
        if causal:
            allowed = allowed & torch.ones(t, s, dtype=torch.bool).tril(s - t)
        mask = cache[f"{at}.hook_mask"]
        assert mask.shape == (b, h, t, s) and torch.equal(mask, allowed)

        scores = cache[f"{at}.hook_attn_scores"]
        want = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(d)
        close(scores[allowed], want[allowed])
        assert scores[~allowed].isneginf().all()

        top = want.masked_fill(~allowed, -math.inf).amax(-1, keepdim=True)  # (B, H, T, 1)
        e = torch.where(allowed, (want - top).exp(), 0.0)  # e^{â_nm}, 0 where masked
        z_n = e.sum(-1, keepdim=True)
        a = torch.where(z_n > 0, e / z_n, 0.0)  # A_nm = e^{â_nm} / Z_n
        close(cache[f"{at}.hook_pattern"], a)
        dead_rows += int((~allowed.any(-1)).sum())
        close(cache[f"{at}.hook_z"], torch.einsum("bhts,bshd->bthd", a, v))
    if isinstance(model, DecoderLM):
        assert dead_rows > 0  # left padding: a padded first query sees no key, A's row is 0


@pytest.mark.parametrize("name", CASES)
def test_heads_contributions_sum_to_the_attention_output(name):
    """hook_result[..., h, :] = z_h W^O_h, and Σ_h z_h W^O_h + b^O is the sub-layer's output,
    as the fused path (no hook_result attached) computes it."""
    model = build(name, torch.float64)
    args = inputs(name)
    _, cache = model.run_with_cache(**args)
    _, fused = model.run_with_cache(**args, names=lambda n: n.endswith("attn_out"))
    for at, attn, _, _ in attentions(model, args):
        z, result = cache[f"{at}.hook_z"], cache[f"{at}.hook_result"]  # (B, T, H, D), (B, T, H, C)
        d = attn.head_dim
        w, bias = attn.out_proj.weight, attn.out_proj.bias  # (C, H·D), (C,)
        for h in range(attn.n_head):
            close(result[:, :, h], z[:, :, h] @ w[:, h * d : (h + 1) * d].T)
        out = at.replace(".cross_attn", ".hook_cross_attn_out").replace(".attn", ".hook_attn_out")
        close(result.sum(2) + bias, cache[out])
        close(result.sum(2) + bias, fused[out])


# Hooks that change nothing, hooks that change one thing ---------------------------------------
def identity(tensor, hook):
    return tensor


def with_and_without_grad() -> list:
    """(name, grad) for every case."""
    return [
        pytest.param(name, grad, id=f"{name}-{'grad' if grad else 'no_grad'}")
        for name in CASES
        for grad in (True, False)
    ]


@pytest.mark.parametrize("name, grad", with_and_without_grad())
def test_hooks_that_return_their_input_leave_the_logits_bit_identical(name, grad):
    """On every point at once and on each kind of point. The exception: a hook on the mask,
    the scores or the pattern makes attention run its written-out path (scores, softmax, A V)
    instead of the fused kernel, and one on hook_result sums the heads' terms z_h W^O_h
    instead of one matmul on the concatenated heads: the same function, other float
    rounding, so those agree to 1e-6 (float32), not bit for bit."""
    model = build(name)
    args = inputs(name)
    with torch.set_grad_enabled(grad):
        plain = scored(name, args, model(**args).logits, packed=not grad)
        points = list(model.hook_points())
        kinds = sorted({p.rsplit(".", 1)[-1] for p in points})
        for kind in kinds:
            with model.hooks([(lambda n, kind=kind: n.rsplit(".", 1)[-1] == kind, identity)]):
                hooked = scored(name, args, model(**args).logits, packed=not grad)
            if kind in PATH_CHANGING:
                torch.testing.assert_close(hooked, plain, rtol=0, atol=1e-6, msg=kind)
            else:
                assert torch.equal(hooked, plain), kind
        keeps_path = [(lambda n: n.rsplit(".", 1)[-1] not in PATH_CHANGING, identity)]
        kept = model.run_with_hooks(**args, hooks=keeps_path).logits
        assert torch.equal(scored(name, args, kept, packed=not grad), plain)
        every = model.run_with_hooks(**args, hooks=[(lambda n: True, identity)]).logits
        every = scored(name, args, every, packed=not grad)
        torch.testing.assert_close(every, plain, rtol=0, atol=1e-6)


ABLATIONS = [(name, "attn") for name in CASES]
ABLATIONS += [(name, "cross_attn") for name in CASES if name.startswith("seq2seq")]


@pytest.mark.parametrize("name, which", ABLATIONS)
def test_zeroing_one_head_changes_only_what_that_head_feeds(name, which):
    """z[:, :, h] = 0 in the last layer: everything computed before is unchanged, the other
    heads' terms z_g W^O_g too, and the attention output loses exactly head h's term."""
    model = build(name, torch.float64)
    args = inputs(name)
    prefix, stack = stacks(model)[-1]
    at = f"{prefix}blocks.{len(stack.blocks) - 1}.{which}"
    head, others = 1, [0, 2, 3]

    def zero_head(z, hook):
        z = z.clone()
        z[:, :, head] = 0.0
        return z

    out, clean = model.run_with_cache(**args)
    ablated_out, ablated = model.run_with_cache(**args, hooks=[(f"{at}.hook_z", zero_head)])
    names = list(clean)
    assert list(ablated) == names
    for n in names[: names.index(f"{at}.hook_z")]:
        assert torch.equal(ablated[n], clean[n]), n
    z, result = ablated[f"{at}.hook_z"], ablated[f"{at}.hook_result"]
    assert torch.equal(z[:, :, others], clean[f"{at}.hook_z"][:, :, others])
    assert torch.equal(result[:, :, others], clean[f"{at}.hook_result"][:, :, others])
    assert not z[:, :, head].any() and not result[:, :, head].any()
    sub_layer = at.replace(".cross_attn", ".hook_cross_attn_out").replace(".attn", ".hook_attn_out")
    close(ablated[sub_layer], clean[sub_layer] - clean[f"{at}.hook_result"][:, :, head])
    assert not torch.allclose(ablated_out.logits, out.logits)


@pytest.mark.parametrize("name", CASES)
def test_patching_the_residual_stream_gives_the_donors_output(name):
    """Every stack's blocks.0.hook_resid_pre replaced by another input's: the output is that
    input's, bit for bit."""
    model = build(name, torch.float64)
    args, donor_args = inputs(name, seed=1), inputs(name, seed=2)
    first = [f"{prefix}blocks.0.hook_resid_pre" for prefix, _ in stacks(model)]
    donor, cache = model.run_with_cache(**donor_args, names=first)

    def patch(tensor, hook):
        return cache[hook.name]

    patched = model.run_with_hooks(**args, hooks=[(n, patch) for n in first])
    assert not torch.allclose(model(**args).logits, donor.logits)
    assert torch.equal(patched.logits, donor.logits)


def test_a_replaced_pattern_is_the_one_attention_uses():
    name = "decoder pre-norm learned gqa"
    model = build(name, torch.float64)
    args = inputs(name)
    at = "blocks.1.attn"

    def reverse_keys(a, hook):
        return a.flip(-1)

    out, cache = model.run_with_cache(**args, hooks=[(f"{at}.hook_pattern", reverse_keys)])
    _, plain = model.run_with_cache(**args)
    a = cache[f"{at}.hook_pattern"]  # (B, H, T, S): stored after the hook replaced it
    assert torch.equal(a, plain[f"{at}.hook_pattern"].flip(-1))
    v = cache[f"{at}.hook_v"][:, :, torch.arange(4) // 2]  # (B, S, H, D): 2 query heads a kv head
    close(cache[f"{at}.hook_z"], torch.einsum("bhts,bshd->bthd", a, v))
    assert not torch.allclose(out.logits, model(**args).logits)


# The KV cache -------------------------------------------------------------------------------
def recorded(model, names, run):
    """(run(), {name: tensor}) for the points ``names`` picks, as run_with_cache records."""
    cache = {}

    def store(tensor, hook):
        cache[hook.name] = tensor.detach()

    with model.hooks([(names, store)]):
        out = run()
    return out, cache


@pytest.mark.parametrize("name", DECODING)
def test_cached_decoding_sees_the_rows_of_the_full_pass(name):
    """A prompt of 3 positions, then one position a step: each step's pattern is the full
    pass's rows for its queries over the keys so far, and hook_k holds the new positions'
    keys only; cross-attention computes the source's keys at the first step alone."""
    model = build(name, torch.float64)
    args = inputs(name)
    seq2seq = isinstance(model, EncoderDecoder)
    prefix = "decoder." if seq2seq else ""
    ids = args["decoder_input_ids" if seq2seq else "input_ids"]
    mask = args["decoder_attention_mask" if seq2seq else "attention_mask"]

    def wanted(n):
        return n.startswith(prefix) and n.endswith(("hook_pattern", "hook_k", "hook_rot_k"))

    full_out, full = model.run_with_cache(**args, names=wanted)
    source = args["attention_mask"]
    memory = model.encode(args["input_ids"], source) if seq2seq else None
    kv = model.new_cache()
    n_layer = len(stacks(model)[-1][1].blocks)
    t = ids.shape[1]
    for a, b in [(0, 3), *((s, s + 1) for s in range(3, t))]:
        if seq2seq:  # forward() has no cache: the step is decode(), with the hooks attached

            def step_of(a=a, b=b):
                return model.decode(ids[:, a:b], memory, source, mask[:, :b], cache=kv)

            out, step = recorded(model, wanted, step_of)
        else:
            out, step = model.run_with_cache(ids[:, a:b], mask[:, :b], cache=kv, names=wanted)
        close(out.logits, full_out.logits[:, a:b])
        for i in range(n_layer):
            at = f"{prefix}blocks.{i}.attn"
            pattern = full[f"{at}.hook_pattern"][:, :, a:b]  # (B, H, b - a, T)
            assert step[f"{at}.hook_pattern"].shape[-2:] == (b - a, b)
            close(step[f"{at}.hook_pattern"], pattern[..., :b])
            assert not pattern[..., b:].any()  # the keys not yet cached: causal zeros
            for k in ("hook_k", "hook_rot_k"):
                if f"{at}.{k}" in full:
                    assert step[f"{at}.{k}"].shape[1] == b - a
                    close(step[f"{at}.{k}"], full[f"{at}.{k}"][:, a:b])
            if seq2seq:
                cross = f"{prefix}blocks.{i}.cross_attn"
                close(step[f"{cross}.hook_pattern"], full[f"{cross}.hook_pattern"][:, :, a:b])
                assert (f"{cross}.hook_k" in step) == (a == 0)
                if a == 0:
                    close(step[f"{cross}.hook_k"], full[f"{cross}.hook_k"])


# Errors --------------------------------------------------------------------------------------
def active(model) -> list[str]:
    return [name for name, point in model.hook_points().items() if point.active]


def test_an_unknown_hook_name_is_refused_with_the_close_matches():
    name = "seq2seq pre-norm rotary gqa swiglu"
    model, args = build(name), inputs(name)
    near = "'decoder.blocks.0.attn.hook_patern' is not a hook point of this model; did you mean "
    with pytest.raises(ValueError, match=near + "decoder.blocks.0.attn.hook_pattern"):
        model.run_with_hooks(**args, hooks=[("decoder.blocks.0.attn.hook_patern", identity)])
    with pytest.raises(ValueError, match="did you mean encoder.blocks.1.hook_resid_pre"):
        model.run_with_cache(**args, names=["encoder.blocks.1.hook_resid_pr"])
    with pytest.raises(ValueError, match="a hook is \\(name or filter, fn\\); got int"):
        model.run_with_hooks(**args, hooks=[(3, identity)])
    _, cache = model.run_with_cache(**args, names=["encoder.blocks.1.attn.hook_pattern"])
    assert torch.equal(cache["pattern", 1, "encoder"], cache["encoder.blocks.1.attn.hook_pattern"])
    with pytest.raises(KeyError, match="did you mean encoder.blocks.1.attn.hook_pattern"):
        cache["encoder.blocks.1.attn.hook_patern"]
    assert active(model) == []


def test_a_filter_that_picks_no_hook_point_is_refused():
    name = "decoder pre-norm learned gqa"
    model, args = build(name), inputs(name)
    with pytest.raises(ValueError, match="picks no hook point"):
        model.run_with_hooks(**args, hooks=[(lambda n: "cross" in n, identity)])
    with pytest.raises(ValueError, match="picks no hook point"):
        model.run_with_cache(**args, names=lambda n: n.startswith("encoder."))
    assert active(model) == []


def test_hooks_are_removed_when_the_forward_pass_raises():
    name = "decoder pre-norm learned gqa"
    model, args = build(name), inputs(name)
    plain = model(**args).logits

    def fails(tensor, hook):
        raise RuntimeError(f"stop at {hook.name}")

    hooks = [("blocks.0.hook_resid_pre", identity), ("blocks.1.attn.hook_z", fails)]
    with pytest.raises(RuntimeError, match="stop at blocks.1.attn.hook_z"):
        model.run_with_hooks(**args, hooks=hooks)
    assert active(model) == []
    with pytest.raises(RuntimeError, match="stop at blocks.1.attn.hook_z"):
        model.run_with_cache(**args, hooks=hooks)
    assert active(model) == []
    too_long = torch.randint(3, V, (1, 17))  # max_len is 16: the model itself refuses
    with pytest.raises(ValueError, match="the input needs 17 positions"):
        model.run_with_cache(too_long)
    assert active(model) == []
    with pytest.raises(ValueError, match="not a hook point"):  # the first hook was attached
        model.run_with_hooks(**args, hooks=[("hook_embed", identity), ("hook_embd", identity)])
    assert active(model) == []
    assert torch.equal(model(**args).logits, plain)


def test_an_attention_mask_of_the_wrong_shape_is_a_value_error():
    name = "decoder pre-norm learned gqa"  # EncoderMLM and EncoderDecoder refuse it already
    model, args = build(name), inputs(name)
    with pytest.raises(ValueError, match=r"attention_mask must be \(B, S\)"):
        model.run_with_cache(args["input_ids"], attention_mask=args["attention_mask"][0])


# Fast paths ----------------------------------------------------------------------------------
def labels(name: str, args: dict) -> torch.Tensor:
    family = CASES[name][1]["family"] if name in CASES else "decoder"
    if family == "decoder":
        return args["input_ids"]
    if family == "encoder-decoder":
        return args["decoder_input_ids"].masked_fill(TARGET == 0, -100)
    if "classifier" in name:
        return torch.tensor([0, 1, 1])
    return args["input_ids"].masked_fill(RIGHT == 0, -100)


LONG = "decoder long unpadded"


def fast_path_params() -> list:
    """(name, train) for every case and a long unpadded decoder with a vocabulary of 1100."""
    return [
        pytest.param(
            name, train, id=f"{name}-{'train with gradients' if train else 'eval without'}"
        )
        for name in [*CASES, LONG]
        for train in (False, True)
    ]


def build_long():
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=1100, d_model=16, n_head=4, n_layer=2, max_len=64, activation="gelu_tanh"
    )
    model = DecoderLM(config)
    ids = torch.randint(0, 1100, (8, 64), generator=torch.Generator().manual_seed(1))
    return model, dict(input_ids=ids)


@pytest.mark.parametrize("name, train", fast_path_params())
def test_fast_paths_off_give_the_same_logits_and_gradients(name, train):
    model, args = build_long() if name == LONG else (build(name), inputs(name))
    model.train(train)  # dropout is 0: training mode changes only which paths may run

    def run():
        model.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(train):
            out = model(**args, labels=labels(name, args))
            if train:
                out.loss.backward()
        grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
        logits = scored(name, args, out.logits.detach(), packed=not train)
        return logits, out.loss.detach(), grads

    fast = run()
    model.use_fast_paths(False)
    reference = run()
    model.use_fast_paths(True)
    torch.testing.assert_close(fast[0], reference[0], rtol=0, atol=1e-5)
    torch.testing.assert_close(fast[1], reference[1], rtol=0, atol=1e-5)
    assert fast[2].keys() == reference[2].keys() and (len(fast[2]) > 0) == train
    for n, g in fast[2].items():
        torch.testing.assert_close(g, reference[2][n], rtol=1e-4, atol=1e-6, msg=n)


def test_the_short_form_names_a_block_level_point_as_well():
    """cache[short, layer(, stack)] finds ``blocks.{l}.hook_{short}`` (the residual stream)
    as well as the points of a block's modules (``blocks.{l}.attn.hook_{short}``)."""
    name = "seq2seq pre-norm rotary gqa swiglu"
    model, args = build(name), inputs(name)
    _, cache = model.run_with_cache(**args)
    got = cache["resid_post", 1, "encoder"]
    assert torch.equal(got, cache["encoder.blocks.1.hook_resid_post"])
    assert torch.equal(cache["pre", 0, "decoder"], cache["decoder.blocks.0.mlp.hook_pre"])
    with pytest.raises(KeyError, match="names 2 cached points"):  # attn and cross_attn
        cache["pattern", 0, "decoder"]


def test_the_short_form_says_when_a_point_was_not_cached_and_how_to_cache_it():
    """A point the model has but the pass left out (the attention pattern of circuit_cache),
    a point no block has, and a cache built by hand (no model to ask)."""
    from glassformer.circuits import circuit_cache
    from glassformer.models.hooked import ActivationCache

    name = "decoder pre-norm learned gqa"
    model, args = build(name), inputs(name)
    _, cache = circuit_cache(model, **args)
    with pytest.raises(
        KeyError,
        match=r"\('pattern', 1\): 'blocks\.1\.attn\.hook_pattern' was not cached in this pass "
        r"\(glassformer\.circuits\.circuit_cache leaves the attention scores and pattern out.*"
        r"model\.run_with_cache\(\.\.\., names=\['blocks\.1\.attn\.hook_pattern', \.\.\.\]\), "
        "or names=None",
    ):
        cache["pattern", 1]
    with pytest.raises(KeyError, match=r"'blocks\.0\.hook_resid_pre' was not cached in this pass;"):
        model.run_with_cache(**args, names="blocks.0.hook_resid_post")[1]["resid_pre", 0]
    with pytest.raises(KeyError, match=r"the model has no point hook_nothing in that block; it"):
        cache["nothing", 0]
    by_hand = ActivationCache({"blocks.0.hook_resid_pre": torch.zeros(1)})
    with pytest.raises(KeyError, match=r"no cached point of that block ends in hook_pattern; "):
        by_hand["pattern", 0]


def test_run_with_cache_takes_one_name_as_a_string():
    """names= is TransformerLens's names_filter: one name, a list of names, or a filter."""
    name = "decoder pre-norm learned gqa"
    model, args = build(name), inputs(name)
    _, listed = model.run_with_cache(**args, names=["blocks.0.hook_resid_post"])
    _, one = model.run_with_cache(**args, names="blocks.0.hook_resid_post")
    assert list(one) == ["blocks.0.hook_resid_post"]
    assert torch.equal(one["blocks.0.hook_resid_post"], listed["blocks.0.hook_resid_post"])
    _, listed = model.run_with_cache(**args, names=("blocks.1.hook_resid_pre", "hook_embed"))
    assert list(listed) == ["hook_embed", "blocks.1.hook_resid_pre"]  # the order of the pass
    with pytest.raises(
        ValueError,
        match=r"'resid' is not a hook point of this model; it has \d+, e.g. hook_embed, hook_pos",
    ):
        model.run_with_cache(**args, names="resid")
    with pytest.raises(
        ValueError,
        match="names must be a hook point name, a list of names or a filter on the name; got int",
    ):
        model.run_with_cache(**args, names=5)
    with pytest.raises(ValueError, match="names must be hook point names \\(str\\); got int 0"):
        model.run_with_cache(**args, names=["hook_embed", 0])
    one_pair = r"got 'hook_embed' \(hooks is a list of them: hooks=\[\(name, fn\)\] for one\)"
    with pytest.raises(ValueError, match=one_pair):
        model.run_with_hooks(**args, hooks=("hook_embed", identity))
    with pytest.raises(ValueError, match="with fn callable; got \\('hook_embed', 3\\)"):
        model.run_with_hooks(**args, hooks=[("hook_embed", 3)])
    assert active(model) == []


def test_the_short_form_names_the_layers_that_exist():
    name = "seq2seq pre-norm rotary gqa swiglu"
    model, args = build(name), inputs(name)
    _, cache = model.run_with_cache(**args)
    with pytest.raises(KeyError, match=r"\('z', 5, 'encoder'\): layer 5 is not in the encoder "):
        cache["z", 5, "encoder"]
    with pytest.raises(KeyError, match="its layers are 0..1"):
        cache["z", -1, "decoder"]
    with pytest.raises(KeyError, match="the layer is a block index, an int; cached layers: 0..1"):
        cache["z", "1", "decoder"]
    with pytest.raises(KeyError, match=r"is \(short name, layer\) or \(short name, layer, stack"):
        cache["z",]
    name = "decoder pre-norm learned gqa"
    model, args = build(name), inputs(name)
    _, cache = model.run_with_cache(**args)
    with pytest.raises(
        KeyError, match=r"\('pattern', 5\): layer 5 is not in the cache; its layers are 0..1"
    ):
        cache["pattern", 5]
    _, cache = model.run_with_cache(**args, names=lambda n: n.startswith("blocks.1."))
    with pytest.raises(KeyError, match="layer 0 is not in the cache; its layers are 1"):
        cache["pattern", 0]


def test_a_hook_that_returns_another_shape_is_refused():
    """A replacement must have the shape of what it replaces; None keeps the tensor."""
    name = "decoder pre-norm learned gqa"
    model, args = build(name), inputs(name)
    plain = model(**args).logits

    def shorter(tensor, hook):
        return tensor[:, :2]

    point = "blocks.0.hook_resid_post"
    with pytest.raises(
        ValueError,
        match=r"the hook at blocks.0.hook_resid_post returned a tensor of shape \(3, 2, 16\): "
        r"the point holds \(3, 7, 16\), and a replacement must have the same shape",
    ):
        model.run_with_hooks(**args, hooks=[(point, shorter)])
    assert active(model) == []
    with pytest.raises(TypeError, match="the hook at blocks.1.attn.hook_z returned list"):
        model.run_with_hooks(**args, hooks=[("blocks.1.attn.hook_z", lambda t, hook: [t])])
    seen = []
    out = model.run_with_hooks(**args, hooks=[(point, lambda t, hook: seen.append(t.shape))])
    assert seen == [(3, 7, 16)] and torch.equal(out.logits, plain)  # None: kept as it was
    assert active(model) == []
