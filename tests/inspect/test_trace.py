"""trace(): the model runs once and each step shows tensors it computed (read at its hook
points) beside a formula; the steps must follow those formulas from one to the next, the last
value is the model's output, and the model is left as it was."""

from __future__ import annotations

import re

import pytest
import torch
from torch.testing import assert_close

from glassformer import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM, EncoderModel
from glassformer.inspect.trace import format_trace, trace
from glassformer.models.inputs import positions_from_mask

POST_NORM = dict(
    norm_first=False,
    norm="batch",
    activation="relu",
    positional="sinusoidal",
    embed_scale=True,
    final_norm=True,
)
CASES = {
    "gpt pre-norm, right padding": (DecoderLM, "tiny", {}),
    "llama: rms, swiglu, rotary, gqa, left padding": (DecoderLM, "tiny-llama", {}),
    "post-norm, relu, sinusoidal, √C": (DecoderLM, "tiny", dict(POST_NORM, norm="layer")),
    "encoder: post-norm, batchnorm, relu, sinusoidal, √C": (
        EncoderModel,
        "tiny-encoder",
        dict(POST_NORM, embed_norm=True),
    ),
    "bert mlm: post-norm, embed norm, segments, transform": (EncoderMLM, "bert-base", {}),
    "classifier: mean pooling, pooler": (
        EncoderClassifier,
        "tiny-encoder",
        dict(pooler=True, n_classes=3, activation="gelu_tanh"),
    ),
    "encoder model with pooler": (EncoderModel, "bert-base", {}),
    "vaswani seq2seq": (EncoderDecoder, "tiny-seq2seq", {}),
    "seq2seq pre-norm, learned, offset": (
        EncoderDecoder,
        "tiny-seq2seq",
        dict(norm_first=True, positional="learned", position_offset=2),
    ),
}


def _inputs(kit, cls, left: bool = False):
    x, mask = kit.right_padded()
    if left:
        mask = mask.flip(1)
    if cls is EncoderDecoder:
        tgt, tgt_mask = kit.right_padded(t=5, lengths=(5, 3))
        return (x, mask), dict(decoder_input_ids=tgt, decoder_attention_mask=tgt_mask)
    return (x, mask), {}


def _output(out):
    return next(v for v in (out.logits, out.pooled, out.hidden_states) if v is not None)


@pytest.mark.parametrize("case", list(CASES))
def test_traced_output_equals_the_model_output(kit, case):
    cls, name, overrides = CASES[case]
    model = kit.build(cls, name, **overrides)
    args, kwargs = _inputs(kit, cls, left="left" in case)
    steps = trace(model, *args, **kwargs)
    assert_close(steps[-1].value, _output(model(*args, **kwargs)), atol=1e-12, rtol=0)


def test_trace_runs_in_eval_mode_and_leaves_the_model_as_it_was(kit):
    model = kit.build(DecoderLM, "tiny", dropout=0.5).train()
    x = kit.ids()
    value = trace(model, x)[-1].value
    assert model.training and not value.requires_grad
    assert not any(p.active for p in model.hook_points().values())
    assert not any(m._forward_hooks for m in model.modules())
    assert "embed_input" not in vars(model)  # the method again, not the reading wrapper
    assert_close(value, model.eval()(x).logits, atol=1e-12, rtol=0)  # no dropout in the trace


def _by_name(steps, where: str) -> dict:
    return {s.name: s.tensors for s in steps if s.where == where}


