"""Fixtures of the reference tests."""

from __future__ import annotations

import socket

import pytest
import torch


def _no_network(*args, **kwargs):
    raise AssertionError(f"a test against TransformerLens opened a connection: {args}")


@pytest.fixture(scope="module")
def offline():
    """No download and no connection while the module that uses it runs (the tests against
    TransformerLens: ``pytestmark = pytest.mark.usefixtures("offline")``); one thread (tiny
    models run many times faster on one when the CPU is shared)."""
    import huggingface_hub.constants

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HF_HUB_OFFLINE", "1")
            mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
            mp.setattr(socket.socket, "connect", _no_network)
            yield
    finally:
        torch.set_num_threads(threads)
