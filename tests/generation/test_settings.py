"""Bad settings are refused with a ValueError naming the setting, the value and what is allowed;
good ones round-trip through a dict."""

from __future__ import annotations

import pytest

from glassformer.generation import GenerationConfig, generate


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(top_p=0.0), r"top_p=0.0 is not allowed: a number in \(0, 1\]"),
        (dict(top_p=1.2), r"top_p=1.2 is not allowed: a number in \(0, 1\]"),
        (dict(top_p=-0.1), r"top_p=-0.1 is not allowed"),
        (dict(top_k=-1), r"top_k=-1 is not allowed: an int >= 0"),
        (dict(top_k=2.5), r"top_k=2.5 is not allowed: an int >= 0"),
        (dict(num_beams=0), r"num_beams=0 is not allowed: an int in \[1, 256\]"),
        (dict(num_beams=10**8), r"num_beams=100000000 is not allowed: an int in \[1, 256\]"),
        (dict(temperature=-0.5), r"temperature=-0.5 is not allowed: a number >= 0"),
        (dict(temperature=float("nan")), r"temperature=nan is not allowed"),
        (dict(max_new_tokens=0), r"max_new_tokens=0 is not allowed: an int >= 1"),
        (dict(max_new_tokens=True), r"max_new_tokens=True is not allowed"),
        (dict(length_penalty=float("inf")), r"length_penalty=inf is not allowed"),
        (dict(early_stopping="sometimes"), r"early_stopping='sometimes' is not allowed"),
        (dict(eos_id=-2), r"eos_id=-2 is not allowed: ids >= 0"),
        (dict(eos_id="2"), r"eos_id='2' is not allowed"),
        (dict(pad_id=-1), r"pad_id=-1 is not allowed"),
        (dict(stop_strings=["ok", ""]), r"stop_strings=\['ok', ''\] is not allowed"),
        (dict(seed=-3), r"seed=-3 is not allowed: an int in \[0, 2\*\*64\)"),
        (dict(use_cache="yes"), r"use_cache='yes' is not allowed: True or False"),
        (dict(num_beams=4, top_k=10), r"top_k=10 is not allowed with num_beams=4"),
        (dict(num_beams=4, top_p=0.9), r"top_p=0.9 is not allowed with num_beams=4"),
        (dict(num_beams=2, temperature=0.7), r"temperature=0.7 is not allowed with num_beams=2"),
    ],
)
def test_bad_setting_is_named(settings, message):
    with pytest.raises(ValueError, match=message):
        GenerationConfig(**settings)
    with pytest.raises(ValueError, match=message):  # the same through replace / generate kwargs
        GenerationConfig().replace(**settings)


def test_unknown_setting_is_named():
    with pytest.raises(ValueError, match=r"unknown generation settings \['top_q'\]"):
        GenerationConfig().replace(top_q=0.5)


def test_config_normalises_and_round_trips():
    c = GenerationConfig(eos_id=[2, 7], stop_strings="\n\n", temperature=0)
    assert c.eos_id == (2, 7) and c.stop_strings == ("\n\n",) and not c.do_sample
    assert GenerationConfig(eos_id=2).eos_id == (2,)
    assert GenerationConfig.from_dict(c.to_dict()) == c
    assert GenerationConfig(num_beams=3, temperature=0).num_beams == 3


def test_max_new_tokens_past_max_len_is_refused(make_decoder, make_seq2seq):
    model = make_decoder(max_len=20)  # prompt of 6: 6 + 15 - 1 = 20 positions fit, 16 do not
    generate(model, [[1, 2, 3, 4, 5, 6]], max_new_tokens=15, temperature=0)
    with pytest.raises(
        ValueError,
        match=r"max_new_tokens=16 is not allowed: .* needs 21 "
        r"positions .* max_len is 20; allowed max_new_tokens <= 15",
    ):
        generate(model, [[1, 2, 3, 4, 5, 6]], max_new_tokens=16)
    with pytest.raises(ValueError, match=r"max_new_tokens=21 is not allowed"):
        generate(make_seq2seq(max_len=20), [[5, 6, 2]], max_new_tokens=21)


def test_bad_inputs_are_named(make_decoder):
    model = make_decoder()
    with pytest.raises(ValueError, match=r"token id 64 is out of range: allowed 0 .. 63"):
        generate(model, [[1, 64]])
    with pytest.raises(ValueError, match=r"a prompt is empty"):
        generate(model, [[1, 2], []])
    import torch

    ids = torch.tensor([[1, 2, 0]])
    with pytest.raises(ValueError, match=r"must be left-padded"):
        generate(model, ids, attention_mask=torch.tensor([[1, 1, 0]]))
    with pytest.raises(ValueError, match=r"stop_strings=\('x',\) need a tokenizer"):
        generate(model, [[1, 2]], stop_strings=["x"])
