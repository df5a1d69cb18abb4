"""The karate-club example: an encoder restricted to the club's friendships classifies the
members it was not told about; the same encoder with full attention is at chance."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

from glassformer.examples import karate
from glassformer.examples.karate import compare, karate_club, main, split, train_and_test
from glassformer.graphs import from_networkx, self_loops
from glassformer.inspect import capture


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a 34-token model: faster on one thread when the CPU is shared
    yield
    torch.set_num_threads(before)


def test_the_club_and_its_split():
    g, labels = karate_club()
    assert (g.number_of_nodes(), g.number_of_edges()) == (34, 78)
    assert labels.bincount().tolist() == [17, 17] and (labels[0], labels[33]) == (0, 1)
    train, test = split(labels, per_class=3, seed=4)
    assert {0, 33} <= set(train.tolist()) and labels[train].bincount().tolist() == [3, 3]
    assert sorted(train.tolist() + test.tolist()) == list(range(34))
    assert torch.equal(split(labels, 3, 4)[0], train)  # the seed decides
    with pytest.raises(ValueError, match="per_class must be an int >= 1, got 0"):
        split(labels, per_class=0)


def test_attention_along_the_friendships_beats_full_attention():
    accuracy = compare([0], steps=50)  # seeds 0-11 give 0.86-1.0 against 0.29-0.61
    assert accuracy["graph"][0] >= 0.8
    assert accuracy["full"][0] <= accuracy["graph"][0] - 0.2


def test_the_graph_model_attends_only_along_the_friendships():
    g, _ = karate_club()
    graph = from_networkx(g) | self_loops()
    _, model = train_and_test(graph, seed=0, steps=5)
    x = torch.eye(34)
    with torch.no_grad(), capture(model) as rec:
        seen = model(x)  # the written-out attention, masked by the graph
    with torch.no_grad():
        torch.testing.assert_close(model(x), seen)  # the path it trains on: the same graph
    a = rec.weights()  # (L, 1, H, 34, 34)
    friends = torch.zeros(34, 34, dtype=torch.bool)
    for u, v in g.edges:
        friends[u, v] = friends[v, u] = True
    allowed = friends | torch.eye(34, dtype=torch.bool)
    assert a[..., ~allowed].abs().max() == 0  # no weight off the graph
    assert (a[..., allowed] > 0).all()  # every friend and itself receive some weight
    torch.testing.assert_close(a.sum(-1), torch.ones(a.shape[:-1]))


def test_the_command_prints_both_arms_and_draws_the_graph_model(tmp_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--seeds", "2", "--steps", "2", "--pictures", str(tmp_path)]) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Zachary's karate club: 34 members, 78 friendships, 2 factions")
    assert "6 labelled, 28 to predict; 2 steps; seeds 0..1" in lines[0]
    assert lines[2].startswith("graph edges + self-loops   0.") and " ± " in lines[2]
    assert lines[3].startswith("full (every member)        0.")
    for name in ("karate_graph.png", "karate_attention.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"wrote {tmp_path / name}" in lines


def test_the_command_refuses_bad_numbers(capsys):
    assert main(["--per-class", "0"]) == 2
    assert capsys.readouterr().err == (
        "glassformer: error: --seeds and --steps must be >= 1 and --per-class from 1 to 16, "
        "got 5, 100 and 0 (see python -m glassformer.examples.karate --help)\n"
    )
    assert main(["--per-class", "17"]) == 2  # no member of a faction left to predict
    assert "got 5, 100 and 17" in capsys.readouterr().err


def test_the_command_refuses_a_pictures_file_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(karate, "compare", lambda *a, **k: pytest.fail("trained"))
    (tmp_path / "taken").write_text("")
    assert main(["--pictures", str(tmp_path / "taken")]) == 2
    assert capsys.readouterr().err == (
        f"glassformer: error: --pictures {tmp_path / 'taken'}: exists and is not a directory; "
        "allowed: a new or existing directory\n"
    )


def test_ctrl_c_is_one_line(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(karate, "compare", interrupted)
    assert main(["--seeds", "1"]) == 130
    assert capsys.readouterr().err == "glassformer: interrupted\n"
