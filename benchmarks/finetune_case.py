"""One case of the fine-tuning benchmark (bench_finetune.py): one peer's fine-tuning step, full
or LoRA, at one shape, built in a process of its own.

Shapes (float32, random weights and token ids, seed 0):

    bert-base   BERT base as a two-class classifier: 12 layers, d_model 768, 12 heads,
                vocabulary 30522, context 128, batch 8
    gpt2-small  GPT-2 small as a language model: 12 layers, d_model 768, 12 heads, vocabulary
                50257, context 256, batch 4
    tiny-bert, tiny-gpt2   the same layouts at 2 layers, d_model 64 (smoke tests)

Both peers start from the same weights: each process builds the Hugging Face model from its
config under the same seed, and glassformer's converts it (``from_huggingface``).

    glassformer  the converted model, glassformer's ``build_optimizer`` (fused AdamW, decay on
                 matrices); LoRA: ``glassformer.finetune.add_lora`` on the attention
                 projections ``attn.q_proj``, ``attn.k_proj``, ``attn.v_proj``, ``attn.out_proj``
    hf           the ``transformers`` model with ``torch.optim.AdamW(fused=True)``, the
                 optimizer Hugging Face's Trainer takes by default; LoRA: ``peft``'s
                 ``LoraConfig`` on the same projections (BERT: query, key, value and the
                 attention output; GPT-2: c_attn and the attention's c_proj)

LoRA is rank 8, alpha 16, no dropout. A step is zero_grad, forward with the model's loss,
backward and the optimizer step. Mode ``floor`` (glassformer only) trains nothing but the first
block's first norm, so the backward pass runs through the whole model: its memory is the
least any adapter of the first block can need (the weights and the activations kept for the
backward pass), the floor under LoRA's. ``reuse_freed_memory()`` (glassformer's trainer calls it) is
applied in every process alike, so the allocator setting is the same on both sides.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from benchmarks.peak import MATMUL_N, matmul_step
from benchmarks.processes import peak_rss_mb, prepare_process, reset_peak_rss, rss_mb

__all__ = ["SHAPES", "make_paired_step", "make_step", "run_case"]

SHAPES: dict[str, dict[str, int | str]] = {
    "bert-base": dict(kind="bert", n_layer=12, d_model=768, n_head=12, vocab=30522,
                      context=128, batch=8),
    "gpt2-small": dict(kind="gpt2", n_layer=12, d_model=768, n_head=12, vocab=50257,
                       context=256, batch=4),
    "tiny-bert": dict(kind="bert", n_layer=2, d_model=64, n_head=4, vocab=1000, context=32,
                      batch=4),
    "tiny-gpt2": dict(kind="gpt2", n_layer=2, d_model=64, n_head=4, vocab=1000, context=32,
                      batch=4),
}  # fmt: skip
RANK, ALPHA, LR = 8, 16.0, 5e-5
GLASSFORMER_TARGETS = ["attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj"]
PEFT_TARGETS = {  # the same projections under Hugging Face's names (regular expressions)
    "bert": r".*attention\.(self\.(query|key|value)|output\.dense)",
    "gpt2": r".*attn\.(c_attn|c_proj)",
}


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """The memory case: the peak resident set over 3 steps, above the RSS after the imports
    and before anything was built."""
    import transformers  # noqa: F401  (both peers import it: counted in the baseline)

    prepare_process(spec)
    base = rss_mb()
    reset_peak_rss()
    step, model = make_step(spec)
    for _ in range(3):
        step()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"peak_rss_mb": peak_rss_mb(), "rss_after_import_mb": base, "trainable": trainable}


def make_paired_step(spec: dict[str, Any]):
    """The step the paired run asks blocks of (paired.py): a case's, or the 2048³ matmul."""
    if spec.get("matmul"):
        return matmul_step(MATMUL_N)[0]
    prepare_process(spec)
    return make_step(spec)[0]


def make_step(spec: dict[str, Any]):
    """(step, model) of ``spec["peer"]`` in ``spec["mode"]`` (full | lora) at
    ``spec["shape"]``; step() returns {"step": seconds}."""
    shape = SHAPES[spec["shape"]]
    torch.manual_seed(spec.get("seed", 0))
    hf_model = _hf_model(shape)
    if spec["peer"] == "glassformer":
        model, loss_of, optimizer = _glassformer(hf_model, shape, spec["mode"])
    else:
        model, loss_of, optimizer = _hf(hf_model, shape, spec["mode"])
    model.train()
    g = torch.Generator().manual_seed(spec.get("seed", 0))
    ids = torch.randint(0, shape["vocab"], (shape["batch"], shape["context"]), generator=g)
    labels = torch.randint(0, 2, (shape["batch"],), generator=g)

    def step() -> dict[str, float]:
        t0 = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_of(model, ids, labels).backward()
        optimizer.step()
        return {"step": time.perf_counter() - t0}

    return step, model


def _hf_model(shape: dict[str, Any]):
    import transformers

    transformers.logging.set_verbosity_error()
    if shape["kind"] == "bert":
        config = transformers.BertConfig(
            vocab_size=shape["vocab"], hidden_size=shape["d_model"],
            num_hidden_layers=shape["n_layer"], num_attention_heads=shape["n_head"],
            intermediate_size=4 * shape["d_model"], max_position_embeddings=shape["context"],
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=2,
            attn_implementation="sdpa",
        )  # fmt: skip
        return transformers.BertForSequenceClassification(config)
    config = transformers.GPT2Config(
        vocab_size=shape["vocab"], n_positions=shape["context"], n_embd=shape["d_model"],
        n_layer=shape["n_layer"], n_head=shape["n_head"], resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0, use_cache=False, attn_implementation="sdpa",
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def _glassformer(hf_model, shape: dict[str, Any], mode: str):
    from glassformer.interop.huggingface import from_huggingface
    from glassformer.training.config import TrainConfig
    from glassformer.training.optim import build_optimizer

    model = from_huggingface(hf_model)
    del hf_model
    if mode == "floor":  # only the first block's first norm trains
        first = next(n for n, _ in model.named_parameters() if ".ln1." in n)
        for name, p in model.named_parameters():
            p.requires_grad_(name == first)
    if mode == "lora":
        from glassformer.finetune import add_lora

        keep = ["classifier"] if shape["kind"] == "bert" else []  # as PEFT's modules_to_save
        add_lora(model, GLASSFORMER_TARGETS, rank=RANK, alpha=ALPHA, keep=keep)
    optimizer = build_optimizer(model, TrainConfig(lr=LR))
    if shape["kind"] == "bert":
        return model, (lambda m, ids, y: m(ids, labels=y).loss), optimizer
    return model, (lambda m, ids, y: m(ids, labels=ids).loss), optimizer


def _hf(model, shape: dict[str, Any], mode: str):
    if mode == "lora":
        import peft

        config = peft.LoraConfig(
            r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
            target_modules=PEFT_TARGETS[shape["kind"]],
            fan_in_fan_out=shape["kind"] == "gpt2",  # GPT-2's Conv1D stores W as (in, out)
            modules_to_save=["classifier"] if shape["kind"] == "bert" else None,
        )  # fmt: skip
        model = peft.get_peft_model(model, config)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=LR, fused=True)
    if shape["kind"] == "bert":
        return model, (lambda m, ids, y: m(input_ids=ids, labels=y).loss), optimizer
    return model, (lambda m, ids, y: m(input_ids=ids, labels=ids).loss), optimizer
