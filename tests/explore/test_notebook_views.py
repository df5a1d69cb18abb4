"""The views inline in JupyterLab, in a real browser: the test starts JupyterLab on a free port
of 127.0.0.1 (its configuration, data, runtime, settings and HOME in a temporary folder, so
that nothing of the user's is read or written), writes a notebook into its root that builds a
small seeded model, runs ``run_with_cache`` and calls ``cache.show("pattern", layer=1)``,
opens it with Playwright on the system's Chromium, runs all its cells from the Run menu, and
reads the view back: it renders (layer 1, head 0), its frame is sized to its page, a hover on
a cell shows A_nm of that layer and head as the test computes it from the same model, and the
head control redraws the heatmap with the other head's weights. The notebook lies as ``make
lab`` lays it out (notebooks/concepts/ beside the built site/): saved and opened again, it
draws the view from its saved output (the user's own notebook is trusted); a link of its
Markdown into the site opens the site's page in JupyterLab. The server is shut down through
its API at the end."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch

from .conftest import heatmap

SRC = Path(__file__).resolve().parents[2] / "src"
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts" / "explorer"
SETUP = """\
import torch
from glassformer import DecoderLM, ModelConfig
from glassformer.tokenizers import CharTokenizer

torch.manual_seed(0)
tok = CharTokenizer().train("abcdefgh ")
config = ModelConfig(vocab_size=tok.vocab_size, d_model=32, n_layer=2, n_head=4, d_ff=64,
                     max_len=32)
model = DecoderLM(config).set_tokenizer(tok).eval()
ids = torch.tensor([tok.encode("abcab", add_bos=True)])"""
SHOW = """\
out, cache = model.run_with_cache(ids)
cache.show("pattern", layer=1)"""
HEADING = "# Views\n\nSee [the Attention page](../../site/concepts/attention.html#attention)."
SITE_PAGE = (
    '<!doctype html><title>Attention</title><h1 id="attention">Attention, the site\'s page</h1>'
)
SETTINGS = {  # JupyterLab's user settings: no news fetched, the notebook's kernel started
    "apputils-extension/notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    "notebook-extension/tracker": {"autoStartDefaultKernel": True},
}
LAB_CONFIG = {  # nothing asked of the network
    "LabApp": {
        "news_url": None,
        "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
    }
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(cells: list[str], heading: str) -> dict:
    """A notebook of a Markdown cell (``heading``), then a code cell per source."""
    first = {"cell_type": "markdown", "id": "cell-0", "metadata": {}, "source": heading}
    code = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"cell-{i}",
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for i, source in enumerate(cells, 1)
    ]
    return {
        "cells": [first, *code],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def call(url: str, token: str, method: str = "GET") -> int:
    """The status of a request to the local server (no proxy, whatever the environment says)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(
        url, method=method, headers={"Authorization": f"token {token}"}
    )
    with opener.open(request, timeout=5) as reply:
        return reply.status


@contextlib.contextmanager
def jupyter_lab(tmp: Path):
    """JupyterLab serving ``tmp / "root"``; yields (base URL, token)."""
    home, root = tmp / "home", tmp / "root"
    for name, values in SETTINGS.items():
        path = home / "settings" / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    (home / "config").mkdir()
    (home / "config" / "jupyter_lab_config.json").write_text(json.dumps(LAB_CONFIG))
    root.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]).rstrip(":"),
        "OMP_NUM_THREADS": "1",
    }
    port, token = free_port(), secrets.token_hex(16)
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        *(["--allow-root"] if os.geteuid() == 0 else []),  # a container's root (CI)
    ]
    log = (tmp / "lab.log").open("w")
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp / "lab.log").read_text()[-3000:]
            with contextlib.suppress(OSError):
                if call(f"{url}/api/status", token) == 200:
                    break
            assert time.monotonic() < deadline, "JupyterLab did not start in 60 s"
            time.sleep(0.2)
        yield url, token
    finally:
        with contextlib.suppress(OSError):
            call(f"{url}/api/shutdown", token, "POST")  # its kernels too
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.terminate()
            server.wait(timeout=10)
        log.close()


def expected_pattern() -> torch.Tensor:
    """A of the notebook's model on its input, (L, H, T, S), as this test computes it."""
    names: dict = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the kernel runs (OMP_NUM_THREADS=1): the same rounding
    try:
        exec(SETUP, names)
        with torch.no_grad():
            _, cache = names["model"].run_with_cache(names["ids"])
    finally:
        torch.set_num_threads(threads)
    return torch.stack([cache["pattern", layer][0] for layer in range(2)]).double()


