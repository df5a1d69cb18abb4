"""The GNN view as data: each layer's graph as the model applies it, the learned attention's
edges above a threshold, and the receptive field of one position through the layers."""

from __future__ import annotations

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, EncoderMLM
from glassformer.graphs import causal, full, receptive_fields, sliding_window
from glassformer.inspect import (
    attention_graphs,
    attention_patterns,
    capture,
    receptive_grid,
    weighted_edges,
)
from glassformer.inspect.graph_view import graph_panels


def test_weighted_edges_are_the_weights_above_the_threshold():
    pattern = torch.tensor(
        [[1.0, 0.0, 0.0], [0.6, 0.4, 0.0], [0.05, 0.15, 0.8], [0.1, 0.3, 0.6]]
    )  # (T=4 queries, S=3 keys)
    edge_index, weight = weighted_edges(pattern, threshold=0.1)
    # row 0 the key j (source), row 1 the query i (target); sorted by (i, j); 0.1 is not > 0.1
    assert edge_index.tolist() == [[0, 0, 1, 1, 2, 1, 2], [0, 1, 1, 2, 2, 3, 3]]
    assert weight.tolist() == pytest.approx([1.0, 0.6, 0.4, 0.15, 0.8, 0.3, 0.6])
    edge_index, weight = weighted_edges(pattern, threshold=0.5)
    assert edge_index.tolist() == [[0, 0, 2, 2], [0, 1, 2, 3]]
    assert weight.tolist() == pytest.approx([1.0, 0.6, 0.8, 0.6])


@pytest.mark.parametrize("threshold", [-0.1, 1.0, 2, "0.1"])
def test_weighted_edges_threshold_must_be_in_0_1(threshold):
    with pytest.raises(ValueError, match=r"threshold=.* is not allowed: a number in \[0, 1\)"):
        weighted_edges(torch.eye(3), threshold)


def test_weighted_edges_needs_one_matrix():
    with pytest.raises(ValueError, match=r"pattern must be a \(T, S\) tensor.*\(2, 3, 3\)"):
        weighted_edges(torch.zeros(2, 3, 3))


def test_each_family_shows_the_graph_it_applies(kit):
    lm = kit.build(DecoderLM, "tiny", double=False)
    assert attention_graphs(lm) == [causal(), causal()]  # no graph: the causal graph
    lm.blocks[0].graph = sliding_window(3)
    assert attention_graphs(lm) == [sliding_window(3, causal=True), causal()]
    mlm = kit.build(EncoderMLM, "bert-base", type_vocab_size=0, pooler=False)
    mlm.blocks[1].graph = sliding_window(2)
    assert attention_graphs(mlm) == [full(), sliding_window(2)]  # an encoder is not causal
    s2s = kit.build(EncoderDecoder, "tiny-seq2seq")
    s2s.decoder.blocks[1].cross_graph = sliding_window(2)
    assert attention_graphs(s2s, "decoder", "cross") == [full(), sliding_window(2)]
    assert attention_graphs(s2s, "encoder") == [full(), full()]
    with pytest.raises(ValueError, match=r"stack=None is ambiguous.*'encoder', 'decoder'"):
        attention_graphs(s2s)
    with pytest.raises(ValueError, match=r"kind='cross': the decoder has no cross-attention"):
        attention_graphs(lm, kind="cross")
    with pytest.raises(ValueError, match=r"stack='encoder' is not a stack.*\('decoder',\)"):
        attention_graphs(lm, "encoder")


def test_panels_put_equal_layers_together_with_their_masks():
    window = sliding_window(3, causal=True)
    panels = graph_panels([window, window, causal()], 8)
    assert [(p.name, p.layers) for p in panels] == [("layers 0-1", (0, 1)), ("layer 2", (2,))]
    assert torch.equal(panels[0].mask, window.mask(8))
    i, j = torch.arange(8)[:, None], torch.arange(8)[None, :]
    assert torch.equal(panels[0].mask, (i - j >= 0) & (i - j < 3))
    assert torch.equal(panels[1].mask, j <= i)
    assert len(graph_panels([full(), causal(), full()], 4)) == 3  # only consecutive layers


def test_cross_panels_put_the_queries_at_the_target_positions():
    (panel,) = graph_panels([sliding_window(2)], 3, 5, cross=True)  # T=3 targets, S=5 sources
    i, j = torch.arange(3)[:, None], torch.arange(5)[None, :]
    assert torch.equal(panel.mask, (i - j).abs() < 2)
    with pytest.raises(ValueError, match="as many keys as queries; got t=3, s=5"):
        graph_panels([full()], 3, 5)


def test_receptive_grid_is_the_row_of_the_receptive_fields():
    window = sliding_window(3, causal=True)
    grid = receptive_grid([window, window], 8)  # position 7 after layers 0 and 1
    assert grid.int().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]]
    graphs = [sliding_window(2), None, sliding_window(3, causal=True)]
    fields = receptive_fields(graphs, 9)
    for position in range(9):
        want = torch.stack([f[position] for f in fields])
        assert torch.equal(receptive_grid(graphs, 9, position), want)
    assert torch.equal(receptive_grid(graphs, 9, -2), receptive_grid(graphs, 9, 7))
    with pytest.raises(ValueError, match=r"position=9 is out of range: allowed 0..8"):
        receptive_grid(graphs, 9, 9)


def test_patterns_from_a_recording_and_from_run_with_cache_agree(kit):
    model = kit.build(DecoderLM, "tiny", double=False)
    ids = kit.ids(b=2, t=6)
    with capture(model) as rec:
        model(ids)
    _, cache = model.run_with_cache(ids)
    a, layers = attention_patterns(rec, layers=[1], example=1)
    assert layers == [1] and a.shape == (1, 6, 6)
    torch.testing.assert_close(a[0], cache["pattern", 1][1].mean(0))
    b, layers = attention_patterns(cache["pattern", 1], example=1, heads=[0, 2])
    assert layers == [0]
    torch.testing.assert_close(b[0], cache["pattern", 1][1, [0, 2]].mean(0))
    c, _ = attention_patterns(rec.weights(), layers=[0], heads=3)
    torch.testing.assert_close(c[0], rec.weights()[0, 0, 3])
    with pytest.raises(ValueError, match=r"heads=4 is out of range: allowed 0..3"):
        attention_patterns(rec, heads=4)
    with pytest.raises(ValueError, match=r"source must be a Recording or a tensor"):
        attention_patterns(torch.zeros(6))
