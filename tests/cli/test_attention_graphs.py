"""Attention graphs from the command line: ``--set model.attention_graph=...`` trains a model
with a graph per layer, recorded in the run and its checkpoints; a bad spec is one error line;
a model with sliding windows in every layer and rotary positions generates past max_len."""

from __future__ import annotations

import json
import sys

import pytest

from glassformer import graphs as G
from glassformer import load_model
from glassformer.generation import generate_text
from glassformer.runs.settings import parse_assignment, to_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SPEC = "window:4,window:3*1"  # a graph per layer: a window of 4, then of 3


@pytest.fixture(scope="module")
def windowed_run(cli, tmp_path_factory, lm_files):
    out = tmp_path_factory.mktemp("runs") / "windowed"
    result = cli.run(
        "train", "--data", lm_files[0], "--out", out, "--steps", "4", *cli.TINY,
        "--set", "model.n_layer=2", "--set", "model.positional=rotary",
        "--set", f"model.attention_graph={SPEC}", "--set", "sample.max_new_tokens=0",
    )  # fmt: skip
    assert result.code == 0, result.err
    return out, result


def test_the_graph_is_trained_recorded_and_checkpointed(windowed_run):
    out, result = windowed_run
    assert f'attention_graph = "{SPEC}"' in result.out  # the settings the run prints
    run = json.loads((out / "run.json").read_text())
    assert run["model"]["attention_graph"] == SPEC
    ckpt = out / "checkpoints" / "step-000004"
    config = json.loads((ckpt / "config.json").read_text())["config"]
    assert config["attention_graph"] == SPEC
    model = load_model(ckpt)
    assert [b.graph for b in model.blocks] == [G.sliding_window(4), G.sliding_window(3)]


def test_generate_continues_past_max_len_with_one_rolling_cache(cli, windowed_run):
    """max_len 16, 40 new tokens: no sliding restarts, the same text generate_text makes."""
    ckpt = windowed_run[0] / "checkpoints" / "step-000004"
    model = load_model(ckpt)
    assert model.length_limit() is None
    want = generate_text(model, model.tokenizer, "the ", max_new_tokens=40, temperature=0)
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the ", "--temperature", "0",
                     "--max-new-tokens", "40")  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == "the " + want + "\n"
    beams = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the ", "--num-beams", "2",
                    "--max-new-tokens", "30")  # fmt: skip
    assert beams.code == 0, beams.err


@pytest.mark.parametrize(
    "value, words",
    [
        ("window:4*3", ["model settings: attention_graph", "3 graphs for 1 layers"]),
        ("windw:4", ["attention_graph", "unknown pattern 'windw'", "window:W"]),
        ("3", ["model.attention_graph=3", "str | list | dict"]),
    ],
)
def test_a_bad_graph_is_one_error_line(cli, tmp_path, lm_files, value, words):
    out = tmp_path / "run"
    result = cli.run("train", "--data", lm_files[0], "--out", out, *cli.TINY,
                     "--set", f"model.attention_graph={value}")  # fmt: skip
    cli.assert_user_error(result, *words)
    assert not out.exists()  # nothing written


def test_a_graph_for_another_family_is_refused(cli, tmp_path, lm_files):
    result = cli.run("train", "--data", lm_files[0], "--out", tmp_path / "run", *cli.TINY,
                     "--set", "model.cross_attention_graph=window:4")  # fmt: skip
    cli.assert_user_error(result, "cross_attention_graph='window:4'", "encoder-decoder")


def test_a_per_layer_list_with_null_is_written_as_full_in_toml():
    """TOML has no null: a JSON list's null (dense attention) becomes "full", which the
    printed settings can hold and which means the same."""
    section, key, value = parse_assignment('model.attention_graph=["window:4", null]')
    assert (section, key, value) == ("model", "attention_graph", ["window:4", "full"])
    assert G.layer_graphs(value, 2) == G.layer_graphs(["window:4", None], 2)
    shown = to_toml({"model": {key: value}})
    assert tomllib.loads(shown) == {"model": {"attention_graph": ["window:4", "full"]}}
