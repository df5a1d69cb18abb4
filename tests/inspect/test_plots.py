"""The pictures: valid PNGs of the size asked for, and what they show read back from the pixels
(a causal mask is a triangle, padded keys are grey columns, masked attention cells are grey)."""

from __future__ import annotations

import struct
import sys

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from glassformer import DecoderLM, EncoderDecoder
from glassformer.inspect import capture
from glassformer.inspect.plots import (
    MASK_COLORS,
    MASKED_GREY,
    plot_attention,
    plot_head,
    plot_masks,
)
from glassformer.inspect.stream_plots import plot_positional, plot_residual
from glassformer.nn import NoPositionalEncoding


def png_size(path) -> tuple[int, int]:
    """(width, height) from a PNG's signature and IHDR chunk; fails if it is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def cells(pic, panel: str, rows: int, cols: int) -> np.ndarray:
    """(rows, cols, 3): the RGB colour at the centre of each matrix cell of a panel."""
    img = imread(pic.path)[..., :3]
    left, top, right, bottom = pic.panels[panel]
    ys = [int(top + (n + 0.5) * (bottom - top) / rows) for n in range(rows)]
    xs = [int(left + (m + 0.5) * (right - left) / cols) for m in range(cols)]
    return img[np.ix_(ys, xs)]


def nearest(colours: np.ndarray, palette: list[str]) -> np.ndarray:
    """Index of the palette colour each cell shows; asserts the match is exact (< 1/255)."""
    rgb = np.array([to_rgb(c) for c in palette])  # (P, 3)
    dist = np.abs(colours[..., None, :] - rgb).max(-1)  # (rows, cols, P)
    assert dist.min(-1).max() < 1.5 / 255
    return dist.argmin(-1)


@pytest.fixture
def padded_run(kit):
    model = kit.build(DecoderLM, "tiny", double=False)
    x, mask = kit.right_padded(t=6, lengths=(6, 4))
    with capture(model) as rec:
        model(x, mask)
    return model, rec


def test_causal_mask_picture_is_a_triangle_with_padded_columns(padded_run, tmp_path):
    _, rec = padded_run
    pic = plot_masks(rec, tmp_path / "masks.png", example=1, figsize=(4, 4), dpi=80)
    assert png_size(pic.path) == (pic.width, pic.height) == (320, 320)
    shown = nearest(cells(pic, "decoder self", 6, 6), list(MASK_COLORS.values()))
    n, m = np.arange(6)[:, None], np.arange(6)[None, :]
    want = np.where(m > n, 1, np.where(m >= 4, 2, 0))  # future: orange; padding: grey
    np.testing.assert_array_equal(shown, want)


def test_attention_grid_has_layers_by_heads_and_masked_cells_grey(padded_run, tmp_path):
    _, rec = padded_run
    pic = plot_attention(rec, tmp_path / "grid.png", heads=[0, 3], figsize=(6, 5), dpi=60)
    assert png_size(pic.path) == (360, 300)
    assert sorted(pic.panels) == [f"layer {i} head {j}" for i in (0, 1) for j in (0, 3)]
    grey = np.array(to_rgb(MASKED_GREY))
    for panel in pic.panels:
        colours = cells(pic, panel, 6, 6)
        is_grey = np.abs(colours - grey).max(-1) < 1.5 / 255
        np.testing.assert_array_equal(is_grey, np.triu(np.ones((6, 6), bool), k=1))


def test_every_picture_is_a_valid_png(kit, tmp_path):
    model = kit.build(EncoderDecoder, "tiny-seq2seq", double=False)
    src, src_mask = kit.right_padded(t=6, lengths=(6, 3))
    tgt = kit.ids(t=4)
    with capture(model) as rec:
        model(src, src_mask, decoder_input_ids=tgt)
    tokens = {"encoder": list("abcdef"), "decoder": ["<BOS>", "w", "x", "y"]}
    pictures = [
        plot_attention(rec, tmp_path / "cross.png", kind="cross", tokens=tokens, layers=[1]),
        plot_head(rec, tmp_path / "head.png", stack="encoder", layer=1, head=2, tokens=tokens),
        plot_masks(rec, tmp_path / "masks.png", tokens=tokens, example=1),
        plot_residual(rec, tmp_path / "residual.png", stack="decoder", tokens=tokens),
        plot_positional(model, tmp_path / "positional.png", n_positions=12),
    ]
    for pic in pictures:
        assert png_size(pic.path) == (pic.width, pic.height)
        assert imread(pic.path).shape[:2] == (pic.height, pic.width)
    assert sorted(pictures[2].panels) == ["decoder cross", "decoder self", "encoder self"]
    cross = nearest(cells(pictures[2], "decoder cross", 4, 6), list(MASK_COLORS.values()))
    np.testing.assert_array_equal(cross, np.tile([0, 0, 0, 2, 2, 2], (4, 1)))  # source padding
    assert not list(tmp_path.glob(".*.tmp"))  # written through a rename, nothing left over


@pytest.mark.parametrize("positional", ["learned", "rotary"])
def test_positional_picture_for_each_kind(kit, tmp_path, positional):
    model = kit.build(DecoderLM, "tiny", positional=positional, double=False)
    pic = plot_positional(model, tmp_path / "p.png", figsize=(5, 3), dpi=50)
    assert png_size(pic.path) == (250, 150) and len(pic.panels) == 2


def test_kv_cache_steps_drawn_together(kit, tmp_path):
    model = kit.build(DecoderLM, "tiny", double=False)
    x, cache = kit.ids(b=1, t=5), model.new_cache()
    with capture(model) as rec:
        model(x[:, :3], cache=cache)
        model(x[:, 3:4], cache=cache)
        model(x[:, 4:5], cache=cache)
    pic = plot_masks(rec, tmp_path / "m.png", call=None, figsize=(4, 4), dpi=60)
    shown = nearest(cells(pic, "decoder self", 5, 5), list(MASK_COLORS.values()))
    np.testing.assert_array_equal(shown, np.triu(np.ones((5, 5), int), k=1))


def test_bad_arguments_are_named(padded_run, tmp_path):
    model, rec = padded_run
    with pytest.raises(ValueError, match=r"layers=5 is out of range: allowed 0..1"):
        plot_attention(rec, tmp_path / "a.png", layers=[5])
    with pytest.raises(ValueError, match=r"head=4 is out of range: allowed 0..3"):
        plot_head(rec, tmp_path / "a.png", head=4)
    with pytest.raises(ValueError, match=r"example=2 is out of range"):
        plot_masks(rec, tmp_path / "a.png", example=2)
    with pytest.raises(ValueError, match=r"tokens for 'decoder': got 2 labels.*6 positions"):
        plot_head(rec, tmp_path / "a.png", tokens=["a", "b"])
    with pytest.raises(ValueError, match=r"n_positions=99 is out of range: allowed 1..16"):
        plot_positional(model, tmp_path / "a.png", n_positions=99)
    model.pos_embed = NoPositionalEncoding(16)  # r_n = 0
    with pytest.raises(ValueError, match="no matrix to draw"):
        plot_positional(model, tmp_path / "a.png")
    assert not (tmp_path / "a.png").exists()


def test_missing_matplotlib_names_the_extra(padded_run, tmp_path, monkeypatch):
    _, rec = padded_run
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'glassformer\[plot\]'"):
        plot_attention(rec, tmp_path / "a.png")


def _saved_figures(monkeypatch) -> list:
    """The matplotlib figures the plot functions save, to measure what was drawn."""
    import glassformer.inspect.plots as plots
    import glassformer.inspect.stream_plots as stream_plots

    figures, real = [], plots.save

    def spy(fig, path, axes):
        figures.append(fig)
        return real(fig, path, axes)

    monkeypatch.setattr(plots, "save", spy)
    monkeypatch.setattr(stream_plots, "save", spy)
    return figures


def test_titles_lie_inside_the_figure(kit, padded_run, encoder, tmp_path, monkeypatch):
    """The narrowest default figures: one layer and two heads of cross-attention (the grid
    of the look-inside tutorial's `inspect --cross --layers 1 --heads 0 2`), one head, one
    mask panel."""
    figures = _saved_figures(monkeypatch)
    seq2seq = kit.build(EncoderDecoder, "tiny-seq2seq", double=False)
    with capture(seq2seq) as rec:
        seq2seq(kit.ids(b=1, t=3), decoder_input_ids=kit.ids(b=1, t=2))
    plot_attention(rec, tmp_path / "c.png", kind="cross", layers=[1], heads=[0, 2])
    plot_head(rec, tmp_path / "h.png", kind="cross", layer=1, head=2)
    plot_attention(padded_run[1], tmp_path / "a.png", layers=[0], heads=[1])
    with capture(encoder) as rec:
        encoder(kit.ids(b=1, t=3))
    plot_masks(rec, tmp_path / "m.png")
    for fig in figures:
        renderer = fig.canvas.get_renderer()
        titles = [*fig.texts, *(ax.title for ax in fig.axes)]  # fig.texts: the suptitle
        for title in (t for t in titles if t.get_text()):
            box = title.get_window_extent(renderer)
            assert 0 <= box.x0 < box.x1 <= fig.bbox.width, (title.get_text(), box, fig.bbox)
            assert 0 <= box.y0 < box.y1 <= fig.bbox.height, (title.get_text(), box, fig.bbox)


def test_residual_legend_shows_tokens_as_the_heatmaps_do(padded_run, tmp_path, monkeypatch):
    figures = _saved_figures(monkeypatch)
    tokens = ["<BOS>", "a", " ", "b", "\n", "c"]
    plot_residual(padded_run[1], tmp_path / "r.png", tokens=tokens)
    plot_attention(padded_run[1], tmp_path / "a.png", tokens=tokens, layers=[0], heads=[0])
    legend = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert legend == ["<BOS>", "a", "␣", "b", "↵", "c", "mean"]
    assert [t.get_text() for t in figures[1].axes[0].get_yticklabels()] == legend[:-1]


def test_picture_size_is_the_png_size_when_the_width_is_not_whole_pixels(tmp_path):
    from glassformer.inspect._draw import new_figure, save

    fig = new_figure((4.995, 3.0), 100)  # 499.5 x 300 pixels: matplotlib writes 499
    ax = fig.subplots()
    pic = save(fig, tmp_path / "p.png", {"axes": ax})
    assert png_size(pic.path) == (pic.width, pic.height) == (499, 300)
