"""Greedy and sampled generation: left-padded batches equal prompts alone, seeds, <EOS>, stop
strings, streaming."""

from __future__ import annotations

import pytest
import torch

from glassformer.generation import generate, generate_text, stream, stream_text


def _alone(model, prompts, **settings):
    return [generate(model, [p], **settings).tokens[0] for p in prompts]


@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "rotary"])
def test_left_padded_batch_equals_each_prompt_alone(make_decoder, prompts, positional):
    model = make_decoder(positional)
    settings = dict(max_new_tokens=24, temperature=0)
    batch = generate(model, prompts, **settings)
    assert batch.tokens == _alone(model, prompts, **settings)
    assert batch.sequences[1, :4].tolist() == [0, 0, 0, 0]  # padded on the left
    beams = dict(max_new_tokens=12, num_beams=3, eos_id=7)
    assert generate(model, prompts, **beams).tokens == _alone(model, prompts, **beams)


def test_padded_source_batch_equals_each_source_alone(make_seq2seq):
    model = make_seq2seq()
    sources = [[5, 6, 7, 8, 9, 2], [30, 2], [12, 13, 14, 2]]
    for settings in (dict(temperature=0), dict(num_beams=3, eos_id=7)):
        batch = generate(model, sources, max_new_tokens=20, **settings)
        assert batch.tokens == _alone(model, sources, max_new_tokens=20, **settings)


def test_same_seed_same_sample_different_seed_different_sample(make_decoder, prompts):
    model = make_decoder()
    settings = dict(max_new_tokens=32, temperature=1.0)
    state = torch.get_rng_state()
    a = generate(model, prompts, seed=11, **settings).tokens
    assert a == generate(model, prompts, seed=11, **settings).tokens
    assert a != generate(model, prompts, seed=12, **settings).tokens
    assert a != generate(model, prompts, temperature=0, max_new_tokens=32).tokens
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is never used
    filtered = dict(seed=11, top_k=8, top_p=0.9, **settings)
    again = generate(model, prompts, **filtered).tokens
    assert generate(model, prompts, **filtered).tokens == again


def test_temperature_zero_is_greedy_whatever_the_filters(make_decoder, prompts):
    model = make_decoder()
    greedy = generate(model, prompts, max_new_tokens=16, temperature=0)
    filtered = generate(model, prompts, max_new_tokens=16, temperature=0, top_k=3, top_p=0.5)
    one = generate(model, prompts, max_new_tokens=16, top_k=1, seed=4)
    assert greedy.tokens == filtered.tokens == one.tokens


def test_generation_stops_at_eos_and_pads_after(make_decoder, prompts):
    model = make_decoder()
    free = generate(model, prompts, max_new_tokens=20, temperature=0)
    eos = free.tokens[0][5]
    first = [t.index(eos) if eos in t else None for t in free.tokens]
    out = generate(model, prompts, max_new_tokens=20, temperature=0, eos_id=eos, pad_id=0)
    for row, k in enumerate(first):
        if k is None:
            assert out.tokens[row] == free.tokens[row] and out.finish_reasons[row] == "length"
        else:
            assert out.tokens[row] == free.tokens[row][: k + 1]  # the <EOS> is kept
            assert out.finish_reasons[row] == "eos"
            assert set(out.sequences[row, out.prompt_length + k + 1 :].tolist()) <= {0}
    if all(k is not None for k in first):  # everyone stopped: no step beyond the last <EOS>
        assert out.sequences.shape[1] == out.prompt_length + max(first) + 1


def test_stop_strings_end_the_text(make_decoder, char_tokenizer):
    tok = char_tokenizer
    model = make_decoder(vocab_size=tok.vocab_size)
    prompt = "the "
    full = generate_text(model, tok, prompt, max_new_tokens=40, temperature=0)
    stop = full[12:14]
    end = full.find(stop) + len(stop)
    out = generate(
        model,
        [tok.encode(prompt, add_bos=True)],
        tokenizer=tok,
        max_new_tokens=40,
        temperature=0,
        stop_strings=[stop, "never there"],
    )
    assert out.finish_reasons == ["stop_string"]
    assert out.texts == [full[:end]]
    assert tok.decode(out.tokens[0], skip_special=True).startswith(full[:end])
    assert len(tok.decode(out.tokens[0][:-1], skip_special=True)) < end  # stopped at once
    beam = generate(
        model,
        [tok.encode(prompt, add_bos=True)],
        tokenizer=tok,
        max_new_tokens=40,
        num_beams=2,
        stop_strings=[stop],
    )
    assert beam.texts[0].endswith(stop) or beam.finish_reasons == ["length"]


