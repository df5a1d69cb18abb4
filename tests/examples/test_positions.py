"""The positions example: without a positional encoding an encoder cannot say where a token
is (chance), a causal decoder can (it counts), and an encoder with sinusoids reads it back."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch

from glassformer.examples import positions
from glassformer.examples.positions import (
    ARMS,
    MAX_LENGTH,
    PositionProbe,
    accuracy_by_position,
    bos_weights,
    chance,
    compare,
    main,
    sequences,
    train_and_test,
)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a 16-token model: faster on one thread when the CPU is shared
    yield
    torch.set_num_threads(before)


def test_sequences_start_with_bos_and_draw_the_rest():
    ids = sequences(64, 16, 32, torch.Generator().manual_seed(0))
    assert ids.shape == (64, 16) and (ids[:, 0] == 0).all()
    assert ids[:, 1:].min() >= 1 and ids[:, 1:].max() <= 31
    assert len(ids[:, 1:].unique()) == 31  # every token but <BOS> is drawn
    assert chance(16) == 0.125


def test_the_encoder_without_positions_is_blind_to_order():
    """Permuting the tokens after <BOS> permutes the logits: the prediction of a token's
    position does not depend on where the token is."""
    torch.manual_seed(0)
    model = PositionProbe(causal=False, positional="none").eval()
    ids = sequences(4, 16, 32, torch.Generator().manual_seed(1))
    order = torch.cat([torch.tensor([0]), 1 + torch.randperm(15)])
    with torch.no_grad():
        torch.testing.assert_close(model(ids[:, order]), model(ids)[:, order])
    decoder = PositionProbe(causal=True, positional="none").eval()
    with torch.no_grad():
        moved = decoder(ids[:, order]) - decoder(ids)[:, order]
    assert moved.abs().max() > 1e-3  # the causal mask breaks the equivariance


def test_the_decoder_counts_and_the_encoder_is_at_chance():
    """Seed 1 (the page runs seed 0; seeds 0-11 give 0.115-0.130, 1.0 and 0.984-1.0)."""
    accuracy = compare([1], steps=200)
    assert list(accuracy) == list(ARMS)
    assert abs(accuracy["encoder, no positions"][0] - chance(16)) < 0.05
    assert accuracy["encoder, sinusoids"][0] > 0.95
    assert accuracy["decoder, no positions"][0] > 0.95


def test_by_position_and_the_weight_on_bos():
    _, model = train_and_test("decoder, no positions", seed=0, steps=200)
    ids = sequences(128, 16, 32, torch.Generator().manual_seed(7))
    by_position = accuracy_by_position(model, ids)
    assert by_position.shape == (16,) and by_position.min() > 0.8
    weights = bos_weights(model, ids)  # (H, T): 1 at position 0, then falling with n
    assert weights.shape == (2, 16)
    torch.testing.assert_close(weights[:, 0], torch.ones(2))
    assert (weights[:, 1:] < weights[:, :-1]).all()
    blind = train_and_test("encoder, no positions", seed=0, steps=50)[1]
    by_position = accuracy_by_position(blind, ids)
    assert by_position[0] == 1.0 and by_position[1:].mean() < 0.2  # <BOS> only


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match=r"arm 'rnn' is not known; choose one of \['encoder"):
        train_and_test("rnn")
    with pytest.raises(ValueError, match="steps must be an int >= 0, got -1"):
        train_and_test("encoder, sinusoids", steps=-1)
    with pytest.raises(ValueError, match="length must be an int from 2 to 256, got 1"):
        train_and_test("encoder, sinusoids", length=1)
    with pytest.raises(ValueError, match="test_batch must be an int >= 1, got 0"):
        train_and_test("encoder, sinusoids", steps=0, test_batch=0)
    with pytest.raises(ValueError, match=r"positional='rotary': the probe adds r_n to the input"):
        PositionProbe(causal=True, positional="rotary")
    with pytest.raises(ValueError, match=f"length must be an int from 2 to {MAX_LENGTH}, got 257"):
        train_and_test("encoder, sinusoids", length=257)


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["--seeds", "0"], "got 0, 200 and 16"),
        (["--length", "100000"], "got 3, 200 and 100000"),
        (["--length", "1"], "got 3, 200 and 1"),
    ],
)
def test_the_command_refuses_bad_numbers_in_one_line(argv, shown, capsys, monkeypatch):
    monkeypatch.setattr(positions, "compare", lambda *a, **k: pytest.fail("trained"))
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "glassformer: error: --seeds must be >= 1, --steps >= 0 and --length from 2 to 256, "
        f"{shown} (see python -m glassformer.examples.positions --help)\n"
    )


def test_the_command_refuses_a_pictures_file_before_training(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(positions, "compare", lambda *a, **k: pytest.fail("trained"))
    (tmp_path / "taken").write_text("")
    assert main(["--pictures", str(tmp_path / "taken" / "pictures")]) == 2
    assert capsys.readouterr().err == (
        f"glassformer: error: --pictures {tmp_path / 'taken' / 'pictures'}: "
        f"{tmp_path / 'taken'} is a file, not a directory\n"
    )


def test_ctrl_c_is_one_line(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(positions, "train_and_test", interrupted)
    assert main([]) == 130
    assert capsys.readouterr().err == "glassformer: interrupted\n"


def test_main_prints_each_arm():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--seeds", "2", "--steps", "2", "--length", "4"]) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "chance (no positions, <BOS> at 0): 0.500"
    assert [line.split("  ")[0] for line in lines[1:]] == list(ARMS)
    assert all(len(line.split("per seed: ")[1].split()) == 2 for line in lines[1:])
