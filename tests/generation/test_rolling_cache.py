"""Generation with attention graphs: a decoder whose layers attend causal sliding windows.

Cached generation equals full recompute at every step (prompts longer than the window, left
padding, a graph that depends on absolute positions too); a rolling cache keeps at most w keys
per layer over 4 × max_len tokens, and with rotary or no positions the model continues past
max_len, each output depending on the last L·(w - 1) + 1 tokens only (the receptive field of L
layers of width w); with learned positions it stops at max_len."""

from __future__ import annotations

import pytest
import torch

from glassformer.generation import generate
from glassformer.nn import KVCache

TOL = 1e-4
PROMPTS = [[1, 17, 42, 9, 30, 11, 7, 50, 23], [1, 5], [1, 60, 23, 8]]  # 9 > the window


def _mask(out, lengths):
    cols = torch.arange(out.sequences.shape[1])
    return (cols >= (out.prompt_length - torch.tensor(lengths))[:, None]).long()


@pytest.mark.parametrize(
    "positional, graph",
    [
        ("rotary", "window:4"),
        ("learned", "window:4"),
        ("rotary", "window:3*1,full"),
        ("none", "window:4&(window:2|global:4:9:14:19:24)"),  # absolute positions matter
    ],
)
def test_windowed_decoder_cache_equals_recompute(make_decoder, positional, graph):
    steps = 20
    model = make_decoder(positional, attention_graph=graph, max_len=32)
    out = generate(model, PROMPTS, max_new_tokens=steps, temperature=0, return_logits=True)
    seq, mask = out.sequences, _mask(out, [len(p) for p in PROMPTS])
    with torch.no_grad():
        for i in range(steps):
            end = out.prompt_length + i
            full = model(seq[:, :end], mask[:, :end]).logits[:, -1]  # no cache: whole prefix
            diff = (out.logits[:, i] - full).abs().max().item()
            assert diff <= TOL, f"step {i}: max |cached - full| = {diff}"
            assert torch.equal(seq[:, end], full.argmax(-1))
    uncached = generate(model, PROMPTS, max_new_tokens=steps, temperature=0, use_cache=False)
    assert torch.equal(uncached.sequences, out.sequences)
    assert len(set(seq[0, -steps:].tolist())) > 3  # not a degenerate repetition


@pytest.mark.parametrize("positional", ["rotary", "none"])
def test_a_rolling_cache_stays_within_the_window_past_max_len(make_decoder, positional):
    """4 × max_len tokens: every layer's cache holds at most w keys after every step (so its
    memory is flat), and the last logits equal a fresh pass over the last L(w - 1) + 1 tokens
    at positions 0.. (rotary attention depends on relative positions only)."""
    max_len, w, n_layer = 16, 4, 2
    model = make_decoder(positional, attention_graph=f"window:{w}", max_len=max_len)
    assert model.length_limit() is None
    held = []  # per step: the keys each layer's cache holds

    def record(module, args, kwargs, output):
        caches = kwargs["cache"].self_attn
        assert all(isinstance(c, KVCache) and c.window == w for c in caches)
        held.append([c.keys.shape[2] for c in caches])

    handle = model.register_forward_hook(record, with_kwargs=True)
    try:
        out = generate(model, [[1, 17, 42]], max_new_tokens=4 * max_len, return_logits=True)
    finally:
        handle.remove()
    assert out.sequences.shape[1] == 3 + 4 * max_len  # past max_len
    assert len(held) == 4 * max_len  # the prompt, then every new token but the last
    assert held[0] == [3, 3] and all(h == [w] * n_layer for h in held[2:])
    seq = out.sequences
    k = n_layer * (w - 1) + 1  # the receptive field of the last output
    with torch.no_grad():
        fresh = model(seq[:, -1 - k : -1]).logits[:, -1]  # positions 0..k-1
        wider = model(seq[:, -1 - k - 5 : -1]).logits[:, -1]  # more context changes nothing
    torch.testing.assert_close(out.logits[:, -1], fresh, atol=TOL, rtol=TOL)
    torch.testing.assert_close(out.logits[:, -1], wider, atol=TOL, rtol=TOL)


def test_beam_search_past_max_len_reorders_the_rolling_cache(make_decoder):
    model = make_decoder("rotary", attention_graph="window:3", max_len=12)
    prompts = [[1, 5, 6, 7], [1, 9]]
    cached = generate(model, prompts, max_new_tokens=30, num_beams=3)
    uncached = generate(model, prompts, max_new_tokens=30, num_beams=3, use_cache=False)
    assert cached.sequences.shape[1] > 12
    assert torch.equal(cached.sequences, uncached.sequences)
    torch.testing.assert_close(cached.scores, uncached.scores)


def test_a_prompt_longer_than_max_len_is_continued(make_decoder):
    model = make_decoder("rotary", attention_graph="window:4", max_len=8)
    prompt = [1, *range(5, 25)]  # 21 tokens, max_len 8
    out = generate(model, [prompt], max_new_tokens=10, temperature=0, return_logits=True)
    assert out.sequences.shape[1] == 31
    with torch.no_grad():
        full = model(out.sequences[:, :-1]).logits[:, -1]  # 30 positions in one pass
    torch.testing.assert_close(out.logits[:, -1], full, atol=TOL, rtol=TOL)


@pytest.mark.parametrize(
    "positional, graph",
    [("learned", "window:4"), ("sinusoidal", "window:4"), ("rotary", "window:4*1,full")],
)
def test_without_a_window_everywhere_or_with_absolute_positions_max_len_holds(
    make_decoder, positional, graph
):
    model = make_decoder(positional, attention_graph=graph, max_len=16)
    assert model.length_limit() == 16
    with pytest.raises(ValueError, match=r"max_new_tokens=15 is not allowed: .* max_len is 16"):
        generate(model, [[1, 5, 6]], max_new_tokens=15)
    with pytest.raises(ValueError, match=r"needs 17 positions .* max_len is 16"):
        model(torch.randint(5, 60, (1, 17)))
    assert generate(model, [[1, 5, 6]], max_new_tokens=14).sequences.shape == (1, 17)


def test_an_encoder_decoder_with_graphs_caches_what_it_recomputes(make_seq2seq):
    steps = 12
    model = make_seq2seq(
        n_decoder_layer=2,
        attention_graph="window:3",
        decoder_attention_graph="window:3*1,full",
        cross_attention_graph="window:4|global:0",
    )
    sources = [[5, 6, 7, 8, 9, 2], [30, 31, 2]]
    out = generate(model, sources, max_new_tokens=steps, temperature=0, return_logits=True)
    src = torch.tensor([[5, 6, 7, 8, 9, 2], [30, 31, 2, 0, 0, 0]])
    src_mask = (src != 0).long()
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        for i in range(steps):
            full = model.decode(out.sequences[:, : i + 1], memory, src_mask).logits[:, -1]
            diff = (out.logits[:, i] - full).abs().max().item()
            assert diff <= TOL, f"step {i}: max |cached - full| = {diff}"
    cache = model.new_cache(steps, rolling=True)
    assert [c.window for c in cache.self_attn] == [3, None]
