"""``glassformer generate``: prints what ``generate_text`` returns, streaming it."""

from __future__ import annotations

import contextlib
import io

import pytest

from glassformer import load_model
from glassformer.cli import main
from glassformer.generation import generate_text


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


def test_default_max_new_tokens_fits_every_checkpoint(cli, lm, task_runs):
    """200 tokens, or the most the model allows without sliding: an encoder-decoder's max_len
    (16), beam search's room after the prompt (16 - 5 + 1 = 12 after <BOS> + "the ")."""
    ckpt = task_runs["seq2seq"] / "checkpoints" / "step-000020"
    model = load_model(ckpt)
    expected = generate_text(model, model.tokenizer, "hello", max_new_tokens=16, temperature=0)
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "hello")
    assert (result.code, result.out) == (0, f"{expected}\n"), result.err

    ckpt, model = lm
    beams = dict(num_beams=2, temperature=0)
    expected = generate_text(model, model.tokenizer, "the ", max_new_tokens=12, **beams)
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the ", "--num-beams", "2")
    assert (result.code, result.out) == (0, f"the {expected}\n"), result.err
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the ", "--temperature", "0")
    assert result.code == 0 and len(result.out) == len("the ") + 200 + 1  # the window slides


def test_too_many_new_tokens_names_the_limit(cli, lm, task_runs):
    seq2seq = task_runs["seq2seq"] / "checkpoints" / "step-000020"
    result = cli.run("generate", "--checkpoint", seq2seq, "--prompt", "ab", "--max-new-tokens", 17)
    cli.assert_user_error(result, "--max-new-tokens 17", "max_len 16", "at most 16")
    assert result.out == ""
    ckpt, _ = lm
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the ", "--num-beams", "2",
                     "--max-new-tokens", "13")  # fmt: skip
    cli.assert_user_error(result, "--max-new-tokens 13", "beam search", "at most 12")
    assert result.out == ""
    result = cli.run("generate", "--checkpoint", ckpt, "--prompt", "the cat sat on the mat",
                     "--num-beams", "2")  # fmt: skip
    cli.assert_user_error(result, "--prompt has 23 tokens", "max_len is 16", "shorten")
    assert result.out == ""  # nothing printed before the refusal


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--num-beams", "100000000", ["--num-beams", "100000000 is too large", "1 to 256"]),
        ("--max-new-tokens", "1000000", ["--max-new-tokens", "allowed 1 to 100000"]),
    ],
)
def test_sizes_are_refused_before_the_model_is_loaded(cli, lm, monkeypatch, option, value, words):
    def never(*args, **kwargs):
        raise AssertionError("the checkpoint was loaded")

    monkeypatch.setattr("glassformer.cli.generate.load_model_dir", never)
    result = cli.run("generate", "--checkpoint", lm[0], "--prompt", "a", option, value)
    cli.assert_user_error(result, *words)


@pytest.mark.parametrize(
    ("pieces", "printed"), [(["ab", "c"], "the abc\n"), (["ab\n"], "the ab\n"), ([], "the \n")]
)
def test_ctrl_c_while_streaming_ends_the_line_first(cli, lm, monkeypatch, pieces, printed):
    """The message starts a line of its own: a newline ends the text when it ends mid-line."""

    def interrupted(*args, **kwargs):
        yield from pieces
        raise KeyboardInterrupt

    monkeypatch.setattr("glassformer.cli.generate.continue_text", interrupted)
    result = cli.run("generate", "--checkpoint", lm[0], "--prompt", "the ")
    assert (result.code, result.out, result.err) == (130, printed, "glassformer: interrupted\n")
