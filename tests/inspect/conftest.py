"""Tiny models of the three families for the inspection tests (built in milliseconds)."""

from __future__ import annotations

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, EncoderMLM, preset

V = 40


def tiny(name: str, **overrides):
    """A preset shrunk to 2 layers, d_model 16, 4 heads, context 16."""
    options = dict(vocab_size=V, d_model=16, n_head=4, n_layer=2, max_len=16)
    return preset(name, **{**options, **overrides})


def build(cls, name: str, *, double: bool = True, std: float = 0.3, seed: int = 0, **overrides):
    """An eval-mode model whose weights are large enough for attention to be far from uniform
    (the default init makes every A_nm ≈ 1/n, which would hide mistakes)."""
    torch.manual_seed(seed)
    model = cls(tiny(name, **overrides))
    if double:
        model = model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, std)
        for name, b in model.named_buffers():  # BatchNorm's running statistics
            if name.endswith("running_mean"):
                b.normal_(0.0, std)
            elif name.endswith("running_var"):
                b.uniform_(0.5, 2.0)
    return model.eval()


@pytest.fixture
def decoder():
    return build(DecoderLM, "tiny")


@pytest.fixture
def encoder():
    return build(EncoderMLM, "bert-base", type_vocab_size=0, pooler=False)


@pytest.fixture
def seq2seq():
    return build(EncoderDecoder, "tiny-seq2seq")


def ids(b: int = 2, t: int = 7, seed: int = 1) -> torch.Tensor:
    return torch.randint(3, V, (b, t), generator=torch.Generator().manual_seed(seed))


def right_padded(b: int = 2, t: int = 7, lengths=(7, 4)) -> tuple[torch.Tensor, torch.Tensor]:
    mask = (torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]).long()  # (B, T)
    return ids(b, t), mask


class Kit:
    """The helpers above, handed to tests by the ``kit`` fixture."""

    V = V
    build = staticmethod(build)
    ids = staticmethod(ids)
    right_padded = staticmethod(right_padded)


@pytest.fixture(scope="session")
def kit() -> type[Kit]:
    return Kit
