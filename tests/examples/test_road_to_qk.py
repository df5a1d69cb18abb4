"""The road to Q and K: trained on the interleaved data with the built-in road-to-qk config,
separate W^Q, W^K learn a previous-token head; the symmetric scores (one shared projection,
or none) keep the most weight on the query's own position."""

from __future__ import annotations

import pytest
import torch

from glassformer.data import load_dataset
from glassformer.examples.road_to_qk import compare, measure, plot_results
from glassformer.models import load_model


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a one-layer model of width 32: faster on one thread
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("road-to-qk")
    return out, compare(out)


def test_separate_learns_the_previous_token_and_symmetric_scores_keep_the_diagonal(results):
    _, r = results
    assert list(r) == ["separate", "shared", "dot"]
    assert r["separate"].previous >= 0.95 and r["separate"].diagonal == 0.0
    assert r["separate"].accuracy >= 0.99 and r["separate"].val_loss < 0.42  # floor: 0.383
    for scores in ("shared", "dot"):  # S = Sᵀ and x_nᵀx_n >= x_nᵀx_m: itself first
        assert r[scores].diagonal >= 0.9 and r[scores].previous <= 0.1, scores
        assert r[scores].weight_self > r[scores].weight_previous, scores
    assert r["separate"].weight_previous > 0.8 > r["shared"].weight_previous
    for x in r.values():
        torch.testing.assert_close(x.pattern.sum(-1), torch.ones(17))  # rows of weights


def test_each_run_is_a_checkpoint_that_measures_the_same(results):
    out, r = results
    model = load_model(out / "dot")  # the run folder: its checkpoint at step 600
    assert model.config.attention_scores == "dot"
    assert model.blocks[0].attn.in_proj.out_features == 32  # [W^V] only
    texts = load_dataset("interleaved", "validation", length=16).examples[:100]
    again = measure(model, model.tokenizer, texts, "dot", 0.0, 0.0)
    assert again.diagonal >= 0.9 and again.accuracy == pytest.approx(r["dot"].accuracy, abs=0.1)


def test_the_picture(results, tmp_path):
    pytest.importorskip("matplotlib")
    path = plot_results(results[1], tmp_path / "road.png")
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000
