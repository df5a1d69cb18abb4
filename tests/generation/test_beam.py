"""Beam search finds the best hypothesis exactly when the beam holds every sequence: with as
many beams as there are sequences and early_stopping="never", it must return the argmax over
all continuations of log P / n^α (ending at <EOS> or at max_new_tokens), found here by
enumerating them."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from glassformer.generation import generate

V, EOS, M = 6, 2, 3


def _log_probs(model, prompt, seq2seq):
    """log P(continuation) for every continuation of up to M tokens that is a hypothesis."""
    scores = {}
    for n in range(1, M + 1):
        for cont in itertools.product(range(V), repeat=n):
            if EOS in cont[:-1] or (n < M and cont[-1] != EOS):
                continue  # <EOS> ends a hypothesis; shorter ones must end with it
            with torch.no_grad():
                if seq2seq:
                    tgt = torch.tensor([[model.config.decoder_start_id, *cont]])
                    logits = model(torch.tensor([prompt]), decoder_input_ids=tgt).logits[0]
                    logp = logits[:-1].log_softmax(-1)
                else:
                    x = torch.tensor([[*prompt, *cont]])
                    logp = model(x).logits[0, len(prompt) - 1 : -1].log_softmax(-1)
            scores[cont] = sum(logp[i, t].item() for i, t in enumerate(cont))
    return scores


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.5])
@pytest.mark.parametrize("family", ["decoder", "encoder-decoder"])
def test_exhaustive_beam_finds_the_best_sequence(make_decoder, make_seq2seq, family, alpha):
    seq2seq = family == "encoder-decoder"
    model = make_seq2seq(vocab_size=V) if seq2seq else make_decoder(vocab_size=V, init_std=0.5)
    prompt = [3, 4, 5, 2] if seq2seq else [1, 3, 4]
    scores = _log_probs(model, prompt, seq2seq)
    best = max(scores, key=lambda c: scores[c] / len(c) ** alpha)
    out = generate(
        model,
        [prompt],
        num_beams=len(scores),
        max_new_tokens=M,
        eos_id=EOS,
        length_penalty=alpha,
        early_stopping="never",
    )
    assert tuple(out.tokens[0]) == best
    assert math.isclose(out.scores[0].item(), scores[best] / len(best) ** alpha, abs_tol=1e-5)
