"""The views for a notebook (glassformer.explore.views) embed the numbers the model computed:
a cached pass's attention (every layer and head, its mask), residual stream and logit lens;
the explorer's whole view of one input; a trace's tensors; a patching grid. The fragment a
notebook shows is the page in a sandboxed frame of its own; bad arguments are refused naming
them."""

from __future__ import annotations

import html
import json
import re

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, ModelConfig, preset
from glassformer.circuits import patch_residual
from glassformer.explore import View, explore_data, show, show_grid, show_trace
from glassformer.inspect import trace
from glassformer.models.hooked import ActivationCache
from glassformer.tokenizers import CharTokenizer

TEXT = "abcab"


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    """A seeded 2-layer, 4-head decoder (random weights) with a character tokenizer."""
    torch.manual_seed(0)
    tok = CharTokenizer().train("abcdefgh ")
    config = ModelConfig(
        vocab_size=tok.vocab_size, d_model=32, n_layer=2, n_head=4, d_ff=64, max_len=32
    )
    return DecoderLM(config).set_tokenizer(tok).eval()


@pytest.fixture(scope="module")
def cached(model):
    ids = torch.tensor([model.tokenizer.encode(TEXT, add_bos=True)])
    with torch.no_grad():
        _, cache = model.run_with_cache(ids)
    return ids, cache


def boot(view: View) -> dict:
    """The data the page embeds (its <script id="boot">), read back from its HTML."""
    m = re.search(r'<script id="boot" type="application/json">(.*?)</script>', view.html(), re.S)
    return json.loads(m[1])


def f64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def test_the_pattern_view_embeds_every_layer_and_head_of_the_cache(model, cached):
    ids, cache = cached
    view = cache.show("pattern", layer=1, head=2)
    b = boot(view)
    assert b["mode"] == "exported" and b["view"]["panels"] == ["attention"]
    assert (b["view"]["layer"], b["view"]["head"]) == (1, 2)
    assert b["view"]["id"] == view.id
    (a,) = b["data"]["attention"]
    assert (a["stack"], a["kind"], a["keys"]) == ("decoder", "self", "decoder")
    weights = torch.stack([cache["pattern", layer][0] for layer in range(2)])  # (L, H, T, T)
    got = f64(a["weights"])
    assert got.shape == (2, 4, 6, 6)
    assert (got - weights.double()).abs().max() <= 5e-8  # rounded to 7 decimals, as data.py
    allowed = torch.tril(torch.ones(6, 6, dtype=torch.bool))  # causal, no padding
    assert (
        a["allowed"]
        == [[["".join("1" if x else "0" for x in row) for row in allowed.tolist()]] * 4] * 2
    )
    tokens = b["data"]["tokens"]["decoder"]
    assert tokens == {"tokens": ["<BOS>", *TEXT], "ids": ids[0].tolist()}
    assert torch.equal(cache.inputs["input_ids"], ids)


def test_the_pattern_view_agrees_with_the_explorer(model, cached):
    """The same input through explore_data (capture) and a cache: the same attention."""
    _, cache = cached
    explored = explore_data(model, TEXT)["attention"][0]
    shown = boot(cache.show("pattern"))["data"]["attention"][0]
    assert (f64(shown["weights"]) - f64(explored["weights"])).abs().max() <= 1.5e-7  # 1 unit
    assert shown["allowed"] == explored["allowed"] and shown["graphs"] == explored["graphs"]


