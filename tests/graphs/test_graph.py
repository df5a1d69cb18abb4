"""Attention graphs: each constructor's edges, the algebra, the views (mask, edge_index,
num_edges), the text form and the receptive field."""

from __future__ import annotations

import networkx as nx
import pytest
import torch

from glassformer import graphs as G


def brute(rule, t: int, s: int | None = None) -> torch.Tensor:
    """(T, S) mask from a Python predicate on positions (queries the last T of the S)."""
    s = t if s is None else s
    return torch.tensor([[rule(i, j) for j in range(s)] for i in range(s - t, s)])


CASES = [
    (G.full(), lambda i, j: True),
    (G.causal(), lambda i, j: j <= i),
    (G.sliding_window(3), lambda i, j: abs(i - j) < 3),
    (G.sliding_window(3, causal=True), lambda i, j: 0 <= i - j < 3),
    (G.dilated(2, 3), lambda i, j: (i - j) % 3 == 0 and abs(i - j) < 6),
    (G.strided(3), lambda i, j: abs(i - j) < 3 or (i - j) % 3 == 0),
    (G.global_tokens([0, 5]), lambda i, j: i in (0, 5) or j in (0, 5)),
    (G.self_loops(), lambda i, j: i == j),
    (G.sliding_window(2) | G.global_tokens(0), lambda i, j: abs(i - j) < 2 or 0 in (i, j)),
    (G.strided(4) & G.causal(), lambda i, j: j <= i and (i - j < 4 or (i - j) % 4 == 0)),
]


@pytest.mark.parametrize("graph,rule", CASES, ids=[str(g.spec) for g, _ in CASES])
@pytest.mark.parametrize("t,s", [(11, 11), (3, 11), (1, 7)])
def test_mask_edges_and_count_agree_with_the_rule(graph, rule, t, s):
    want = brute(rule, t, s)
    assert torch.equal(graph.mask(t, s), want)
    edges = graph.edge_index(t, s)
    got = torch.zeros(t, s, dtype=torch.bool)
    got[edges[1], edges[0]] = True
    assert torch.equal(got, want)
    assert edges.shape[1] == int(want.sum()) == graph.num_edges(t, s)  # no repeated edge
    assert torch.equal(edges[1] * s + edges[0], (edges[1] * s + edges[0]).sort().values)


@pytest.mark.parametrize("graph,rule", CASES, ids=[str(g.spec) for g, _ in CASES])
def test_every_edge_lies_in_the_cover(graph, rule):
    t = 13
    pos = torch.arange(t)
    c = graph.cover(pos, pos)
    mask = graph.mask(t)
    i, j = mask.nonzero(as_tuple=True)
    d = i - j
    in_band = (d <= c.before) & (-d <= c.after) & (d % c.dilation == 0)
    in_extras = (c.extras[i] == j[:, None]).any(1)
    assert bool((in_band | in_extras | c.rows[i]).all())


def test_causal_form_removes_later_keys_only():
    for graph, _ in CASES:
        assert torch.equal(graph.causal().mask(9), graph.mask(9) & G.causal().mask(9)) or (
            isinstance(graph, G.RandomKeys)
        )


def test_random_keys_are_reproducible_and_do_not_depend_on_the_length():
    g = G.random_keys(3, seed=7, causal=True)
    assert torch.equal(g.mask(20)[:10, :10], g.mask(10))  # a prefix keeps its edges
    assert torch.equal(g.mask(4, 20), g.mask(20)[-4:])  # the last queries, as with a cache
    assert (g.mask(20) & ~G.causal().mask(20)).sum() == 0
    assert int(g.mask(20).sum(1).min()) >= 1 and int(g.mask(20).sum(1).max()) <= 3
    assert not torch.equal(g.mask(20), G.random_keys(3, seed=8, causal=True).mask(20))
    assert torch.equal(G.random_keys(3, seed=7).mask(30), G.random_keys(3, seed=7).mask(30))


