"""The explorer page in a real browser: the system's Chromium (Debian's ``chromium`` package,
which ``make test`` installs when it is missing), driven by Playwright. For a tiny checkpoint of
each family the test types the prompt, runs it and reads back what the page drew: the tokens,
every head's heatmap (its cells' data-value), the highlight on hover, the predictions; a text
longer than max_len is refused on the page; an exported page opens from file:// and asks for
nothing else. Screenshots of each view go to build/test-artifacts/explorer/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from playwright.sync_api import sync_playwright

from glassformer.explore import explore_data, model_info, page_html
from glassformer.inspect import capture
from glassformer.inspect.inputs import encode_inputs

from .conftest import PROMPTS, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "explorer"
FLAGS = [  # a browser that makes no request of its own: the request log is the page's
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SECTIONS = ("tokens", "attention", "graph", "residual", "lens", "attribution", "predictions")


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        "no Chromium on this machine: the explorer's browser test needs the system's package "
        "(apt-get install chromium; make test installs it when it runs as root)"
    )


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    yield page
    context.close()


def save(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for section in SECTIONS:
        page.locator(f"#{section}-view").screenshot(path=ARTIFACTS / f"{name}-{section}.png")


def submit(page, text: str, target: str | None = None) -> None:
    runs = int(page.evaluate("document.body.dataset.runs || 0"))
    page.fill("#text", text)
    if target is not None:
        page.fill("#target", target)
    page.click("#run")
    page.wait_for_selector(f'body[data-runs="{runs + 1}"]', timeout=30_000)


def cells(page) -> torch.Tensor:
    """The heatmap on show as a (T, S) tensor of its cells' data-value."""
    found = page.eval_on_selector_all(
        "svg.heatmap rect.cell",
        "cs => cs.map(c => [+c.dataset.row, +c.dataset.col, +c.dataset.value])",
    )
    T, S = max(r for r, _, _ in found) + 1, max(c for _, c, _ in found) + 1
    grid = torch.full((T, S), float("nan"), dtype=torch.float64)
    for r, c, v in found:
        grid[r, c] = v
    return grid


@pytest.mark.parametrize("name", list(PROMPTS))
def test_the_page_shows_what_the_model_computed(page, models, name):
    model = models[name]
    text, target = PROMPTS[name]
    inputs = encode_inputs(model, text, target, None)
    with torch.inference_mode(), capture(model) as rec:
        out = model(**inputs.kwargs)
    with serving(model, name=f"tiny-{name}") as url:
        page.goto(url)
        submit(page, text, target)

        for stack, tokens in inputs.tokens.items():  # the tokens, as the tokenizer split them
            shown = page.eval_on_selector_all(
                f'.token[data-stack="{stack}"]', "ts => ts.map(t => t.dataset.token)"
            )
            assert shown == tokens

        kinds = page.eval_on_selector_all("#attn-select option", "os => os.map(o => o.value)")
        for choice, (stack, kind) in zip(kinds, attention_kinds(rec, name), strict=True):
            page.select_option("#attn-select", choice)
            weights = rec.weights(kind, stack)[:, 0].double()  # (L, H, T, S)
            pictures = []
            for layer in range(model.config.n_layer):
                page.select_option("#layer-select", str(layer))
                for head in range(model.config.n_head):
                    page.select_option("#head-select", str(head))
                    svg = page.locator("svg.heatmap")
                    assert svg.get_attribute("data-layer") == str(layer)
                    assert svg.get_attribute("data-head") == str(head)
                    got = cells(page)
                    assert (got - weights[layer, head]).abs().max() <= 1e-6, (stack, layer, head)
                    pictures.append(got)
            assert not torch.equal(pictures[0], pictures[-1])  # switching changes the picture

        page.select_option("#attn-select", kinds[0])
        page.select_option("#layer-select", "0")
        page.select_option("#head-select", "0")
        stack = rec.stacks[0] if name != "seq2seq" else "encoder"
        page.hover(f'.token[data-stack="{stack}"][data-pos="1"]')
        assert page.eval_on_selector_all("g.row.highlight", "gs => gs.map(g => g.dataset.row)") == [
            "1"
        ]
        columns = page.eval_on_selector_all(
            ".cell.col-highlight", "cs => cs.map(c => c.dataset.col)"
        )
        assert columns and set(columns) == {"1"}
        page.mouse.move(0, 0)
        assert page.locator(".highlight").count() == 0

        check_predictions(page, model, out)
        for view in ("heatmap", "lines", "overview"):
            page.select_option("#view-select", view)
            page.locator("#attention-view").screenshot(path=artifact(f"{name}-attention-{view}"))
        page.select_option("#view-select", "heatmap")
        page.select_option("#head-select", "all")
        assert page.locator("svg.heatmap").count() == model.config.n_head
        save(page, name)

        assert page.errors == []
        too_long = "x" * (model.config.max_len + 5)
        page.fill("#text", too_long)
        page.click("#run")
        page.wait_for_selector("#status.error")
        assert f"max_len is {model.config.max_len}" in page.inner_text("#status")
    assert page.errors == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]


def attention_kinds(rec, name) -> list[tuple[str, str]]:
    """(stack, kind) in the order the page lists them."""
    found = [(s, "self") for s in rec.stacks]
    return [*found, ("decoder", "cross")] if name == "seq2seq" else found


def check_predictions(page, model, out) -> None:
    probs = out.logits[0].double().softmax(-1)
    if probs.dim() == 1:  # a classifier: one distribution over the labels
        shown = page.eval_on_selector_all(
            "#predictions-table tr", "rs => rs.map(r => +r.dataset.prob)"
        )
        assert torch.allclose(torch.tensor(shown, dtype=torch.float64), probs, atol=1e-6)
        return
    rows = page.eval_on_selector_all(
        "#predictions-table tr[data-pos]",
        "rs => rs.map(r => [+r.dataset.pos, [...r.querySelectorAll('td[data-id]')]"
        ".map(d => [+d.dataset.id, +d.dataset.prob])])",
    )
    assert rows
    top = probs.topk(len(rows[0][1]), dim=-1)
    for pos, cells in rows:
        assert [i for i, _ in cells] == top.indices[pos].tolist()
        got = torch.tensor([p for _, p in cells], dtype=torch.float64)
        assert torch.allclose(got, top.values[pos], atol=1e-6)


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / f"{name}.png"


def test_the_exported_page_asks_for_nothing(page, models, tmp_path):
    model = models["seq2seq"]
    data = explore_data(model, *PROMPTS["seq2seq"])
    path = tmp_path / "page.html"
    path.write_text(page_html({**model_info(model), "name": "tiny"}, data), encoding="utf-8")
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector('body[data-runs="1"]')
    for view in ("lines", "overview", "heatmap"):
        page.select_option("#view-select", view)
    page.select_option("#head-select", "all")
    page.hover('.token[data-stack="decoder"][data-pos="1"]')
    assert requests == [path.as_uri()]
    assert page.locator("#run").is_hidden()
    shown = page.eval_on_selector_all(
        '.token[data-stack="encoder"]', "ts => ts.map(t => t.dataset.token)"
    )
    assert shown == data["tokens"]["encoder"]["tokens"]
    save(page, "exported")
    assert page.errors == []
