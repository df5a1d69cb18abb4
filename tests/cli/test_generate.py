"""``glassformer generate``: prints what ``generate_text`` returns, streaming it."""

from __future__ import annotations

import contextlib
import io

import pytest

from glassformer.cli import main
from glassformer.generation import generate_text
from glassformer.models import load_model


@pytest.fixture(scope="module")
def lm(lm_run):
    ckpt = lm_run[0] / "checkpoints" / "step-000040"
    return ckpt, load_model(ckpt)


class Recorder(io.StringIO):
    """stdout that remembers every write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def test_sampling_prints_the_prompt_then_generate_text_streamed(lm):
    ckpt, model = lm
    expected = generate_text(
        model, model.tokenizer, "the ", max_new_tokens=8, temperature=0.8, seed=5
    )
    stdout = Recorder()
    with contextlib.redirect_stdout(stdout):
        code = main(
            ["generate", "--checkpoint", str(ckpt), "--prompt", "the ", "--max-new-tokens", "8",
             "--temperature", "0.8", "--seed", "5"]
        )  # fmt: skip
    assert code == 0
    assert stdout.getvalue() == f"the {expected}\n"
    pieces = stdout.writes[1:-1]  # after the prompt, before the newline: one per character
    assert "".join(pieces) == expected and len(pieces) == len(expected) > 1


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        (["--temperature", "0", "--stop", "."], dict(temperature=0.0, stop_strings=(".",))),
        (["--num-beams", "3"], dict(num_beams=3, temperature=0.0)),
        (["--top-k", "3", "--top-p", "0.9", "--seed", "1"], dict(top_k=3, top_p=0.9, seed=1)),
    ],
)
def test_options_reach_generate(cli, lm, options, settings):
    ckpt, model = lm
    settings.setdefault("temperature", 0.8)
    expected = generate_text(model, model.tokenizer, "a", max_new_tokens=12, **settings)
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "a", "--max-new-tokens", "12",
                     *options)  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == f"a{expected}\n"


def test_longer_than_the_context_slides_the_window(cli, lm):
    ckpt, model = lm  # context 16: <BOS> + "the " leaves room for 12 new tokens
    first = generate_text(model, model.tokenizer, "the ", max_new_tokens=12, temperature=0)
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the ", "--temperature", "0",
                     "--max-new-tokens", "40")  # fmt: skip
    assert result.code == 0, result.err
    text = result.out[len("the ") : -1]
    assert text.startswith(first) and len(first) == 12
    assert len(text) == 40  # (the model never ends its one document with <EOS> this early)


def test_encoder_decoder_prints_its_output(cli, task_runs):
    ckpt = task_runs["seq2seq"] / "checkpoints" / "step-000020"
    model = load_model(ckpt)
    expected = generate_text(model, model.tokenizer, "abcd", max_new_tokens=6, temperature=0)
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "abcd", "--max-new-tokens", "6")
    assert result.code == 0, result.err
    assert result.out == f"{expected}\n"
