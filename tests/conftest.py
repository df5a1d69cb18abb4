"""Settings for the whole suite."""

from __future__ import annotations

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