def test_tokenizer_eos_is_the_default(make_decoder, char_tokenizer):
    tok = char_tokenizer
    model = make_decoder(vocab_size=tok.vocab_size, head_bias=True)
    with torch.no_grad():  # make <EOS> the likeliest token at every position
        model.unembed.proj.bias[tok.eos_id] = 100.0
    out = generate(model, [[1, 9, 10]], tokenizer=tok, max_new_tokens=10, temperature=0)
    assert out.tokens == [[tok.eos_id]] and out.finish_reasons == ["eos"]
    out = generate(model, [[1, 9, 10]], max_new_tokens=10, temperature=0, eos_id=())
    assert out.finish_reasons == ["length"]


def test_stream_yields_each_step_like_generate(make_decoder, prompts):
    model = make_decoder()
    settings = dict(max_new_tokens=20, seed=3, eos_id=9)
    out = generate(model, prompts, **settings)
    steps = list(stream(model, prompts, **settings))
    for row, expected in enumerate(out.tokens):
        got = [s[row] for s in steps if s[row] is not None]
        assert got == expected
    seen = []
    generate(model, prompts, on_step=seen.append, **settings)
    assert seen == steps
    with pytest.raises(ValueError, match=r"num_beams=2 cannot be streamed"):
        stream(model, prompts, num_beams=2)  # refused at once, before iterating


def test_stream_text_pieces_join_to_generate_text(make_decoder, char_tokenizer):
    tok = char_tokenizer
    model = make_decoder(vocab_size=tok.vocab_size)
    settings = dict(max_new_tokens=30, seed=5, stop_strings=["q"], eos_id=())
    pieces = list(stream_text(model, tok, "to be", **settings))
    assert len(pieces) > 1
    assert "".join(pieces) == generate_text(model, tok, "to be", **settings)


def test_mode_is_restored_and_outputs_are_ordinary_tensors(make_decoder):
    model = make_decoder(dropout=0.1).train()
    out = generate(model, [[1, 2, 3]], max_new_tokens=5, temperature=0)
    assert model.training
    assert not out.sequences.is_inference()
    model(out.sequences, labels=out.sequences).loss.backward()  # usable as training data


def test_encoder_runs_in_eval_mode_too(make_seq2seq):
    """A model left in training mode generates as in eval mode (no dropout in the encoder)."""
    model = make_seq2seq(dropout=0.5)
    expected = generate(model, [[5, 6, 7, 2]], max_new_tokens=12, temperature=0).tokens
    model.train()
    assert generate(model, [[5, 6, 7, 2]], max_new_tokens=12, temperature=0).tokens == expected
    assert model.training


@pytest.mark.parametrize(
    "settings",
    [dict(temperature=0), dict(temperature=0.8, seed=1), dict(top_k=5, seed=1), dict(num_beams=2)],
    ids=["greedy", "sampled", "top-k", "beams"],
)
def test_logits_that_are_not_finite_are_refused_naming_the_row(make_decoder, settings):
    model = make_decoder()
    with torch.no_grad():
        model.embed.weight[9] = float("nan")  # a token only the second prompt holds
    prompts = [[3, 4, 5], [6, 7, 9]]
    with pytest.raises(ValueError) as err:
        generate(model, prompts, max_new_tokens=4, **settings)
    assert str(err.value) == (
        "the model's next-token logits hold NaN or infinite values (row 1 of 2): its weights "
        "are damaged or its activations overflowed (e.g. in float16); no token can be chosen"
    )
    with torch.no_grad():
        model.embed.weight[9] = 0.0
    assert len(generate(model, prompts, max_new_tokens=4, **settings).tokens[1]) == 4
