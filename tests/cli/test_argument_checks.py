"""Options checked before anything is loaded, each refusal one line naming the option: the
folder of ``explore --export``, text that is not UTF-8, ``--config`` given a folder, and
sampling options given with beam search."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from glassformer.generation import GenerationConfig


def test_export_into_a_read_only_folder_is_refused_before_loading(cli, tmp_path, monkeypatch):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    access = os.access  # root may write anywhere: the folder is shown read-only to it too
    monkeypatch.setattr(os, "access", lambda p, m, **kw: Path(p) != folder and access(p, m, **kw))
    result = cli.run("explore", "--checkpoint", tmp_path / "no-run", "--text", "the",
                     "--export", folder / "page.html")  # fmt: skip
    cli.assert_user_error(result, f"--export {folder / 'page.html'}", f"directory {folder} is not")
    assert ".tmp" not in result.err and list(folder.iterdir()) == []


def test_export_into_a_missing_folder_makes_it(cli, lm_run, tmp_path):
    page = tmp_path / "pages" / "lm" / "page.html"
    result = cli.run("explore", "--checkpoint", lm_run[0], "--text", "the", "--export", page)
    assert (result.code, result.err) == (0, ""), result.err
    assert result.out.startswith(f"wrote {page} (") and "<html" in page.read_text()


def test_export_under_a_file_names_the_file(cli, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    page = tmp_path / "notes.txt" / "page.html"
    result = cli.run("explore", "--checkpoint", tmp_path, "--text", "a", "--export", page)
    cli.assert_user_error(result, f"--export {page}", f"{tmp_path / 'notes.txt'} is a file")


# a byte that is not UTF-8 reaches Python's argv as a lone surrogate (U+DC80..U+DCFF)
NOT_UTF8 = [
    (["generate", "--prompt", "th\udcff"], "--prompt", "byte 0xff at offset 2"),
    (["generate", "--prompt", "the", "--stop", "\udcfe"], "--stop", "byte 0xfe at offset 0"),
    (["predict", "--text", "fine", "é\udcff"], "--text", "byte 0xff at offset 2"),
    (["trace", "--text", "\udcc3"], "--text", "byte 0xc3 at offset 0"),
    (["inspect", "--text", "ab\udcff", "--out", "{tmp}/pics"], "--text", "offset 2"),
    (["inspect", "--text", "ab", "--corrupt", "a\udcff", "--out", "{tmp}/p"], "--corrupt", "0xff"),
    (["explore", "--text", "the\udcff", "--export", "{tmp}/p.html"], "--text", "offset 3"),
    (["explore", "--text", "x\ud800"], "--text", "a lone surrogate U+D800 at offset 1"),
]


@pytest.mark.parametrize(("argv", "option", "where"), NOT_UTF8)
def test_text_that_is_not_utf8_is_refused_at_its_option(cli, tmp_path, argv, option, where):
    command, *rest = (a.format(tmp=tmp_path) for a in argv)
    result = cli.run(command, "--checkpoint", tmp_path / "no-run", *rest)
    cli.assert_user_error(result, f"argument {option}: not UTF-8 text (", where, "allowed: UTF-8")
    assert list(tmp_path.iterdir()) == []


def test_a_run_folder_whose_path_is_not_utf8_is_refused_before_training(cli, lm_files, tmp_path):
    out = tmp_path / "run-\udcff"  # safetensors could write its checkpoints but not read them
    result = cli.run("train", "--data", lm_files[0], "--out", out, "--steps", "1", *cli.TINY)
    cli.assert_user_error(result, "--out", "the path is not UTF-8", "safetensors")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_as_config_is_named_a_folder(cli, tmp_path):
    result = cli.run("train", "--config", tmp_path)
    cli.assert_user_error(
        result, f"--config {tmp_path}: is a folder", "allowed: a TOML file", "shakespeare-char"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--top-k", "5"],
            "--top-k 5 is not allowed with --num-beams 4, as beam search does not sample: for "
            "beam search leave out --top-k (or give --top-k 0); to sample with --top-k 5, "
            "leave out --num-beams",
        ),
        (["--top-p", "0.9"], "--top-p 0.9 is not allowed with --num-beams 4,"),
        (
            ["--temperature", "0.7"],
            "leave out --temperature (or give --temperature 0 or --temperature 1)",
        ),
    ],
)
def test_sampling_options_with_beam_search_name_both(cli, tmp_path, options, message):
    result = cli.run("generate", "--checkpoint", tmp_path / "no-run", "--num-beams", "4", *options)
    cli.assert_user_error(result, message)


def test_sampling_settings_with_beams_read_as_a_sentence():
    with pytest.raises(ValueError) as err:
        GenerationConfig(num_beams=4, top_k=5)
    assert str(err.value) == (
        "top_k=5 is not allowed with num_beams=4, as beam search does not sample: allowed with "
        "num_beams > 1 is top_k=0 (or num_beams=1 to sample)"
    )
    with pytest.raises(ValueError, match=r"^return_logits=True is not allowed with num_beams=2, "):
        GenerationConfig(num_beams=2, return_logits=True)
