"""The explorer page in a real browser: the system's Chromium (Debian's ``chromium`` package,
which ``make test`` installs when it is missing), driven by Playwright. For a tiny checkpoint of
each family the test types the prompt, runs it and reads back what the page drew: the tokens,
every head's heatmap (its cells' data-value), the highlight on hover, the predictions, the
colour scale beside each heatmap (its range) and the value a hover on a cell shows; a text
longer than max_len is refused on the page; an exported page opens from file:// and asks for
nothing else. Screenshots of each view go to build/test-artifacts/explorer/."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from glassformer import DecoderLM, preset
from glassformer.explore import explore_data, model_info, page_html
from glassformer.inspect import capture
from glassformer.inspect.inputs import encode_inputs
from glassformer.tokenizers import CharTokenizer

from .conftest import PROMPTS, recording_page, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "explorer"
SECTIONS = ("tokens", "attention", "graph", "residual", "lens", "attribution", "predictions")


@pytest.fixture
def page(browser):
    with recording_page(browser, 1200, 900) as page:
        yield page


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


def shown(token: str) -> str:
    """A token as the page writes it (draw.js's shown): whitespace made visible."""
    return token.replace(" ", "\u2423").replace("\n", "\u21b5").replace("\t", "\u21e5")


def scale(page, name: str) -> tuple[float, float, list[float]]:
    """The colour scale beside heatmap ``name``: its (min, max) and the values its ticks read."""
    legend = page.locator(f'svg.legend[data-for="{name}"]')
    assert legend.count() == 1, name
    ticks = legend.locator(".scale-tick").all_text_contents()
    return float(legend.get_attribute("data-min")), float(legend.get_attribute("data-max")), [
        float(t) for t in ticks
    ]


def tip(page, selector: str, **position) -> str:
    """What the tooltip says with the pointer on ``selector`` (at ``position`` inside it)."""
    page.hover(selector, **position)
    assert page.locator("#tooltip").is_visible()
    return page.inner_text("#tooltip")


@pytest.mark.parametrize("name", list(PROMPTS))
def test_each_heatmap_has_its_colour_scale_and_a_value_on_hover(page, models, name):
    model = models[name]
    text, target = PROMPTS[name]
    data = explore_data(model, text, target)
    a = data["attention"][0]  # the attention the page opens with: layer 0, head 0
    queries, keys = data["tokens"][a["stack"]]["tokens"], data["tokens"][a["keys"]]["tokens"]
    weights = torch.tensor(a["weights"], dtype=torch.float64)  # (L, H, T, S)
    with serving(model, name=f"tiny-{name}") as url:
        page.goto(url)
        submit(page, text, target)

        assert scale(page, "attention") == (0.0, 1.0, [0.0, 1.0])  # A is a probability
        causal = "0" in "".join(a["allowed"][0][0])
        assert page.locator('svg.legend[data-for="attention"] .scale-masked').count() == causal
        said = tip(page, 'svg.heatmap rect.cell[data-row="2"][data-col="1"]')
        prefix = f"query 2 {shown(queries[2])} \u2192 key 1 {shown(keys[1])}: A = "
        assert said.startswith(prefix), said
        assert abs(float(said.removeprefix(prefix).split()[0]) - weights[0, 0, 2, 1]) <= 5e-5
        assert said.endswith("(masked)") == (a["allowed"][0][0][2][1] == "0")

        page.select_option("#view-select", "overview")  # every layer and head, one scale
        assert scale(page, "attention") == (0.0, 1.0, [0.0, 1.0])
        thumb = 'canvas.thumb[data-layer="1"][data-head="2"]'
        px = page.eval_on_selector(thumb, "c => c.clientWidth / c.width")  # pixels per cell
        said = tip(page, thumb, position={"x": 1.5 * px, "y": 2.5 * px})
        prefix = f"layer 1, head 2: query 2 {shown(queries[2])} \u2192 key 1 {shown(keys[1])}"
        assert said.startswith(prefix), said
        assert abs(float(said.split("A = ")[1].split()[0]) - weights[1, 2, 2, 1]) <= 5e-5
        page.mouse.move(0, 0)
        assert page.locator("#tooltip").is_hidden()
        page.select_option("#view-select", "heatmap")
        page.select_option("#head-select", "all")  # the heads of a layer share one scale
        assert scale(page, "attention") == (0.0, 1.0, [0.0, 1.0])
        said = tip(page, 'svg.heatmap[data-head="3"] rect.cell[data-row="2"][data-col="1"]')
        assert abs(float(said.split("A = ")[1].split()[0]) - weights[0, 3, 2, 1]) <= 5e-5

        for stack, steps in data["residual"].items():  # 0 to the stack's largest update
            largest = max(max(s["update_norm"]) for s in steps)
            low, high, ticks = scale(page, f"residual-{stack}")
            assert (low, high) == (0.0, largest)
            assert ticks[0] == 0 and abs(ticks[1] - largest) <= 5e-3 * largest
            step = steps[-1]
            said = tip(page, f'svg.residual[data-stack="{stack}"] rect.cell'
                             f'[data-row="{len(steps) - 1}"][data-col="1"]')  # fmt: skip
            tokens = data["tokens"][stack]["tokens"]
            assert said.startswith(f"L{step['layer']} ")
            assert f"position 1 {shown(tokens[1])}: " in said
            update = float(said.split("‖update‖ = ")[1].split(",")[0])
            assert abs(update - step["update_norm"][1]) <= 1e-3 * step["update_norm"][1]

        att = data["attribution"]
        for kind, grid in ({} if "error" in att else att["heads"]).items():  # -max to +max
            largest = max(abs(v) for row in grid for v in row)
            low, high, ticks = scale(page, f"attribution-{kind}")
            assert (low, high) == (-largest, largest) and ticks[1] == 0
            said = tip(page, f'table.attribution[data-kind="{kind}"] td[data-layer="1"]'
                             '[data-head="0"]')  # fmt: skip
            assert said.startswith(f"{kind}-attention layer 1, head 0: ")
            assert abs(float(said.split(": ")[1].split()[0]) - grid[1][0]) <= 1e-5 * largest
        readouts = ["predictions"] if data["predictions"]["kind"] in ("next", "mask") else []
        for table in (["lens"] if "error" not in data["lens"] else []) + readouts:
            assert scale(page, table) == (0.0, 1.0, [0.0, 1.0])  # the shading of p
        assert page.locator("svg.legend").count() == (
            1 + len(data["residual"]) + len(att.get("heads", {}))
            + ("error" not in data["lens"]) + len(readouts)
        )  # fmt: skip
        page.screenshot(path=artifact(f"{name}-scales"), full_page=True)
    assert page.errors == []


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
    assert page.text_content("#model-info").endswith(" tokens")  # separate W_Q, W_K: unnamed
    save(page, "exported")
    assert page.errors == []


def test_the_model_line_names_a_score_without_separate_w_q_and_w_k(page, tmp_path):
    """A model of "The road to Q and K" with the plain score xᵀx′ says so on its page."""
    tok = CharTokenizer().train("abcabc")
    config = preset("tiny", vocab_size=tok.vocab_size, n_layer=1, attention_scores="dot")
    model = DecoderLM(config).set_tokenizer(tok).eval()
    data = explore_data(model, "abc")
    assert model_info(model)["attention_scores"] == "dot"
    path = tmp_path / "page.html"
    path.write_text(page_html({**model_info(model), "name": "dot"}, data), encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector('body[data-runs="1"]')
    assert page.text_content("#model-info").endswith(", scores xᵀx′ (no W_Q, W_K)")
    assert page.errors == []
