"""The views other than the pattern (glassformer.explore.views) in the system's Chromium, each
page opened from disk (``view.save``): the residual stream, the logit lens, a trace and a
patching grid draw the values they embed, a hover says the value of its cell, their controls
redraw them, and no script fails."""

from __future__ import annotations

import pytest
import torch

from glassformer import DecoderLM, ModelConfig
from glassformer.explore import show_grid, show_trace
from glassformer.inspect import trace
from glassformer.tokenizers import CharTokenizer

from .conftest import recording_page


@pytest.fixture(scope="module")
def cached():
    torch.manual_seed(0)
    tok = CharTokenizer().train("abcdefgh ")
    config = ModelConfig(
        vocab_size=tok.vocab_size, d_model=32, n_layer=2, n_head=4, d_ff=64, max_len=32
    )
    model = DecoderLM(config).set_tokenizer(tok).eval()
    ids = torch.tensor([tok.encode("abcab", add_bos=True)])
    with torch.no_grad():
        _, cache = model.run_with_cache(ids)
    return model, ids, cache


@pytest.fixture
def page(browser):
    with recording_page(browser, 1000, 800) as page:
        yield page


def opened(page, view, tmp_path):
    page.goto(view.save(tmp_path / "view.html").as_uri())
    page.wait_for_selector('body[data-runs="1"]')


def test_residual_and_lens_views_draw_their_data(page, cached, tmp_path):
    _, _, cache = cached
    view = cache.show("residual")
    opened(page, view, tmp_path)
    steps = view.data["residual"]["decoder"]
    drawn = page.eval_on_selector_all(
        "svg.residual rect.cell", "cs => cs.map(c => +c.dataset.value)"
    )
    assert drawn == [v for s in steps for v in s["update_norm"]]
    assert page.locator("#attention-view").is_hidden() and page.locator("#input-form").is_hidden()
    page.hover('svg.residual rect.cell[data-row="2"][data-col="3"]')
    assert page.inner_text("#tooltip").startswith("L1 self-attn, position 3 c: ‖update‖ = ")

    view = cache.show("lens", k=3)
    opened(page, view, tmp_path)
    lens = view.data["lens"]
    row = page.eval_on_selector_all(
        "#lens-table tr:last-child td", "ts => ts.map(t => t.dataset.token)"
    )
    assert row == lens["tokens"][-1][5]  # the last position's top 3 after the last block
    page.click('.token[data-pos="2"]')  # another position: the lens reads there
    row = page.eval_on_selector_all(
        "#lens-table tr:last-child td", "ts => ts.map(t => t.dataset.token)"
    )
    assert row == lens["tokens"][-1][2]
    page.hover('.token[data-pos="1"]')  # no attention on show: nothing to highlight
    assert page.errors == []


def test_trace_and_grid_views_draw_their_data(page, cached, tmp_path):
    model, ids, _ = cached
    steps = trace(model, ids, layer=0)
    view = show_trace(steps, tokens=["<BOS>", *"abcab"])
    opened(page, view, tmp_path)
    softmax = next(i for i, s in enumerate(steps) if s.name == "softmax")
    page.select_option("#trace-step", str(softmax))
    page.select_option("#trace-page", "2")  # head 2
    page.hover('svg.grid rect.cell[data-row="4"][data-col="1"]')
    A = steps[softmax].tensors["A"][0, 2, 4, 1].item()
    said = page.inner_text("#tooltip")
    assert said.startswith("A[0, 2, 4, 1] = ") and abs(float(said.split(" = ")[1]) - A) <= 1e-6
    scores = next(i for i, s in enumerate(steps) if s.name == "mask")
    page.select_option("#trace-step", str(scores))
    page.select_option("#trace-tensor", "1")  # â: the scores with the mask
    page.select_option("#trace-page", "0")
    page.hover('svg.grid rect.cell[data-row="1"][data-col="3"]')
    assert page.inner_text("#tooltip") == "â[0, 0, 1, 3] = -Infinity"  # masked: m > n

    grid = torch.tensor([[0.5, -0.25, 1.0], [0.0, 2.0, -1.5]])
    view = show_grid(grid, columns=["x", "y", "z"], label="logit difference")
    opened(page, view, tmp_path)
    drawn = page.eval_on_selector_all("svg.grid rect.cell", "cs => cs.map(c => +c.dataset.value)")
    torch.testing.assert_close(torch.tensor(drawn), grid.flatten(), rtol=1e-6, atol=0)
    page.hover('svg.grid rect.cell[data-row="1"][data-col="2"]')
    assert page.inner_text("#tooltip") == "layer 1, z: logit difference = -1.5"
    legend = page.locator('svg.legend[data-for="grid"]')
    assert (legend.get_attribute("data-min"), legend.get_attribute("data-max")) == ("-2", "2")
    assert page.errors == []
