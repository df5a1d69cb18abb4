"""The circuit pictures: valid PNGs of the size asked for, the values read back from the pixels
(each cell's colour is the colour map's colour of its value), and bad input refused with a
ValueError that names it."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from matplotlib.image import imread

from glassformer.inspect.circuit_plots import (
    DIVERGING,
    PROBABILITY,
    plot_head_attribution,
    plot_logit_lens,
    plot_patching,
    plot_singular_values,
)


def png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's signature and IHDR chunk; fails if it is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def cells(pic, panel: str, rows: int, cols: int, at: float = 0.5) -> np.ndarray:
    """(rows, cols, 3): the RGB colour of each matrix cell, read at fraction ``at`` of the
    cell from its top-left corner (0.5: the centre; off-centre misses a written value)."""
    img = imread(pic.path)[..., :3]
    left, top, right, bottom = pic.panels[panel]
    ys = [int(top + (n + at) * (bottom - top) / rows) for n in range(rows)]
    xs = [int(left + (m + at) * (right - left) / cols) for m in range(cols)]
    return img[np.ix_(ys, xs)]


def expected(cmap: str, fractions: np.ndarray) -> np.ndarray:
    """The colours the colour map gives values at ``fractions`` (0..1) of its range."""
    return colormaps[cmap](fractions)[..., :3]


def test_head_attribution_cells_show_their_values_on_a_scale_centred_on_zero(tmp_path):
    values = torch.tensor([[2.0, -1.0, 0.0, 0.5], [-2.0, 1.0, 0.25, -0.5], [0.0, 0.0, 1.5, 2.0]])
    pic = plot_head_attribution(values, tmp_path / "heads.png", annotate=False, figsize=(5, 4))
    assert png_size(pic.path) == (pic.width, pic.height) == (500, 400)
    assert list(pic.panels) == ["attribution"]
    shown = cells(pic, "attribution", 3, 4)
    want = expected(DIVERGING, (values.numpy() + 2.0) / 4.0)  # ±max |value| = ±2
    np.testing.assert_allclose(shown, want, atol=1.5 / 255)


def test_head_attribution_writes_values_in_cells_when_they_fit(tmp_path):
    values = np.array([[0.3, -0.7], [0.1, 0.0]])  # numpy is accepted too
    plain = plot_head_attribution(values, tmp_path / "a.png", annotate=False, figsize=(4, 3))
    written = plot_head_attribution(values, tmp_path / "b.png", figsize=(4, 3))
    a, b = imread(plain.path), imread(written.path)
    assert a.shape == b.shape and not np.array_equal(a, b)  # the default writes the values
    zero = torch.zeros(2, 3)  # all zero: a valid picture, white everywhere
    pic = plot_head_attribution(zero, tmp_path / "z.png", annotate=False, figsize=(4, 3))
    white = expected(DIVERGING, np.full((2, 3), 0.5))
    np.testing.assert_allclose(cells(pic, "attribution", 2, 3), white, atol=1.5 / 255)


def test_logit_lens_is_a_table_coloured_by_probability(tmp_path):
    rows = [
        [("the", 0.5), (" a", 0.25), ("\n", 0.0)],
        [("Mary", 1.0), ("John", 0.0), ("x", 0.0)],
    ]
    pic = plot_logit_lens(rows, tmp_path / "lens.png", row_labels=["embed", "layer 0"])
    assert png_size(pic.path) == (pic.width, pic.height)
    probs = np.array([[p for _, p in row] for row in rows])
    shown = cells(pic, "logit lens", 2, 3, at=0.08)  # a corner: the text sits in the centre
    np.testing.assert_allclose(shown, expected(PROBABILITY, probs), atol=1.5 / 255)


def test_singular_values_one_panel_per_layer_or_one_for_a_dict(tmp_path):
    sigma = torch.linspace(4.0, 0.0, 4).expand(2, 3, 4).contiguous()  # (L, H, r), last σ = 0
    pic = plot_singular_values(sigma, tmp_path / "sv.png", figsize=(6, 3), dpi=50)
    assert png_size(pic.path) == (300, 150)
    assert list(pic.panels) == ["layer 0", "layer 1"]
    linear = plot_singular_values(sigma, tmp_path / "lin.png", log=False, figsize=(6, 3), dpi=50)
    assert not np.array_equal(imread(pic.path), imread(linear.path))
    pic = plot_singular_values({"L0H1 OV": sigma[0, 1], "L1H0 QK": [3.0, 1.0]}, tmp_path / "d.png")
    assert list(pic.panels) == ["singular values"] and pic.path.stat().st_size > 0


def test_patching_over_positions_labels_the_tokens(tmp_path):
    values = torch.tensor([[0.0, 0.5, 1.0], [1.0, 0.0, -1.0]])  # (L, T)
    pic = plot_patching(values, tmp_path / "patch.png", x_labels=["a", " b", "c"], annotate=False)
    shown = cells(pic, "patching", 2, 3)
    want = expected(DIVERGING, (values.numpy() + 1) / 2)  # ±max |value| = ±1
    np.testing.assert_allclose(shown, want, atol=1.5 / 255)
    heads = plot_patching(values, tmp_path / "heads.png", over="head")
    assert png_size(heads.path) == (heads.width, heads.height)


Z = torch.zeros
BAD = [  # (function, values, keyword arguments, words the error must hold)
    (plot_head_attribution, Z(3), {}, ["shape (3,)", "2-D", "(layers, heads)"]),
    (plot_head_attribution, Z(0, 2), {}, ["shape (0, 2)", "non-empty"]),
    (plot_head_attribution, [[1.0, float("nan")]], {}, ["NaN or infinity"]),
    (plot_head_attribution, "abc", {}, ["values", "tensor"]),
    (plot_logit_lens, [], {}, ["rows is empty"]),
    (plot_logit_lens, [[("a", 0.5)], [("b", 0.2), ("c", 0.1)]], {}, ["rows[1] has 2", "same k"]),
    (plot_logit_lens, [[("a", 1.5)]], {}, ["rows[0][0] has p=1.5", "[0, 1]"]),
    (plot_logit_lens, [[(3, 0.5)]], {}, ["rows[0][0] is (3, 0.5)", "(token, p)"]),
    (plot_logit_lens, [[("a", 0.5)]], {"row_labels": ["x", "y"]}, ["row_labels has 2", "1"]),
    (plot_singular_values, Z(2, 3), {}, ["shape (2, 3)", "(layers, heads, r)"]),
    (plot_singular_values, -torch.ones(1, 1, 2), {}, ["holds -1", ">= 0"]),
    (plot_singular_values, {}, {}, ["empty dict"]),
    (plot_singular_values, {"a": [[1.0]]}, {}, ["values['a'] has shape (1, 1)"]),
    (plot_patching, Z(2, 3), {"x_labels": ["a"]}, ["x_labels has 1 entries", "allowed 3"]),
    (plot_patching, Z(2, 3), {"over": "layer"}, ["over='layer'", "position, head"]),
]


@pytest.mark.parametrize("function, values, kwargs, words", BAD)
def test_bad_input_is_refused_naming_it_and_nothing_is_written(
    tmp_path, function, values, kwargs, words
):
    path = tmp_path / "out.png"
    with pytest.raises(ValueError) as err:
        function(values, path, **kwargs)
    for word in words:
        assert word in str(err.value), (word, str(err.value))
    assert not path.exists()