def _repeat(t: torch.Tensor, h: int) -> torch.Tensor:
    return t.repeat_interleave(h // t.shape[1], dim=1)  # GQA: each K/V head serves h // H_kv


@pytest.mark.parametrize(
    "case", ["llama: rms, swiglu, rotary, gqa, left padding", "vaswani seq2seq"]
)
def test_each_step_follows_its_formula(kit, case):
    cls, name, overrides = CASES[case]
    model = kit.build(cls, name, **overrides)
    args, kwargs = _inputs(kit, cls, left="left" in case)
    steps = trace(model, *args, **kwargs)
    attentions = sorted({s.where for s in steps if s.name == "softmax"})
    assert len(attentions) == (6 if cls is EncoderDecoder else 2)
    for where in attentions:  # the attention's path in the model
        attn = model.get_submodule(where)
        step = _by_name(steps, where)
        rotated = step.get("rotary positions") or step["Q, K, V projections"]
        q, k, v = rotated["Q"], rotated["K"], step["Q, K, V projections"]["V"]
        h = q.shape[1]
        a = q @ _repeat(k, h).transpose(-2, -1) / q.shape[-1] ** 0.5  # Eq. (2)
        mask, scores = step["mask"]["mask"], step["mask"]["â"]
        assert torch.equal(scores, step["scores"]["â"])
        assert_close(scores, a.masked_fill(~mask, float("-inf")), atol=1e-12, rtol=0)
        weights = step["softmax"]["A"]
        live = mask.expand_as(a).any(-1, keepdim=True)
        assert_close(weights, scores.softmax(-1).where(live, 0.0), atol=1e-12, rtol=0)  # Eq. (3)
        heads = step["weighted sum"]["heads"]
        assert_close(heads, weights @ _repeat(v, h), atol=1e-12, rtol=0)  # Eq. (1)
        concat = heads.transpose(1, 2).flatten(2)  # (B, T, H·D)
        assert_close(step["output projection"]["out"], attn.out_proj(concat), atol=1e-12, rtol=0)
    for where in sorted({s.where for s in steps if s.name == "first layer"}):
        ffn = model.get_submodule(where)
        step = _by_name(steps, where)
        hidden, act = step["first layer"]["u"], step["activation"]["a"]
        if ffn.activation == "swiglu":
            gate, up = hidden.chunk(2, dim=-1)
            assert_close(act, torch.nn.functional.silu(gate) * up, atol=1e-12, rtol=0)
        else:
            assert_close(act, torch.relu(hidden), atol=1e-12, rtol=0)
        assert_close(step["second layer"]["out"], ffn.fc2(act), atol=1e-12, rtol=0)
    if model.config.positional == "rotary":  # the tables embed_input handed to the blocks
        mask = args[1]
        positions = positions_from_mask(mask, mask.shape[1], 0, mask.device, None)  # (B, T)
        cos, sin = model.pos_embed.rotary(positions)  # (B, 1, T, D): left padding
        tables = _by_name(steps, "input")["positional encoding"]
        assert torch.equal(tables["cos"], cos) and torch.equal(tables["sin"], sin)


def test_one_block_is_walked_in_the_order_of_the_notes(kit):
    model = kit.build(DecoderLM, "tiny")
    steps = trace(model, kit.ids(), layer=1)
    block = [s for s in steps if s.where.startswith("blocks.")]
    assert {s.where.split(".")[1] for s in block} == {"1"}
    assert [s.name for s in block] == [
        "norm", "Q, K, V projections", "scores", "mask", "softmax", "weighted sum",
        "output projection", "residual",
        "norm", "first layer", "activation", "second layer", "residual",
    ]  # fmt: skip
    formulas = {s.name: s.formula for s in block}
    assert "(Eq. 4)" in formulas["Q, K, V projections"]
    assert "q_nᵀ k_m / √d_k  (Eq. 2)" in formulas["scores"]
    assert "(Eq. 3" in formulas["softmax"] and "(Eq. 1" in formulas["weighted sum"]
    assert "m > n (causal)" in formulas["mask"]
    assert [s.name for s in steps[:2]] == ["token embedding", "positional encoding"]
    assert [s.name for s in steps[-2:]] == ["final norm", "unembedding"]
    assert [s.where for s in steps[-2:]] == ["ln_final", "head"]  # the final norm's path
    assert_close(steps[-1].value, model(kit.ids()).logits, atol=1e-12, rtol=0)


def test_text_shows_formulas_and_shapes(kit):
    model = kit.build(EncoderDecoder, "tiny-seq2seq")
    args, kwargs = _inputs(kit, EncoderDecoder)
    text = format_trace(trace(model, *args, **kwargs, layer=0))
    assert "decoder.blocks.0.cross_attn · Q, K, V projections" in text
    assert "(Eq. 5: Q from X, K and V from the encoder output Z)" in text
    assert "Q (2, 4, 5, 4)  K (2, 4, 7, 4)  V (2, 4, 7, 4)" in text  # T = 5 queries, S = 7 keys
    assert "A (2, 4, 5, 7)" in text and "logits (2, 5, 40)" in text
    assert "blocks.1" not in text


def test_bad_arguments_are_named(kit):
    model = kit.build(DecoderLM, "tiny")
    with pytest.raises(ValueError, match=r"layer=2 is out of range: allowed 0..1"):
        trace(model, kit.ids(), layer=2)
    with pytest.raises(ValueError, match=r"model is a Linear; allowed DecoderLM"):
        trace(torch.nn.Linear(2, 2), kit.ids())
    with pytest.raises(ValueError, match="needs decoder_input_ids"):
        trace(kit.build(EncoderDecoder, "tiny-seq2seq"), kit.ids())


def _printed_values(text: str) -> list[tuple[int, str, str, list[str]]]:
    """(step number, tensor name, index, values) of every ``name[index] = [...]`` line."""
    found, step = [], 0
    for line in text.splitlines():
        if head := re.match(r"\s*(\d+)\. ", line):
            step = int(head.group(1))
        elif value := re.fullmatch(r"\s+(\S+)\[([^\]]*)\] = \[(.*)\]", line):
            name, index, numbers = value.groups()
            found.append((step, name, index, numbers.split(", ")))
    return found


def _index(text: str) -> tuple:
    return tuple(slice(None, int(i[1:])) if i.startswith(":") else int(i) for i in text.split(", "))


@pytest.mark.parametrize("t", [7, 14])  # 14 keys: the attention row is shown by its two ends
def test_text_shows_the_values_of_every_tensor(kit, t):
    model = kit.build(DecoderLM, "tiny")
    steps = trace(model, kit.ids(b=1, t=t), layer=1)
    printed = _printed_values(format_trace(steps))
    names = [(n, name) for n, s in enumerate(steps, 1) for name in s.tensors if name != "A"]
    heads = [(n, "A") for n, s in enumerate(steps, 1) if s.name == "softmax" for _ in range(4)]
    assert sorted((n, name) for n, name, _, _ in printed) == sorted(names + heads)
    for n, name, index, shown in printed:
        row = steps[n - 1].tensors[name][_index(index)].double().flatten()
        if "…" in shown:  # the first and last 6 of the row
            cut = shown.index("…")
            row = torch.cat([row[:cut], row[cut - len(shown) + 1 :]])
            shown = shown[:cut] + shown[cut + 1 :]
        assert len(shown) == len(row) <= 12
        values = torch.tensor([float(v) for v in shown], dtype=torch.double)
        assert_close(values, row, rtol=1e-3, atol=1e-12)  # printed with 4 significant digits
    rows = {index: shown for _, name, index, shown in printed if name == "A"}
    assert list(rows) == ["0, 0, -1", "0, 1, -1", "0, 2, -1", "0, 3, -1"]  # every head
    assert all(("…" in shown) == (t > 12) for shown in rows.values())
    assert ("0, -1, :4", "X") in {(index, name) for _, name, index, _ in printed}


def test_prediction_is_softmax_of_the_logits(kit):
    from glassformer.inspect.readout import format_prediction
    from glassformer.tokenizers import get_tokenizer

    tok = get_tokenizer("char").train("the cat sat on a mat")
    lm = kit.build(DecoderLM, "tiny", vocab_size=tok.vocab_size)
    x = torch.tensor([tok.encode("the ca", add_bos=True)])
    p = lm(x).logits[0, -1].softmax(-1)
    best = p.topk(3)
    (line,) = format_prediction(lm, trace(lm, x)[-1].value, x, tok)
    expected = ", ".join(
        f"{tok.id_to_token(i)!r} {v:.4f}"
        for v, i in zip(best.values.tolist(), best.indices.tolist(), strict=True)
    )
    assert line == f"next token after the input: p = softmax(logits[0, -1]) = {expected}"

    classifier = kit.build(EncoderClassifier, "tiny-encoder", n_classes=3)
    classifier.config.extra["labels"] = ["neg", "neu", "pos"]
    x = kit.ids(b=1)
    p = classifier(x).logits[0].softmax(-1).tolist()
    (line,) = format_prediction(classifier, trace(classifier, x)[-1].value, x, None)
    order = sorted(range(3), key=lambda i: -p[i])
    shown = ", ".join(f"{['neg', 'neu', 'pos'][i]!r} {p[i]:.4f}" for i in order)
    assert line == f"class: p = softmax(logits[0]) = {shown}"

    mlm = kit.build(EncoderMLM, "bert-base", vocab_size=tok.vocab_size, type_vocab_size=0)
    x = torch.tensor([tok.encode("the <MASK>at", add_bos=True, add_eos=True, allowed_special=True)])
    n = x[0].tolist().index(tok.mask_id)
    p = mlm(x).logits[0, n].softmax(-1)
    (line,) = format_prediction(mlm, trace(mlm, x)[-1].value, x, tok)
    top = p.argmax().item()
    assert line.startswith(f"<MASK> at {n}: p = softmax(logits[0, {n}]) = ")
    assert line.split(" = ")[-1].startswith(f"{tok.id_to_token(top)!r} {p[top]:.4f}")


def test_the_letters_keep_one_meaning_each(kit):
    """The site's notation (docs/concepts/notation.md): C the model width, D the head size,
    N_V the vocabulary size; no letter of the legend names a tensor the trace prints, and the
    formulas write the width C (√C scaling, the sinusoids' 1/C exponents) and u for the
    feed-forward's hidden layer (H is the number of heads)."""
    model = kit.build(DecoderLM, "tiny", **dict(POST_NORM, norm="layer"))  # sinusoidal, √C
    steps = trace(model, kit.ids(), layer=0)
    text = format_trace(steps, values=False)
    legend = text.splitlines()[0].removeprefix("shapes: ").split(", ")
    letters = {entry.split(" ")[0] for entry in legend}
    assert letters == {"B", "T", "S", "C", "H", "D", "N_V"}
    assert "C d_model" in legend and "D head size" in legend and "N_V vocabulary size" in legend
    names = {name for s in steps for name in s.tensors}
    assert not letters & names, letters & names
    formulas = {s.name: s.formula for s in steps}
    assert formulas["token embedding"] == "x_n = W_e[:, x[n]] · √C"
    assert "sin(n / base^(i/C))" in formulas["positional encoding"]
    assert formulas["first layer"] == "u = X W_1ᵀ + b_1"
    assert formulas["activation"] == "a(u) = max(0, u)  (ReLU)"
    c, h = model.config.d_model, model.config.n_head
    assert f"split into H = {h} heads of D = {c // h}" in formulas["Q, K, V projections"]
