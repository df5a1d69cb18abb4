"""Tiny checkpoints of each family for the explorer's tests, trained once per session by the
command line, helpers to run the explorer's server in a thread, and a browser page that keeps
its script errors."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch

from glassformer import load_model
from glassformer.cli import main

TINY = [
    "--steps", "1", "--set", "model.d_model=32", "--set", "model.n_layer=2",
    "--set", "model.n_head=4", "--set", "model.max_len=32", "--set", "train.batch_size=4",
    "--set", "train.warmup=1", "--set", "train.eval_batches=1", "--set", "sample.max_new_tokens=0",
]  # fmt: skip
FAMILIES = {  # name: the train arguments
    "lm": ["--data", "shakespeare"],
    "seq2seq": ["--data", "reverse", "--set", "data.num_examples=64"],
    "classify": ["--data", "is_sorted", "--set", "data.num_examples=64"],
    "mlm": ["--task", "mlm", "--data", "shakespeare"],
}
PROMPTS = {  # name: (text, target)
    "lm": ("ROMEO: and", None),
    "seq2seq": ("hello", "olleh"),
    "classify": ("abcd", None),
    "mlm": ("To be <MASK> not", None),
}


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """{family: run folder} of tiny models trained for one step."""
    root = tmp_path_factory.mktemp("explore")
    found = {}
    for name, argv in FAMILIES.items():
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["train", *argv, *TINY, "--out", str(root / name)])
        assert code == 0, name
        found[name] = root / name
    return found


@pytest.fixture(scope="session")
def models(checkpoints) -> dict:
    return {name: load_model(path).eval() for name, path in checkpoints.items()}


@contextlib.contextmanager
def serving(model, **options):
    """The explorer for ``model`` served on a free port of 127.0.0.1; yields its URL."""
    from glassformer.explore.server import LocalServer, create_app

    server = LocalServer(create_app(model, **options), "127.0.0.1", 0).start()
    try:
        yield server.url
    finally:
        server.stop()


def heatmap(frame) -> tuple[str, str, torch.Tensor]:
    """The layer, the head and the (T, S) weights of the heatmap the view draws."""
    svg = frame.locator("svg.heatmap")
    found = svg.locator("rect.cell").evaluate_all(
        "cs => cs.map(c => [+c.dataset.row, +c.dataset.col, +c.dataset.value])"
    )
    T = max(r for r, _, _ in found) + 1
    grid = torch.zeros(T, T, dtype=torch.float64)
    for r, c, v in found:
        grid[r, c] = v
    return svg.get_attribute("data-layer"), svg.get_attribute("data-head"), grid


@contextlib.contextmanager
def recording_page(browser, width: int, height: int):
    """A page of ``browser`` in a context of its own (a ``width`` × ``height`` viewport) whose
    script errors and console errors collect in ``page.errors``; closed after."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    try:
        yield page
    finally:
        context.close()