def test_residual_and_lens_views_are_the_explorers(model, cached):
    _, cache = cached
    explored = explore_data(model, TEXT)
    residual = boot(cache.show("residual"))["data"]
    assert [(r["layer"], r["sublayer"]) for r in residual["residual"]["decoder"]] == [
        (0, "self_attn"),
        (0, "ff"),
        (1, "self_attn"),
        (1, "ff"),
    ]
    for mine, theirs in zip(
        residual["residual"]["decoder"], explored["residual"]["decoder"], strict=True
    ):
        for key in ("update_norm", "after_norm"):
            torch.testing.assert_close(f64(mine[key]), f64(theirs[key]), rtol=1e-5, atol=1e-9)
    lens = boot(cache.show("lens", k=3))
    assert lens["view"]["panels"] == ["tokens", "lens"]
    assert lens["data"]["lens"]["labels"] == ["embed", "L0", "L1"]
    top = [[row[:3] for row in layer] for layer in explored["lens"]["tokens"]]
    assert lens["data"]["lens"]["tokens"] == top
    assert lens["data"]["position"] == len(TEXT)  # the last position: <BOS> comes first


def test_show_is_the_explorers_data_on_the_panels_asked_for(model):
    view = show(model, TEXT, panels=["attention", "predictions"], layer=1)
    b = boot(view)
    assert b["data"] == json.loads(json.dumps(explore_data(model, TEXT)))
    assert b["view"]["panels"] == ["attention", "predictions"] and b["view"]["layer"] == 1
    with pytest.raises(ValueError, match="panels=\\['nope'\\]"):
        show(model, TEXT, panels=["nope"])


def test_the_fragment_is_the_page_in_a_frame_of_its_own(cached):
    _, cache = cached
    one, two = cache.show("pattern"), cache.show("pattern")
    fragment = one._repr_html_()
    m = re.search(r'<iframe id="([\w-]+)" [^>]*sandbox="allow-scripts" srcdoc="([^"]*)"', fragment)
    assert m and m[1] == one.id != two.id
    assert html.unescape(m[2]) == one.html()
    assert f'glassformerView === "{one.id}"' in fragment  # its script sizes this frame only
    assert re.findall(r'\b(?:src|href)="(?!data:|#)', one.html()) == []  # nothing to fetch


def numbers(values):
    """Nested lists of values as JavaScript reads them ("-Infinity" is a number there)."""
    return [numbers(v) for v in values] if isinstance(values, list) else float(values)


def test_the_trace_view_embeds_each_steps_tensors(model, cached):
    ids, _ = cached
    steps = trace(model, ids, layer=1)
    data = boot(show_trace(steps, tokens=["<BOS>", *TEXT]))["data"]["trace"]
    assert [s["name"] for s in data["steps"]] == [s.name for s in steps]
    for step, shown in zip(steps, data["steps"], strict=True):
        assert shown["formula"] == step.formula
        for (name, t), entry in zip(step.tensors.items(), shown["tensors"], strict=True):
            assert entry["name"] == name and entry["shape"] == list(t.shape)
            first = t[0] if not (name in ("mask", "cos", "sin") and t.dim() == 2) else t
            got = f64(numbers(entry["values"])).reshape(first.shape)
            torch.testing.assert_close(got, first.double(), rtol=1e-5, atol=1e-30)
    softmax = next(s for s in data["steps"] if s["name"] == "softmax")["tensors"][-1]
    assert softmax["pages"] == ["0, 0", "0, 1", "0, 2", "0, 3"]  # A[0, h] for each head
    masked = [
        x
        for s in data["steps"]
        for t in s["tensors"]
        for x in flat(t["values"])
        if isinstance(x, str)
    ]
    assert masked and set(masked) == {"-Infinity"}  # the causal mask's b_nm in the scores


def flat(values):
    return [x for v in values for x in flat(v)] if isinstance(values, list) else [values]


