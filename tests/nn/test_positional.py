"""Positional encodings: the notes' sinusoid, learned, rotary (relative), none."""

import math

import pytest
import torch

from glassformer.nn import (
    LearnedPositionalEncoding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    apply_rotary,
    make_positional_encoding,
    shift_matrix,
    sinusoid_table,
)


def test_sinusoidal_is_the_notes_formula():
    d, L = 6, 10000.0
    pe = SinusoidalPositionalEncoding(d, max_len=20)
    for n in range(20):
        for i in range(d):
            r = math.sin(n / L ** (i / d)) if i % 2 == 0 else math.cos(n / L ** ((i - 1) / d))
            assert abs(pe.table[n, i].item() - r) < 1e-6
    x = torch.randn(2, 5, d)
    torch.testing.assert_close(pe(x), x + pe.table[:5])
    torch.testing.assert_close(pe(x, torch.arange(3, 8)), x + pe.table[3:8])


def test_sinusoidal_odd_width():
    pe = SinusoidalPositionalEncoding(5, max_len=4)
    assert pe.table[3, 4].item() == pytest.approx(math.sin(3 / 10000 ** (4 / 5)), abs=1e-6)


def test_learned_adds_rows_of_w_p_per_example_positions():
    pe = LearnedPositionalEncoding(4, max_len=8)
    x = torch.zeros(2, 3, 4)
    positions = torch.tensor([[0, 1, 2], [5, 6, 7]])
    torch.testing.assert_close(pe(x, positions), pe.weight[positions])


def test_rotary_scores_depend_only_on_relative_position():
    rope = RotaryEmbedding(8, max_len=64)
    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)

    def score(n, m):
        cq, sq = rope.rotary(torch.tensor([n]))
        ck, sk = rope.rotary(torch.tensor([m]))
        qn = apply_rotary(q.view(1, 1, 1, 8), cq.double(), sq.double())
        km = apply_rotary(k.view(1, 1, 1, 8), ck.double(), sk.double())
        return (qn * km).sum().item()

    assert score(5, 2) == pytest.approx(score(40, 37), abs=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)
    assert score(0, 0) == pytest.approx((q @ k).item(), abs=1e-6)  # position 0 is no rotation


def test_rotary_preserves_norm_and_per_example_positions():
    rope = RotaryEmbedding(8, max_len=16)
    x = torch.randn(2, 3, 4, 8)
    cos, sin = rope.rotary(torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]]))
    assert cos.shape == (2, 1, 4, 8)
    y = apply_rotary(x, cos, sin)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    c1, s1 = rope.rotary(torch.arange(4, 8))
    torch.testing.assert_close(y[1:], apply_rotary(x[1:], c1, s1))


def test_none_and_rotary_add_nothing():
    x = torch.randn(2, 3, 8)
    for kind in ("none", "rotary"):
        pe = make_positional_encoding(kind, 8, 16, n_head=2)
        assert torch.equal(pe(x), x)
    assert make_positional_encoding("sinusoidal", 8, 16).rotary(torch.arange(3)) is None


def test_positions_beyond_max_len_are_refused():
    pe = SinusoidalPositionalEncoding(4, max_len=4)
    with pytest.raises(ValueError, match="exceeds max_len=4"):
        pe(torch.zeros(1, 5, 4))
    with pytest.raises(ValueError, match="out of range for max_len=4"):
        pe(torch.zeros(1, 2, 4), torch.tensor([3, 4]))
    with pytest.raises(ValueError, match="even head size"):
        RotaryEmbedding(5, 8)


def test_rotary_angles_past_max_len_are_computed_by_the_same_formula():
    """A caller that allows more than max_len positions (``length``) gets the angles of every
    position: the table's values below max_len, bit for bit, and a longer table's beyond."""
    rope, longer = RotaryEmbedding(8, max_len=16), RotaryEmbedding(8, max_len=64)
    positions = torch.tensor([[0, 5, 15, 16, 40], [3, 20, 21, 22, 63]])  # (B, T)
    cos, sin = rope.rotary(positions, length=64)
    want_cos, want_sin = longer.rotary(positions)
    assert cos.shape == (2, 1, 5, 8) and torch.equal(cos, want_cos) and torch.equal(sin, want_sin)
    below = torch.arange(16)
    assert torch.equal(rope.rotary(below, length=100)[0], rope.rotary(below)[0])
    with pytest.raises(ValueError, match="position 63 is out of range for max_len=16"):
        rope.rotary(positions)  # without ``length``: max_len holds


def test_unknown_kind():
    with pytest.raises(ValueError) as err:
        make_positional_encoding("alibi", 8, 16)
    assert "'alibi'" in str(err.value) and "'rotary'" in str(err.value)


# The notes' split layout and the shift map ("Brief Notes on Transformers", Positional Encodings)
LAYOUTS = ("interleaved", "split")


def test_split_table_is_the_notes_formula():
    """e_{k, j<E/2} = sin(k / N^{2j/E}), e_{k, j>=E/2} = cos(k / N^{2(j-E/2)/E})."""
    E, N = 8, 10000.0
    pe = SinusoidalPositionalEncoding(E, max_len=30, layout="split")
    for k in range(30):
        for j in range(E):
            if j < E // 2:
                e = math.sin(k / N ** (2 * j / E))
            else:
                e = math.cos(k / N ** (2 * (j - E // 2) / E))
            assert abs(pe.table[k, j].item() - e) < 1e-6
    x = torch.randn(2, 5, E)
    torch.testing.assert_close(pe(x), x + pe.table[:5])


def test_odd_width_and_bad_layouts_are_refused_clearly():
    for layout in LAYOUTS:
        with pytest.raises(ValueError, match="d_model=5 has no shift matrix: allowed an even"):
            shift_matrix(5, layout=layout)
    with pytest.raises(ValueError, match="layout='split' needs an even d_model .* got 5"):
        SinusoidalPositionalEncoding(5, max_len=4, layout="split")
    with pytest.raises(ValueError, match="layout='halves' .* allowed: interleaved, split"):
        sinusoid_table(4, 8, layout="halves")
    with pytest.raises(ValueError, match="steps=1.5 is not allowed"):
        shift_matrix(8, steps=1.5)
    with pytest.raises(ValueError, match="needs kind='sinusoidal', got kind='learned'"):
        make_positional_encoding("learned", 8, 16, layout="split")


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: LearnedPositionalEncoding(0, 4), "LearnedPositionalEncoding: d_model=0 is not"),
        (lambda: SinusoidalPositionalEncoding(4, 0), "max_len=0 is not allowed: a positive int"),
        (
            lambda: SinusoidalPositionalEncoding(4, 8, base=-1.0),
            "SinusoidalPositionalEncoding: base=-1.0 is not allowed: a finite number > 0",
        ),
        (lambda: RotaryEmbedding(0, 8), "RotaryEmbedding: head_dim=0 is not allowed"),
        (
            lambda: make_positional_encoding("rotary", 12, 8, n_head=5),
            "d_model=12 must be divisible by n_head=5",
        ),
        (lambda: make_positional_encoding("learned", 4, 2.5), "max_len=2.5 is not allowed"),
    ],
)
def test_constructor_arguments_are_refused_by_name(make, words):
    with pytest.raises(ValueError) as err:
        make()
    assert words in str(err.value)
