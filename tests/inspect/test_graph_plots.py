"""The GNN-view pictures: valid PNGs, and what they show read back from the pixels (each
layer's adjacency, the receptive field's rows, the arcs of the learned attention graph)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.image import imread

from glassformer import DecoderLM, EncoderDecoder
from glassformer.graphs import causal, sliding_window
from glassformer.inspect import (
    attention_graphs,
    capture,
    plot_attention_graph,
    plot_graph,
    plot_receptive_field,
    receptive_grid,
)
from glassformer.inspect.graph_plots import ARC, EDGE, NO_EDGE

from .test_plots import cells, nearest, png_size


def test_graph_picture_shows_each_layers_adjacency(kit, tmp_path):
    model = kit.build(DecoderLM, "tiny", double=False, n_layer=3)
    for block in model.blocks[:2]:
        block.graph = sliding_window(3)
    graphs = attention_graphs(model)  # window:3:causal twice, then causal
    tokens = ["<BOS>", *"the cat"]
    pic = plot_graph(graphs, tmp_path / "graph.png", t=8, tokens=tokens, figsize=(8, 4), dpi=80)
    assert png_size(pic.path) == (pic.width, pic.height) == (640, 320)
    assert sorted(pic.panels) == ["layer 2", "layers 0-1"]
    for name, graph in (("layers 0-1", sliding_window(3, causal=True)), ("layer 2", causal())):
        shown = nearest(cells(pic, name, 8, 8), [NO_EDGE, EDGE])
        np.testing.assert_array_equal(shown, graph.mask(8).int().numpy())


def test_cross_graph_picture_has_targets_down_and_sources_across(tmp_path):
    pic = plot_graph(
        [sliding_window(2)], tmp_path / "cross.png", t=3, s=5, cross=True, tokens=list("xyz"),
        key_tokens=list("abcde"), figsize=(4, 4), dpi=80,
    )  # fmt: skip
    shown = nearest(cells(pic, "layer 0", 3, 5), [NO_EDGE, EDGE])
    i, j = np.arange(3)[:, None], np.arange(5)[None, :]
    np.testing.assert_array_equal(shown, np.abs(i - j) < 2)


def test_receptive_field_picture_rows_are_the_grid(tmp_path):
    graphs = [sliding_window(2, causal=True)] * 3 + [sliding_window(2)]
    pic = plot_receptive_field(graphs, tmp_path / "rf.png", t=10, position=6, dpi=80)
    assert png_size(pic.path) == (pic.width, pic.height)
    shown = nearest(cells(pic, "receptive field", 4, 10), [NO_EDGE, EDGE])
    want = receptive_grid(graphs, 10, 6).int().numpy()
    np.testing.assert_array_equal(shown, want)
    assert want.sum(1).tolist() == [2, 3, 4, 6]  # 6-1..6, 6-2..6, 6-3..6, then 2..7


def _pixel(pic, panel: str, x: float, y: float, xlim, ylim) -> np.ndarray:
    """The RGB colours in a 5 x 5 box around data point (x, y) of a panel."""
    img = imread(pic.path)[..., :3]
    left, top, right, bottom = pic.panels[panel]
    px = left + (x - xlim[0]) / (xlim[1] - xlim[0]) * (right - left)
    py = top + (ylim[1] - y) / (ylim[1] - ylim[0]) * (bottom - top)
    return img[round(py) - 2 : round(py) + 3, round(px) - 2 : round(px) + 3].reshape(-1, 3)


def test_attention_graph_draws_the_edges_above_the_threshold(tmp_path):
    a = torch.zeros(6, 6)
    a[5, 0] = 0.9  # 0 -> 5, from an earlier token: an arc above the line, its top at x = 2.5
    a[0, 5] = 0.6  # 5 -> 0, from a later token: an arc below
    a[4, 1] = 0.05  # 1 -> 4: below the threshold, not drawn
    pic = plot_attention_graph(a, tmp_path / "ag.png", tokens=list("abcdef"), dpi=100)
    assert list(pic.panels) == ["pattern"]
    reach = ARC * 5 + 0.3  # the arcs' height above and below, with the margin
    xlim, ylim = (-0.8, 5.8), (-reach, reach)
    blue = np.array([0.23, 0.49, 0.77])
    for y in (ARC * 5, -ARC * 5):  # the top of 0 -> 5 and the bottom of 5 -> 0
        box = _pixel(pic, "pattern", 2.5, y, xlim, ylim)
        assert np.abs(box - blue).max(-1).min() < 0.25, box  # the edge's colour is there
    box = _pixel(pic, "pattern", 2.5, ARC * 3, xlim, ylim)  # where 1 -> 4 would be
    assert box.min() > 0.98  # white: not drawn (drawn, its faint arc would be < 0.92)
    high = plot_attention_graph(a, tmp_path / "ag2.png", threshold=0.7, dpi=100)
    box = _pixel(high, "pattern", 2.5, ARC * 5, xlim, (-0.3, reach))  # nothing below the line
    assert np.abs(box - blue).max(-1).min() < 0.25, box
    assert high.height < pic.height  # no room kept for arcs below


def test_attention_graph_of_a_recording_has_a_panel_per_layer(kit, tmp_path):
    model = kit.build(EncoderDecoder, "tiny-seq2seq", double=False)
    src, src_mask = kit.right_padded(t=6, lengths=(6, 3))
    with capture(model) as rec:
        model(src, src_mask, decoder_input_ids=kit.ids(t=4))
    tokens = {"encoder": list("abcdef"), "decoder": ["<BOS>", "w", "x", "y"]}
    for kind, stack in (("self", "encoder"), ("self", "decoder"), ("cross", "decoder")):
        pic = plot_attention_graph(
            rec, tmp_path / f"{kind}-{stack}.png", kind=kind, stack=stack, tokens=tokens,
            example=1, heads=[0, 1],
        )  # fmt: skip
        assert png_size(pic.path) == (pic.width, pic.height)
        assert sorted(pic.panels) == ["layer 0", "layer 1"]
    with pytest.raises(ValueError, match=r"layers=2 is out of range: allowed 0..1"):
        plot_attention_graph(rec, tmp_path / "x.png", stack="encoder", layers=[2])
    with pytest.raises(ValueError, match=r"threshold=1.5 is not allowed"):
        plot_attention_graph(rec, tmp_path / "x.png", stack="encoder", threshold=1.5)
    assert not (tmp_path / "x.png").exists()
