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


def test_a_scaled_untied_embedding_is_drawn_with_std_one_over_sqrt_d():
    torch.manual_seed(0)
    scaled, plain = TokenEmbedding(2000, 64, scale=True), TokenEmbedding(2000, 64)
    assert (scaled.init_std(0.02), plain.init_std(0.02)) == (1 / 8, 0.02)
    assert scaled.init_std(0.02, tied=True) == 0.02  # W_u = W_eᵀ: the default std
    assert abs(scaled.weight.std().item() - 1 / 8) < 2e-3  # √64 · W_e: RMS 1
    assert abs(plain.weight.std().item() - 0.02) < 1e-3
    scaled.reset_parameters(0.05, tied=True)
    assert abs(scaled.weight.std().item() - 0.05) < 2e-3


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: FeedForward(0, 4), "FeedForward: d_model=0 is not allowed: a positive int"),
        (lambda: FeedForward(8, 2.5), "FeedForward: d_ff=2.5 is not allowed: a positive int"),
        (lambda: FeedForward(8, 4, dropout=1.0), "dropout=1.0 is not allowed: a number in [0, 1)"),
        (lambda: TokenEmbedding(5, -1), "TokenEmbedding: d_model=-1 is not allowed"),
        (lambda: Unembedding(0, 5), "Unembedding: d_model=0 is not allowed: a positive int"),
        (lambda: Unembedding(4, 0), "Unembedding: vocab_size=0 is not allowed"),
    ],
)
def test_constructor_arguments_are_refused_by_name(make, words):
    with pytest.raises(ValueError) as err:
        make()
    assert words in str(err.value)


@pytest.mark.parametrize(
    "ids, words",
    [
        (
            [[1, 7, 2]],
            "token id 7 is out of range for the vocabulary of 5 tokens: allowed ids 0..4",
        ),
        ([[-1, 3]], "token id -1 is out of range for the vocabulary of 5 tokens"),
        ([[1.0, 2.0]], "of dtype torch.long or torch.int; got a tensor of dtype torch.float32"),
        (torch.tensor([[1, 2]], dtype=torch.int8), "integers in [0, 5) of dtype torch.long or "),
    ],
)
def test_ids_outside_the_vocabulary_are_refused_with_its_size(ids, words):
    emb = TokenEmbedding(5, 4)
    with pytest.raises(ValueError) as err:
        emb(torch.as_tensor(ids))
    assert words in str(err.value)
    assert emb(torch.tensor([[0, 4]])).shape == (1, 2, 4)
