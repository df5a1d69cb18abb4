"""LoRA: y = W x + b + (alpha / r) B A x. The adapted layer is an nn.Linear keeping W and b
under their names; with B = 0 the model is the base model exactly; merged, it computes what
the adapters computed; the refusals."""

import math

import pytest
import torch
from torch import nn

from glassformer import DecoderLM, EncoderDecoder, ModelConfig, preset
from glassformer.finetune import LoRALinear, add_lora, lora_layers, merge_lora
from glassformer.nn.lora import effective_weight

SMALL = dict(vocab_size=40, d_model=32, n_head=4, n_layer=2, max_len=16)


def lm(**overrides):
    torch.manual_seed(0)
    return DecoderLM(preset("tiny", **{**SMALL, **overrides})).eval()


def seq2seq():
    torch.manual_seed(0)
    config = ModelConfig(family="encoder-decoder", vocab_size=40, d_model=16, n_head=2, n_layer=1)
    return EncoderDecoder(config).eval()


def randomise_b(model):
    torch.manual_seed(1)
    with torch.no_grad():
        for m in lora_layers(model).values():
            m.lora_B.normal_(0.0, 0.5)


def wrapped(model):
    return list(lora_layers(model))


def test_lora_linear_is_its_formula():
    torch.manual_seed(0)
    base = nn.Linear(6, 5)
    w = base.weight.detach().clone()
    m = LoRALinear.around(base, rank=2, alpha=3.0)
    bound = 1 / math.sqrt(6)  # kaiming_uniform_(a=√5) on (r, in): U(-1/√in, 1/√in)
    assert m.lora_A.shape == (2, 6) and float(m.lora_A.detach().abs().max()) <= bound
    assert m.lora_B.shape == (5, 2) and not m.lora_B.any()
    with torch.no_grad():
        m.lora_B.normal_()
    x = torch.randn(3, 4, 6)
    want = x @ base.weight.T + base.bias + 1.5 * x @ m.lora_A.T @ m.lora_B.T
    torch.testing.assert_close(m(x), want)
    # an nn.Linear: W and b are its own, under the Linear's names; merged_weight is W + s B A
    assert isinstance(m, nn.Linear) and m.weight is base.weight and torch.equal(m.weight, w)
    assert list(m.state_dict()) == ["weight", "bias", "lora_A", "lora_B"]
    torch.testing.assert_close(m.merged_weight(), w + 1.5 * m.lora_B @ m.lora_A)
    assert effective_weight(m) is not m.weight and effective_weight(base) is base.weight
    assert m.bias is base.bias and (m.in_features, m.out_features) == (6, 5)
    assert m.lora_A.requires_grad


def test_the_lora_dropout_applies_whenever_the_layer_trains():
    torch.manual_seed(0)
    m = LoRALinear.around(nn.Linear(8, 8), rank=2, alpha=2.0, dropout=0.5)
    with torch.no_grad():
        m.lora_B.normal_()
    x = torch.randn(4, 8)
    plain = x @ m.weight.T + m.bias
    torch.manual_seed(3)
    dropped = torch.nn.functional.dropout(x, 0.5)  # the mask the layer draws next
    torch.manual_seed(3)
    torch.testing.assert_close(m.train()(x), plain + dropped @ m.lora_A.T @ m.lora_B.T)
    torch.testing.assert_close(m.eval()(x), plain + x @ m.lora_A.T @ m.lora_B.T)


def test_b_at_zero_equals_the_base_model_exactly():
    ids = torch.randint(0, 40, (2, 10))
    want = lm()(ids).logits
    model = lm()
    assert add_lora(model, ["attn.q_proj", "attn.out_proj", "mlp.fc1"], rank=4, alpha=8) is model
    parts = ("attn.q_proj", "attn.out_proj", "mlp.fc1")
    assert wrapped(model) == [f"blocks.{i}.{p}" for i in (0, 1) for p in parts]
    # the plain model's state-dict names, plus lora_A and lora_B
    adapters = {f"blocks.{i}.{p}.lora_{x}" for i in (0, 1) for p in parts for x in "AB"}
    assert set(model.state_dict()) == set(lm().state_dict()) | adapters
    assert torch.equal(model(ids).logits, want)
    # the paths that read .weight: hook_result (out_proj.weight) ...
    result = lambda n: n.endswith("hook_result")  # noqa: E731
    out, cache = model.run_with_cache(ids, names=result)
    assert torch.equal(out.logits, lm().run_with_cache(ids, names=result)[0].logits)
    assert len(cache) == 2
    # ... and cross-attention
    src, tgt = torch.randint(0, 40, (2, 7)), torch.randint(0, 40, (2, 5))
    base = seq2seq()(src, decoder_input_ids=tgt).logits
    s2s = seq2seq()
    add_lora(s2s, ["attn.v_proj", "cross_attn.k_proj"], rank=2, alpha=2)
    assert len(lora_layers(s2s)) == 3 and torch.equal(s2s(src, decoder_input_ids=tgt).logits, base)


def test_add_lora_trains_only_the_adapters_and_the_kept_parts():
    model = lm()
    add_lora(model, ["blocks.0.attn.q_proj"], rank=2, alpha=4, keep=["ln_final"])
    trains = sorted(n for n, p in model.named_parameters() if p.requires_grad)
    assert trains == [
        "blocks.0.attn.q_proj.lora_A", "blocks.0.attn.q_proj.lora_B",
        "ln_final.bias", "ln_final.weight",
    ]  # fmt: skip


