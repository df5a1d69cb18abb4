"""glassformer.graphs.kernel_for: the graph package says which attention kernel fits a graph."""

import torch

from glassformer.graphs import (
    Cover,
    band_is_edges,
    from_edge_index,
    kernel_for,
    parse,
    sliding_window,
)


def positions(n):
    return torch.arange(n), torch.arange(n)


def test_a_narrow_window_on_a_long_sequence_takes_the_local_kernel():
    assert kernel_for(sliding_window(8, causal=True), *positions(1024), sparse_ok=True) == "local"


def test_short_sequences_and_masks_other_than_key_padding_take_the_dense_kernel():
    window = sliding_window(8, causal=True)
    assert kernel_for(window, *positions(256), sparse_ok=True) == "dense"  # T·S = 2^16
    assert kernel_for(window, *positions(1024), sparse_ok=False) == "dense"
    assert kernel_for(parse("full"), *positions(1024), sparse_ok=True) == "dense"


def test_a_graph_with_few_edges_and_no_band_takes_the_edge_kernel():
    n = 1024
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])  # j -> j + 1
    hub = torch.stack([torch.arange(300), torch.zeros(300, dtype=torch.long)])  # 300 -> 0
    graph = from_edge_index(torch.cat([ring, hub], dim=1), n)  # too wide a row for a band
    assert kernel_for(graph, *positions(n), sparse_ok=True) == "edges"


def test_the_band_needs_no_test_when_the_graph_contains_it():
    window = sliding_window(8)
    q, k = positions(64)
    cover = window.cover(q, k)
    assert isinstance(cover, Cover)
    assert band_is_edges(window, cover)
    assert band_is_edges(window | parse("global:0"), cover)
    assert not band_is_edges(parse("dilated:4:2"), cover)
