"""Settings for the whole suite."""

from __future__ import annotations

import os

import torch


def pytest_configure(config):
    """Under pytest-xdist (``make test``) each worker has a core: one intra-op thread per
    worker, since the workers' threads competing for the same cores stall each other. Tests run
    in one process (``pytest``) keep PyTorch's default; processes the tests start choose
    their own."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)
