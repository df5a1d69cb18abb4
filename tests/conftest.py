"""Settings for the whole suite."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections import Counter

import pytest
import torch


def pytest_configure(config):
    """Under pytest-xdist (``make test``) each worker has a core: one intra-op thread per
    worker, since the workers' threads competing for the same cores stall each other. Tests run
    in one process (``pytest``) keep PyTorch's default; processes the tests start choose
    their own."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)
    # token files (glassformer/data/token_cache.py) go to a folder of the session's own, which
    # the processes the tests start inherit, never to the user's cache
    config._token_cache = tempfile.mkdtemp(prefix="glassformer-tokens-")
    os.environ["GLASSFORMER_CACHE"] = config._token_cache


def pytest_collection_modifyitems(config, items):
    """The files that hold ``slow`` tests run first, those with the most of them first, and
    the others after them in their usual order. Under ``make test`` (pytest-xdist, ``--dist
    loadfile --no-loadscope-reorder``) the workers take whole files in this order as they
    finish the last: the long files start early, beside each other, and the many short ones
    fill in at the end, so the workers finish together instead of one carrying a long file
    while the other waits."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])  # stable: each file's tests keep their order


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_token_cache", ""), ignore_errors=True)


# A browser that makes no request of its own, so a page's request log is the page's.
BROWSER_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    """The system's Chromium (Debian's ``chromium`` package) driven by Playwright, for the
    browser tests (the explorer, the docs site); fails, naming the package, when it is missing."""
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(
            "no Chromium on this machine: the browser tests need the system's package "
            "(apt-get install chromium; make test installs it when it runs as root)"
        )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=BROWSER_FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def minilm_folder():
    """all-MiniLM-L6-v2 as it ships (tests/real_models.py): read only, copy before changing."""
    from .real_models import minilm_folder

    return minilm_folder()


@pytest.fixture(scope="session")
def smollm2_folder():
    """SmolLM2-135M-Instruct as a Hugging Face folder made from its package's GGUF file
    (tests/real_models.py): read only, copy before changing."""
    from .real_models import smollm2_folder

    return smollm2_folder()


@pytest.fixture(scope="session")
def road_to_qk_runs(tmp_path_factory):
    """``compare("runs")`` of glassformer.examples.road_to_qk (the built-in config road-to-qk,
    600 steps, once per attention score) trained once for the whole run, on one thread, and
    shared by the test workers (the first to need it trains under a lock; the others wait):
    (the folder holding ``runs/``, {scores: ScoresResult}). The runs are seeded by the config,
    so every caller of ``compare`` with no settings gets these numbers. Read only: copy the
    runs before changing them."""
    from glassformer.examples.road_to_qk import ScoresResult, compare

    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "road-to-qk"
    shared.mkdir(exist_ok=True)
    saved = shared / "results.pt"
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            before, here = torch.get_num_threads(), os.getcwd()
            torch.set_num_threads(1)  # a one-layer model of width 32: fastest on one thread
            os.chdir(shared)
            try:
                results = compare("runs")
            finally:
                os.chdir(here)
                torch.set_num_threads(before)
            torch.save({k: vars(r) for k, r in results.items()}, saved.with_suffix(".tmp"))
            saved.with_suffix(".tmp").rename(saved)
    fields = torch.load(saved, weights_only=True)
    return shared, {k: ScoresResult(**v) for k, v in fields.items()}
