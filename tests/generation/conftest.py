"""Tiny random models for the generation tests.

Weights are drawn with a large init_std and untied embeddings, so that greedy decoding does not
just repeat one token and sampling at temperature 1 is far from deterministic."""

from __future__ import annotations

import pytest
import torch

from glassformer.models import DecoderLM, EncoderDecoder
from glassformer.models.config import ModelConfig
from glassformer.tokenizers import CharTokenizer

V = 64


def _decoder(positional: str = "learned", **kw) -> DecoderLM:
    torch.manual_seed(0)
    cfg = dict(vocab_size=V, d_model=32, n_layer=2, n_head=4, max_len=96, positional=positional)
    cfg.update(init_std=0.2, tie_embeddings=False)
    cfg.update(kw)
    return DecoderLM(ModelConfig(**cfg)).eval()


def _seq2seq(**kw) -> EncoderDecoder:
    torch.manual_seed(0)
    cfg = dict(family="encoder-decoder", vocab_size=V, d_model=32, n_layer=2, n_head=4)
    cfg.update(max_len=96, positional="sinusoidal", norm_first=False, init_std=0.2)
    cfg.update(tie_embeddings=False)
    cfg.update(kw)
    return EncoderDecoder(ModelConfig(**cfg)).eval()


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread, and far faster than two when other processes
    share the machine's cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def make_decoder():
    return _decoder


@pytest.fixture
def make_seq2seq():
    return _seq2seq


@pytest.fixture(scope="session")
def char_tokenizer() -> CharTokenizer:
    text = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:!?'\n0123456789"
    return CharTokenizer().train(text)


@pytest.fixture
def prompts() -> list[list[int]]:
    """Three prompts of different lengths (ids >= 5: no special tokens)."""
    return [[1, 17, 42, 9, 30, 11], [1, 5], [1, 60, 23, 8]]