@pytest.mark.slow
def test_cache_show_renders_in_jupyterlab_and_answers_hover_and_head(browser, tmp_path):
    A = expected_pattern()  # (L, H, T, S)
    root = tmp_path / "root"  # as make lab lays it out: notebooks/ beside the built site/
    (root / "notebooks" / "concepts").mkdir(parents=True)
    (root / "site" / "concepts").mkdir(parents=True)
    (root / "site" / "concepts" / "attention.html").write_text(SITE_PAGE, encoding="utf-8")
    written = json.dumps(notebook([SETUP, SHOW], HEADING))
    (root / "notebooks" / "concepts" / "views.ipynb").write_text(written, encoding="utf-8")
    with jupyter_lab(tmp_path) as (url, token):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        errors = []
        page.on(
            "console",
            lambda m: (
                m.type == "error"
                and m.location.get("url") == "about:srcdoc"
                and errors.append(m.text)
            ),
        )
        try:
            page.goto(f"{url}/lab/tree/notebooks/concepts/views.ipynb?token={token}")
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
            idle = page.locator(".jp-StatusBar-TextItem", has_text="Python 3 (ipykernel) | Idle")
            idle.wait_for(timeout=60_000)  # its kernel started (running before it starts another)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            frame_element = page.locator(".jp-OutputArea .glassformer-view iframe")
            frame_element.wait_for(timeout=40_000)
            frame = page.frame_locator(".jp-OutputArea .glassformer-view iframe")
            frame.locator("svg.heatmap rect.cell").first.wait_for(timeout=30_000)

            layer, head, grid = heatmap(frame)
            assert (layer, head) == ("1", "0")
            assert (grid - A[1, 0]).abs().max() <= 2e-7  # the model's A, rounded to 7 places
            height = frame.locator("html").evaluate("e => e.getBoundingClientRect().height")
            page.wait_for_function(  # the notebook's frame is sized to the page it holds
                "([s, h]) => Math.abs(document.querySelector(s).getBoundingClientRect().height"
                " - h) <= 2",
                arg=[".jp-OutputArea .glassformer-view iframe", height],
            )

            n, m = 5, 2  # query "b" (position 5), key "b" (position 2)
            frame.locator(f'svg.heatmap rect.cell[data-row="{n}"][data-col="{m}"]').hover()
            tip = frame.locator("#tooltip")
            tip.wait_for(state="visible")
            said = tip.inner_text()
            assert said.startswith("query 5 b \u2192 key 2 b: A = "), said
            assert abs(float(said.split("A = ")[1]) - A[1, 0, n, m].item()) <= 6e-5  # 4 places

            frame.locator("#head-select").select_option("2")
            layer, head, grid = heatmap(frame)
            assert (layer, head) == ("1", "2")
            assert (grid - A[1, 2]).abs().max() <= 2e-7
            assert (A[1, 2] - A[1, 0]).abs().max() > 1e-3  # another head, another picture
            frame.locator("#layer-select").select_option("0")
            assert heatmap(frame)[:2] == ("0", "2")
            assert (heatmap(frame)[2] - A[0, 2]).abs().max() <= 2e-7
            assert errors == []

            # saved, the notebook is the user's own (signed, so trusted): opened again, its
            # view is drawn from the saved output, no cell run
            page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Save Notebook$")).click()
            saved = root / "notebooks" / "concepts" / "views.ipynb"
            deadline = time.monotonic() + 30
            while "glassformer-view" not in saved.read_text(encoding="utf-8"):
                assert time.monotonic() < deadline, "the notebook was not saved"
                time.sleep(0.2)
            page.reload()
            frame.locator("svg.heatmap rect.cell").first.wait_for(timeout=60_000)
            assert heatmap(frame)[:2] == ("1", "0")  # the saved page: as first drawn
            assert (heatmap(frame)[2] - A[1, 0]).abs().max() <= 2e-7

            # a link into the site, as docs/scripts/notebooks.py --site writes it for make lab
            page.locator(".jp-RenderedMarkdown a", has_text="the Attention page").click()
            opened = page.frame_locator(".jp-HTMLViewer iframe")
            opened.locator("h1#attention").wait_for(timeout=30_000)
            assert opened.locator("h1#attention").inner_text() == "Attention, the site's page"
        finally:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=ARTIFACTS / "notebook-view.png")  # what the test last saw
            context.close()
