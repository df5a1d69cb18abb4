"""The road to Q and K: trained on the interleaved data with the built-in road-to-qk config,
separate W^Q, W^K learn a previous-token head; the symmetric scores (one shared projection,
or none) keep the most weight on the query's own position."""

from __future__ import annotations

import shutil
import signal

import pytest
import torch

from glassformer import load_model
from glassformer.data import load_dataset
from glassformer.examples import road_to_qk
from glassformer.examples.road_to_qk import main, measure, plot_results
from glassformer.runs import RunInterrupted


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a one-layer model of width 32: faster on one thread
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def results(road_to_qk_runs, tmp_path_factory):
    """The three runs of ``compare`` (trained once for the suite: tests/conftest.py, shared
    with the page's example in tests/docs/test_examples.py), copied into a folder of this
    module's own, and their results."""
    shared, r = road_to_qk_runs
    out = tmp_path_factory.mktemp("road-to-qk") / "runs"
    shutil.copytree(shared / "runs", out)
    return out, r


@pytest.mark.slow  # the three runs of `results`: 600 steps each
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


@pytest.mark.slow  # the three runs of `results`: 600 steps each
def test_each_run_is_a_checkpoint_that_measures_the_same(results):
    out, r = results
    model = load_model(out / "dot")  # the run folder: its checkpoint at step 600
    assert model.config.attention_scores == "dot"
    assert model.blocks[0].attn.v_proj.out_features == 32  # W^V only
    assert not hasattr(model.blocks[0].attn, "q_proj")
    texts = load_dataset("interleaved", "validation", length=16).examples[:100]
    again = measure(model, model.tokenizer, texts, "dot", 0.0, 0.0)
    assert again.diagonal >= 0.9 and again.accuracy == pytest.approx(r["dot"].accuracy, abs=0.1)


@pytest.mark.slow  # the three runs of `results`: 600 steps each
def test_the_picture(results, tmp_path):
    pytest.importorskip("matplotlib")
    path = plot_results(results[1], tmp_path / "road.png")
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000


@pytest.mark.slow  # the three runs of `results`: 600 steps each
def test_a_second_run_into_the_same_folder_is_refused_before_training(results, capsys):
    out, _ = results
    assert main(["--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"glassformer: error: --out {out}: {out / 'separate'} already holds a run; the example "
        f"trains new runs only: choose another --out, or remove {out} to train again\n"
    )


@pytest.fixture
def no_training(monkeypatch):
    monkeypatch.setattr(road_to_qk, "compare", lambda *a, **k: pytest.fail("trained"))


def test_bad_paths_are_refused_before_training(tmp_path, capsys, no_training):
    (tmp_path / "file").write_text("")
    assert main(["--out", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err == (
        f"glassformer: error: --out {tmp_path / 'file'}: exists and is not a directory; "
        "allowed: a new or existing directory\n"
    )
    new = tmp_path / "new"
    assert main(["--out", str(new), "--picture", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"glassformer: error: --picture {tmp_path}: is a directory; allowed: a file name (a new "
        "file, or one to replace)\n"
    )
    assert main(["--out", str(new), "--picture", str(tmp_path / "file" / "road.png")]) == 2
    assert capsys.readouterr().err == (
        f"glassformer: error: --picture {tmp_path / 'file' / 'road.png'}: "
        f"{tmp_path / 'file'} is a file, not a directory\n"
    )
    assert not new.exists()  # nothing written


@pytest.mark.parametrize(
    "stop, status, said",
    [
        (RunInterrupted("stopped at step 3", signal.SIGINT), 130, "interrupted; the runs"),
        (RunInterrupted("stopped at step 3", signal.SIGTERM), 143, "terminated; the runs"),
        (KeyboardInterrupt(), 130, "interrupted\n"),
    ],
)
def test_ctrl_c_is_one_line(stop, status, said, tmp_path, capsys, monkeypatch):
    def stopped(*args, **kwargs):
        raise stop

    monkeypatch.setattr(road_to_qk, "compare", stopped)
    assert main(["--out", str(tmp_path / "runs")]) == status
    err = capsys.readouterr().err
    assert err.startswith(f"glassformer: {said}") and err.count("\n") == 1
    if isinstance(stop, RunInterrupted):
        assert err == (
            f"glassformer: {said} trained so far are kept in {tmp_path / 'runs'}; "
            "to train again, remove that folder or choose another --out\n"
        )
