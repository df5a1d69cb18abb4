"""FeedForward(X) = W_2 a(W_1 X + b_1) + b_2; embeddings, √D scaling, tied unembedding."""

import math

import pytest
import torch

from glassformer.nn import FeedForward, TokenEmbedding, Unembedding

torch.manual_seed(0)
ACT = {
    "relu": lambda h: torch.clamp(h, min=0),
    "gelu": lambda h: 0.5 * h * (1 + torch.erf(h / math.sqrt(2))),
    "gelu_tanh": lambda h: (
        0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
    ),
}


@pytest.mark.parametrize("activation", sorted(ACT))
def test_feedforward_formula(activation):
    ff = FeedForward(8, 32, activation).double()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    h = x @ ff.fc1.weight.T + ff.fc1.bias
    expected = ACT[activation](h) @ ff.fc2.weight.T + ff.fc2.bias
    torch.testing.assert_close(ff(x), expected)


def test_swiglu_formula():
    ff = FeedForward(8, 16, "swiglu", bias=False).double()
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    w_gate, w_up = ff.fc1.weight[:16], ff.fc1.weight[16:]
    g = x @ w_gate.T
    expected = (g * torch.sigmoid(g) * (x @ w_up.T)) @ ff.fc2.weight.T
    torch.testing.assert_close(ff(x), expected)


def test_unknown_activation():
    with pytest.raises(ValueError) as err:
        FeedForward(8, 16, "tanh")
    assert "'tanh'" in str(err.value) and "'swiglu'" in str(err.value)


def test_embedding_scale_and_tied_unembedding():
    emb = TokenEmbedding(10, 4, scale=True)
    ids = torch.tensor([[1, 9, 1]])
    torch.testing.assert_close(emb(ids), emb.weight[ids] * 2.0)  # √4
    head = Unembedding(4, 10, tie_to=emb)
    assert head.proj.weight is emb.weight
    h = torch.randn(1, 3, 4)
    torch.testing.assert_close(head(h), h @ emb.weight.T)
    with pytest.raises(ValueError, match="cannot tie"):
        Unembedding(5, 10, tie_to=emb)
    with pytest.raises(ValueError, match="vocab_size=0"):
        TokenEmbedding(0, 4)