def test_the_grid_view_labels_a_patching_grid(model):
    tok = model.tokenizer
    clean = torch.tensor([tok.encode("abca", add_bos=True)])
    corrupted = torch.tensor([tok.encode("abcb", add_bos=True)])
    a, b = tok.encode("a")[0], tok.encode("b")[0]
    grid = patch_residual(
        model,
        clean,
        corrupted,
        lambda out: out.logits[0, -1, a] - out.logits[0, -1, b],
        progress=False,
    )
    labels = ["<BOS>", *"abca"]
    data = boot(show_grid(grid, columns=labels, label="logit difference"))["data"]["grid"]
    assert data["axes"] == [None, "layer", "position"] and data["pages"] is None
    assert data["rows"] == ["layer 0", "layer 1"] and data["columns"] == labels
    torch.testing.assert_close(f64(data["values"][0]), grid.double(), rtol=1e-5, atol=1e-30)
    three = boot(show_grid(torch.arange(12.0).view(3, 2, 2), axes=("hook", "layer", "head")))
    assert three["data"]["grid"]["pages"] == ["hook 0", "hook 1", "hook 2"]
    with pytest.raises(ValueError, match=r"columns: 3 labels for 5 positions"):
        show_grid(grid, columns=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"got shape \(5,\)"):
        show_grid(torch.zeros(5))


def test_cross_attention_of_an_encoder_decoder():
    torch.manual_seed(0)
    tok = CharTokenizer().train("hello ")
    config = preset(
        "tiny-seq2seq",
        vocab_size=tok.vocab_size,
        d_model=32,
        n_head=4,
        n_layer=2,
        d_ff=64,
        max_len=32,
    )
    model = EncoderDecoder(config).set_tokenizer(tok).eval()
    data = explore_data(model, "hello", "olleh")
    ids = torch.tensor([data["tokens"]["encoder"]["ids"]])
    target = torch.tensor([data["tokens"]["decoder"]["ids"]])
    with torch.no_grad():
        _, cache = model.run_with_cache(ids, decoder_input_ids=target)
    shown = boot(cache.show("pattern"))["data"]
    assert [(a["stack"], a["kind"]) for a in shown["attention"]] == [
        ("encoder", "self"),
        ("decoder", "self"),
        ("decoder", "cross"),
    ]
    assert shown["tokens"] == data["tokens"]
    for mine in shown["attention"]:
        theirs = next(
            a for a in data["attention"] if (a["stack"], a["kind"]) == (mine["stack"], mine["kind"])
        )
        assert (f64(mine["weights"]) - f64(theirs["weights"])).abs().max() <= 1e-6
        assert mine["allowed"] == theirs["allowed"]


def test_bad_arguments_are_refused_naming_them(cached):
    _, cache = cached
    with pytest.raises(ValueError, match="what='heads'"):
        cache.show("heads")
    with pytest.raises(ValueError, match="layer=2: the layers shown are 0..1"):
        cache.show("pattern", layer=2)
    with pytest.raises(ValueError, match="head=4: the heads shown are 0..3"):
        cache.show("pattern", head=4)
    with pytest.raises(ValueError, match="batch=1"):
        cache.show("pattern", batch=1)
    with pytest.raises(ValueError, match="tokens: 2 labels for the decoder's 6 positions"):
        cache.show("pattern", tokens=["a", "b"])
    with pytest.raises(ValueError, match="built by hand"):
        ActivationCache().show("pattern")


def test_a_cache_without_the_pattern_says_how_to_cache_it(model, cached):
    ids, _ = cached
    _, cache = model.run_with_cache(ids, names=lambda n: n.endswith("resid_pre"))
    with pytest.raises(ValueError, match="run_with_cache"):
        cache.show("pattern")


def test_cache_show_needs_no_import_of_the_explorer():
    """In a fresh process: ``import glassformer`` loads no explorer; a cache's ``show`` draws
    with it all the same (the package registers the drawer, glassformer/drawing.py)."""
    import subprocess
    import sys

    code = """
import sys
import glassformer
assert "glassformer.explore" not in sys.modules and "torch" not in sys.modules
import torch
from glassformer import DecoderLM, preset
model = DecoderLM(preset("tiny", vocab_size=9, n_layer=1, d_model=8, max_len=8)).eval()
_, cache = model.run_with_cache(torch.tensor([[1, 2, 3]]))
assert "glassformer.explore" not in sys.modules
print(type(cache.show("pattern")).__module__)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "glassformer.explore.views"
