"""The live view on the built site's Attention page (docs/hooks/views.py), opened from disk in
the system's Chromium: it sits in "See it live" just before "The code", draws A of the
picture's model (the hook's own model, made again here: the same seeded training on one
thread), answers a hover with A_nm and its tokens, redraws for another head, sizes its frame
to its page, and asks nothing outside the site."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from ..explore.conftest import heatmap

ROOT = Path(__file__).resolve().parents[2]
FRAME = "article .glassformer-view iframe"


def hook():
    spec = importlib.util.spec_from_file_location("views_hook", ROOT / "docs/hooks/views.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_attention_page_carries_a_live_view(browser, built_site):
    tokens, cache = hook().attention_pass()
    A = torch.stack([cache["pattern", layer][0] for layer in range(2)]).double()  # (L, H, T, S)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requests, errors = [], []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.on(
        "console",
        lambda m: (
            m.type == "error" and m.location.get("url") == "about:srcdoc" and errors.append(m.text)
        ),
    )  # the view's page: the site's own are not this test's
    try:
        page.goto((built_site / "concepts" / "attention.html").as_uri())
        headings = page.locator("article h2").all_inner_texts()
        headings = [h.rstrip("¶").strip() for h in headings]
        assert headings.index("See it live") + 1 == headings.index("The code")
        assert page.locator(FRAME).count() == 1
        view = page.locator("article h2:has-text('See it live') ~ .glassformer-view")
        assert view.count() == 1  # under its heading
        frame = page.frame_locator(FRAME)
        frame.locator("svg.heatmap rect.cell").first.wait_for(timeout=20_000)

        *where, grid = heatmap(frame)
        assert where == ["0", "0"]
        assert (grid - A[0, 0]).abs().max() <= 1e-6  # the model's A (to 7 decimals)
        hatched = frame.locator('rect.cell[data-allowed="0"]').count()
        assert hatched == int((cache["blocks.0.attn.hook_mask"][0, 0] == 0).sum())

        n, m = 5, 2
        frame.locator(f'svg.heatmap rect.cell[data-row="{n}"][data-col="{m}"]').hover()
        said = frame.locator("#tooltip").inner_text()
        prefix = f"query {n} {tokens[n]} \u2192 key {m} {tokens[m]}: A = "
        assert said.startswith(prefix), said
        assert abs(float(said.removeprefix(prefix)) - A[0, 0, n, m].item()) <= 5e-5

        frame.locator("#layer-select").select_option("1")
        frame.locator("#head-select").select_option("3")
        *where, grid = heatmap(frame)
        assert where == ["1", "3"] and (grid - A[1, 3]).abs().max() <= 1e-6

        height = frame.locator("html").evaluate("e => e.getBoundingClientRect().height")
        page.wait_for_function(
            "([s, h]) => Math.abs(document.querySelector(s).getBoundingClientRect().height - h)"
            " <= 2",
            arg=[FRAME, height],
        )
        assert [u for u in requests if not u.startswith("file://")] == []
        assert errors == []
    finally:
        context.close()