def test_bigbird_is_window_globals_and_random_keys():
    b = G.bigbird(3, 2, 1, seed=4)
    want = (
        G.sliding_window(3).mask(16)
        | G.global_tokens([0, 1]).mask(16)
        | G.random_keys(1, 4).mask(16)
    )
    assert torch.equal(b.mask(16), want)


def test_from_edge_index_follows_pyg_convention():
    ei = torch.tensor([[0, 1, 3], [1, 2, 1]])  # messages 0 -> 1, 1 -> 2, 3 -> 1
    g = G.from_edge_index(ei, 4)
    m = g.mask(4)
    assert m[1, 0] and m[2, 1] and m[1, 3] and int(m.sum()) == 3
    assert torch.equal(G.from_adjacency(m).mask(4), m)
    assert torch.equal(g.edge_index(4), torch.tensor([[0, 3, 1], [1, 1, 2]]))
    assert not g.mask(6)[4:].any()  # no edges beyond its nodes


def test_from_networkx_passes_messages_both_ways():
    karate = nx.karate_club_graph()
    g = G.from_networkx(karate)
    assert g.num_edges(34) == 2 * karate.number_of_edges()
    assert torch.equal(g.mask(34), g.mask(34).t())
    with pytest.raises(ValueError, match="convert_node_labels_to_integers"):
        G.from_networkx(nx.relabel_nodes(karate, {0: "a"}))


def test_specs_round_trip_through_text_and_objects():
    graphs = [g for g, _ in CASES] + [
        G.bigbird(4, 1, 2, seed=3),
        G.random_keys(2, 5, causal=True),
        G.dilated(3, 2, causal=True),
        G.from_edge_index(torch.tensor([[0, 2], [1, 1]]), 3) | G.self_loops(),
    ]
    for g in graphs:
        back = G.parse(g.spec)
        assert back == g
        assert torch.equal(back.mask(12), g.mask(12))


def test_layers_from_text():
    layers = G.layer_graphs("window:64*4,full*2", 6)
    assert layers[:4] == [G.sliding_window(64)] * 4 and layers[4:] == [None, None]
    assert G.layer_graphs("window:8|global:0", 3) == [G.parse("window:8|global:0")] * 3
    assert G.layer_graphs(["causal", None], 2) == [G.causal(), None]


@pytest.mark.parametrize(
    "spec,match",
    [
        ("windo:3", "unknown pattern 'windo'"),
        ("window:0", "w must be an int >= 1"),
        ("window:3:4", "takes 1 numbers"),
        ("window:x", "not a whole number"),
        ("(window:3", "not closed"),
        ("window:3|", "ends too early"),
        ("global:0:causal", "no causal form"),
    ],
)
def test_bad_specs_say_what_is_allowed(spec, match):
    with pytest.raises(ValueError, match=match):
        G.parse(spec)


def test_a_layer_list_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="3 graphs for 4 layers"):
        G.layer_graphs("window:4*2,full", 4)


def test_lookback_bounds_a_causal_window_only():
    assert G.sliding_window(5).causal().lookback() == 4
    assert (G.sliding_window(5) & G.causal()).lookback() == 4
    assert (G.sliding_window(5) | G.global_tokens(0)).causal().lookback() is None
    assert G.full().causal().lookback() is None


@pytest.mark.parametrize("n_layer,w", [(1, 3), (2, 3), (3, 4)])
def test_receptive_field_of_causal_windows(n_layer, w):
    t = 20
    field = G.receptive_field([G.sliding_window(w, causal=True)] * n_layer, t)
    want = brute(lambda i, j: max(0, i - n_layer * (w - 1)) <= j <= i, t)
    assert torch.equal(field, want)


def test_the_edge_count_is_remembered_per_size(monkeypatch):
    """The auto path asks for the count at every step; it is counted once per (T, S)."""
    g = G.bigbird(4, n_global=1, n_random=2)
    counted = []
    count = type(g)._count_edges
    monkeypatch.setattr(
        type(g), "_count_edges", lambda self, t, s: counted.append(t) or count(self, t, s)
    )
    assert g.num_edges(40) == g.num_edges(40) == int(g.mask(40).sum())
    assert g.num_edges(41) == int(g.mask(41).sum())
    assert counted == [40, 41]