def test_the_weights_that_code_reads_are_the_merged_ones():
    ids = torch.randint(0, 40, (2, 10))
    model = lm()
    add_lora(model, ["attn.out_proj"], rank=4, alpha=8)
    randomise_b(model)
    fused = model(ids).logits  # out_proj called as a module
    # hook_result sums one term per head through W^O: out_proj's merged_weight, W + s B A
    hooked = model.run_with_hooks(ids, hooks=[("blocks.0.attn.hook_result", lambda t, hook: t)])
    torch.testing.assert_close(hooked.logits, fused, atol=1e-5, rtol=0)
    out_proj = model.blocks[0].attn.out_proj
    assert not out_proj.weight.requires_grad and out_proj.merged_weight().requires_grad


def test_merge_keeps_the_outputs_and_leaves_plain_linears():
    ids = torch.randint(0, 40, (2, 12), generator=torch.Generator().manual_seed(0))
    model = lm(tie_embeddings=False)
    add_lora(model, ["attn.k_proj", "attn.out_proj", "mlp.fc2", "unembed.proj"], 4, 16)
    randomise_b(model)
    adapted = model(ids).logits
    assert (adapted - lm(tie_embeddings=False)(ids).logits).abs().max() > 1e-2  # B ≠ 0 counts
    merged = merge_lora(model)
    assert len(merged) == 7 and not lora_layers(model)
    assert type(model.blocks[0].attn.k_proj) is nn.Linear
    assert set(model.state_dict()) == set(lm(tie_embeddings=False).state_dict())
    torch.testing.assert_close(model(ids).logits, adapted, atol=1e-5, rtol=0)


def test_merge_keeps_the_outputs_of_cross_attention_which_reads_the_weight():
    src, tgt = torch.randint(0, 40, (2, 7)), torch.randint(0, 40, (2, 5))
    model = seq2seq()
    add_lora(model, ["cross_attn.in_proj", "cross_attn.out_proj"], rank=2, alpha=4)
    assert len(lora_layers(model)) == 4  # in_proj: q_proj, k_proj, v_proj
    randomise_b(model)
    adapted = model(src, decoder_input_ids=tgt).logits
    assert not torch.allclose(adapted, seq2seq()(src, decoder_input_ids=tgt).logits)
    merge_lora(model)
    merged = model(src, decoder_input_ids=tgt).logits
    torch.testing.assert_close(merged, adapted, atol=1e-5, rtol=0)


def test_refusals_name_the_target_and_what_exists():
    model = lm()
    with pytest.raises(ValueError) as err:
        add_lora(model, ["attn.q_proj", "attn.nope"], 2, 4, where="train.lora_targets")
    message = str(err.value)
    assert message.startswith(
        "train.lora_targets: 'attn.nope' names no nn.Linear of the DecoderLM; allowed: the ends "
        "of its Linears' paths: blocks.*.attn.q_proj, blocks.*.attn.k_proj, blocks.*.attn.v_proj"
    )
    assert not lora_layers(model) and all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError) as err:
        add_lora(model, ["unembed.proj"], 2, 4, rank_name="train.lora_rank")
    assert str(err.value) == (
        "targets: unembed.proj.weight is tied to embed.weight (one matrix): LoRA cannot "
        "adapt it alone; choose other targets (e.g. ['attn.q_proj', 'attn.v_proj']), or "
        "train the tied matrix without LoRA (train.lora_rank=0; train.freeze keeps other "
        "parts fixed); a model built without init_from can also untie it "
        "(model.tie_embeddings=false)"
    )
    for rank in (0, -1, 1.5, True, "8"):
        with pytest.raises(ValueError, match=r"rank=.* must be an int >= 1"):
            add_lora(model, ["attn.q_proj"], rank, 4)
    for alpha in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="alpha=.* must be a finite number > 0"):
            add_lora(model, ["attn.q_proj"], 2, alpha)
    with pytest.raises(ValueError, match="must be a non-empty list"):
        add_lora(model, "attn.q_proj", 2, 4)
    with pytest.raises(ValueError, match="must be a non-empty list"):
        add_lora(model, [], 2, 4)
    assert not lora_layers(model)


def test_a_rank_above_min_in_out_is_refused_naming_the_layer():
    """B A (out, in) has rank at most min(in, out): a larger r only trains more numbers."""
    model = nn.ModuleDict(
        {"down": nn.Linear(64, 8), "up": nn.Linear(8, 64), "mix": nn.Linear(64, 64)}
    )
    with pytest.raises(ValueError) as err:
        add_lora(model, ["mix", "up"], 9, 4, rank_name="train.lora_rank")
    assert str(err.value) == (
        "train.lora_rank=9 is larger than up allows: a Linear 8 -> 64, whose update B A has "
        "rank at most min(8, 64) = 8; allowed: train.lora_rank from 1 to 8"
    )
    assert not lora_layers(model) and all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError, match=r"^rank=65 is larger than mix allows: a Linear 64 -> 64"):
        add_lora(model, ["mix"], 65, 4)
    assert wrapped(add_lora(model, ["mix", "up"], 8, 4)) == ["up", "mix"]  # the largest allowed


def test_the_circuits_read_the_merged_weights():
    """head_weights (W_Q, W_K, W_V, W_O of every head) of an adapted model are those of the
    same model merged: the circuits read merged_weight, never W alone."""
    from glassformer.circuits import head_weights

    model = lm()
    add_lora(model, ["attn.q_proj", "attn.v_proj", "attn.out_proj"], rank=4, alpha=8)
    randomise_b(model)
    adapted = head_weights(model, None)
    plain = head_weights(lm(), None)
    assert not torch.equal(adapted.W_O, plain.W_O) and not torch.equal(adapted.W_Q, plain.W_Q)
    merge_lora(model)
    for got, want in zip(adapted, head_weights(model, None), strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)
