"""What the explorer shows (glassformer.explore.data) is what the model computed: the
attention weights and masks of every layer and head, the predictions' top-k, the lens and the
attribution; inputs it cannot take are refused with a message; the exported page embeds its
data so that no text can close its <script>."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
import torch

from glassformer import circuits
from glassformer.explore import explore_data, model_info, page_html
from glassformer.inspect import capture
from glassformer.inspect.inputs import encode_inputs

from .conftest import PROMPTS


def f64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def reference(model, name):
    text, target = PROMPTS[name]
    inputs = encode_inputs(model, text, target, None)
    with torch.inference_mode(), capture(model) as rec:
        out = model(**inputs.kwargs)
    return inputs, rec, out


@pytest.mark.parametrize("name", list(PROMPTS))
def test_attention_and_masks_are_the_models(models, name):
    model = models[name]
    inputs, rec, _ = reference(model, name)
    data = explore_data(model, *PROMPTS[name])
    assert {s: t["tokens"] for s, t in data["tokens"].items()} == inputs.tokens
    seen = {(a["stack"], a["kind"]) for a in data["attention"]}
    expected = {(s, "self") for s in rec.stacks} | (
        {("decoder", "cross")} if name == "seq2seq" else set()
    )
    assert seen == expected
    for a in data["attention"]:
        weights = rec.weights(a["kind"], a["stack"])[:, 0]  # (L, H, T, S)
        allowed = rec.masks(a["kind"], a["stack"])[:, 0]
        got = torch.tensor(a["weights"], dtype=torch.float64)
        assert got.shape == weights.shape
        assert (got - weights.double()).abs().max() <= 1e-7
        bits = torch.tensor(
            [[[[c == "1" for c in row] for row in h] for h in layer] for layer in a["allowed"]]
        )
        assert torch.equal(bits, allowed)
        assert len(a["graphs"]) == model.config.n_layer


@pytest.mark.parametrize("name", ["lm", "seq2seq", "mlm"])
def test_top_k_is_the_models(models, name):
    model = models[name]
    _, _, out = reference(model, name)
    data = explore_data(model, *PROMPTS[name], top_k=3)
    top = out.logits[0].double().softmax(-1).topk(3, dim=-1)
    rows = data["predictions"]["top"]
    assert [[i for _, i, _ in row] for row in rows] == top.indices.tolist()
    assert torch.allclose(f64([[p for *_, p in row] for row in rows]), top.values, atol=1e-6)
    if name == "mlm":
        ids = encode_inputs(model, PROMPTS[name][0], None, None).kwargs["input_ids"][0].tolist()
        assert data["predictions"]["masked"] == [ids.index(model.tokenizer.mask_id)]
        assert data["position"] == data["predictions"]["masked"][0]


def test_classifier_probabilities_and_attribution(models):
    model = models["classify"]
    _, _, out = reference(model, "classify")
    data = explore_data(model, "abcd")
    probs = out.logits[0].double().softmax(-1)
    assert torch.allclose(f64(data["predictions"]["probs"]), probs, atol=1e-6)
    assert data["predictions"]["predicted"] == int(probs.argmax())
    heads = torch.tensor(data["attribution"]["heads"]["self"])
    assert heads.shape == (model.config.n_layer, model.config.n_head)
    assert "logit lens" in data["lens"]["error"] or "unembedding" in data["lens"]["error"]


def test_lens_and_attribution_are_glassformer_circuits(models):
    model = models["lm"]
    inputs, _, out = reference(model, "lm")
    data = explore_data(model, PROMPTS["lm"][0])
    _, cache = circuits.circuit_cache(model, **inputs.kwargs)
    lens = circuits.logit_lens(cache, k=5)
    last = data["position"]
    assert last == len(inputs.tokens["decoder"]) - 1
    assert data["lens"]["tokens"][-1][last] == [
        model.tokenizer.id_to_token(i) for i in lens.ids[-1, 0, last].tolist()
    ]
    answer = int(out.logits[0, last].argmax())
    dla = circuits.logit_attribution(cache, answer, position=last)
    expected = dla.heads("self")[..., 0]
    assert torch.allclose(torch.tensor(data["attribution"]["heads"]["self"]), expected, rtol=1e-5)
    assert data["attribution"]["answer"] == model.tokenizer.id_to_token(answer)


def test_residual_norms_per_sublayer(models):
    model = models["seq2seq"]
    _, rec, _ = reference(model, "seq2seq")
    data = explore_data(model, *PROMPTS["seq2seq"])
    for stack in ("encoder", "decoder"):
        steps = rec.stream(stack)
        got = data["residual"][stack]
        assert [(s["layer"], s["sublayer"]) for s in got] == [(r.layer, r.sublayer) for r in steps]
        for s, r in zip(got, steps, strict=True):
            assert torch.allclose(f64(s["update_norm"]), r.update_norm[0].double(), rtol=1e-5)


@pytest.mark.parametrize(
    ("text", "target", "words"),
    [
        ("x" * 40, None, "the text has 41 tokens; the model's max_len is 32"),
        ("", None, "the text is empty"),
        ("abc", "cba", "the target is for encoder-decoder checkpoints only"),
    ],
)
def test_inputs_it_cannot_take_are_refused(models, text, target, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        explore_data(models["lm"], text, target)


def test_a_target_longer_than_max_len_is_refused(models):
    with pytest.raises(ValueError, match="the target has 41 tokens"):
        explore_data(models["seq2seq"], "abc", "x" * 40)


class Scripts(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self._in = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in = dict(attrs)
            self.scripts.append([dict(attrs), ""])

    def handle_data(self, data):
        if self._in is not None:
            self.scripts[-1][1] += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None


def test_the_exported_page_embeds_its_data_safely(models):
    model = models["lm"]
    text = "</script>/*{{SCRIPT}}*/"
    data = explore_data(model, text)
    html = page_html({**model_info(model), "name": "tiny"}, data)
    parser = Scripts()
    parser.feed(html)
    assert len(parser.scripts) == 2  # the data and the page's own script, nothing injected
    boot = json.loads(parser.scripts[0][1])
    assert boot["mode"] == "exported" and boot["data"]["input"]["text"] == text
    assert re.findall(r"\b(?:src|href)\s*=\s*\"([^\"]*)", html) == ["data:,"]  # nothing to load
