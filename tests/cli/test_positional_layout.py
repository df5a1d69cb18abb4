"""``--set model.positional_layout=split``: the notes' sin-half / cos-half sinusoid trained from
the command line and kept in the run and its checkpoints; a layout the encoding cannot have is
one error line, and nothing is written."""

from __future__ import annotations

import json

import torch

from glassformer import load_model
from glassformer.nn.sinusoid import sinusoid_table


def test_split_layout_is_trained_and_checkpointed(cli, lm_files, tmp_path):
    out = tmp_path / "split"
    result = cli.run(
        "train", "--data", lm_files[0], "--out", out, "--steps", "2", *cli.TINY,
        "--set", "model.positional=sinusoidal", "--set", "model.positional_layout=split",
        "--set", "train.save_every=2", "--set", "sample.max_new_tokens=0",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert 'positional_layout = "split"' in result.out  # the settings the run prints
    assert json.loads((out / "run.json").read_text())["model"]["positional_layout"] == "split"
    model = load_model(out / "checkpoints" / "step-000002")
    assert model.config.positional_layout == "split"
    assert torch.equal(model.pos_embed.table, sinusoid_table(16, 32, layout="split").float())


def test_a_layout_without_the_sinusoid_is_a_user_error(cli, lm_files, tmp_path):
    for setting, words in (
        ("model.positional_layout=split", ["positional_layout='split'", "'sinusoidal'"]),
        ("model.positional_layout=halves", ["positional_layout='halves'", "'split'"]),
    ):
        result = cli.run(
            "train", "--data", lm_files[0], "--out", tmp_path / "r", "--steps", "2",
            *cli.TINY, "--set", setting,
        )  # fmt: skip
        cli.assert_user_error(result, *words)
        assert not (tmp_path / "r").exists()
