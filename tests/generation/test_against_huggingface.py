"""Generation against Hugging Face transformers, with weights converted from small random GPT-2,
Llama and BART models (``glassformer.interop.huggingface.from_huggingface``):

* greedy decoding gives the identical token sequences as ``generate(do_sample=False)``, for a
  batch of left-padded prompts (right-padded sources for BART), stopping at <EOS>;
* beam search (4 beams, a length penalty, each early_stopping mode) gives the identical
  sequences as Hugging Face's beam search.

<EOS> is chosen as a token the model actually produces, so that sequences do end at it.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from glassformer.generation import generate  # noqa: E402
from glassformer.interop.huggingface import from_huggingface  # noqa: E402

transformers.logging.set_verbosity_error()
V, M, PAD = 64, 16, 3  # vocabulary, new tokens, pad id (HF fills finished beams with it)


def _jitter(model, extra=()):
    torch.manual_seed(1)
    with torch.no_grad():
        for p in [*model.parameters(), *extra]:
            p.add_(0.3 * torch.randn_like(p))
    return model.eval()


def gpt2():
    cfg = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=V, n_positions=64)
    return _jitter(transformers.GPT2LMHeadModel(cfg))


def llama():
    cfg = transformers.LlamaConfig(
        num_hidden_layers=2,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=48,
        vocab_size=V,
        max_position_embeddings=64,
        rope_parameters={"rope_type": "default", "rope_theta": 500.0},
    )
    return _jitter(transformers.LlamaForCausalLM(cfg))


def bart():
    cfg = transformers.BartConfig(
        encoder_layers=2,
        decoder_layers=2,
        d_model=32,
        vocab_size=V,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=48,
        decoder_ffn_dim=48,
        max_position_embeddings=64,
        pad_token_id=PAD,
    )
    model = transformers.BartForConditionalGeneration(cfg)
    return _jitter(model, [model.final_logits_bias])


BUILDERS = {"gpt2": gpt2, "llama": llama, "bart": bart}


def _inputs(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Three prompts of lengths 7, 4, 2: left-padded for decoders, right-padded for BART."""
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(5, V, (3, 7), generator=g)
    mask = torch.ones(3, 7, dtype=torch.long)
    for row, n_pad in ((1, 3), (2, 5)):
        cols = slice(7 - n_pad, 7) if name == "bart" else slice(0, n_pad)
        mask[row, cols] = 0
    return ids.masked_fill(mask == 0, PAD), mask


HF_FIXED = dict(pad_token_id=PAD, forced_eos_token_id=None, forced_bos_token_id=None)


@pytest.fixture(scope="module", params=list(BUILDERS))
def case(request):
    name = request.param
    hf = BUILDERS[name]()
    ours = from_huggingface(hf).eval()
    ids, mask = _inputs(name)
    with torch.no_grad():
        free = hf.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=M,
            do_sample=False,
            eos_token_id=None,
            **HF_FIXED,
        )
    start = free.shape[1] - M
    eos = int(free[0, start + 4])  # a token greedy decoding emits: sequences end at it
    return name, hf, ours, ids, mask, eos


def test_greedy_identical(case):
    _, hf, ours, ids, mask, eos = case
    with torch.no_grad():
        expected = hf.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=M,
            do_sample=False,
            eos_token_id=eos,
            **HF_FIXED,
        )
    out = generate(
        ours, ids, attention_mask=mask, max_new_tokens=M, temperature=0, eos_id=eos, pad_id=PAD
    )
    assert out.sequences.tolist() == expected.tolist()
    assert out.finish_reasons[0] == "eos"


@pytest.mark.parametrize(
    ("length_penalty", "early_stopping"), [(1.0, True), (0.6, False), (1.8, "never")]
)
def test_beam_search_identical(case, length_penalty, early_stopping):
    _, hf, ours, ids, mask, eos = case
    settings = dict(num_beams=4, length_penalty=length_penalty, early_stopping=early_stopping)
    with torch.no_grad():
        expected = hf.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=M,
            do_sample=False,
            eos_token_id=eos,
            output_scores=True,
            return_dict_in_generate=True,
            **settings,
            **HF_FIXED,
        )
    out = generate(
        ours, ids, attention_mask=mask, max_new_tokens=M, eos_id=eos, pad_id=PAD, **settings
    )
    assert out.sequences.tolist() == expected.sequences.tolist()
    torch.testing.assert_close(out.scores, expected.sequences_scores, atol=1e-4, rtol=0)
